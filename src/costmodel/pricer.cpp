#include "costmodel/pricer.h"

#include <numeric>

#include "costmodel/kernel_time.h"
#include "costmodel/roofline_share.h"
#include "costmodel/scaling.h"

namespace dpro::costmodel {

const char* to_string(PricedBy by) {
  switch (by) {
    case PricedBy::kLearned: return "learned";
    case PricedBy::kScaling: return "scaling";
    case PricedBy::kUnchanged: return "unchanged";
    case PricedBy::kSameChip: return "same_chip";
    case PricedBy::kRooflineShare: return "roofline_share";
  }
  return "?";
}

const char* to_string(PricerKind kind) { return kind == PricerKind::kRooflineShare ? "roofline-share" : "learned"; }

std::optional<PricerKind> parse_pricer_kind(std::string_view name) {
  if (name == "learned") return PricerKind::kLearned;
  if (name == "roofline-share") return PricerKind::kRooflineShare;
  return std::nullopt;
}

void PricingCoverage::add(PricedBy by, Nanos measured_ns, Nanos predicted_ns) {
  const int i = static_cast<int>(by);
  ++ops[i];
  measured[i] = saturating_add(measured[i], measured_ns);
  predicted[i] = saturating_add(predicted[i], predicted_ns);
}
std::size_t PricingCoverage::total_ops() const { return std::accumulate(std::begin(ops), std::end(ops), std::size_t{0}); }
Nanos PricingCoverage::total_measured() const {
  return std::accumulate(std::begin(measured), std::end(measured), Nanos{0}, saturating_add);
}

Pricer::Pricer(const DeviceSpec& target, const LearnedModel* model, const ResidualCorrection* correction)
    : target_(target), model_(model), correction_(correction) {}
Pricer::Pricer(const DeviceSpec& target, const ShareTable& shares, const ShareTable* target_shares,
               const std::map<const DeviceSpec*, ShareTable>* origin_shares)
    : target_(target), model_(nullptr), correction_(nullptr), shares_(&shares),
      target_shares_(target_shares ? target_shares : &shares), origin_shares_(origin_shares) {}

std::vector<Price> Pricer::price(const std::vector<PriceRequest>& requests) {
  std::vector<Price> out(requests.size());
  std::vector<OpDesc> learned_ops;
  std::vector<const DeviceSpec*> learned_origins;
  std::vector<std::size_t> learned_index;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const PriceRequest& r = requests[i];
    const ShareTable* origin_table = shares_;
    if (origin_shares_)
      if (const auto o = origin_shares_->find(r.origin); o != origin_shares_->end()) origin_table = &o->second;
    if (const auto ratio = shares_ && r.kernel ? share_kernel_ratio(*origin_table, *target_shares_, r.op, *r.origin, target_)
                                               : std::nullopt) {
      out[i] = {r.measured_ms * *ratio, PricedBy::kRooflineShare};
    } else if (const auto f = r.kernel ? same_chip_factor(r.op, *r.origin, target_, r.measured_ms) : std::nullopt) {
      out[i] = {r.measured_ms * *f, PricedBy::kSameChip};
    } else if (model_ && r.op.describable()) {
      out[i].by = PricedBy::kLearned;
      learned_ops.push_back(r.op);
      learned_origins.push_back(r.origin);
      learned_index.push_back(i);
    } else {
      out[i] = {scale_ms(r.op, *r.origin, r.measured_ms, target_), PricedBy::kScaling};
    }
  }
  used_learned_ = !learned_index.empty();
  if (used_learned_) {
    // The predictions are latencies as the training data measured them, host overhead
    // included; a trace's kernel durations are not (kernel_time.h).
    const LearnedKernelFactors priced = learned_kernel_factors(*model_, learned_ops, learned_origins, target_, correction_);
    target_overhead_ms_ = priced.target_overhead_ms;
    origin_overhead_ms_ = priced.origin_overhead_ms;
    for (std::size_t k = 0; k < learned_index.size(); ++k)
      out[learned_index[k]].ms = requests[learned_index[k]].measured_ms * priced.factor[k];
  }
  return out;
}

}  // namespace dpro::costmodel
