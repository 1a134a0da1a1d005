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
  device_features(device, row.global);
  const double compute_ms = flops / device.peak_flops(op.dtype) * 1e3;
  const double memory_ms = bytes / device.bandwidth_bytes_per_s() * 1e3;
  row.roofline_ms = std::max(compute_ms, memory_ms) + kRooflineOverheadMs;
  // Output elements per resident thread slot (2048 per SM): how many waves a one-thread-per-
  // element kernel needs; and the L2-fit ratio of the working set.
  const double waves = elements / (2048.0 * device.sms);
  row.global[7] = static_cast<float>(std::log2(compute_ms * 1e3 + 1e-3));
  row.global[8] = static_cast<float>(std::log2(memory_ms * 1e3 + 1e-3));
  row.global[9] = static_cast<float>(std::log2(row.roofline_ms * 1e3));
  row.global[10] = static_cast<float>(std::log2(waves + 1e-3));
  row.global[11] = static_cast<float>(std::log2(bytes / (device.l2_cache_mb * 1048576.0)));
  row.global[12] = static_cast<float>(std::log2((flops + 1) / (bytes + 1)) -
                                      std::log2(device.peak_flops(op.dtype) / device.bandwidth_bytes_per_s()));
  row.global[13] = static_cast<float>(ast.store_count());
  return true;
}

bool make_features(const OpDesc& op, const DeviceSpec& device, FeatureRow& row) {
  auto ast = build_ast(op);
  return ast && make_features(*ast, op, device, row);
}

}  // namespace dpro::costmodel
