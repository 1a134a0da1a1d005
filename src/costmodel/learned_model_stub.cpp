// LearnedModel in a build without LibTorch: reports "not available"; callers fall back.
#include <limits>

#include "core/error.h"
#include "costmodel/learned_model.h"

namespace dpro::costmodel {

namespace {
[[noreturn]] void unavailable(const std::string& what) {
  throw InputError("", what, "the learned cost model is not available in this build (no LibTorch; "
                             "configure with -DDPRO_TORCH=ON after installing libtorch-dev)");
}
}  // namespace

struct LearnedModel::Impl {};

bool LearnedModel::available() { return false; }
void LearnedModel::set_threads(int) {}
LearnedModel::LearnedModel() = default;
LearnedModel::~LearnedModel() = default;
LearnedModel::LearnedModel(LearnedModel&&) noexcept = default;
LearnedModel& LearnedModel::operator=(LearnedModel&&) noexcept = default;
LearnedModel LearnedModel::load(const std::string& path) { unavailable(path); }
LearnedModel LearnedModel::train(const std::vector<const Measurement*>&, const TrainOptions&, Logger&) {
  unavailable("train");
}
void LearnedModel::fine_tune(const std::vector<const Measurement*>&, const std::vector<const Measurement*>&,
                             const FewShotOptions&, Logger&) { unavailable("fine_tune"); }
std::string LearnedModel::serialise() const { unavailable("serialise"); }
void LearnedModel::save(const std::string& path) const { unavailable(path); }
std::vector<double> LearnedModel::predict_ms(const std::vector<PredictQuery>& q) const {
  return std::vector<double>(q.size(), std::numeric_limits<double>::quiet_NaN());
}
std::vector<double> LearnedModel::predict_ms(const std::vector<FeatureRow>& rows) const {
  return std::vector<double>(rows.size(), std::numeric_limits<double>::quiet_NaN());
}
std::vector<double> LearnedModel::predict_rows(const FeatureRow*, std::size_t count) const {
  return std::vector<double>(count, std::numeric_limits<double>::quiet_NaN());
}
std::string LearnedModel::provenance() const { return ""; }
DevicePricing LearnedModel::pricing_of(const DeviceSpec&) const { return {}; }
bool LearnedModel::knows_device(const DeviceSpec&) const { return false; }
double LearnedModel::unseen_floor_ms(OpFamily) const { return 0.0; }
double LearnedModel::measurement_overhead_ms(const DeviceSpec&, bool) const { return 0.0; }
void LearnedModel::set_provenance(std::string) {}

std::optional<Nanos> LearnedCostModel::predict(const OpDesc&, const DeviceSpec&) const {
  return std::nullopt;
}

}  // namespace dpro::costmodel
