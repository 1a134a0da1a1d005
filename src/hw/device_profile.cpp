#include "hw/device_profile.h"

#include <nlohmann/json.hpp>

#include <string>

#include "core/byte_source.h"
#include "core/error.h"
#include "core/json_fields.h"
#include "core/output_file.h"

namespace dpro::hw {
namespace {

using nlohmann::json;
namespace jf = json_field;

constexpr const char* kFormat = "dpro-device-profile";
constexpr int kVersion = 1;

// Bounds wide enough for any GPU of the next decades, narrow enough to catch a unit mistake
// (seconds where ns belong stay legal, a negative time or a NaN does not).
constexpr jf::Range kNanosRange{0, 1e15, true, "ns"};
constexpr jf::Range kCountRange{0, 1e15, true};
constexpr jf::Range kRateRange{0, 1e9};
constexpr jf::Range kSignedNanos{-1e15, 1e15, true, "ns"};
constexpr jf::Range kPctRange{-1e9, 1e9, false, "%"};

json launch_json(const LaunchCost& l) {
  return {{"gpu_ns_per_launch", l.gpu_ns_per_launch}, {"host_ns_per_launch", l.host_ns_per_launch},
          {"launches", l.launches}};
}

json copy_json(const CopyCurve& c) {
  json samples = json::array();
  for (const CopySample& s : c.samples) samples.push_back({{"bytes", s.bytes}, {"ns", s.ns}});
  return {{"kind", to_string(c.kind)}, {"latency_ns", c.latency_ns}, {"bandwidth_gbps", c.bandwidth_gbps},
          {"samples", samples}};
}

json gemm_json(const GemmSample& g) {
  return {{"m", g.m},
          {"n", g.n},
          {"k", g.k},
          {"batch", g.batch},
          {"dtype", to_string(g.dtype)},
          {"math", to_string(g.math)},
          {"ns", g.ns},
          {"tflops", g.tflops}};
}

json kernel_json(const KernelCurve& c) {
  json samples = json::array();
  for (const KernelSample& s : c.samples) samples.push_back({{"elements", s.elements}, {"ns", s.ns}});
  return {{"kernel", c.kernel},
          {"param", c.param},
          {"latency_ns", c.latency_ns},
          {"ns_per_element", c.ns_per_element},
          {"samples", samples}};
}

json standin_json(const StandinError& s) {
  return {{"blocks", s.blocks},           {"threads", s.threads},   {"requested_ns", s.requested_ns},
          {"measured_ns", s.measured_ns}, {"error_ns", s.error_ns},
          {"error_pct", s.error_pct}};
}

// Reading: each helper names the key it checks, as "copies[1].samples[0].bytes".
struct Reader {
  const std::string& file;

  const json& object(const json& parent, const std::string& key, const std::string& item) const {
    if (!parent.contains(key)) throw InputError(file, item, "missing: an object");
    if (!parent[key].is_object()) throw InputError(file, item, "must be an object, got " + parent[key].dump());
    return parent[key];
  }
  const json& array(const json& parent, const std::string& key, const std::string& item) const {
    static const json kEmpty = json::array();
    if (!parent.contains(key)) return kEmpty;  // a table with no rows may be left out
    if (!parent[key].is_array()) throw InputError(file, item, "must be an array, got " + parent[key].dump());
    return parent[key];
  }
  void require_object(const json& row, const std::string& item) const {
    if (!row.is_object()) throw InputError(file, item, "must be an object, got " + row.dump());
  }
  std::string string(const json& obj, const std::string& key, const std::string& item) const {
    std::string s = jf::optional_string(obj, key, file, item);
    if (s.empty()) throw InputError(file, item, "missing: a string");
    return s;
  }
  double number(const json& obj, const std::string& key, const jf::Range& range, const std::string& prefix) const {
    return jf::required_number(obj, key, range, file, prefix + key);
  }
  std::int64_t whole(const json& obj, const std::string& key, const jf::Range& range, const std::string& prefix) const {
    return static_cast<std::int64_t>(number(obj, key, range, prefix));
  }
};

CopyDirection copy_kind(const std::string& text, const std::string& file, const std::string& item) {
  for (CopyDirection k : {CopyDirection::kHostToDevice, CopyDirection::kDeviceToHost, CopyDirection::kDeviceToDevice}) {
    if (text == to_string(k)) return k;
  }
  throw InputError(file, item, "must be \"h2d\", \"d2h\" or \"d2d\", got \"" + text + "\"");
}

DType gemm_dtype(const std::string& text, const std::string& file, const std::string& item) {
  for (DType t : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64}) {
    if (text == to_string(t)) return t;
  }
  throw InputError(file, item, "must be \"fp32\", \"fp16\", \"bf16\" or \"fp64\", got \"" + text + "\"");
}

GemmMath math_mode(const std::string& text, const std::string& file, const std::string& item) {
  if (text == "default") return GemmMath::kDefault;
  if (text == "tf32") return GemmMath::kTF32;
  throw InputError(file, item, "must be \"default\" or \"tf32\", got \"" + text + "\"");
}

void check_header(const json& j, const Reader& r) {
  if (!j.is_object()) throw InputError(r.file, "", "not a device profile: the file holds no JSON object");
  const std::string format = jf::optional_string(j, "format", r.file, "format");
  if (format != kFormat) {
    throw InputError(r.file, "format", "not a device profile: expected \"" + std::string(kFormat) + "\", got " +
                                           (j.contains("format") ? j["format"].dump() : std::string("nothing")));
  }
  const int version = static_cast<int>(r.whole(j, "version", {1, 1e6, true}, ""));
  if (version > kVersion) {
    throw InputError(r.file, "version",
                     "version " + std::to_string(version) + " is newer than this dpro reads (" +
                         std::to_string(kVersion) + ")");
  }
}

LaunchCost read_launch(const json& j, const Reader& r) {
  const json& l = r.object(j, "launch", "launch");
  LaunchCost out;
  out.gpu_ns_per_launch = r.number(l, "gpu_ns_per_launch", kRateRange, "launch.");
  out.host_ns_per_launch = r.number(l, "host_ns_per_launch", kRateRange, "launch.");
  out.launches = static_cast<int>(r.whole(l, "launches", {0, 1e9, true}, "launch."));
  return out;
}

CopyCurve read_copy(const json& c, const Reader& r, const std::string& at) {
  r.require_object(c, at);
  CopyCurve out;
  out.kind = copy_kind(r.string(c, "kind", at + ".kind"), r.file, at + ".kind");
  out.latency_ns = r.number(c, "latency_ns", kRateRange, at + ".");
  out.bandwidth_gbps = r.number(c, "bandwidth_gbps", kRateRange, at + ".");
  const json& samples = r.array(c, "samples", at + ".samples");
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const std::string s_at = at + ".samples[" + std::to_string(i) + "]";
    r.require_object(samples[i], s_at);
    out.samples.push_back({static_cast<std::uint64_t>(r.whole(samples[i], "bytes", kCountRange, s_at + ".")),
                           r.whole(samples[i], "ns", kNanosRange, s_at + ".")});
  }
  return out;
}

GemmSample read_gemm(const json& g, const Reader& r, const std::string& at) {
  r.require_object(g, at);
  GemmSample out;
  const std::string p = at + ".";
  out.m = r.whole(g, "m", {1, 1e9, true}, p);
  out.n = r.whole(g, "n", {1, 1e9, true}, p);
  out.k = r.whole(g, "k", {1, 1e9, true}, p);
  out.batch = r.whole(g, "batch", {1, 1e9, true}, p);
  out.dtype = gemm_dtype(r.string(g, "dtype", p + "dtype"), r.file, p + "dtype");
  out.math = math_mode(r.string(g, "math", p + "math"), r.file, p + "math");
  out.ns = r.whole(g, "ns", kNanosRange, p);
  out.tflops = r.number(g, "tflops", kRateRange, p);
  return out;
}

KernelCurve read_kernel(const json& c, const Reader& r, const std::string& at) {
  r.require_object(c, at);
  KernelCurve out;
  const std::string p = at + ".";
  out.kernel = r.string(c, "kernel", p + "kernel");
  out.param = r.number(c, "param", kRateRange, p);
  out.latency_ns = r.number(c, "latency_ns", kRateRange, p);
  out.ns_per_element = r.number(c, "ns_per_element", kRateRange, p);
  const json& samples = r.array(c, "samples", p + "samples");
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const std::string s_at = p + "samples[" + std::to_string(i) + "]";
    r.require_object(samples[i], s_at);
    out.samples.push_back({r.whole(samples[i], "elements", kCountRange, s_at + "."),
                           r.whole(samples[i], "ns", kNanosRange, s_at + ".")});
  }
  return out;
}

StandinError read_standin(const json& s, const Reader& r, const std::string& at) {
  r.require_object(s, at);
  const std::string p = at + ".";
  StandinError e;
  e.blocks = static_cast<std::uint32_t>(r.whole(s, "blocks", {1, 4294967295.0, true}, p));
  e.threads = static_cast<std::uint32_t>(r.whole(s, "threads", {1, 1024, true}, p));
  e.requested_ns = r.whole(s, "requested_ns", kNanosRange, p);
  e.measured_ns = r.whole(s, "measured_ns", kNanosRange, p);
  e.error_ns = r.whole(s, "error_ns", kSignedNanos, p);
  e.error_pct = r.number(s, "error_pct", kPctRange, p);
  return e;
}

// Calls read(row, reader, "key[i]") for each row of the table `key`.
template <typename Row, typename Read>
std::vector<Row> read_table(const json& j, const std::string& key, const Reader& r, Read read) {
  std::vector<Row> rows;
  const json& table = r.array(j, key, key);
  for (std::size_t i = 0; i < table.size(); ++i) rows.push_back(read(table[i], r, key + "[" + std::to_string(i) + "]"));
  return rows;
}

}  // namespace

const char* to_string(CopyDirection direction) {
  switch (direction) {
    case CopyDirection::kHostToDevice: return "h2d";
    case CopyDirection::kDeviceToHost: return "d2h";
    case CopyDirection::kDeviceToDevice: return "d2d";
  }
  return "?";
}

const char* to_string(GemmMath math) { return math == GemmMath::kTF32 ? "tf32" : "default"; }

std::string device_profile_json(const DeviceProfile& p) {
  json j = {{"format", kFormat}, {"version", kVersion}, {"device", p.device}, {"date", p.date},
            {"repetitions", p.repetitions}, {"warmup", p.warmup}, {"launch", launch_json(p.launch)}};
  json& copies = j["copies"] = json::array();
  for (const CopyCurve& c : p.copies) copies.push_back(copy_json(c));
  json& gemms = j["gemms"] = json::array();
  for (const GemmSample& g : p.gemms) gemms.push_back(gemm_json(g));
  json& kernels = j["kernels"] = json::array();
  for (const KernelCurve& c : p.kernels) kernels.push_back(kernel_json(c));
  json& standin = j["standin"] = json::array();
  for (const StandinError& s : p.standin) standin.push_back(standin_json(s));
  return dump_output_json(j, 2) + "\n";
}

DeviceProfile parse_device_profile(const std::string& text, const std::string& file) {
  json j = json_field::parse_json(text, file);  // nested too deep is refused before any value is dumped
  const Reader r{file};
  check_header(j, r);
  DeviceProfile p;
  p.device = r.string(j, "device", "device");
  p.date = r.string(j, "date", "date");
  p.repetitions = static_cast<int>(r.whole(j, "repetitions", {1, 1e6, true}, ""));
  p.warmup = static_cast<int>(r.whole(j, "warmup", {0, 1e6, true}, ""));
  p.launch = read_launch(j, r);
  p.copies = read_table<CopyCurve>(j, "copies", r, read_copy);
  p.gemms = read_table<GemmSample>(j, "gemms", r, read_gemm);
  p.kernels = read_table<KernelCurve>(j, "kernels", r, read_kernel);
  p.standin = read_table<StandinError>(j, "standin", r, read_standin);
  return p;
}

DeviceProfile read_device_profile(const std::string& path) {
  reject_directory(path, "a device profile (JSON)");
  const std::string text = read_whole_file(path);  // InputError when it cannot be read
  note_opened_input(path);
  return parse_device_profile(text, path);
}

void write_device_profile(const std::string& path, const DeviceProfile& profile, bool replace) {
  const std::string text = device_profile_json(profile);
  write_output(path, [&](std::ostream& out) { out << text; }, replace);
}

namespace {

// A GPU name as the reason shows it: the catalog's name, or the name given and why it is not one.
std::string shown(const std::string& name, const DeviceSpec* spec) {
  if (spec) return spec->name;
  if (name.empty()) return "no named GPU";
  return "'" + name + "', a GPU the catalog does not know";
}

}  // namespace

std::optional<std::string> profile_mismatch(const DeviceProfile& profile, const PricedGpu& priced,
                                            const DeviceCatalog& catalog) {
  const DeviceSpec* profiled = profile.device.empty() ? nullptr : catalog.find(profile.device);
  const auto reason = [&](const std::string& gpu, const std::string& where) {
    return "profiled on " + shown(profile.device, profiled) + ", but the work is priced on " + gpu + " (" + where +
           "): calibrate that GPU, or leave out --device-profile";
  };
  if (!priced.device.empty()) {
    const DeviceSpec& target = catalog.get(priced.device, "device");
    if (!profiled || profiled != &target) return reason(target.name, "--device");
    return std::nullopt;
  }
  if (priced.trace_gpus.empty()) return reason("no named GPU", "the trace records none: name it with --device");
  for (const std::string& gpu : priced.trace_gpus) {
    const DeviceSpec* spec = gpu.empty() ? nullptr : catalog.find(gpu);
    if (!profiled || spec != profiled) return reason(shown(gpu, spec), "the trace's GPU");
  }
  return std::nullopt;
}

const DeviceSpec& require_profile_applies(const std::string& path, const DeviceProfile& profile,
                                          const PricedGpu& priced, const DeviceCatalog& catalog) {
  if (const auto why = profile_mismatch(profile, priced, catalog)) throw InputError(path, "device", *why);
  // It applies: the profile's GPU is the priced one.
  return *catalog.find(profile.device);
}

}  // namespace dpro::hw
