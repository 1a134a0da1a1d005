#include "hw/device_spec.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "core/byte_source.h"
#include "core/error.h"
#include "core/install_layout.h"
#include "core/json_fields.h"

namespace dpro::hw {

const char* to_string(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "fp32";
    case DType::kTensorFloat32: return "tf32";
    case DType::kFloat16: return "fp16";
    case DType::kBFloat16: return "bf16";
    case DType::kFloat64: return "fp64";
    case DType::kInt8: return "int8";
    case DType::kFloat8: return "fp8";
  }
  return "?";
}

int dtype_bytes(DType dtype) {
  switch (dtype) {
    case DType::kFloat64: return 8;
    case DType::kFloat32:
    case DType::kTensorFloat32: return 4;
    case DType::kFloat16:
    case DType::kBFloat16: return 2;
    case DType::kInt8:
    case DType::kFloat8: return 1;
  }
  return 4;
}

namespace {
std::string normalise(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == ' ' || c == '_' || c == '-') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}
}  // namespace

std::optional<DType> parse_dtype(const std::string& text) {
  const std::string t = normalise(text);
  if (t == "float" || t == "float32" || t == "fp32" || t == "c10::float") return DType::kFloat32;
  if (t == "tf32") return DType::kTensorFloat32;
  if (t == "half" || t == "c10::half" || t == "float16" || t == "fp16") return DType::kFloat16;
  if (t == "bfloat16" || t == "c10::bfloat16" || t == "bf16") return DType::kBFloat16;
  if (t == "double" || t == "float64" || t == "fp64") return DType::kFloat64;
  if (t == "int8" || t == "char" || t == "signedchar") return DType::kInt8;
  if (t.rfind("float8", 0) == 0 || t.rfind("c10::float8", 0) == 0 || t == "fp8") return DType::kFloat8;
  return std::nullopt;
}

double DeviceSpec::peak_flops(DType dtype) const {
  auto listed = [&](DType d) {
    const auto it = peak_tflops.find(to_string(d));
    return it == peak_tflops.end() ? 0.0 : it->second * 1e12;
  };
  const double fp32 = listed(DType::kFloat32);
  if (dtype == DType::kFloat32) return fp32;  // every query of the fp32 data: one lookup
  const double own = listed(dtype);
  switch (dtype) {
    case DType::kFloat8:
      // fp8 where the GPU has none (before Hopper and Ada): the GEMM runs in 16 bits instead
      // (what Transformer Engine falls back to).
      if (own <= 0) return peak_flops(DType::kFloat16);
      [[fallthrough]];
    case DType::kTensorFloat32: case DType::kFloat16: case DType::kBFloat16:
      // Never below fp32: where a GPU's datasheet rate for a narrower float is lower (P4's fp16
      // at 1/64 rate) or absent (TF32 before Ampere), frameworks compute in fp32 (PyTorch's
      // GEMMs of fp16 accumulate in fp32, its elementwise kernels upcast to float).
      return std::max(own, fp32);
    default: return own > 0 ? own : fp32;
  }
}

double DeviceSpec::sustained_fp32_flops() const {
  return sustained_fp32_tflops ? *sustained_fp32_tflops * 1e12 : peak_flops(DType::kFloat32);
}

std::string DeviceSpec::model_family() const {
  auto dash = name.find('-');
  return dash == std::string::npos ? name : name.substr(0, dash);
}

DeviceSpec parse_device_spec(const std::string& json_text, const std::string& file) {
  nlohmann::json j = json_field::parse_json(json_text, file);
  if (!j.is_object()) throw InputError(file, "", "a device spec is a JSON object");
  DeviceSpec d;
  // Datasheet figures: at least 0.001 of their unit (1 MB, 1 MB/s, 1 kHz, 1 GFLOP/s; 1e-300 is
  // a typo too), or 1 for counts, and below bounds no GPU comes near (a larger figure is a typo,
  // and would overflow the integer fields or the predicted times).
  auto figure = [&](const nlohmann::json& obj, const std::string& prefix, const std::string& key, double max,
                    bool whole) {
    return json_field::required_number(obj, key, {whole ? 1.0 : 1e-3, max, whole}, file, prefix + key);
  };
  auto positive = [&](const std::string& key, double max, bool whole) { return figure(j, "", key, max, whole); };
  if (!j.contains("name") || !j["name"].is_string() || j["name"].get<std::string>().empty())
    throw InputError(file, "name", "missing");
  d.name = j["name"].get<std::string>();
  // Names are matched ignoring case, spaces, '_' and '-' (DeviceCatalog::find): one of those
  // alone would match any query written with them only.
  if (normalise(d.name).empty()) throw InputError(file, "name", "'" + d.name + "' has no letter or digit");
  if (j.contains("aliases")) {
    if (!j["aliases"].is_array()) throw InputError(file, "aliases", "must be a list of names");
    for (const auto& a : j["aliases"]) {
      if (!a.is_string()) throw InputError(file, "aliases", "must be a list of names, got " + a.dump());
      if (normalise(a.get<std::string>()).empty())
        throw InputError(file, "aliases", "'" + a.get<std::string>() + "' is not a name (no letter or digit)");
      d.aliases.push_back(a.get<std::string>());
    }
  }
  d.architecture = json_field::optional_string(j, "architecture", file, "architecture");
  d.memory_gb = positive("memory_gb", 1e5, false);
  d.memory_bandwidth_gbs = positive("memory_bandwidth_gbs", 1e6, false);
  d.sms = static_cast<int>(positive("sms", 1e5, true));
  d.fp32_cores_per_sm = static_cast<int>(positive("fp32_cores_per_sm", 1e4, true));
  d.boost_clock_mhz = positive("boost_clock_mhz", 1e5, false);
  d.l2_cache_mb = positive("l2_cache_mb", 1e5, false);
  d.power_limit_w = json_field::number(j, "power_limit_w", {1.0, 1e5, false, "W"}, file, "power_limit_w");
  if (!j.contains("peak_tflops") || !j["peak_tflops"].is_object() ||
      !j["peak_tflops"].contains("fp32"))
    throw InputError(file, "peak_tflops", "missing (needs at least fp32)");
  for (const auto& [k, v] : j["peak_tflops"].items())
    d.peak_tflops[k] = figure(j["peak_tflops"], "peak_tflops.", k, 1e6, false);
  if (j.contains("sustained_fp32_tflops")) {
    d.sustained_fp32_tflops = positive("sustained_fp32_tflops", 1e6, false);
    if (*d.sustained_fp32_tflops > d.peak_tflops["fp32"])
      throw InputError(file, "sustained_fp32_tflops", "above peak_tflops.fp32");
  }
  return d;
}

DeviceCatalog DeviceCatalog::load_directory(const std::string& directory) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(directory)) throw InputError(directory, "", "device spec directory not found");
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(directory))
    if (entry.path().extension() == ".json") files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw InputError(directory, "", "the device spec directory has no device files (*.json)");
  DeviceCatalog catalog;
  // Each name and alias (as find() compares them) -> the device and file that gave it: a second
  // file giving one would be shadowed by the first, silently.
  std::map<std::string, std::pair<std::string, std::string>> owner;
  for (const auto& f : files) {
    DeviceSpec spec = parse_device_spec(read_whole_file(f), f);
    std::vector<std::string> names = spec.aliases;
    names.insert(names.begin(), spec.name);
    for (const auto& name : names) {
      const auto [it, fresh] = owner.try_emplace(normalise(name), spec.name, f);
      if (fresh || (it->second.first == spec.name && it->second.second == f)) continue;
      throw InputError(f, (name == spec.name ? "name '" : "alias '") + name + "'",
                       it->second.first == spec.name
                           ? spec.name + " is defined in " + it->second.second + " too"
                           : "already names " + it->second.first + " in " + it->second.second +
                                 " (names and aliases are compared ignoring case, spaces, '_' and '-')");
    }
    catalog.add(std::move(spec));
  }
  return catalog;
}

std::string DeviceCatalog::default_directory() {
  return (install::resource_root() / "configs/devices").string();
}

void DeviceCatalog::add(DeviceSpec spec) { devices_.push_back(std::move(spec)); }

const DeviceSpec* DeviceCatalog::find(const std::string& name) const {
  const std::string key = normalise(name);
  for (const auto& d : devices_) {
    if (normalise(d.name) == key) return &d;
    for (const auto& a : d.aliases)
      if (normalise(a) == key) return &d;
  }
  return nullptr;
}

const DeviceSpec& DeviceCatalog::get(const std::string& name, const std::string& option) const {
  if (const DeviceSpec* d = find(name)) return *d;
  std::string message = "unknown device: no device specs are loaded";
  if (!devices_.empty()) {
    std::string known;
    for (const auto& n : names()) known += (known.empty() ? "" : ", ") + n;
    message = "unknown device; known devices: " + known +
              (option.empty() ? "" : " (`dpro-replay costmodel devices` describes them)");
  }
  if (option.empty()) throw InputError("", "device '" + name + "'", message);
  throw OptionError(option, name, message);
}

std::vector<std::string> DeviceCatalog::names() const {
  std::vector<std::string> out;
  for (const auto& d : devices_) out.push_back(d.name);
  return out;
}

}  // namespace dpro::hw
