#include "costmodel/features.h"

#include <algorithm>
#include <cmath>

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

bool make_features(const CompactAst& ast, const OpDesc& op, const DeviceSpec& device, FeatureRow& row) {
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
  row.roofline_ms = std::max(compute_ms, memory_ms) + kRooflineOverheadMs;
  // Output elements per resident thread slot (2048 per SM): how many waves a one-thread-per-
  // element kernel needs; and the L2-fit ratio of the working set.
  const double waves = elements / (2048.0 * device.sms);
  row.global[0] = static_cast<float>(std::log2(compute_ms * 1e3 + 1e-3));
  row.global[1] = static_cast<float>(std::log2(memory_ms * 1e3 + 1e-3));
  row.global[2] = static_cast<float>(std::log2(row.roofline_ms * 1e3));
  row.global[3] = static_cast<float>(std::log2(waves + 1e-3));
  row.global[4] = static_cast<float>(std::log2(bytes / (device.l2_cache_mb * 1048576.0)));
  row.global[5] = static_cast<float>(std::log2((flops + 1) / (bytes + 1)) -
                                      std::log2(device.peak_flops(op.dtype) / device.bandwidth_bytes_per_s()));
  row.global[6] = static_cast<float>(ast.store_count());
  device_features(device, row.global + kRelativeFeatures);
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

bool make_features(const OpDesc& op, const DeviceSpec& device, FeatureRow& row) {
  auto ast = build_ast(op);
  return ast && make_features(*ast, op, device, row);
}

}  // namespace dpro::costmodel
