// LearnedModel without LibTorch: forwards to the LibTorch plugin (learned_backend.h), opened on
// the first call that needs it (available(), load(), train(), set_threads()). Without a plugin
// (a build without LibTorch, or its file missing) available() is false, load() and train()
// throw InputError("... not available ..."), and an unloaded model predicts NaN: callers fall
// back to the other cost models.
#include "costmodel/learned_model.h"

#include <cmath>
#include <fstream>
#include <limits>

#include "core/error.h"
#include "core/output_file.h"
#include "costmodel/learned_backend.h"
#include "costmodel/learned_plugin.h"

namespace dpro::costmodel {

struct LearnedModel::Impl {
  std::unique_ptr<learned::ModelBackend> backend;
};

namespace {

// The plugin, or InputError("<what>: <why it is not available>").
learned::Plugin& plugin_for(const std::string& what) {
  const auto& opened = learned::process_plugin();
  if (!opened.plugin) throw InputError("", what, opened.error);
  return *opened.plugin;
}

}  // namespace

bool LearnedModel::available() { return learned::process_plugin().plugin != nullptr; }
std::string LearnedModel::unavailable_reason() { return learned::process_plugin().error; }

void LearnedModel::set_threads(int threads) {
  if (auto* plugin = learned::process_plugin().plugin) plugin->set_threads(threads);
}

LearnedModel::LearnedModel() = default;
LearnedModel::~LearnedModel() = default;
LearnedModel::LearnedModel(LearnedModel&&) noexcept = default;
LearnedModel& LearnedModel::operator=(LearnedModel&&) noexcept = default;

LearnedModel LearnedModel::load(const std::string& path) {
  LearnedModel model;
  model.impl_ = std::make_unique<Impl>(Impl{plugin_for(path).load(path)});
  return model;
}

LearnedModel LearnedModel::train(const std::vector<const Measurement*>& data, const TrainOptions& options,
                                 Logger& log) {
  LearnedModel model;
  model.impl_ = std::make_unique<Impl>(Impl{plugin_for("train").train(data, options, log)});
  return model;
}

void LearnedModel::fine_tune(const std::vector<const Measurement*>& target,
                             const std::vector<const Measurement*>& replay, const FewShotOptions& options,
                             Logger& log) {
  plugin_for("fine_tune");
  DPRO_CHECK(impl_ != nullptr);
  impl_->backend->fine_tune(target, replay, options, log);
}

std::string LearnedModel::serialise() const {
  plugin_for("serialise");
  DPRO_CHECK(impl_ != nullptr);
  return impl_->backend->serialise();
}

void LearnedModel::save(const std::string& path, bool replace) const {
  plugin_for(path);
  const std::string bytes = serialise();
  write_output(path, [&](std::ostream& out) { out << bytes; }, replace);
}

std::vector<double> LearnedModel::predict_ms(const std::vector<PredictQuery>& queries) const {
  if (!impl_ && !available()) return std::vector<double>(queries.size(), std::numeric_limits<double>::quiet_NaN());
  DPRO_CHECK(impl_ != nullptr);
  return impl_->backend->predict_queries(queries);
}

std::vector<double> LearnedModel::predict_ms(const std::vector<FeatureRow>& rows) const {
  return predict_rows(rows.data(), rows.size());
}

std::vector<double> LearnedModel::predict_rows(const FeatureRow* rows, std::size_t count) const {
  if (!impl_ && !available()) return std::vector<double>(count, std::numeric_limits<double>::quiet_NaN());
  DPRO_CHECK(impl_ != nullptr);
  return impl_->backend->predict_rows(rows, count);
}

std::string LearnedModel::provenance() const { return impl_ ? impl_->backend->provenance() : ""; }
void LearnedModel::set_provenance(std::string text) {
  if (impl_) impl_->backend->set_provenance(std::move(text));
}
DevicePricing LearnedModel::pricing_of(const DeviceSpec& device) const {
  return impl_ ? impl_->backend->pricing_of(device) : DevicePricing{};
}
bool LearnedModel::knows_device(const DeviceSpec& device) const {
  return pricing_of(device).kind != DevicePricing::kUnseen;
}
double LearnedModel::unseen_floor_ms(OpFamily family) const {
  return impl_ ? impl_->backend->unseen_floor_ms(family) : 0.0;
}
double LearnedModel::measurement_overhead_ms(const DeviceSpec& device, bool allow_identity) const {
  return impl_ ? impl_->backend->measurement_overhead_ms(device, allow_identity) : 0.0;
}

std::optional<Nanos> LearnedCostModel::predict(const OpDesc& op, const DeviceSpec& device) const {
  const auto ms = model_.predict_ms(std::vector<PredictQuery>{{&op, &device}});
  if (std::isnan(ms[0])) return std::nullopt;
  return millis_to_nanos(ms[0]);
}

}  // namespace dpro::costmodel
