#pragma once
// Inputs of the learned model for one (op, device) pair: the op's serialised compact AST
// (token rows) and a vector of global features that relate the op to the device (its
// compute and memory roofline times, waves over the SMs, L2 fit, intensity over the ridge
// point), then the device's raw specs. With a handful of training GPUs a network uses raw
// specs as a device id, which does not generalise to a GPU it has not seen; so the model is
// trained with the raw specs dropped for half the rows, and is given them at inference only
// for GPUs it was trained on (and their twins and siblings: LearnedModel::pricing_of). It
// predicts log(latency / (roofline time + a floor)): an efficiency that transfers between GPUs.
#include <optional>

#include "costmodel/compact_ast.h"
#include "costmodel/hw.h"
#include "costmodel/op_desc.h"

namespace dpro::costmodel {

// Global features: [0, kRelativeFeatures) relate the op to the device; then
// kKernelFeatures describe the kernel the library picked (kernel_features), which the model
// sees only when that kernel is known for this op on this device (FeatureRow::kernel_known:
// a trace or a measured row of the same GPU; never for a GPU the op was not run on); the
// last kDeviceIdentityFeatures are the device's own specs (device_features), which the model
// only sees for GPUs it was trained on, their twins and siblings (FeatureRow::device_known; a
// sibling gets the identity of its trained GPU).
constexpr int kRelativeFeatures = 11;
constexpr int kKernelFeatures = 18;
constexpr int kDeviceIdentityFeatures = 7;
// Positions in device_features() of the SM count and of the fp32 cores per SM (the chip).
constexpr int kSmsFeature = 1, kCoresFeature = 5;
constexpr int kGlobalFeatures = kRelativeFeatures + kKernelFeatures + kDeviceIdentityFeatures;

struct FeatureRow {
  float tokens[kMaxAstTokens * kTokenFeatures] = {};
  float global[kGlobalFeatures] = {};
  int token_count = 0;
  float device_known = 0;  // 1: the model may use the device-identity features
  float kernel_known = 0;  // 1: the kernel features describe the kernel that ran on this device
  // The baseline the model's output multiplies: roofline time + kLearnedFloorMs.
  double baseline_ms = 0;
};

// The floor added to the roofline time in the learned model's baseline: about what a framework
// op takes however small it is (launch, PyTorch dispatch; 25-50 us in the shared data). The
// network predicts log(latency / baseline), which is then near 0 for tiny ops on any GPU:
// a GPU it never saw gets the typical floor instead of an extrapolation of the roofline.
constexpr double kLearnedFloorMs = 0.03;

// Fills `row` from a compact AST; false when it cannot be serialised. With `with_kernel` the
// kernel features are filled (and kernel_known set) when the op names its kernel; pass false
// when pricing the op on another GPU than the one it ran on (no kernel features, and the
// kernel's name is not parsed).
bool make_features(const CompactAst& ast, const OpDesc& op, const DeviceSpec& device, FeatureRow& row,
                   bool with_kernel = true);
// build_ast + make_features; false when the op is not describable.
bool make_features(const OpDesc& op, const DeviceSpec& device, FeatureRow& row, bool with_kernel = true);

// The kernel choice, kKernelFeatures floats: launch geometry (blocks, threads per block,
// blocks per SM and their wave efficiency), the GEMM tile in the name (32x128 -> 5, 7),
// flags for GEMM / GEMV / Winograd / FFT / implicit GEMM / split-K or sliced / vectorised
// elementwise / tensor-core kernels, the number of kernels the op launched, and the work per
// block (log FLOPs and bytes per block, log waves of blocks over the SMs). False (and
// zeros) when the op does not name its kernel.
bool kernel_features(const OpDesc& op, const DeviceSpec& device, float* out);

// Log device specs (bandwidth, SMs, clock, fp32 peak, L2, cores/SM, memory), 7 floats: for
// choosing the nearest measured GPU.
void device_features(const DeviceSpec& device, float* out);

}  // namespace dpro::costmodel
