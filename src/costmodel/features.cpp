#include "costmodel/features.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <utility>

#include "core/strings.h"
#include "costmodel/roofline.h"

namespace dpro::costmodel {

void device_features(const DeviceSpec& d, float* out) {
  out[0] = static_cast<float>(std::log2(d.memory_bandwidth_gbs));
  out[1] = static_cast<float>(std::log2(d.sms));
  out[2] = static_cast<float>(std::log2(d.boost_clock_mhz));
  out[3] = static_cast<float>(std::log2(d.peak_flops(DType::kFloat32) / 1e9));
  out[4] = static_cast<float>(std::log2(d.l2_cache_mb));
  out[5] = static_cast<float>(std::log2(d.fp32_cores_per_sm));
  out[6] = static_cast<float>(std::log2(d.memory_gb));
}

namespace {

bool has(const std::string& text, const char* word) { return text.find(word) != std::string::npos; }

// The first "<a>x<b>" in a kernel name with both sides >= 16 (GEMM tiles such as
// sgemm_32x128, not winograd 4x4 transforms); {0, 0} when there is none.
std::pair<int, int> name_tile(const std::string& name) {
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[i])) || (i > 0 && std::isdigit(static_cast<unsigned char>(name[i - 1]))))
      continue;
    std::size_t j = i;
    long a = 0, b = 0;
    while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j])) && a < 100000) a = a * 10 + (name[j++] - '0');
    if (j >= name.size() || name[j] != 'x') continue;
    std::size_t k = ++j;
    while (k < name.size() && std::isdigit(static_cast<unsigned char>(name[k])) && b < 100000) b = b * 10 + (name[k++] - '0');
    if (k > j && a >= 16 && b >= 16) return {static_cast<int>(a), static_cast<int>(b)};
  }
  return {0, 0};
}

}  // namespace

bool kernel_features(const OpDesc& op, const DeviceSpec& device, float* out) {
  std::fill(out, out + kKernelFeatures, 0.0f);
  if (op.kernel_name.empty()) return false;
  const std::string name = ascii_lower(op.kernel_name);
  const std::string all = op.kernel_list.empty() ? name : ascii_lower(op.kernel_list);
  if (op.grid && op.block) {
    const double blocks = std::max(1.0, double((*op.grid)[0]) * (*op.grid)[1] * (*op.grid)[2]);
    const double threads = std::max(1.0, double((*op.block)[0]) * (*op.block)[1] * (*op.block)[2]);
    out[0] = static_cast<float>(std::log2(blocks));
    out[1] = static_cast<float>(std::log2(threads));
    out[2] = static_cast<float>(std::log2(blocks / device.sms));
    out[3] = static_cast<float>(blocks / (std::ceil(blocks / device.sms) * device.sms));
    out[15] = static_cast<float>(std::log2(1 + op.flops() / blocks));
    out[16] = static_cast<float>(std::log2(1 + op.bytes() / blocks));
    out[17] = static_cast<float>(std::log2(std::ceil(blocks / device.sms)));
  }
  const auto [tm, tn] = name_tile(name);
  out[4] = tm ? static_cast<float>(std::log2(tm)) : 0.0f;
  out[5] = tn ? static_cast<float>(std::log2(tn)) : 0.0f;
  out[6] = has(name, "gemm") ? 1.0f : 0.0f;
  out[7] = has(name, "gemv") ? 1.0f : 0.0f;
  out[8] = has(all, "winograd") ? 1.0f : 0.0f;
  out[9] = has(all, "fft") ? 1.0f : 0.0f;
  out[10] = has(name, "implicit") || has(name, "precomp") ? 1.0f : 0.0f;
  out[11] = has(all, "splitk") || has(name, "sliced") ? 1.0f : 0.0f;
  out[12] = has(name, "vectorized") ? 1.0f : 0.0f;
  out[13] = has(name, "tensorop") || has(name, "xmma") || has(name, "1688") ||
                    has(name, "16816")
                ? 1.0f
                : 0.0f;
  int kernels = 1;
  if (!op.kernel_list.empty()) {
    kernels = 0;
    std::size_t start = 0;
    while (start <= op.kernel_list.size()) {
      const std::size_t end = std::min(op.kernel_list.find(';', start), op.kernel_list.size());
      if (end > start) ++kernels;
      start = end + 1;
    }
  }
  out[14] = static_cast<float>(std::log2(1 + std::max(1, kernels)));
  return true;
}

bool make_features(const CompactAst& ast, const OpDesc& op, const DeviceSpec& device, FeatureRow& row,
                   bool with_kernel) {
  std::fill(std::begin(row.tokens), std::end(row.tokens), 0.0f);
  auto n = serialise(ast, row.tokens);
  if (!n) return false;
  row.token_count = *n;
  double flops = 0, bytes = 0, elements = 0;
  for (const auto& node : ast.nodes) {
    if (node.kind != AstNodeKind::kStore) continue;
    flops += node.flops;
    bytes += node.bytes_read + node.bytes_written;
    elements = std::max(elements, node.elements);
  }
  const double compute_ms = flops / device.peak_flops(op.dtype) * 1e3;
  const double memory_ms = bytes / device.bandwidth_bytes_per_s() * 1e3;
  const double roofline = std::max(compute_ms, memory_ms) + kRooflineOverheadMs;
  row.baseline_ms = std::max(compute_ms, memory_ms) + kLearnedFloorMs;
  // Output elements per resident thread slot (2048 per SM): how many waves a one-thread-per-
  // element kernel needs; and the L2-fit ratio of the working set.
  const double waves = elements / (2048.0 * device.sms);
  row.global[0] = static_cast<float>(std::log2(compute_ms * 1e3 + 1e-3));
  row.global[1] = static_cast<float>(std::log2(memory_ms * 1e3 + 1e-3));
  row.global[2] = static_cast<float>(std::log2(roofline * 1e3));
  row.global[3] = static_cast<float>(std::log2(waves + 1e-3));
  row.global[4] = static_cast<float>(std::log2(bytes / (device.l2_cache_mb * 1048576.0)));
  row.global[5] = static_cast<float>(std::log2((flops + 1) / (bytes + 1)) -
                                      std::log2(device.peak_flops(op.dtype) / device.bandwidth_bytes_per_s()));
  row.global[6] = static_cast<float>(ast.store_count());
  float* kernel = row.global + kRelativeFeatures;
  if (with_kernel) {
    row.kernel_known = kernel_features(op, device, kernel) ? 1.0f : 0.0f;
  } else {
    std::fill(kernel, kernel + kKernelFeatures, 0.0f);
    row.kernel_known = 0;
  }
  device_features(device, row.global + kRelativeFeatures + kKernelFeatures);
  // Wave quantisation of the output space tiled 64x64 and 128x128 over the SMs.
  const auto space = dominant_store_space(ast);
  const double rows_ = space.size() >= 2 ? static_cast<double>(space[space.size() - 2]) : 1.0;
  const double cols = space.empty() ? 1.0 : static_cast<double>(space.back());
  double batch = 1;
  for (size_t i = 0; i + 2 < space.size(); ++i) batch *= static_cast<double>(space[i]);
  int k = 7;
  for (double tile : {64.0, 128.0}) {
    const double tiles = batch * std::ceil(rows_ / tile) * std::ceil(cols / tile);
    const double waves = std::ceil(tiles / device.sms);
    row.global[k++] = static_cast<float>(std::log2(tiles / device.sms));
    row.global[k++] = static_cast<float>(tiles / (waves * device.sms));
  }
  return true;
}

bool make_features(const OpDesc& op, const DeviceSpec& device, FeatureRow& row, bool with_kernel) {
  auto ast = build_ast(op);
  return ast && make_features(*ast, op, device, row, with_kernel);
}

}  // namespace dpro::costmodel
