#include "costmodel/config_memory.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "core/error.h"
#include "core/hash.h"

namespace dpro::costmodel {
namespace {

constexpr double kShrinkGrid[] = {0.0, 0.5, 1.0, 2.0, 4.0, 8.0};
constexpr std::size_t kMinPairsPerFamily = 50;
// Entries whose factor would move a prediction by less than this (in log units) are not kept.
constexpr double kMinEffect = 0.002;
constexpr char kBlobMagic[4] = {'D', 'C', 'M', '1'};

// The log factor of a mean residual over n GPUs: weight x n / (n + shrinkage) x mean.
double shrunk(double weight, double shrinkage, double n, double mean) { return weight * n / (n + shrinkage) * mean; }

void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_f32(std::string& out, float f) {
  std::uint32_t v;
  static_assert(sizeof v == sizeof f);
  std::memcpy(&v, &f, sizeof v);
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

struct Reader {
  const std::string& blob;
  const std::string& path;
  std::size_t at = 0;
  void need(std::size_t n) {
    if (blob.size() - at < n) throw InputError(path, "memory", "truncated configuration memory");
  }
  std::uint64_t u64() {
    need(8);
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(blob[at + i])) << (8 * i);
    at += 8;
    return v;
  }
  float f32() {
    need(4);
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(static_cast<unsigned char>(blob[at + i])) << (8 * i);
    at += 4;
    float f;
    std::memcpy(&f, &v, sizeof f);
    return f;
  }
  std::uint8_t u8() {
    need(1);
    return static_cast<std::uint8_t>(blob[at++]);
  }
};

}  // namespace

std::uint64_t ConfigMemory::key_of(const OpDesc& op) {
  // FNV-1a over the fields of op_key() (family, dims, dtype) as fixed-width integers: no
  // string is built per query.
  Fnv1a h;
  h.add(static_cast<std::uint64_t>(op.family));
  h.add(op.dims.size());
  for (auto d : op.dims) h.add(static_cast<std::uint64_t>(d));
  h.add(static_cast<std::uint64_t>(op.dtype));
  return h.value;
}

ConfigMemory ConfigMemory::build(const std::vector<const Measurement*>& rows, const std::vector<double>& predicted_ms) {
  // Per configuration: its family and, per GPU, the sum and count of its log residuals.
  struct PerGpu {
    int gpu;
    double sum;
    int n;
    double mean() const { return sum / n; }
  };
  struct Config {
    OpFamily family;
    std::vector<PerGpu> gpus;
    double sum_of_means() const {
      double total = 0;
      for (const auto& g : gpus) total += g.mean();
      return total;
    }
  };
  std::unordered_map<std::uint64_t, Config> configs;
  std::map<std::string, int> gpu_index;
  for (std::size_t i = 0; i < rows.size() && i < predicted_ms.size(); ++i) {
    const Measurement& m = *rows[i];
    const double p = predicted_ms[i];
    if (!std::isfinite(p) || p <= 0 || !(m.latency_ms > 0)) continue;
    const int g = gpu_index.emplace(m.device->model_family(), static_cast<int>(gpu_index.size())).first->second;
    auto& c = configs.try_emplace(key_of(m.op), Config{m.op.family, {}}).first->second;
    auto it = std::find_if(c.gpus.begin(), c.gpus.end(), [&](const PerGpu& x) { return x.gpu == g; });
    if (it == c.gpus.end()) it = c.gpus.insert(c.gpus.end(), PerGpu{g, 0.0, 0});
    auto& slot = *it;
    slot.sum += std::log(m.latency_ms / p);
    ++slot.n;
  }
  // Fit, per family: each GPU's residual of a configuration against the mean of the other
  // GPUs' residuals of it.
  struct Pair { double others_mean; int others; double own; };
  std::array<std::vector<Pair>, kOpFamilyCount> pairs;
  for (const auto& [key, c] : configs) {
    if (c.gpus.size() < 2) continue;
    const double total = c.sum_of_means();
    const int n = static_cast<int>(c.gpus.size());
    for (const auto& g : c.gpus)
      pairs[static_cast<std::size_t>(c.family)].push_back({(total - g.mean()) / (n - 1), n - 1, g.mean()});
  }
  ConfigMemory memory;
  for (std::size_t f = 0; f < pairs.size(); ++f) {
    const auto& ps = pairs[f];
    if (ps.size() < kMinPairsPerFamily) continue;
    double base_sse = 0;
    for (const auto& p : ps) base_sse += p.own * p.own;
    double best_sse = base_sse, best_w = 0, best_k = 0;
    for (double k : kShrinkGrid) {
      // Least squares of own ~ w z, z = shrunk(1, k, others, others_mean); SSE in closed form.
      double zy = 0, zz = 0;
      for (const auto& p : ps) {
        const double z = shrunk(1.0, k, p.others, p.others_mean);
        zy += z * p.own;
        zz += z * z;
      }
      if (zz <= 0) continue;
      const double w = std::clamp(zy / zz, 0.0, 1.5);
      const double sse = base_sse - 2 * w * zy + w * w * zz;
      if (sse < best_sse) { best_sse = sse; best_w = w; best_k = k; }
    }
    // Keep a family's memory only when it explains a visible share of its residuals.
    if (best_sse > 0.99 * base_sse) continue;
    memory.weight_[f] = static_cast<float>(best_w);
    memory.shrink_[f] = static_cast<float>(best_k);
  }
  for (const auto& [key, c] : configs) {
    const std::size_t f = static_cast<std::size_t>(c.family);
    if (memory.weight_[f] <= 0) continue;
    const int n = std::min<int>(static_cast<int>(c.gpus.size()), 255);
    const double mean = c.sum_of_means() / static_cast<double>(c.gpus.size());
    if (std::abs(shrunk(memory.weight_[f], memory.shrink_[f], n, mean)) < kMinEffect) continue;
    memory.entries_[key] = {static_cast<float>(mean), static_cast<std::uint8_t>(n)};
  }
  return memory;
}

double ConfigMemory::log_factor(const OpDesc& op) const {
  if (entries_.empty()) return 0.0;
  const std::size_t f = static_cast<std::size_t>(op.family);
  if (f >= weight_.size() || weight_[f] <= 0) return 0.0;
  const auto it = entries_.find(key_of(op));
  if (it == entries_.end()) return 0.0;
  return shrunk(weight_[f], shrink_[f], it->second.gpus, it->second.mean_log_residual);
}

double ConfigMemory::factor(const OpDesc& op) const { return std::exp(log_factor(op)); }

std::string ConfigMemory::serialise() const {
  std::string out(kBlobMagic, sizeof kBlobMagic);
  put_u64(out, kOpFamilyCount);
  for (std::size_t f = 0; f < weight_.size(); ++f) {
    put_f32(out, weight_[f]);
    put_f32(out, shrink_[f]);
  }
  std::vector<std::uint64_t> keys;
  keys.reserve(entries_.size());
  for (const auto& [key, e] : entries_) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  put_u64(out, keys.size());
  for (auto key : keys) {
    const Entry& e = entries_.at(key);
    put_u64(out, key);
    put_f32(out, e.mean_log_residual);
    out.push_back(static_cast<char>(e.gpus));
  }
  return out;
}

ConfigMemory ConfigMemory::parse(const std::string& blob, const std::string& path) {
  Reader r{blob, path};
  r.need(sizeof kBlobMagic);
  if (blob.compare(0, sizeof kBlobMagic, kBlobMagic, sizeof kBlobMagic) != 0)
    throw InputError(path, "memory", "not a configuration memory (bad magic)");
  r.at = sizeof kBlobMagic;
  if (r.u64() != kOpFamilyCount) throw InputError(path, "memory", "configuration memory of another op-family list");
  ConfigMemory m;
  for (std::size_t f = 0; f < m.weight_.size(); ++f) {
    m.weight_[f] = r.f32();
    m.shrink_[f] = r.f32();
    if (!std::isfinite(m.weight_[f]) || !std::isfinite(m.shrink_[f]) || m.shrink_[f] < 0)
      throw InputError(path, "memory", "configuration memory has a non-finite weight");
  }
  const std::uint64_t count = r.u64();
  if (count > (blob.size() - r.at) / 13) throw InputError(path, "memory", "truncated configuration memory");
  m.entries_.reserve(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    const auto key = r.u64();
    Entry e;
    e.mean_log_residual = r.f32();
    e.gpus = r.u8();
    if (!std::isfinite(e.mean_log_residual) || e.gpus == 0)
      throw InputError(path, "memory", "configuration memory entry " + std::to_string(i) + " is malformed");
    m.entries_[key] = e;
  }
  if (r.at != blob.size()) throw InputError(path, "memory", "configuration memory has trailing bytes");
  return m;
}

}  // namespace dpro::costmodel
