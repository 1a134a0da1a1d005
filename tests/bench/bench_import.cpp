// Import speed and memory of the Kineto importer.
//   bench_import speed FILE [REPEATS]    MB/s of uncompressed JSON, median over repeats
//   bench_import memory FILE             peak RSS after importing FILE once
//   bench_import make-skipped OUT MB     writes a synthetic trace of MB megabytes that is
//                                        mostly python_function events (dropped at import)
#include <cstdlib>
#include <filesystem>

#include "bench_util.h"
#include "core/byte_source.h"
#include "core/log.h"
#include "trace/loader.h"

using namespace dpro;

namespace {

std::size_t uncompressed_size(const std::string& path) {
  ByteSource source(path);
  std::vector<char> buf(1 << 20);
  std::size_t total = 0;
  while (std::size_t n = source.read(buf.data(), buf.size())) total += n;
  return total;
}

std::size_t import_once(const std::string& path) {
  Logger log(LogLevel::kError);
  trace::LoadOptions options;
  options.allow_partial = true;
  const auto set = trace::load_traces({path}, options, log);
  std::size_t events = 0;
  for (const auto& r : set.ranks) events += r.events.size();
  return events;
}

int speed(const std::string& path, int repeats) {
  const double mb = static_cast<double>(uncompressed_size(path)) / 1e6;
  std::vector<double> rates;
  std::size_t events = 0;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    events = import_once(path);
    rates.push_back(mb / bench::seconds_since(t0));
  }
  const std::string name = std::filesystem::path(path).filename().string();
  bench::emit("import_speed", bench::median(rates), "MB/s",
              "\"file\": \"" + name + "\", \"uncompressed_mb\": " + std::to_string(mb) + ", \"events_kept\": " +
                  std::to_string(events) + ", \"repeats\": " + std::to_string(repeats));
  return 0;
}

int memory(const std::string& path) {
  const double before = bench::peak_rss_mib();
  const std::size_t events = import_once(path);
  const std::string name = std::filesystem::path(path).filename().string();
  bench::emit("import_peak_rss", bench::peak_rss_mib(), "MiB",
              "\"file\": \"" + name + "\", \"uncompressed_mb\": " + std::to_string(uncompressed_size(path) / 1e6) +
                  ", \"events_kept\": " + std::to_string(events) + ", \"rss_before_mib\": " + std::to_string(before));
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

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "speed" && argc >= 3) return speed(argv[2], argc > 3 ? std::atoi(argv[3]) : 5);
    if (mode == "memory" && argc >= 3) return memory(argv[2]);
    if (mode == "make-skipped" && argc >= 4) return make_skipped(argv[2], std::atof(argv[3]));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_import: %s\n", e.what());
    return 2;
  }
  std::fprintf(stderr, "usage: bench_import speed FILE [REPEATS] | memory FILE | make-skipped OUT MB\n");
  return 2;
}
