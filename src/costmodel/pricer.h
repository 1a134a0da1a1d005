#pragma once
// The one pricing policy for a GPU op measured on one GPU (its origin) and re-timed for another
// (the target), used by `replay --device` (whatif/device_retime) and by `costmodel retime`
// (evaluate.h) alike:
//   1. between GPUs of one chip, kernels by what they move (same_chip_factor, scaling.h);
//   2. else a described op by the learned model's kernel-time factor (learned_kernel_factors,
//      kernel_time.h), when a model is given;
//   3. else cross-device scaling (scale_ms, scaling.h).
// The roofline-share pricer (`--pricer roofline-share`) instead prices every described kernel by
// the kernel-time ratio of the roofline-share model (share_kernel_ratio, roofline_share.h), before
// 1 (so that it is what prices them between GPUs of one chip too), and the rest by 1 and 3; it
// never loads the learned model (nor LibTorch).
// Copies and memsets (kernel == false) skip 1. Ops that keep their measured time (collectives,
// host copies, an unknown origin) are the caller's to leave out: the pricer prices what it is given.
#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "core/time.h"
#include "costmodel/cost_model.h"
#include "costmodel/hw.h"
#include "costmodel/learned_model.h"
#include "costmodel/op_desc.h"
#include "costmodel/residual_correction.h"

namespace dpro::costmodel {

// Which rule priced an op. The values index coverage arrays (kPricedByCount of them); kUnchanged
// is never returned by the pricer, it names the ops a caller kept at their measured time.
enum class PricedBy : std::uint8_t { kLearned, kScaling, kUnchanged, kSameChip, kRooflineShare };
inline constexpr int kPricedByCount = 5;
const char* to_string(PricedBy by);  // "learned", "scaling", "unchanged", "same_chip", "roofline_share"

struct ShareTable;  // roofline_share.h

// Which model prices described kernels: the learned model's kernel-time factor (the default) or
// the roofline-share model's kernel-time ratio.
enum class PricerKind : std::uint8_t { kLearned, kRooflineShare };
const char* to_string(PricerKind kind);  // "learned", "roofline-share" (as the CLI spells them)
std::optional<PricerKind> parse_pricer_kind(std::string_view name);  // nullopt: not one of those
inline constexpr const char* kPricerKindNames = "learned or roofline-share";

struct PriceRequest {
  OpDesc op;
  const DeviceSpec* origin = nullptr;  // the GPU it was measured on; never null
  double measured_ms = 0;              // its time there (a kernel's GPU time)
  bool kernel = true;                  // false: a copy or memset (moves bytes only)
};

struct Price {
  double ms = 0;  // on the target
  PricedBy by = PricedBy::kScaling;
  Nanos time() const { return millis_to_nanos(ms); }
};

// Ops, measured and predicted time per rule.
struct PricingCoverage {
  std::size_t ops[kPricedByCount] = {};
  Nanos measured[kPricedByCount] = {};
  Nanos predicted[kPricedByCount] = {};
  void add(PricedBy by, Nanos measured_ns, Nanos predicted_ns);
  std::size_t total_ops() const;
  Nanos total_measured() const;
};

class Pricer {
 public:
  // `model` and `correction` may be null (no learned model; no few-shot samples); both, and
  // `target`, must outlive the pricer.
  Pricer(const DeviceSpec& target, const LearnedModel* model, const ResidualCorrection* correction);
  // The roofline-share pricer; `shares` must outlive it. `target_shares` (may be null; must
  // outlive it too): the table that prices the target's side of the ratio, `shares` with the
  // target's few-shot scalars applied (with_device_scalars, share_device_fit.h). `origin_shares`
  // (may be null; must outlive it): per origin GPU, the table that prices its side (`shares` with
  // that GPU's scalars, fitted on ops measured on it: `replay --origin-samples`, whatif/device_retime.h); an origin it
  // has no table for, and every origin without it, keeps `shares`.
  Pricer(const DeviceSpec& target, const ShareTable& shares, const ShareTable* target_shares = nullptr,
         const std::map<const DeviceSpec*, ShareTable>* origin_shares = nullptr);

  // Prices every request; the learned model sees the learned ones in one batch, in order.
  std::vector<Price> price(const std::vector<PriceRequest>& requests);

  // The host overhead taken out of the learned model's latencies in the last price() call that
  // used it (kernel_time.h), in ms: the target's, and each origin GPU's.
  double target_overhead_ms() const { return target_overhead_ms_; }
  const std::map<const DeviceSpec*, double>& origin_overhead_ms() const { return origin_overhead_ms_; }
  bool used_learned() const { return used_learned_; }

 private:
  const DeviceSpec& target_;
  const LearnedModel* model_;
  const ResidualCorrection* correction_;
  const ShareTable* shares_ = nullptr;
  const ShareTable* target_shares_ = nullptr;
  const std::map<const DeviceSpec*, ShareTable>* origin_shares_ = nullptr;
  double target_overhead_ms_ = 0;
  std::map<const DeviceSpec*, double> origin_overhead_ms_;
  bool used_learned_ = false;
};

}  // namespace dpro::costmodel
