#include "costmodel/roofline_share.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_fields.h"
#include "core/byte_source.h"
#include "core/stats.h"
#include "costmodel/kernel_time.h"
#include "costmodel/roofline.h"

namespace dpro::costmodel {

namespace {

bool elementwise(OpFamily f) { return f >= OpFamily::kAdd && f <= OpFamily::kTanh; }

double median_of(const std::map<std::string, double>& m) {
  std::vector<double> v;
  for (const auto& [k, x] : m) v.push_back(x);
  return median(v);
}

// Every bucket of `curve` gets a value (nearest filled neighbour), at most share 1, rising by at
// most kMaxShareSlope per decade: held from the large buckets down (their rows are many and
// kernel-bound), so that a small bucket's share is raised rather than a large one's lowered.
void regularise(std::vector<std::optional<double>>& raw, double width, ShareCurve& curve) {
  std::vector<double>& v = curve.log10_share;
  v.assign(raw.size(), 0);
  for (std::size_t i = 0; i < raw.size(); ++i) {
    std::size_t best = raw.size();
    for (std::size_t j = 0; j < raw.size(); ++j)
      if (raw[j] && (best == raw.size() || (j > i ? j - i : i - j) < (best > i ? best - i : i - best))) best = j;
    v[i] = std::min(0.0, *raw[best]);
  }
  for (std::size_t i = v.size() - 1; i > 0; --i) v[i - 1] = std::max(v[i - 1], v[i] - kMaxShareSlope * width);
}

}  // namespace

double share_roofline_ms(const OpDesc& op, const DeviceSpec& device) {
  if (!op.describable()) return 0;
  const double rate = op.dtype == DType::kFloat32 ? device.sustained_fp32_flops() : device.peak_flops(op.dtype);
  return std::max(op.flops() / rate, op.bytes() / device.bandwidth_bytes_per_s()) * 1e3;
}

std::pair<int, int> kernel_name_tile(const std::string& name) {
  auto digit = [&](std::size_t i) { return i < name.size() && name[i] >= '0' && name[i] <= '9'; };
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (!digit(i) || (i > 0 && digit(i - 1))) continue;
    std::size_t j = i;
    long a = 0, b = 0;
    while (digit(j) && a < 100000) a = a * 10 + (name[j++] - '0');
    if (j >= name.size() || name[j] != 'x') continue;
    std::size_t k = ++j;
    while (digit(k) && b < 100000) b = b * 10 + (name[k++] - '0');
    if (k > j && a >= 16 && b >= 16) return {static_cast<int>(a), static_cast<int>(b)};
  }
  return {0, 0};
}

std::string gemm_kernel_class(const std::string& kernel_name) {
  std::string s = kernel_name;
  if (s.rfind("void ", 0) == 0) s = s.substr(5);
  if (const auto k = s.find("cutlass::Kernel"); k != std::string::npos)  // Kernel<X>, Kernel2<X>
    if (const auto open = s.find('<', k); open != std::string::npos) s = s.substr(open + 1);
  if (const auto cut = s.find_first_of("(<>"); cut != std::string::npos) s = s.substr(0, cut);
  for (std::size_t i = s.find("_align"); i != std::string::npos; i = s.find("_align", i)) {
    std::size_t j = i + 6;
    if (j < s.size() && (s[j] == 'a' || s[j] == 'b' || s[j] == 'c')) ++j;
    if (j >= s.size() || s[j] < '0' || s[j] > '9') {
      ++i;
      continue;
    }
    while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
    s.erase(i, j - i);
  }
  return s;
}

std::string GemmWaves::form() const {
  std::string f = tile && wave ? "tile+wave" : tile ? "tile" : wave ? "wave" : "none";
  return conv_wave ? f + "+conv" : f;
}

double gemm_efficiency(const OpDesc& op, const DeviceSpec& device, const GemmWaves& form) {
  if (!op.describable()) return 1;
  const bool gemm = op.family == OpFamily::kBmm || op.family == OpFamily::kLinear;
  const bool conv = op.family == OpFamily::kConv2d;
  if (!(gemm && (form.tile || form.wave)) && !(conv && form.conv_wave)) return 1;
  const double slots = static_cast<double>(std::max(1, device.sms)) * std::max(1, form.blocks_per_sm);
  auto wave_eff = [&](double blocks) {
    blocks = std::max(1.0, blocks);
    return blocks / (std::ceil(blocks / slots) * slots);
  };
  const double grid_blocks =
      op.grid ? static_cast<double>((*op.grid)[0]) * (*op.grid)[1] * (*op.grid)[2] : 0.0;
  if (conv) return grid_blocks > 0 ? wave_eff(grid_blocks) : 1.0;
  const double b = static_cast<double>(op.dims[0]), m = static_cast<double>(op.dims[1]),
               n = static_cast<double>(op.dims[2]);
  auto [tm, tn] = kernel_name_tile(op.kernel_name);
  const bool named = tm > 0;
  if (!named && op.kernel_name.empty()) {  // the likely kernel
    tm = m >= 128 ? 128 : 64;
    tn = n >= 128 ? 128 : 64;
  }
  double tiles = 0, tile_eff = 1;
  if (tm > 0) {
    // The orientation that pads least (cuBLAS is column-major: its rows may be ours columns).
    const double a = std::ceil(m / tm) * std::ceil(n / tn), c = std::ceil(m / tn) * std::ceil(n / tm);
    tiles = b * std::min(a, c);
    tile_eff = b * m * n / (tiles * tm * tn);
  }
  double eff = 1;
  if (form.tile) eff *= tile_eff;
  if (form.wave) {
    double blocks = grid_blocks > 0 ? grid_blocks : tiles;
    if (grid_blocks <= 0 && !named && op.kernel_name.empty() && form.likely_split_k) blocks = std::max(blocks, slots);
    if (blocks > 0) eff *= wave_eff(blocks);
  }
  return std::clamp(eff, 1e-6, 1.0);
}

double ShareTable::roofline_ms(const OpDesc& op, const DeviceSpec& device) const {
  if (!gemm.any() || !op.describable()) return share_roofline_ms(op, device);
  // Padding costs arithmetic, not DRAM traffic: only the compute bound is divided.
  const double rate = op.dtype == DType::kFloat32 ? device.sustained_fp32_flops() : device.peak_flops(op.dtype);
  return std::max(op.flops() / rate / std::pow(gemm_efficiency(op, device, gemm), gemm.exponent), op.bytes() / device.bandwidth_bytes_per_s()) *
         1e3;
}

int intensity_bucket(double relative_intensity, double width) {
  return width > 0 ? static_cast<int>(std::lround(relative_intensity / width)) : 0;
}

double relative_intensity(const OpDesc& op, const DeviceSpec& device) {
  const double rate = op.dtype == DType::kFloat32 ? device.sustained_fp32_flops() : device.peak_flops(op.dtype);
  const double ai = arithmetic_intensity(op);
  const double x = ai > 0 ? std::log10(ai / (rate / device.bandwidth_bytes_per_s())) : -kIntensityLimit;
  return std::clamp(x, -kIntensityLimit, kIntensityLimit);  // NaN: stays NaN, lround of it is not used
}

double ShareMultiplier::at(double roofline_ms) const {
  const double x = std::clamp(std::log10(std::max(roofline_ms, 1e-12) * 1e3), lo, hi);
  return std::pow(10.0, log10_at_centre + slope * (x - centre));
}

double ShareTable::share(OpFamily family, double roofline_ms, double intensity) const {
  const auto it = families.find(family);
  if (it == families.end() || it->second.by_intensity.empty()) return kMaxShare;
  const auto& curves = it->second.by_intensity;
  const int key = std::isfinite(intensity) ? intensity_bucket(intensity, intensity_width) : 0;
  auto at = curves.lower_bound(key);  // the nearest bucket, the lower one on a tie
  if (at == curves.end() || (at != curves.begin() && at->first - key >= key - std::prev(at)->first)) --at;
  const ShareCurve& c = at->second;
  if (c.log10_share.empty()) return kMaxShare;
  const double x = std::log10(std::max(roofline_ms, 1e-12) * 1e3) / bucket_width - c.first;
  const double last = static_cast<double>(c.log10_share.size() - 1);
  double y;
  if (!(x > 0)) y = c.log10_share.front();  // NaN included
  else if (x >= last) y = c.log10_share.back();
  else {
    const auto i = static_cast<std::size_t>(x);
    const double t = x - static_cast<double>(i);
    y = c.log10_share[i] * (1 - t) + c.log10_share[i + 1] * t;
  }
  return std::min(kMaxShare, std::pow(10.0, y));
}

std::optional<double> ShareTable::kernel_ms(const OpDesc& op, const DeviceSpec& device) const {
  if (!op.describable()) return std::nullopt;
  const auto it = families.find(op.family);
  if (it == families.end()) return std::nullopt;
  const double r = roofline_ms(op, device);
  const auto m = share_multiplier.find(op.family);
  double scale = m == share_multiplier.end() ? 1.0 : m->second.at(r);
  if (!kernel_class_log10.empty() && (op.family == OpFamily::kBmm || op.family == OpFamily::kLinear) &&
      !op.kernel_name.empty())
    if (const auto c = kernel_class_log10.find(gemm_kernel_class(op.kernel_name)); c != kernel_class_log10.end())
      scale *= std::pow(10.0, c->second);
  return std::max(it->second.kernel_floor_ms, r / (scale * share(op.family, r, relative_intensity(op, device))));
}

std::optional<double> share_kernel_ratio(const ShareTable& table, const OpDesc& op, const DeviceSpec& origin,
                                         const DeviceSpec& target) {
  return share_kernel_ratio(table, table, op, origin, target);
}

std::optional<double> share_kernel_ratio(const ShareTable& origin_table, const ShareTable& target_table,
                                         const OpDesc& op, const DeviceSpec& origin, const DeviceSpec& target) {
  const auto o = origin_table.kernel_ms(op, origin);
  if (!o || !(*o > 0)) return std::nullopt;
  if (&origin == &target) return 1.0;
  const auto t = target_table.kernel_ms(op, target);
  if (!t || !(*t > 0)) return std::nullopt;
  return *t / *o;
}

std::optional<double> ShareTable::latency_ms(const OpDesc& op, const DeviceSpec& device) const {
  const auto k = kernel_ms(op, device);
  if (!k) return std::nullopt;
  return latency_around(op.family, *k);
}

double ShareTable::latency_around(OpFamily family, double kernel_ms) const {
  const auto f = families.find(family);
  const double h = f == families.end() ? 1.0 : f->second.host_factor;
  return std::max(h * host_floor_ms, h * host_overhead_ms + kernel_ms);
}

std::map<OpFamily, double> family_host_factors(const std::vector<const Measurement*>& data) {
  // GPU -> family -> latency less Kernel Time of each row that has both.
  std::map<std::string, std::map<OpFamily, std::vector<double>>> host;
  for (const Measurement* m : data)
    if (m->kernel_ms > 0 && m->latency_ms > 0) host[m->device->name][m->op.family].push_back(m->latency_ms - m->kernel_ms);
  std::map<OpFamily, std::vector<double>> per_gpu;
  for (const auto& [gpu, families] : host) {
    std::vector<double> reference;  // the elementwise families' medians
    for (const auto& [family, v] : families)
      if (elementwise(family) && v.size() >= kOverheadMinRows) reference.push_back(median(v));
    if (reference.empty() || !(median(reference) > 0)) continue;
    const double ref = median(reference);
    for (const auto& [family, v] : families)
      if (!elementwise(family) && v.size() >= kOverheadMinRows) per_gpu[family].push_back(median(v) / ref);
  }
  std::map<OpFamily, double> out;
  for (const auto& [family, v] : per_gpu)  // 4 digits: the table file holds what the fit used
    out[family] = std::stod(fmt::format("{:.4g}", std::clamp(median(v), kMinHostFactor, kMaxHostFactor)));
  return out;
}

ShareTable fit_share_table(const std::vector<const Measurement*>& data, const ShareFitOptions& options) {
  ShareTable t;
  t.bucket_width = options.bucket_width;
  t.gemm = options.gemm;
  t.gpu_host_overhead_ms = measurement_overheads_ms(data);
  if (t.gpu_host_overhead_ms.empty())
    throw InputError("", "data", "no GPU with enough large elementwise rows to fit a host overhead on");
  t.host_overhead_ms = median_of(t.gpu_host_overhead_ms);
  std::map<std::string, std::vector<double>> elementwise_ms;
  for (const Measurement* m : data)
    if (elementwise(m->op.family)) elementwise_ms[m->device->name].push_back(m->latency_ms);
  for (const auto& [gpu, v] : elementwise_ms) t.gpu_host_floor_ms[gpu] = quantile(v, options.floor_quantile);
  t.host_floor_ms = options.host_floor ? median_of(t.gpu_host_floor_ms) : 0;

  // Rows with a Kernel Time are GPU-timed: their kernel is that time, with no host figure taken
  // off. Where a family has such rows, a host-timed GPU's bucket whose latencies sit near its
  // machine's host floor measures the host rather than the kernel (its latency less an overhead
  // is mostly noise around the floor) and does not count; its buckets of larger ops still do. The
  // test is on the bucket's median latency, not row by row: keeping only a small op's slow rows
  // would keep exactly those the host slowed. A GPU with GPU-timed rows of a family gives only
  // those (its host-timed rows of that family measured the same kernels less well).
  std::map<OpFamily, std::set<std::string>> timed_gpus;
  std::map<OpFamily, double> host_factor;
  if (options.use_kernel_time && options.family_host) host_factor = family_host_factors(data);
  const auto factor = [&](OpFamily family) {
    const auto it = host_factor.find(family);
    return it == host_factor.end() ? 1.0 : it->second;
  };
  if (options.use_kernel_time)
    for (const Measurement* m : data)
      if (m->kernel_ms > 0) timed_gpus[m->op.family].insert(m->device->name);
  // family -> intensity bucket -> GPU -> time bucket -> log10(share) of its rows (and, for a
  // host-timed GPU of a family with GPU-timed rows, their latencies over the machine's host
  // floor); family -> GPU -> kernel parts (host-timed: latency less the machine's overhead;
  // GPU-timed: the Kernel Time).
  using Buckets = std::map<OpFamily, std::map<int, std::map<std::string, std::map<int, std::vector<double>>>>>;
  Buckets shares, over_floor;
  std::map<OpFamily, std::map<std::string, std::vector<double>>> kernel_parts, timed_parts;
  for (const Measurement* m : data) {
    const double r = t.roofline_ms(m->op, *m->device);
    if (!(r > 0)) continue;
    const std::string& gpu = m->device->name;
    const bool timed = options.use_kernel_time && m->kernel_ms > 0;
    const auto family_timed = timed_gpus.find(m->op.family);
    if (!timed && family_timed != timed_gpus.end() && family_timed->second.contains(gpu)) continue;
    double kernel = m->kernel_ms;
    const auto f = t.gpu_host_floor_ms.find(gpu);
    const double h = factor(m->op.family);
    if (!timed) {
      const auto c = t.gpu_host_overhead_ms.find(gpu);
      kernel = m->latency_ms - h * (c == t.gpu_host_overhead_ms.end() ? t.host_overhead_ms : c->second);
    }
    (timed ? timed_parts : kernel_parts)[m->op.family][gpu].push_back(std::max(0.0, kernel));
    if (!timed && f != t.gpu_host_floor_ms.end() && m->latency_ms < h * f->second * options.floor_margin) continue;
    if (!(kernel > 0)) continue;
    const int b = static_cast<int>(std::lround(std::log10(r * 1e3) / options.bucket_width));
    const int k = intensity_bucket(relative_intensity(m->op, *m->device), options.intensity_width);
    shares[m->op.family][k][gpu][b].push_back(std::log10(r / kernel));
    if (!timed && family_timed != timed_gpus.end())
      over_floor[m->op.family][k][gpu][b].push_back(f != t.gpu_host_floor_ms.end() && f->second > 0
                                                         ? m->latency_ms / (h * f->second)
                                                         : std::numeric_limits<double>::infinity());
  }
  // Host-timed buckets near the host floor in families with GPU-timed rows: out.
  for (auto& [family, by_intensity] : over_floor)
    for (auto& [key, gpus] : by_intensity)
      for (auto& [gpu, buckets] : gpus)
        for (auto& [b, v] : buckets)
          if (median(v) < options.timed_floor_margin) shares[family][key][gpu].erase(b);
  for (const auto& [family, by_intensity] : shares)
    for (const auto& [key, gpus] : by_intensity)
      for (const auto& [gpu, buckets] : gpus)
        for (const auto& [b, v] : buckets)
          if (v.size() >= options.min_rows) t.curve_gpus[gpu].insert(family);
  t.intensity_width = options.intensity_width;
  for (const auto& [family, by_intensity] : shares)
    for (const auto& [key, gpus] : by_intensity) {
    int lo = 1 << 20, hi = -(1 << 20);
    for (const auto& [gpu, buckets] : gpus)
      for (const auto& [b, v] : buckets)
        if (v.size() >= options.min_rows) lo = std::min(lo, b), hi = std::max(hi, b);
    if (lo > hi) continue;
    // Each GPU's largest bucket with rows enough: beyond it, with hold_large, the GPU counts at
    // that bucket's share (a kernel larger than any it ran sustains what its largest did), so
    // that the large end of the curve is not the median of the few GPUs that reach it alone.
    std::map<std::string, std::pair<int, double>> largest;  // GPU -> (its largest bucket, its share)
    if (options.hold_large)
      for (const auto& [gpu, buckets] : gpus)
        for (auto it = buckets.rbegin(); it != buckets.rend(); ++it)
          if (it->second.size() >= options.min_rows) {
            largest[gpu] = {it->first, median(it->second)};
            break;
          }
    std::vector<std::optional<double>> raw(static_cast<std::size_t>(hi - lo + 1));
    for (int b = lo; b <= hi; ++b) {
      std::vector<double> per_gpu;
      for (const auto& [gpu, buckets] : gpus) {
        const auto it = buckets.find(b);
        if (it != buckets.end() && it->second.size() >= options.min_rows) per_gpu.push_back(median(it->second));
        else if (const auto held = largest.find(gpu); held != largest.end() && b > held->second.first)
          per_gpu.push_back(held->second.second);
      }
      if (!per_gpu.empty()) raw[static_cast<std::size_t>(b - lo)] = median(per_gpu);
    }
    ShareCurve& curve = t.families[family].by_intensity[key];
    curve.first = lo;
    regularise(raw, options.bucket_width, curve);
  }
  // A kernel's floor: what the fastest elementwise ops leave above their machine's overhead
  // (median over the machines), lower for a family whose fastest rows are faster still; a family
  // measured only on large ops (linear, conv) does not make its smallest op its floor. Where
  // GPU-timed rows exist, the floor is measured instead: the fastest elementwise kernels' GPU
  // time (median over the GPUs that timed them), and a family's own from its GPU-timed rows.
  std::vector<double> machine_floors;
  std::map<std::string, std::vector<double>> timed_elementwise;
  for (const auto& [family, gpus] : timed_parts)
    if (elementwise(family))
      for (const auto& [gpu, v] : gpus) timed_elementwise[gpu].insert(timed_elementwise[gpu].end(), v.begin(), v.end());
  if (!timed_elementwise.empty()) {
    for (const auto& [gpu, v] : timed_elementwise) machine_floors.push_back(quantile(v, options.floor_quantile));
  } else {
    for (const auto& [gpu, floor] : t.gpu_host_floor_ms) {
      const auto c = t.gpu_host_overhead_ms.find(gpu);
      machine_floors.push_back(
          std::max(0.0, floor - (c == t.gpu_host_overhead_ms.end() ? t.host_overhead_ms : c->second)));
    }
  }
  const double kernel_floor = median(machine_floors);
  for (auto& [family, f] : t.families) {
    const auto timed = timed_parts.find(family);
    const auto& parts = timed != timed_parts.end() ? timed->second : kernel_parts[family];
    std::vector<double> floors;
    for (const auto& [gpu, v] : parts) floors.push_back(quantile(v, options.floor_quantile));
    f.kernel_floor_ms = std::min(kernel_floor, median(floors));
  }
  for (const auto& [family, gpus] : timed_gpus) t.gpu_timed.insert(gpus.begin(), gpus.end());
  for (auto& [family, f] : t.families) f.host_factor = factor(family);
  return t;
}

std::string share_table_to_json(const ShareTable& t) {
  nlohmann::ordered_json j;
  j["format"] = "dpro roofline-share table 1";
  j["provenance"] = t.provenance;
  j["bucket_width_decades"] = t.bucket_width;
  j["intensity_width_decades"] = t.intensity_width;
  if (t.gemm.any()) {
    j["gemm_efficiency"]["tile"] = t.gemm.tile;
    j["gemm_efficiency"]["wave"] = t.gemm.wave;
    j["gemm_efficiency"]["conv_wave"] = t.gemm.conv_wave;
    j["gemm_efficiency"]["blocks_per_sm"] = t.gemm.blocks_per_sm;
    j["gemm_efficiency"]["exponent"] = t.gemm.exponent;
    j["gemm_efficiency"]["likely_split_k"] = t.gemm.likely_split_k;
  }
  j["host_overhead_ms"] = t.host_overhead_ms;
  j["host_floor_ms"] = t.host_floor_ms;
  j["training_gpus"] = nlohmann::ordered_json::object();
  for (const auto& [gpu, ms] : t.gpu_host_overhead_ms) {
    j["training_gpus"][gpu]["host_overhead_ms"] = ms;
    const auto f = t.gpu_host_floor_ms.find(gpu);
    if (f != t.gpu_host_floor_ms.end()) j["training_gpus"][gpu]["host_floor_ms"] = f->second;
    if (t.gpu_timed.contains(gpu)) j["training_gpus"][gpu]["kernel_time"] = true;
  }
  if (!t.curve_gpus.empty()) {
    j["curve_gpus"] = nlohmann::ordered_json::object();
    for (const auto& [gpu, families] : t.curve_gpus) {
      j["curve_gpus"][gpu] = nlohmann::ordered_json::array();
      for (OpFamily f : families) j["curve_gpus"][gpu].push_back(to_string(f));
    }
  }
  j["families"] = nlohmann::ordered_json::object();
  for (const auto& [family, fs] : t.families) {
    auto& f = j["families"][to_string(family)];
    f["kernel_floor_ms"] = fs.kernel_floor_ms;
    if (fs.host_factor != 1) f["host_factor"] = fs.host_factor;  // absent: 1 (tables before it)
    f["curves"] = nlohmann::ordered_json::array();
    for (const auto& [key, c] : fs.by_intensity) {
      nlohmann::ordered_json curve;
      curve["intensity_log10"] = key * t.intensity_width;
      curve["first_bucket_log10_us"] = c.first * t.bucket_width;
      std::vector<double> share;
      for (double y : c.log10_share) share.push_back(std::stod(fmt::format("{:.5g}", std::pow(10.0, y))));
      curve["share"] = share;
      f["curves"].push_back(curve);
    }
  }
  return j.dump(2) + "\n";
}

ShareTable share_table_from_json(const std::string& text, const std::string& file) {
  nlohmann::json j = json_field::parse_json(text, file, "", "not JSON");
  if (!j.is_object()) throw InputError(file, "", "a share table is a JSON object");
  auto number = [&](const nlohmann::json& obj, const std::string& key, const std::string& item, double lo,
                    double hi) { return json_field::required_number(obj, key, {lo, hi}, file, item); };
  // A family by its exact name (to_string's), else "unknown op family" + `shown` at `item`.
  auto family_named = [&](const std::string& name, const std::string& item, const std::string& shown) {
    const OpFamily family = family_from_name(name);
    if (family == OpFamily::kUnknown || to_string(family) != name) throw InputError(file, item, "unknown op family" + shown);
    return family;
  };
  ShareTable t;
  if (j.contains("provenance") && j["provenance"].is_string()) t.provenance = j["provenance"].get<std::string>();
  t.bucket_width = number(j, "bucket_width_decades", "bucket_width_decades", 0.01, 10);
  t.intensity_width = number(j, "intensity_width_decades", "intensity_width_decades", 0, 10);
  t.host_overhead_ms = number(j, "host_overhead_ms", "host_overhead_ms", 0, 1e3);
  if (j.contains("gemm_efficiency")) {
    const auto& g = j["gemm_efficiency"];
    if (!g.is_object()) throw InputError(file, "gemm_efficiency", "must be an object");
    for (const char* key : {"tile", "wave", "conv_wave"}) {
      if (!g.contains(key) || !g[key].is_boolean())
        throw InputError(file, std::string("gemm_efficiency.") + key, "missing (true or false)");
    }
    t.gemm.tile = g["tile"].get<bool>();
    t.gemm.wave = g["wave"].get<bool>();
    t.gemm.conv_wave = g["conv_wave"].get<bool>();
    t.gemm.blocks_per_sm =
        static_cast<int>(number(g, "blocks_per_sm", "gemm_efficiency.blocks_per_sm", 1, 64));
    t.gemm.exponent = number(g, "exponent", "gemm_efficiency.exponent", 0, 4);
    if (g.contains("likely_split_k")) {
      if (!g["likely_split_k"].is_boolean())
        throw InputError(file, "gemm_efficiency.likely_split_k", "must be true or false");
      t.gemm.likely_split_k = g["likely_split_k"].get<bool>();
    }
  }
  t.host_floor_ms = number(j, "host_floor_ms", "host_floor_ms", 0, 1e3);
  if (j.contains("training_gpus") && j["training_gpus"].is_object())
    for (const auto& [gpu, g] : j["training_gpus"].items()) {
      if (!g.is_object()) throw InputError(file, "training_gpus." + gpu, "must be an object");
      t.gpu_host_overhead_ms[gpu] = number(g, "host_overhead_ms", "training_gpus." + gpu + ".host_overhead_ms", 0, 1e3);
      if (g.contains("host_floor_ms"))
        t.gpu_host_floor_ms[gpu] = number(g, "host_floor_ms", "training_gpus." + gpu + ".host_floor_ms", 0, 1e3);
      if (g.contains("kernel_time")) {
        if (!g["kernel_time"].is_boolean())
          throw InputError(file, "training_gpus." + gpu + ".kernel_time", "must be true or false");
        if (g["kernel_time"].get<bool>()) t.gpu_timed.insert(gpu);
      }
    }
  if (j.contains("curve_gpus")) {
    if (!j["curve_gpus"].is_object()) throw InputError(file, "curve_gpus", "must be an object of GPUs' family lists");
    for (const auto& [gpu, families] : j["curve_gpus"].items()) {
      const std::string item = "curve_gpus." + gpu;
      if (!families.is_array()) throw InputError(file, item, "must be a list of op families");
      auto& set = t.curve_gpus[gpu];
      for (const auto& name : families) {
        if (!name.is_string()) throw InputError(file, item, "unknown op family " + name.dump());
        set.insert(family_named(name.get<std::string>(), item, " " + name.dump()));
      }
    }
  }
  if (!j.contains("families") || !j["families"].is_object() || j["families"].empty())
    throw InputError(file, "families", "missing (an object of op families, each with its share curve)");
  for (const auto& [name, f] : j["families"].items()) {
    const std::string item = "families." + name;
    const OpFamily family = family_named(name, item, "");
    if (!f.is_object()) throw InputError(file, item, "must be an object");
    FamilyShares fs;
    fs.kernel_floor_ms = number(f, "kernel_floor_ms", item + ".kernel_floor_ms", 0, 1e3);
    if (f.contains("host_factor"))
      fs.host_factor = number(f, "host_factor", item + ".host_factor", kMinHostFactor, kMaxHostFactor);
    if (!f.contains("curves") || !f["curves"].is_array() || f["curves"].empty())
      throw InputError(file, item + ".curves", "missing (a list of share curves)");
    for (std::size_t n = 0; n < f["curves"].size(); ++n) {
    const std::string citem = item + ".curves[" + std::to_string(n) + "]";
    const auto& cj = f["curves"][n];
    if (!cj.is_object()) throw InputError(file, citem, "must be an object");
    ShareCurve c;
    const double intensity = number(cj, "intensity_log10", citem + ".intensity_log10", -kIntensityLimit, kIntensityLimit);
    const int key = t.intensity_width > 0 ? static_cast<int>(std::lround(intensity / t.intensity_width)) : 0;
    if (t.intensity_width > 0 ? std::abs(key * t.intensity_width - intensity) > 1e-9 : intensity != 0)
      throw InputError(file, citem + ".intensity_log10", "not a multiple of intensity_width_decades");
    const double first = number(cj, "first_bucket_log10_us", citem + ".first_bucket_log10_us", -12, 12);
    c.first = static_cast<int>(std::lround(first / t.bucket_width));
    if (std::abs(c.first * t.bucket_width - first) > 1e-9)
      throw InputError(file, citem + ".first_bucket_log10_us", "not a multiple of bucket_width_decades");
    if (!cj.contains("share") || !cj["share"].is_array() || cj["share"].empty())
      throw InputError(file, citem + ".share", "missing (a list of shares in [1e-6, 1])");
    for (std::size_t i = 0; i < cj["share"].size(); ++i) {
      const auto& s = cj["share"][i];
      if (!s.is_number() || !(s.get<double>() >= kMinShare && s.get<double>() <= kMaxShare))
        throw InputError(file, citem + ".share[" + std::to_string(i) + "]",
                         "must be a number in [1e-6, 1], got " + s.dump());
      c.log10_share.push_back(std::log10(s.get<double>()));
      // A steeper rise would make a larger op of the family faster (1e-3: the file's 5 digits).
      if (i > 0 && c.log10_share[i] - c.log10_share[i - 1] > kMaxShareSlope * t.bucket_width + 1e-3)
        throw InputError(file, citem + ".share[" + std::to_string(i) + "]",
                         "rises faster than its roofline time (more than " + std::to_string(kMaxShareSlope) +
                             " decades of share per decade)");
    }
    if (!fs.by_intensity.emplace(key, std::move(c)).second)
      throw InputError(file, citem + ".intensity_log10", "a second curve for the same intensity");
    }
    t.families[family] = std::move(fs);
  }
  return t;
}

ShareTable load_share_table(const std::string& path) { return share_table_from_json(read_whole_file(path), path); }

std::optional<Nanos> RooflineShareModel::predict(const OpDesc& op, const DeviceSpec& device) const {
  const auto ms = host_timed_ ? table_.latency_ms(op, device) : table_.kernel_ms(op, device);
  if (!ms) return std::nullopt;
  return millis_to_nanos(*ms);
}

}  // namespace dpro::costmodel
