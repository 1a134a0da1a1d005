#include "trace/kineto_importer.h"

#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <filesystem>
#include <map>
#include <tuple>
#include <unordered_map>

#include "core/byte_source.h"
#include "core/error.h"
#include "core/strings.h"
#include "trace/json_stream.h"
#include "trace/kineto_event_scan.h"
#include "trace/nccl_ranges.h"

namespace dpro::trace {
namespace od = simdjson::ondemand;

bool parse_micros_as_nanos(std::string_view text, Nanos* out) {
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n' || text.back() == '\r' ||
                           text.back() == '\t')) {
    text.remove_suffix(1);
  }
  if (text.empty()) return false;
  const bool exponent = std::any_of(text.begin(), text.end(), [](char c) { return c == 'e' || c == 'E'; });
  if (exponent) {
    double v = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || p != text.data() + text.size() || !(std::abs(v * 1000.0) <= kMaxTraceNanos)) return false;
    *out = static_cast<Nanos>(std::llround(v * 1000.0));
    return true;
  }
  bool negative = false;
  std::size_t i = 0;
  if (text[0] == '-') { negative = true; i = 1; }
  Nanos whole = 0;
  std::size_t digits = 0;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i, ++digits) {
    whole = whole * 10 + (text[i] - '0');
    if (whole > kMaxTraceNanos / 1000) return false;  // also keeps whole * 1000 below overflow
  }
  Nanos frac = 0;
  int frac_digits = 0;
  bool round_up = false;
  if (i < text.size() && text[i] == '.') {
    for (++i; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
      if (frac_digits < 3) {
        frac = frac * 10 + (text[i] - '0');
        ++frac_digits;
      } else if (frac_digits == 3) {
        round_up = text[i] >= '5';
        ++frac_digits;
      }
      ++digits;
    }
  }
  if (i != text.size() || digits == 0) return false;
  for (int k = std::min(frac_digits, 3); k < 3; ++k) frac *= 10;
  Nanos ns = whole * 1000 + frac + (round_up ? 1 : 0);
  if (ns > kMaxTraceNanos) return false;
  *out = negative ? -ns : ns;
  return true;
}

std::string collective_op_from_name(std::string_view name) {
  std::string lower = ascii_lower(name);
  for (const char* prefix : {"ncclkernel_", "nccldevkernel_", "rcclkernel_"}) {
    if (lower.rfind(prefix, 0) == 0) {
      // A kernel name: the operation is the word after the prefix.
      lower = lower.substr(std::string_view(prefix).size());
      lower = lower.substr(0, lower.find_first_of("_( "));
      break;
    }
  }
  static const char* kKnown[] = {"allreduce", "allgather", "reducescatter", "broadcast", "reduce",
                                 "alltoall",  "alltoallv", "sendrecv",      "send",      "recv",
                                 "gather",    "scatter",   "allgather_into_tensor_coalesced",
                                 "reduce_scatter_tensor_coalesced", "all_gather", "reduce_scatter",
                                 "all_reduce", "all_to_all", "_allgather_base", "_reduce_scatter_base",
                                 "_all_gather_base"};
  for (const char* known : kKnown) {
    if (lower == known) {
      std::string op = lower;
      op.erase(std::remove(op.begin(), op.end(), '_'), op.end());
      if (op == "allgatherbase" || op == "allgatherintotensorcoalesced") op = "allgather";
      if (op == "reducescatterbase" || op == "reducescattertensorcoalesced") op = "reducescatter";
      if (op == "alltoallv") op = "alltoall";
      return op;
    }
  }
  return {};
}

namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
  }
  return true;
}

bool istarts_with(std::string_view text, std::string_view lower_prefix) {
  return text.size() >= lower_prefix.size() && iequals(text.substr(0, lower_prefix.size()), lower_prefix);
}

// Event kind from Kineto's category (case-insensitive; older traces use "Kernel", "Runtime").
std::optional<EventKind> kind_from_category(std::string_view cat, std::string_view name) {
  if (iequals(cat, "cpu_op") || iequals(cat, "operator")) return EventKind::kCpuOp;
  if (iequals(cat, "user_annotation")) return EventKind::kUserAnnotation;
  if (iequals(cat, "python_function")) return EventKind::kPythonFunction;
  if (iequals(cat, "cuda_runtime") || iequals(cat, "runtime") || iequals(cat, "cuda runtime")) return EventKind::kRuntimeCall;
  if (iequals(cat, "cuda_driver") || iequals(cat, "driver")) return EventKind::kDriverCall;
  if (iequals(cat, "kernel")) {
    return istarts_with(name, "nccl") || istarts_with(name, "rccl") ? EventKind::kCollective : EventKind::kKernel;
  }
  if (iequals(cat, "gpu_memcpy") || iequals(cat, "memcpy")) return EventKind::kMemcpy;
  if (iequals(cat, "gpu_memset") || iequals(cat, "memset")) return EventKind::kMemset;
  if (iequals(cat, "cuda_sync")) return EventKind::kSync;
  if (iequals(cat, "gpu_user_annotation")) return EventKind::kGpuAnnotation;
  return std::nullopt;
}

// "Process Group Ranks" as PyTorch writes it: "[0, 1, 2]", or for a group of more than 30
// ranks the first 30 and ", ...]" (its profiler truncates lists at 30).
struct RankList {
  std::vector<int> ranks;
  bool truncated = false;  // ended in "...": the group has more ranks than listed
};
// Empty for "" or null (not recorded); nullopt when the text is not such a list (a negative,
// repeated or huge rank, other text).
std::optional<RankList> parse_rank_list(std::string_view text) {
  RankList out;
  std::size_t i = 0;
  auto skip_space = [&] { while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i; };
  skip_space();
  if (i == text.size() || text.substr(i) == "null") return out;  // not recorded
  const bool bracket = i < text.size() && text[i] == '[';
  if (bracket) ++i;
  skip_space();
  bool expect_item = !(i < text.size() && text[i] == ']');
  while (expect_item) {
    skip_space();
    if (text.substr(i, 3) == "...") {
      out.truncated = true;
      i += 3;
      skip_space();
      break;
    }
    std::int64_t v = 0;
    const std::size_t begin = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && v <= kMaxRank) v = v * 10 + (text[i++] - '0');
    if (i == begin || v > kMaxRank) return std::nullopt;
    out.ranks.push_back(static_cast<int>(v));
    skip_space();
    expect_item = i < text.size() && text[i] == ',';
    if (expect_item) ++i;
  }
  if (bracket) {
    if (i >= text.size() || text[i] != ']') return std::nullopt;
    ++i;
  }
  skip_space();
  if (i != text.size()) return std::nullopt;
  std::vector<int> sorted = out.ranks;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return std::nullopt;
  return out;
}

// The whole group of a truncated list, from the arithmetic progression PyTorch records beside
// it ("Global rank start", "Global rank stride", "Group size"; the stride is -1 when the ranks
// are not one). Empty (membership unknown) when those are missing, not a progression, or
// disagree with the listed ranks.
std::vector<int> complete_rank_list(const RankList& listed, std::optional<std::int64_t> start,
                                    std::optional<std::int64_t> stride, std::optional<std::int64_t> size) {
  if (!start || !stride || !size || *stride < 1 || *stride > kMaxRank || *start < 0 || *start > kMaxRank ||
      *size <= static_cast<std::int64_t>(listed.ranks.size()) || *size > kMaxRank ||
      *start + (*size - 1) * *stride > kMaxRank)  // each term at most 2^20: no overflow
    return {};
  std::vector<int> all;
  for (std::int64_t k = 0; k < *size; ++k) all.push_back(static_cast<int>(*start + k * *stride));
  if (!std::equal(listed.ranks.begin(), listed.ranks.end(), all.begin())) return {};
  return all;
}

std::optional<std::int64_t> as_int(od::value v) {
  std::int64_t i = 0;
  if (v.get_int64().get(i) == simdjson::SUCCESS) return i;
  double d = 0;
  if (v.get_double().get(d) == simdjson::SUCCESS) return static_cast<std::int64_t>(std::llround(d));
  std::string_view s;
  if (v.get_string().get(s) == simdjson::SUCCESS) return parse_integer(s);
  return std::nullopt;
}

// Saturates at the int range, so that a huge value stays huge (and out of any later bound).
std::optional<int> to_int_opt(std::optional<std::int64_t> v) {
  if (!v) return std::nullopt;
  return static_cast<int>(std::clamp<std::int64_t>(*v, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
}

std::optional<std::string> as_text(od::value v) {
  std::string_view s;
  if (v.get_string().get(s) == simdjson::SUCCESS) return std::string(s);
  std::string_view raw = v.raw_json_token();
  if (!raw.empty()) return std::string(raw);
  return std::nullopt;
}

std::optional<std::array<int, 3>> as_dim3(od::value v) {
  od::array arr;
  if (v.get_array().get(arr) != simdjson::SUCCESS) return std::nullopt;
  std::array<int, 3> out{1, 1, 1};
  std::size_t i = 0;
  for (auto element : arr) {
    std::int64_t x = 0;
    if (element.get_int64().get(x) != simdjson::SUCCESS) return std::nullopt;
    if (i < 3) out[i++] = static_cast<int>(x);
  }
  return out;
}

void read_args(od::object args, RawArgs& a) {
  for (auto field : args) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) continue;
    od::value v;
    if (field.value().get(v) != simdjson::SUCCESS) continue;
    const ArgKey k = arg_key(key);
    if (auto* number = int_arg(a, k)) {
      *number = as_int(v);
    } else if (auto* text = text_arg(a, k)) {
      *text = as_text(v);
    } else if (auto* real = real_arg(a, k)) {
      double x = 0;  // a number; anything else is not recorded
      *real = v.get_double().get(x) == simdjson::SUCCESS ? std::optional<double>(x) : std::nullopt;
    } else if (k == ArgKey::kGrid || k == ArgKey::kBlock) {
      (k == ArgKey::kGrid ? a.grid : a.block) = as_dim3(v);
    } else if (k == ArgKey::kPgRanks) {
      // PyTorch writes a string ("[0, 1]"); a JSON array of ranks is read as the same text.
      od::array arr;
      std::string_view raw;
      if (v.get_array().get(arr) == simdjson::SUCCESS && arr.raw_json().get(raw) == simdjson::SUCCESS)
        a.pg_ranks = std::string(raw);
      else
        a.pg_ranks = as_text(v);
    } else if (k == ArgKey::kInputDims || k == ArgKey::kInputTypes) {
      od::array arr;
      std::string_view raw;
      if (v.get_array().get(arr) == simdjson::SUCCESS && arr.raw_json().get(raw) == simdjson::SUCCESS) {
        (k == ArgKey::kInputDims ? a.input_dims : a.input_types) = std::string(raw);
      }
    }
  }
}

class KinetoImporter final : public Importer {
 public:
  std::string_view format() const override { return "kineto"; }

  bool sniff(std::string_view head) const override {
    std::size_t i = head.find_first_not_of(" \t\r\n");
    return i != std::string_view::npos && (head[i] == '{' || head[i] == '[');
  }

  TraceRank read(const std::string& path, StringTable& strings, const ImportOptions& options,
                 Logger& log) const override;
};

// Per-file state while reading.
struct KinetoReader {
  const std::string& path;
  StringTable& strings;
  const ImportOptions& options;
  Logger& log;
  TraceRank rank{};
  od::parser parser{};
  std::optional<Nanos> base_time{};
  std::unordered_map<std::int64_t, std::unordered_map<std::int64_t, std::string>> thread_names{};
  // CPU->GPU flow endpoints (ph "s"/"f", cat ac2g or async_cpu_to_gpu): they give the
  // correlation of events whose args lack it. Bound to the event on the same pid/tid at `ts`.
  struct Flow {
    std::int64_t id, pid, tid;
    Nanos ts;
  };
  std::vector<Flow> flows{};
  std::vector<std::pair<std::int64_t, std::int64_t>> raw_pid_tid{};  // per event, before base time
  void apply_flows();
  bool execution_trace_nodes = false;  // a top-level "nodes": PyTorch's execution trace format
  std::uint64_t events_seen = 0;
  // Duration events written as begin/end pairs (ph "B" then "E" on one thread, nested as a
  // stack): a "B" waits here for its "E"; pairs become events like complete ("X") ones.
  struct OpenSpan {
    std::string cat, name;
    Nanos ts = 0;
    RawArgs args;
  };
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<OpenSpan>> open_spans{};
  std::uint64_t unmatched_ends = 0;
  void on_begin_end(bool begin, std::string_view cat, std::string_view name, std::optional<Nanos> ts,
                    std::optional<std::int64_t> pid, std::optional<std::int64_t> tid, RawArgs args,
                    std::uint64_t index);

  std::string describe(std::uint64_t index, std::string_view name) const {
    return "event #" + std::to_string(index) + (name.empty() ? "" : " '" + std::string(name) + "'");
  }

  void on_member(std::string_view key, std::string_view raw);
  // An event straight from the stream's buffer: the bytes it spans, or 0 when the one-pass reader
  // declines it (on_event then gets it whole).
  std::size_t try_event(std::string_view available, std::uint64_t index);
  void on_event(std::string_view raw, std::uint64_t index, std::size_t capacity);
  void on_parsed(ParsedEvent& event, std::uint64_t index);
  void on_metadata(std::string_view name, std::int64_t pid, std::int64_t tid, od::object args);
  void store_event(EventKind kind, std::string_view name, Nanos ts, Nanos dur, std::int64_t pid,
                   std::int64_t tid, const RawArgs& a);
  void finish();
  void reserve(const ByteSource& source);
};

// Room for the events a file of this size may hold, taken at once: the arrays then never grow
// by copying into one twice their size, which held both copies at once (the peak of an import
// was 1.5 bytes per byte of JSON). The room is address space only: pages no event reaches are
// never touched, so never resident. Kineto events take 150 bytes of JSON or more; a gzip trace
// inflates about tenfold.
void KinetoReader::reserve(const ByteSource& source) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return;  // a pipe: grow as needed
  // At most 8 Mi events (2.3 GB of address space with their attributes): beyond, the arrays grow
  // as needed, so that a huge file never asks for more address space than a small machine grants.
  constexpr std::uintmax_t kMaxReserved = std::uintmax_t{1} << 23;
  const std::uintmax_t events = std::min<std::uintmax_t>((source.gzipped() ? size * 10 : size) / 150, kMaxReserved);
  rank.events.reserve(events);
  rank.attrs.reserve(events);
  raw_pid_tid.reserve(events);
}

void KinetoReader::on_member(std::string_view key, std::string_view raw) {
  if (key == "nodes") execution_trace_nodes = true;
  if (key != "baseTimeNanoseconds" && key != "distributedInfo" && key != "deviceProperties") return;
  if (key == "baseTimeNanoseconds") {  // read from its text: no document needed
    // Nanoseconds, usually an integer; a number written as a double is rounded.
    std::string_view text = raw;
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
    if (text == "null") return;
    std::int64_t base = kMaxTraceNanos + 1;  // refused below unless parsed
    const char* end = text.data() + text.size();
    if (auto [p, ec] = std::from_chars(text.data(), end, base); ec != std::errc() || p != end) {
      double d = 0;
      auto [q, ec2] = std::from_chars(text.data(), end, d);
      base = ec2 == std::errc() && q == end && std::abs(d) <= kMaxTraceNanos ? std::llround(d) : kMaxTraceNanos + 1;
    }
    if (std::abs(base) > kMaxTraceNanos)
      throw InputError(path, "baseTimeNanoseconds",
                       "'" + std::string(text.substr(0, 40)) + "' is not a time (nanoseconds, at most 3e18)");
    base_time = base;
    return;
  }
  simdjson::padded_string padded(raw);
  od::document doc;
  if (parser.iterate(padded).get(doc) != simdjson::SUCCESS) return;
  if (key == "distributedInfo") {
    od::object info;
    if (doc.get_object().get(info) != simdjson::SUCCESS) return;
    for (auto field : info) {
      std::string_view k;
      if (field.unescaped_key().get(k) != simdjson::SUCCESS) continue;
      od::value v = field.value();
      if (k == "rank" || k == "world_size") {
        // A rank is from 0, a world size from 1, both below 2^20: a wrapped or negative value
        // would put the trace at another rank without a word.
        const std::string token(v.raw_json_token().substr(0, 40));
        const auto x = as_int(v);
        const std::int64_t low = k == "rank" ? 0 : 1;
        if (!x || *x < low || *x > kMaxRank)
          throw InputError(path, "distributedInfo." + std::string(k),
                           "'" + token + "' is not a " + (k == "rank" ? "rank" : "world size") + " (a whole number from " +
                               std::to_string(low) + " to 2^20)");
        if (k == "rank") {
          rank.rank = static_cast<int>(*x);
          rank.rank_known = true;
        } else {
          rank.world_size = static_cast<int>(*x);
        }
      } else if (k == "backend") {
        if (auto b = as_text(v)) rank.backend = *b;
      } else if (k == "pg_config") {
        od::array groups;
        if (v.get_array().get(groups) != simdjson::SUCCESS) continue;
        for (auto g : groups) {
          od::object go;
          if (g.get_object().get(go) != simdjson::SUCCESS) continue;
          ProcessGroup pg;
          for (auto gf : go) {
            std::string_view gk;
            if (gf.unescaped_key().get(gk) != simdjson::SUCCESS) continue;
            od::value gv = gf.value();
            if (gk == "pg_name") pg.name = as_text(gv).value_or("");
            else if (gk == "pg_desc") pg.desc = as_text(gv).value_or("");
            else if (gk == "ranks") {
              od::array ra;
              if (gv.get_array().get(ra) == simdjson::SUCCESS) {
                for (auto r : ra) {
                  std::int64_t x = 0;
                  if (r.get_int64().get(x) == simdjson::SUCCESS) pg.ranks.push_back(static_cast<int>(x));
                }
              }
            }
          }
          rank.process_groups.push_back(std::move(pg));
        }
      }
    }
  } else if (key == "deviceProperties") {
    od::array devices;
    if (doc.get_array().get(devices) != simdjson::SUCCESS) return;
    for (auto d : devices) {
      od::object o;
      if (d.get_object().get(o) != simdjson::SUCCESS) continue;
      DeviceProperties p;
      for (auto f : o) {
        std::string_view k;
        if (f.unescaped_key().get(k) != simdjson::SUCCESS) continue;
        od::value v = f.value();
        if (k == "id") p.id = static_cast<int>(as_int(v).value_or(0));
        else if (k == "name") p.name = as_text(v).value_or("");
        else if (k == "totalGlobalMem") p.total_global_mem = as_int(v);
        else if (k == "computeMajor") p.compute_major = to_int_opt(as_int(v));
        else if (k == "computeMinor") p.compute_minor = to_int_opt(as_int(v));
        else if (k == "numSms") p.num_sms = to_int_opt(as_int(v));
      }
      rank.devices.push_back(std::move(p));
    }
  }
}

void KinetoReader::on_metadata(std::string_view name, std::int64_t pid, std::int64_t tid, od::object args) {
  if (name != "thread_name") return;
  for (auto f : args) {
    std::string_view k;
    if (f.unescaped_key().get(k) == simdjson::SUCCESS && k == "name") {
      if (auto text = as_text(f.value())) thread_names[pid][tid] = *text;
    }
  }
}

std::size_t KinetoReader::try_event(std::string_view available, std::uint64_t index) {
  ParsedEvent event;
  const std::size_t n = scan_event(available, event);
  if (n > 0) on_parsed(event, index);
  return n;
}

void KinetoReader::on_event(std::string_view raw, std::uint64_t index, std::size_t capacity) {
  ParsedEvent event;
  if (scan_event(raw, event) == raw.size()) {
    on_parsed(event, index);
    return;
  }
  event = ParsedEvent{};
  od::document doc;
  if (parser.iterate(raw.data(), raw.size(), capacity).get(doc) != simdjson::SUCCESS) {
    throw InputError(path, describe(index, ""), "cannot parse event");
  }
  od::object obj;
  if (doc.get_object().get(obj) != simdjson::SUCCESS) throw InputError(path, describe(index, ""), "event is not an object");
  std::string name_storage;
  std::string_view key;  // the field being read, for the error message
  try {
    for (auto field : obj) {
      key = "";
      key = field.unescaped_key();
      od::value v = field.value();
      switch (event_key(key)) {
        case EventKey::kPh: event.ph = v.get_string(); break;
        case EventKey::kCat: event.cat = v.get_string(); break;
        case EventKey::kName: {
          std::string_view n = v.get_string();
          name_storage.assign(n);
          event.name = name_storage;
          break;
        }
        case EventKey::kTs:
        case EventKey::kDur: {
          std::string_view token = v.raw_json_token();
          Nanos t = 0;
          if (!parse_micros_as_nanos(token, &t)) {
            throw InputError(path, describe(index, event.name),
                             std::string("\"") + std::string(key) +
                                 "\" is not a time in microseconds (a number of magnitude at most 3e15)");
          }
          (key == "ts" ? event.ts : event.dur) = t;
          break;
        }
        case EventKey::kId: {
          std::int64_t x = 0;
          if (v.get_int64().get(x) == simdjson::SUCCESS) event.flow_id = x;
          break;
        }
        case EventKey::kPid:
        case EventKey::kTid: {
          std::int64_t x = 0;
          if (v.get_int64().get(x) == simdjson::SUCCESS) (key == "pid" ? event.pid : event.tid) = x;
          break;
        }
        case EventKey::kArgs: {
          od::object a;
          if (v.get_object().get(a) == simdjson::SUCCESS) {
            if (event.ph == "M") {
              if (event.pid && event.tid) on_metadata(event.name, *event.pid, *event.tid, a);
            } else {
              read_args(a, event.args);
            }
          }
          break;
        }
        case EventKey::kOther: break;
      }
    }
  } catch (const simdjson::simdjson_error& e) {
    throw InputError(path, describe(index, event.name),
                     std::string("malformed event") + (key.empty() ? "" : ", field \"" + std::string(key) + "\"") +
                         ": " + e.what());
  }
  on_parsed(event, index);
}

void KinetoReader::on_parsed(ParsedEvent& event, std::uint64_t index) {
  ++events_seen;
  for (const ParsedEvent::ThreadName& t : event.thread_names) thread_names[t.pid][t.tid] = std::string(t.name);
  const std::string_view ph = event.ph, cat = event.cat, name = event.name;
  const std::optional<Nanos> ts = event.ts, dur = event.dur;
  const std::optional<std::int64_t> pid = event.pid, tid = event.tid, flow_id = event.flow_id;
  RawArgs& args = event.args;
  if ((ph == "s" || ph == "f") && flow_id && ts && pid && tid && (cat == "ac2g" || cat == "async_cpu_to_gpu")) {
    flows.push_back(Flow{*flow_id, *pid, *tid, *ts});
    return;
  }
  if (ph == "B" || ph == "E") {
    on_begin_end(ph == "B", cat, name, ts, pid, tid, std::move(args), index);
    return;
  }
  if ((ph == "i" || ph == "I") && name == "[memory]") {
    // Kineto's Device Type 1 is CUDA (0: CPU memory, not the GPU's).
    const std::optional<std::int64_t> held = args.total_reserved ? args.total_reserved : args.total_allocated;
    if (held && *held >= 0 && args.device_type.value_or(1) == 1)
      rank.peak_gpu_memory_bytes = std::max(rank.peak_gpu_memory_bytes.value_or(0), *held);
    if (ts && args.total_allocated && *args.total_allocated >= 0 && args.device_type.value_or(1) == 1)
      rank.gpu_memory.push_back(MemorySample{*ts, *args.total_allocated, args.total_reserved});
    return;
  }
  if (ph != "X") return;
  if (!pid) return;  // a text pid: profiler-internal spans ("Spans", "Traces")
  if (args.pg_ranks) {
    auto list = parse_rank_list(*args.pg_ranks);
    if (!list)
      throw InputError(path, describe(index, name),
                       "\"Process Group Ranks\" '" + args.pg_ranks->substr(0, 80) +
                           "' is not a list of distinct ranks from 0 to 2^20");
    args.group_ranks = list->truncated ? complete_rank_list(*list, args.rank_start, args.rank_stride, args.group_size)
                                       : std::move(list->ranks);
  }
  auto kind = kind_from_category(cat, name);
  if (!kind) return;
  if (*kind == EventKind::kPythonFunction && !options.keep_python_functions) return;
  if (!ts) throw InputError(path, describe(index, name), "complete event without \"ts\"");
  if (!dur) throw InputError(path, describe(index, name), "complete event without \"dur\"");
  if (*dur < 0) {
    throw InputError(path, describe(index, name),
                     "negative duration (dur=" + std::to_string(*dur / 1000.0) + " us)");
  }
  store_event(*kind, name, *ts, *dur, *pid, tid.value_or(0), args);
}

void KinetoReader::on_begin_end(bool begin, std::string_view cat, std::string_view name, std::optional<Nanos> ts,
                                std::optional<std::int64_t> pid, std::optional<std::int64_t> tid, RawArgs args,
                                std::uint64_t index) {
  if (!pid) return;  // a text pid: profiler-internal spans, as for complete events
  if (!ts) throw InputError(path, describe(index, name), std::string("\"") + (begin ? "B" : "E") + "\" event without \"ts\"");
  std::vector<OpenSpan>& stack = open_spans[{*pid, tid.value_or(0)}];
  if (begin) {
    stack.push_back(OpenSpan{std::string(cat), std::string(name), *ts, std::move(args)});
    return;
  }
  if (stack.empty()) {
    ++unmatched_ends;
    return;
  }
  OpenSpan open = std::move(stack.back());
  stack.pop_back();
  if (*ts < open.ts)
    throw InputError(path, describe(index, open.name), "\"E\" event before its \"B\" (negative duration)");
  const auto kind = kind_from_category(open.cat, open.name);
  if (!kind || (*kind == EventKind::kPythonFunction && !options.keep_python_functions)) return;
  store_event(*kind, open.name, open.ts, *ts - open.ts, *pid, tid.value_or(0), open.args);
}

void KinetoReader::store_event(EventKind kind, std::string_view name, Nanos ts, Nanos dur,
                               std::int64_t pid, std::int64_t tid, const RawArgs& a) {
  Event e;
  e.start = ts;
  e.dur = dur;
  e.name = strings.intern(name);
  e.kind = kind;
  e.correlation = a.correlation;
  e.external_id = a.external_id;
  const bool gpu_side = is_gpu_work(kind) || kind == EventKind::kSync || kind == EventKind::kGpuAnnotation;
  if (gpu_side) {
    const std::int64_t device = a.device.value_or(pid);
    const std::int64_t stream = a.stream.value_or(tid);
    e.resource = rank.intern_resource(ResourceKind::kGpuStream, device, kind == EventKind::kSync ? tid : stream);
  } else {
    e.resource = rank.intern_resource(ResourceKind::kCpuThread, pid, tid);
  }
  EventAttrs attrs;
  bool any = false;
  if (gpu_side) {
    attrs.device = a.device;
    attrs.stream = a.stream;
    attrs.grid = a.grid;
    attrs.block = a.block;
    attrs.bytes = a.bytes;
    if (a.occupancy_pct || a.blocks_per_sm || a.warps_per_sm)
      attrs.efficiency = KernelEfficiency{a.occupancy_pct, a.blocks_per_sm, a.warps_per_sm};
    any = true;
  }
  if (a.cbid) { attrs.cbid = a.cbid; any = true; }
  if (!a.input_dims.empty() || !a.input_types.empty()) {
    attrs.input_dims = a.input_dims;
    attrs.input_types = a.input_types;
    any = true;
  }
  if (a.sequence_number || a.fwd_thread_id) {
    attrs.sequence_number = a.sequence_number;
    attrs.fwd_thread_id = a.fwd_thread_id;
    any = true;
  }
  if (kind == EventKind::kCollective || a.collective_name) {
    CollectiveInfo c;
    c.op = a.collective_name ? collective_op_from_name(*a.collective_name) : std::string();
    if (c.op.empty() && a.collective_name) c.op = ascii_lower(*a.collective_name);
    if (c.op.empty()) c.op = collective_op_from_name(name);
    c.group_name = a.pg_name;
    c.group_desc = a.pg_desc;
    c.group_ranks = a.group_ranks;
    c.group_size = to_int_opt(a.group_size);
    c.in_nelems = a.in_nelems;
    c.out_nelems = a.out_nelems;
    c.dtype = a.dtype;
    attrs.collective = std::move(c);
    any = true;
  }
  if (kind == EventKind::kSync && a.sync_kind) {
    attrs.sync = SyncInfo{*a.sync_kind, a.stream, a.wait_on_stream, a.wait_on_event_record_corr};
    any = true;
  }
  if (any) {
    e.attrs = static_cast<std::uint32_t>(rank.attrs.size());
    rank.attrs.push_back(std::move(attrs));
  }
  rank.events.push_back(e);
  raw_pid_tid.emplace_back(pid, tid);
}

void KinetoReader::apply_flows() {
  const auto lacks_correlation = [](const Event& e) {
    return !e.correlation && (is_gpu_work(e.kind) || e.kind == EventKind::kRuntimeCall || e.kind == EventKind::kDriverCall);
  };
  if (flows.empty() || std::none_of(rank.events.begin(), rank.events.end(), lacks_correlation)) return;
  std::map<std::tuple<std::int64_t, std::int64_t, Nanos>, std::int64_t> by_place;
  for (const Flow& f : flows) by_place.emplace(std::make_tuple(f.pid, f.tid, f.ts), f.id);
  std::size_t joined = 0;
  for (std::size_t i = 0; i < rank.events.size(); ++i) {
    Event& e = rank.events[i];
    if (!lacks_correlation(e)) continue;
    auto it = by_place.find(std::make_tuple(raw_pid_tid[i].first, raw_pid_tid[i].second, e.start));
    if (it == by_place.end()) continue;
    e.correlation = it->second;
    ++joined;
  }
  if (joined > 0) log.info(path + ": " + std::to_string(joined) + " events joined through flow events (no correlation in args)");
}

// Sorts by (start, longer first), ties kept in file order, as a stable sort would; but through an
// index of 4 bytes per event, permuted in place, instead of a stable sort's buffer of half the
// events (36 bytes per event, at the peak of the import's memory).
void sort_events(std::vector<Event>& events) {
  std::vector<std::uint32_t> order(events.size());
  for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    const Event& x = events[a];
    const Event& y = events[b];
    if (x.start != y.start) return x.start < y.start;
    if (x.dur != y.dur) return x.dur > y.dur;
    return a < b;
  });
  // events[i] takes events[order[i]]: follow each cycle of the permutation once.
  for (std::uint32_t i = 0; i < order.size(); ++i) {
    if (order[i] == i) continue;
    Event held = events[i];
    std::uint32_t at = i;
    while (order[at] != i) {
      const std::uint32_t from = order[at];
      events[at] = events[from];
      order[at] = at;
      at = from;
    }
    events[at] = held;
    order[at] = at;
  }
}

void KinetoReader::finish() {
  std::size_t unmatched_begins = 0;
  for (const auto& [thread, stack] : open_spans) unmatched_begins += stack.size();
  if (unmatched_begins + unmatched_ends > 0)
    log.warn(path + ": " + std::to_string(unmatched_begins) + " \"B\" event(s) without their \"E\" and " +
             std::to_string(unmatched_ends) + " \"E\" event(s) without a \"B\" were dropped (a trace cut short?)");
  apply_flows();
  raw_pid_tid = {};  // read by apply_flows only; freed before the sort's peak
  const Nanos base = base_time.value_or(0);
  for (Event& e : rank.events) {
    e.start += base;  // both at most kMaxTraceNanos in magnitude: no overflow
    if (std::abs(e.start) > kMaxTraceNanos || std::abs(e.start + e.dur) > kMaxTraceNanos)
      throw InputError(path, "event '" + std::string(strings.view(e.name)).substr(0, 60) + "'",
                       "its time after baseTimeNanoseconds is beyond 3e18 ns");
  }
  for (MemorySample& m : rank.gpu_memory) m.at += base;  // into the events' clock (both within kMaxTraceNanos: no overflow)
  if (rank.rank_known && rank.world_size && rank.rank >= *rank.world_size)
    throw InputError(path, "distributedInfo", "rank " + std::to_string(rank.rank) + " of a " +
                                                  std::to_string(*rank.world_size) + "-rank job");
  sort_events(rank.events);
  if (const NcclRangeStats n = apply_nccl_ranges(rank, strings); n.alltoalls + n.sized > 0)
    log.info(path + ": " + std::to_string(n.alltoalls) + " SendRecv kernel(s) launched by nccl:all_to_all taken for " +
             "all-to-alls, " + std::to_string(n.sized) + " NCCL kernel(s) sized by their nccl:* range's inputs");
  for (Resource& r : rank.resources) {
    if (r.kind == ResourceKind::kGpuStream) {
      r.name = "stream " + std::to_string(r.tid);
      continue;
    }
    auto p = thread_names.find(r.pid);
    if (p != thread_names.end()) {
      auto t = p->second.find(r.tid);
      if (t != p->second.end()) { r.name = t->second; continue; }
    }
    r.name = "thread " + std::to_string(r.tid);
  }
}

TraceRank KinetoImporter::read(const std::string& path, StringTable& strings,
                               const ImportOptions& options, Logger& log) const {
  ByteSource source(path);
  KinetoReader reader{path, strings, options, log};
  reader.rank.file = path;
  reader.rank.format = "kineto";
  reader.reserve(source);
  JsonEventStream stream(source);
  static_assert(JsonEventStream::kPadding >= simdjson::SIMDJSON_PADDING);
  stream.run([&](std::string_view key, std::string_view raw) { reader.on_member(key, raw); },
             [&](std::string_view raw, std::uint64_t index) {
               reader.on_event(raw, index, raw.size() + JsonEventStream::kPadding);
             },
             [&](std::string_view available, std::uint64_t index) { return reader.try_event(available, index); });
  if (reader.events_seen == 0 && reader.execution_trace_nodes)
    throw InputError(path, "nodes",
                     "a PyTorch execution trace (host ET), not a profiler trace: give it to --comm-sizes, and the "
                     "rank's torch.profiler (Kineto) trace as the trace");
  reader.finish();
  return std::move(reader.rank);
}

}  // namespace

std::unique_ptr<Importer> make_kineto_importer() { return std::make_unique<KinetoImporter>(); }

}  // namespace dpro::trace
