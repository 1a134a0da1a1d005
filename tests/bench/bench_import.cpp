// Import speed and memory of the Kineto importer, beside a reference: a bare simdjson
// on-demand pass that extracts the fields an importer needs from the same JSON.
//   bench_import speed FILE [REPEATS]        MB/s of uncompressed JSON, median over repeats
//   bench_import memory FILE                 peak RSS after importing FILE once, and per byte of JSON
//   bench_import compare FILE [REPEATS] [--no-gzip]
//                                            import and reference MB/s (alternating runs), their
//                                            ratio, peak memory per byte of JSON (in a child
//                                            process), and gzip vs plain import time
//   bench_import ranks DIR [THREADS] [REPEATS]
//                                            a set of rank files read on one thread and on THREADS
//                                            (default 2), alternately: MB/s of each and the speedup
//   bench_import inflate FILE.gz [REPEATS]  inflating alone, in memory, with each decoder of the
//                                            build (zlib, ISA-L): MB of output per CPU second
//   bench_import make-ranks SRC DIR N        N rank files, copies of SRC, each saying its rank of N
//   bench_import make-skipped OUT MB         a synthetic trace of MB megabytes that is mostly
//                                            python_function events (dropped at import)
//   bench_import make-replicated SRC OUT MB  a synthetic trace of about MB megabytes: SRC's events
//                                            copied over and over, each copy's times shifted past
//                                            the one before
#include <simdjson.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <thread>

#include "bench_util.h"
#include "core/byte_source.h"
#include "core/gzip_inflater.h"
#include "core/log.h"
#include "trace/json_stream.h"
#include "trace/loader.h"

using namespace dpro;
namespace fs = std::filesystem;

namespace {

std::string inflate_all(const std::string& path) {
  ByteSource source(path);
  std::string text;
  std::vector<char> buf(1 << 20);
  while (std::size_t n = source.read(buf.data(), buf.size())) text.append(buf.data(), n);
  return text;
}

std::size_t uncompressed_size(const std::string& path) {
  ByteSource source(path);
  std::vector<char> buf(1 << 20);
  std::size_t total = 0;
  while (std::size_t n = source.read(buf.data(), buf.size())) total += n;
  return total;
}

// The set is destroyed before it returns (timed with the import); `destroy_s`, when given, gets
// the wall seconds of that destruction alone (on the caller's thread, after every reader is done).
std::size_t import_once(const std::vector<std::string>& paths, int threads = 1, double* destroy_s = nullptr) {
  Logger log(LogLevel::kError);
  trace::LoadOptions options;
  options.allow_partial = true;
  options.threads = static_cast<unsigned>(threads);
  std::optional<trace::TraceSet> set = trace::load_traces(paths, options, log);
  std::size_t events = 0;
  for (const auto& r : set->ranks) events += r.events.size();
  const auto t0 = std::chrono::steady_clock::now();
  set.reset();
  if (destroy_s) *destroy_s = bench::seconds_since(t0);
  return events;
}

std::string file_name(const std::string& path) { return fs::path(path).filename().string(); }

// The reference: one simdjson on-demand pass over the whole (inflated) document, reading what an
// importer needs of each event (ph, cat, name, ts, dur, pid, tid, and args' correlation and
// External id). Returns a checksum so that nothing is optimised away.
std::uint64_t reference_pass(const simdjson::padded_string& json, std::size_t* events) {
  namespace od = simdjson::ondemand;
  od::parser parser;
  od::document doc = parser.iterate(json);
  std::uint64_t sum = 0;
  *events = 0;
  const auto read_event = [&](od::object event) {
    ++*events;
    for (auto field : event) {
      std::string_view key = field.unescaped_key();
      od::value v = field.value();
      if (key == "ph" || key == "cat" || key == "name") {
        std::string_view s;
        if (v.get_string().get(s) == simdjson::SUCCESS) sum += s.size();
      } else if (key == "ts" || key == "dur") {
        double d = 0;
        if (v.get_double().get(d) == simdjson::SUCCESS) sum += static_cast<std::uint64_t>(d);
      } else if (key == "pid" || key == "tid") {
        std::int64_t i = 0;
        if (v.get_int64().get(i) == simdjson::SUCCESS) sum += static_cast<std::uint64_t>(i);
      } else if (key == "args") {
        od::object args;
        if (v.get_object().get(args) != simdjson::SUCCESS) continue;
        for (auto a : args) {
          std::string_view k = a.unescaped_key();
          if (k == "correlation" || k == "External id") {
            std::int64_t i = 0;
            if (a.value().get_int64().get(i) == simdjson::SUCCESS) sum += static_cast<std::uint64_t>(i);
          }
        }
      }
    }
  };
  od::object top = doc.get_object();
  for (auto member : top) {
    std::string_view key = member.unescaped_key();
    if (key != "traceEvents") continue;
    for (auto e : member.value().get_array()) read_event(e.get_object());
  }
  return sum;
}

void write_gzip(const std::string& text, const std::string& out_path) {
  gzFile gz = gzopen(out_path.c_str(), "wb6");
  if (!gz) throw std::runtime_error("cannot write " + out_path);
  for (std::size_t at = 0; at < text.size();) {
    const unsigned n = static_cast<unsigned>(std::min<std::size_t>(text.size() - at, 1 << 24));
    gzwrite(gz, text.data() + at, n);
    at += n;
  }
  gzclose(gz);
}

struct Timing {
  double wall = 0, cpu = 0;
  double caller_cpu = 0;  // of the calling thread alone; cpu - caller_cpu: the threads it started
};
template <class F>
Timing timed(F&& f) {
  const double c0 = bench::cpu_seconds(), t0_cpu = bench::thread_cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  f();
  const double wall = bench::seconds_since(t0), caller = bench::thread_cpu_seconds() - t0_cpu;
  return Timing{wall, bench::cpu_seconds() - c0, caller};
}

int speed(const std::string& path, int repeats) {
  const double mb = static_cast<double>(uncompressed_size(path)) / 1e6;
  std::vector<double> rates;
  std::size_t events = 0;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    events = import_once({path});
    rates.push_back(mb / bench::seconds_since(t0));
  }
  bench::emit("import_speed", bench::median(rates), "MB/s",
              "\"file\": \"" + file_name(path) + "\", \"uncompressed_mb\": " + std::to_string(mb) +
                  ", \"events_kept\": " + std::to_string(events) + ", \"repeats\": " + std::to_string(repeats));
  return 0;
}

int memory(const std::string& path) {
  const double json_mb = uncompressed_size(path) / 1e6;
  const double before = bench::peak_rss_mib();
  const std::size_t events = import_once({path});
  const double peak = bench::peak_rss_mib();
  const std::string extra = "\"file\": \"" + file_name(path) + "\", \"uncompressed_mb\": " + std::to_string(json_mb) +
                            ", \"events_kept\": " + std::to_string(events) +
                            ", \"rss_before_mib\": " + std::to_string(before);
  bench::emit("import_peak_rss", peak, "MiB", extra);
  // Bytes of memory the import added at its peak per byte of JSON.
  bench::emit("import_peak_bytes_per_json_byte", (peak - before) * 1048576.0 / (json_mb * 1e6), "B/B", extra);
  return 0;
}

std::string self_exe() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("bench_import") : p.string();
}

// A temporary folder for copies of a trace, removed with this object.
struct TempDir {
  fs::path dir = fs::temp_directory_path() / ("bench_import_" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(dir); }
  ~TempDir() { fs::remove_all(dir); }
  std::string file(const char* name) const { return (dir / name).string(); }
};

int compare(const std::string& path, int repeats, bool with_gzip) {
  const std::string name = file_name(path);
  const bool input_gzipped = ByteSource(path).gzipped();
  TempDir tmp;
  // The import is compared with the reference on plain JSON; gzip is measured beside plain.
  std::string plain = path, gz = path;
  double mb = 0;
  {
    const std::string text = inflate_all(path);
    mb = static_cast<double>(text.size()) / 1e6;
    if (input_gzipped) {
      plain = tmp.file("trace.json");
      std::ofstream(plain, std::ios::binary).write(text.data(), static_cast<std::streamsize>(text.size()));
    } else if (with_gzip) {
      gz = tmp.file("trace.json.gz");
      write_gzip(text, gz);
    }
  }
  std::vector<double> ref_wall, ref_cpu, imp_wall, imp_cpu;
  std::size_t events_kept = 0, events_seen = 0;
  {
    const simdjson::padded_string json = simdjson::padded_string::load(plain);
    std::uint64_t checksum = 0;
    for (int i = 0; i < repeats; ++i) {
      const Timing r = timed([&] { checksum += reference_pass(json, &events_seen); });
      ref_wall.push_back(r.wall);
      ref_cpu.push_back(r.cpu);
      const Timing m = timed([&] { events_kept = import_once({plain}); });
      imp_wall.push_back(m.wall);
      imp_cpu.push_back(m.cpu);
    }
    if (checksum == 42) std::printf("\n");  // keeps the reference's work observable
  }
  const std::string common = "\"file\": \"" + name + "\", \"uncompressed_mb\": " + std::to_string(mb) +
                             ", \"repeats\": " + std::to_string(repeats);
  const double ref_cpu_rate = mb / bench::median(ref_cpu), imp_cpu_rate = mb / bench::median(imp_cpu);
  const double ref_wall_rate = mb / bench::median(ref_wall), imp_wall_rate = mb / bench::median(imp_wall);
  bench::emit("reference_speed", ref_cpu_rate, "MB/cpu-s",
              common + ", \"wall_mb_per_s\": " + std::to_string(ref_wall_rate) + ", \"events\": " +
                  std::to_string(events_seen) + ", \"what\": \"simdjson on-demand field extraction, plain JSON\"");
  bench::emit("import_speed", imp_cpu_rate, "MB/cpu-s",
              common + ", \"wall_mb_per_s\": " + std::to_string(imp_wall_rate) +
                  ", \"events_kept\": " + std::to_string(events_kept) + ", \"input\": \"plain JSON\"");
  bench::emit("import_vs_reference", imp_cpu_rate / ref_cpu_rate, "ratio",
              common + ", \"wall_ratio\": " + std::to_string(imp_wall_rate / ref_wall_rate));

  // Peak memory in a process of its own (this one held the whole text for the reference).
  std::fflush(stdout);
  const std::string child = "'" + self_exe() + "' memory '" + plain + "'";
  if (std::system(child.c_str()) != 0) throw std::runtime_error("memory run failed: " + child);

  if (!with_gzip) return 0;
  // The same trace gzip-compressed and plain, imported alternately.
  std::vector<double> gz_wall, plain_wall, gz_cpu, plain_cpu;
  for (int i = 0; i < repeats; ++i) {
    const Timing g = timed([&] { import_once({gz}); });
    gz_wall.push_back(g.wall);
    gz_cpu.push_back(g.cpu);
    const Timing p = timed([&] { import_once({plain}); });
    plain_wall.push_back(p.wall);
    plain_cpu.push_back(p.cpu);
  }
  bench::emit("import_gzip_vs_plain", bench::median(gz_wall) / bench::median(plain_wall), "wall-time ratio",
              common + ", \"gzip_mb_per_s\": " + std::to_string(mb / bench::median(gz_wall)) +
                  ", \"gzip_cpu_mb_per_s\": " + std::to_string(mb / bench::median(gz_cpu)) +
                  ", \"plain_mb_per_s\": " + std::to_string(mb / bench::median(plain_wall)) +
                  ", \"plain_cpu_mb_per_s\": " + std::to_string(mb / bench::median(plain_cpu)) +
                  ", \"cpu_ratio\": " + std::to_string(bench::median(gz_cpu) / bench::median(plain_cpu)) +
                  ", \"decoder\": \"" + ByteSource(gz).gzip_decoder() + "\"");
  return 0;
}

int make_skipped(const std::string& out_path, double megabytes) {
  std::ofstream out(out_path);
  out << "{\"distributedInfo\": {\"rank\": 0, \"world_size\": 1}, \"traceEvents\": [\n";
  out << R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000000000})";
  const std::size_t target = static_cast<std::size_t>(megabytes * 1e6);
  std::size_t written = 0;
  for (long i = 0; written < target; ++i) {
    char line[256];
    const int n = std::snprintf(line, sizeof line,
                                ",\n{\"ph\": \"X\", \"cat\": \"python_function\", \"name\": \"train.py(%ld): step\", "
                                "\"pid\": 1, \"tid\": 1, \"ts\": %ld.5, \"dur\": 0.25, \"args\": {\"Python id\": %ld}}",
                                i % 997, 1 + i, i);
    out << line;
    written += static_cast<std::size_t>(n);
  }
  out << R"(,
{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 5, "dur": 3}]})" << "\n";
  return 0;
}

// Where the number after the event's "ts" key lies in `raw` ({npos, 0} when there is none).
std::pair<std::size_t, std::size_t> ts_token(std::string_view raw) {
  std::size_t at = raw.find("\"ts\"");
  if (at == std::string_view::npos) return {std::string_view::npos, 0};
  at = raw.find(':', at + 4);
  if (at == std::string_view::npos) return {std::string_view::npos, 0};
  ++at;
  while (at < raw.size() && raw[at] == ' ') ++at;
  std::size_t end = at;
  while (end < raw.size() && (std::isdigit(static_cast<unsigned char>(raw[end])) || raw[end] == '.')) ++end;
  return {at, end - at};
}

int make_replicated(const std::string& src, const std::string& out_path, double megabytes) {
  // The source's top-level members and events, as text.
  std::vector<std::pair<std::string, std::string>> members;
  std::vector<std::string> events;
  {
    ByteSource source(src);
    trace::JsonEventStream stream(source);
    stream.run([&](std::string_view key, std::string_view raw) { members.emplace_back(key, raw); },
               [&](std::string_view raw, std::uint64_t) { events.emplace_back(raw); });
  }
  // The span of the source's times, in whole microseconds: each copy starts after it.
  std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = 0;
  for (const std::string& e : events) {
    const auto [at, n] = ts_token(e);
    if (at == std::string::npos || n == 0) continue;
    const std::int64_t whole = std::atoll(e.substr(at, n).c_str());
    lo = std::min(lo, whole);
    hi = std::max(hi, whole);
  }
  const std::int64_t period = (hi - lo) + 1'000'000;  // the span and a second
  std::ofstream out(out_path, std::ios::binary);
  out << "{\n";
  for (const auto& [key, raw] : members) out << "  \"" << key << "\": " << raw << ",\n";
  out << "  \"traceEvents\": [\n";
  const std::size_t target = static_cast<std::size_t>(megabytes * 1e6);
  std::size_t written = 0;
  bool first = true;
  for (std::int64_t copy = 0; written < target; ++copy) {
    for (const std::string& e : events) {
      if (!first) out << ",\n";
      first = false;
      const auto [at, n] = ts_token(e);
      if (at == std::string::npos || n == 0 || copy == 0) {
        out << e;
      } else {
        const std::string token = e.substr(at, n);
        const std::size_t dot = token.find('.');
        const std::int64_t whole = std::atoll(token.substr(0, dot).c_str()) + copy * period;
        out << std::string_view(e).substr(0, at) << whole
            << (dot == std::string::npos ? std::string() : token.substr(dot)) << std::string_view(e).substr(at + n);
      }
      written += e.size() + 2;
    }
  }
  out << "\n  ]\n}\n";
  return 0;
}

// N ranks of one job made of copies of one rank's trace: rank k says it is rank k of N.
int make_ranks(const std::string& src, const std::string& dir, int n) {
  const std::string text = inflate_all(src);
  const std::regex rank_field(R"("rank"\s*:\s*\d+)"), world_field(R"("world_size"\s*:\s*\d+)");
  fs::create_directories(dir);
  for (int k = 0; k < n; ++k) {
    std::string copy = std::regex_replace(text, world_field, "\"world_size\": " + std::to_string(n),
                                          std::regex_constants::format_first_only);
    copy = std::regex_replace(copy, rank_field, "\"rank\": " + std::to_string(k), std::regex_constants::format_first_only);
    std::ofstream((fs::path(dir) / ("rank" + std::to_string(k) + ".json")).string(), std::ios::binary) << copy;
  }
  return 0;
}

// A set of rank files read on 1 thread and on `threads`, alternately: wall-time medians.
int ranks(const std::string& path, int threads, int repeats) {
  const std::vector<std::string> files = trace::expand_trace_paths({path});
  double mb = 0;
  for (const std::string& f : files) mb += static_cast<double>(uncompressed_size(f)) / 1e6;
  std::vector<double> one, many, one_cpu, many_cpu, caller_cpu, others_cpu, busiest_cpu, destroy;
  for (int i = 0; i < repeats; ++i) {
    double destroy_s = 0;
    const Timing a = timed([&] { import_once({path}, 1, &destroy_s); });
    destroy.push_back(destroy_s);
    const Timing b = timed([&] { import_once({path}, threads); });
    one.push_back(a.wall);
    one_cpu.push_back(a.cpu);
    many.push_back(b.wall);
    many_cpu.push_back(b.cpu);
    caller_cpu.push_back(b.caller_cpu);
    others_cpu.push_back(b.cpu - b.caller_cpu);
    busiest_cpu.push_back(std::max(b.caller_cpu, b.cpu - b.caller_cpu));
  }
  const std::string common = "\"set\": \"" + path + "\", \"files\": " + std::to_string(files.size()) +
                             ", \"uncompressed_mb\": " + std::to_string(mb) + ", \"repeats\": " + std::to_string(repeats);
  bench::emit("import_ranks_1_thread", mb / bench::median(one), "MB/s", common);
  bench::emit("import_ranks_threads", mb / bench::median(many), "MB/s", common + ", \"threads\": " + std::to_string(threads));
  // CPU seconds of a whole import on one thread and on THREADS: their ratio is the work the
  // parallel read adds (on a shared machine the wall-time speedup also depends on the other
  // tenants' load; the CPU figures do not).
  bench::emit("import_ranks_speedup", bench::median(one) / bench::median(many), "x",
              common + ", \"threads\": " + std::to_string(threads) + ", \"cores\": " +
                  std::to_string(std::thread::hardware_concurrency()) + ", \"cpu_s_1_thread\": " +
                  std::to_string(bench::median(one_cpu)) + ", \"cpu_s_threads\": " + std::to_string(bench::median(many_cpu)) +
                  ", \"wall_s_1_thread\": " + std::to_string(bench::median(one)) +
                  ", \"wall_s_threads\": " + std::to_string(bench::median(many)));
  // What the wall-time speedup would be on idle cores, from CPU time alone: the caller's thread
  // (its share of the files, the merge of the last, checks, alignment, the set's destruction) and
  // the threads it started (with THREADS = 2, the other reader) each ran on a core of their own,
  // so the THREADS-thread read took at least the busier one's CPU time. Under load the bound is
  // pessimistic (a starved thread reads fewer files, the other more); total CPU / THREADS is the
  // bound with a perfect split. The set's destruction (1-thread runs) is part of the caller's
  // sequential rest.
  bench::emit("import_ranks_cpu_bound_speedup", bench::median(one_cpu) / bench::median(busiest_cpu), "x",
              common + ", \"threads\": " + std::to_string(threads) + ", \"cpu_s_1_thread\": " +
                  std::to_string(bench::median(one_cpu)) + ", \"cpu_s_caller_thread\": " +
                  std::to_string(bench::median(caller_cpu)) + ", \"cpu_s_other_threads\": " +
                  std::to_string(bench::median(others_cpu)) + ", \"cpu_s_busiest_thread\": " +
                  std::to_string(bench::median(busiest_cpu)) + ", \"cpu_s_threads_over_threads\": " +
                  std::to_string(bench::median(many_cpu) / threads) + ", \"wall_s_destroy_set\": " +
                  std::to_string(bench::median(destroy)));
  return 0;
}

// Inflates all of `packed` (gzip members) with `inflater`: bytes of output.
std::size_t inflate_in_memory(const std::string& packed, GzipInflater& inflater, std::vector<unsigned char>& out) {
  const auto* in = reinterpret_cast<const unsigned char*>(packed.data());
  std::size_t at = 0, total = 0;
  for (;;) {
    const GzipInflater::Step step = inflater.inflate(in + at, packed.size() - at, out.data(), out.size());
    at += step.consumed;
    total += step.produced;
    if (step.member_end || (step.consumed == 0 && step.produced == 0)) return total;
  }
}

int inflate_speed(const std::string& path, int repeats) {
  std::string packed;
  {
    std::ifstream in(path, std::ios::binary);
    packed.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::vector<unsigned char> out(1 << 20);
  for (const auto& make : {make_zlib_inflater, make_isal_inflater}) {
    if (!make()) continue;  // a build without ISA-L
    std::vector<double> cpu;
    std::size_t bytes = 0;
    std::string name;
    for (int i = 0; i < repeats; ++i) {
      const auto inflater = make();
      name = inflater->name();
      cpu.push_back(timed([&] { bytes = inflate_in_memory(packed, *inflater, out); }).cpu);
    }
    bench::emit("inflate_speed", static_cast<double>(bytes) / 1e6 / bench::median(cpu), "MB/cpu-s",
                "\"file\": \"" + file_name(path) + "\", \"decoder\": \"" + name + "\", \"uncompressed_mb\": " +
                    std::to_string(static_cast<double>(bytes) / 1e6) + ", \"repeats\": " + std::to_string(repeats));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "speed" && argc >= 3) return speed(argv[2], argc > 3 ? std::atoi(argv[3]) : 5);
    if (mode == "memory" && argc >= 3) return memory(argv[2]);
    if (mode == "compare" && argc >= 3)
      return compare(argv[2], argc > 3 ? std::atoi(argv[3]) : 5, !(argc > 4 && std::string(argv[4]) == "--no-gzip"));
    if (mode == "inflate" && argc >= 3) return inflate_speed(argv[2], argc > 3 ? std::atoi(argv[3]) : 5);
    if (mode == "make-skipped" && argc >= 4) return make_skipped(argv[2], std::atof(argv[3]));
    if (mode == "make-ranks" && argc >= 5) return make_ranks(argv[2], argv[3], std::atoi(argv[4]));
    if (mode == "ranks" && argc >= 3)
      return ranks(argv[2], argc > 3 ? std::atoi(argv[3]) : 2, argc > 4 ? std::atoi(argv[4]) : 7);
    if (mode == "make-replicated" && argc >= 5) return make_replicated(argv[2], argv[3], std::atof(argv[4]));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_import: %s\n", e.what());
    return 2;
  }
  std::fprintf(stderr,
               "usage: bench_import speed FILE [REPEATS] | memory FILE | compare FILE [REPEATS] [--no-gzip] |\n"
               "       ranks DIR [THREADS] [REPEATS] | inflate FILE.gz [REPEATS] | make-ranks SRC DIR N |\n"
               "       make-skipped OUT MB | make-replicated SRC OUT MB\n");
  return 2;
}
