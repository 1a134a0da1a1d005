#pragma once
// The learned compact-AST cost model: a small LibTorch encoder over each op's serialised
// compact AST (per-token MLP, masked mean+max pooling) joined with device and roofline
// features, predicting log(latency / (roofline time + floor)); one such network for the GPUs of
// the training data and a less fitted one for every other GPU (TrainOptions::unseen_epochs),
// each times a residual memory of the training configurations (config_memory.h). This header
// includes no LibTorch
// headers: the LibTorch implementation is a plugin (learned_backend.h), opened the first time
// available(), set_threads(), load() or train() is called; a process that never calls them
// (a plain replay) never loads LibTorch. In a build without LibTorch, or when the plugin file
// is missing, available() is false, load() and train() throw InputError("... not available
// ...") saying why (unavailable_reason()), and callers use the fallbacks.
//
// Model file (model_file.h): "DPROCM01\n", a one-line JSON header (architecture, provenance,
// the trained GPUs' figures, floors and overheads, section sizes, payload size and FNV-1a hash,
// and the header's own hash), then the LibTorch archives of the two networks' weights and the
// three residual memories. A truncated, edited or foreign file, or a directory, fails load() with
// an InputError that names the file and what is wrong.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/log.h"
#include "costmodel/config_memory.h"
#include "costmodel/cost_model.h"
#include "costmodel/dataset.h"
#include "costmodel/device_pricing.h"
#include "costmodel/features.h"

namespace dpro::costmodel {

// Defaults: the settings of the shipped model (tools/train_costmodel.sh).
struct TrainOptions {
  int epochs = 40;
  int batch_size = 1024;
  double learning_rate = 3e-3;
  std::uint64_t seed = 1;
  int threads = 1;
  int token_hidden = 64;
  int head_hidden = 192;
  // Epochs of the separate network that prices GPUs the model was not trained on (0, or equal
  // to `epochs`: the main network prices them too). Chosen by leave-one-GPU-out validation:
  // a held-out GPU is priced better by a less fitted network (docs/costmodel.md).
  int unseen_epochs = 10;
};

struct FewShotOptions {
  int epochs = 6;
  double learning_rate = 5e-4;
  int repeat_target = 20;      // each target sample is seen this many times per epoch
  int replay_rows = 20000;     // rows of the original training data mixed in (forgetting)
  std::uint64_t seed = 1;
  int threads = 1;
};

struct PredictQuery {
  const OpDesc* op = nullptr;
  const DeviceSpec* device = nullptr;
  // false: price as if the device were unseen even when the model knows it (so that a ratio
  // f(target)/f(origin) with an unseen target uses one pathway for both).
  bool allow_identity = true;
  // true only when op's kernel name and geometry were recorded on this very device (a
  // measured row of it, a trace from it): the model may then use the kernel features, if it
  // also prices the device with its identity (a GPU of the data, its twin or sibling). A what-if on
  // another GPU does not know which kernel the library would pick there.
  bool allow_kernel = false;
  // false: the network alone, without the residual memory of the training configurations
  // (config_memory.h), e.g. for the evaluation's "without memory" column.
  bool use_memory = true;
};

class LearnedModel {
 public:
  static bool available();
  // Why available() is false, in one line (no LibTorch in this build, or where the plugin was
  // looked for); empty when it is true.
  static std::string unavailable_reason();
  // LibTorch intra-op threads for inference and training in this process.
  static void set_threads(int threads);
  static LearnedModel load(const std::string& path);
  static LearnedModel train(const std::vector<const Measurement*>& data, const TrainOptions& options,
                            Logger& log);

  LearnedModel();
  ~LearnedModel();
  LearnedModel(LearnedModel&&) noexcept;
  LearnedModel& operator=(LearnedModel&&) noexcept;

  // Adapts to a new GPU from a few measured samples of it (CDMPP-style few-shot fine-tune of
  // the whole network that prices unseen GPUs), mixing in `replay` rows of the original data.
  // The samples train the device-agnostic pathway; the GPU is not added to the known list.
  void fine_tune(const std::vector<const Measurement*>& target,
                 const std::vector<const Measurement*>& replay, const FewShotOptions& options,
                 Logger& log);
  // The model file's bytes (model_file.h); save() writes them to `path` as every output is
  // written (core/output_file.h): over an existing file only when `replace`.
  std::string serialise() const;
  void save(const std::string& path, bool replace = false) const;

  // Milliseconds per query; NaN where the op cannot be described. Batched internally. GPUs
  // the model was trained on (and their twins and siblings) are priced with their identity features, the
  // others by the unseen-GPU network, no lower than the floor guard.
  std::vector<double> predict_ms(const std::vector<PredictQuery>& queries) const;
  // Milliseconds for precomputed feature rows (their device_known and kernel_known flags are
  // used as given).
  std::vector<double> predict_ms(const std::vector<FeatureRow>& rows) const;

  // Free text stored with the model (data, split, training time), for reports.
  std::string provenance() const;
  // The GPU of the training data whose identity prices `device` (DevicePricing): itself, a
  // twin (A100-SXM4-40GB as A100-PCIE-40GB) or a sibling (V100-SXM2-32GB as V100-PCIE-32GB);
  // empty for a GPU outside the data (the unseen-GPU network prices it).
  DevicePricing pricing_of(const DeviceSpec& device) const;
  bool knows_device(const DeviceSpec& device) const;
  // The floor guard of GPUs outside the data for this family (0: none): their predictions are
  // never below the fastest latency of the family measured on a GPU of the training data
  // (after fine_tune: or on a sample of the adapted GPU).
  double unseen_floor_ms(OpFamily family) const;
  // The host overhead the predicted latencies of `device` carry (kernel_time.h): that of the
  // GPU whose identity prices it, when `allow_identity` and the model has its overhead, else
  // the median over the training GPUs (what the unseen-GPU network learned). 0 for a model file
  // written without overheads.
  double measurement_overhead_ms(const DeviceSpec& device, bool allow_identity) const;
  void set_provenance(std::string text);
  bool loaded() const { return impl_ != nullptr; }

 private:
  std::vector<double> predict_rows(const FeatureRow* rows, std::size_t count) const;

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// For messages: how the model prices a device (twin, sibling, outside the data); "" for a
// GPU of the data.
inline std::string pricing_note(const DevicePricing& p) {
  switch (p.kind) {
    case DevicePricing::kUnseen:
      return " (not in the learned model's training data: priced by its unseen-GPU network, less accurate than "
             "once ops measured on the GPU correct it: `costmodel pick` chooses them, docs/costmodel.md)";
    case DevicePricing::kTwin: return " (priced as " + p.as + ": the same datasheet figures)";
    case DevicePricing::kSibling:
      return " (priced with the identity of " + p.as + ", the same chip, and its own clock, bandwidth, ...)";
    case DevicePricing::kTrained: break;
  }
  return "";
}
inline std::string pricing_note(const LearnedModel& model, const DeviceSpec& device) {
  return pricing_note(model.pricing_of(device));
}

// CostModel adapter; the LearnedModel must outlive it.
class LearnedCostModel : public CostModel {
 public:
  explicit LearnedCostModel(const LearnedModel& model) : model_(model) {}
  std::string name() const override { return "learned"; }
  std::optional<Nanos> predict(const OpDesc& op, const DeviceSpec& device) const override;

 private:
  const LearnedModel& model_;
};

}  // namespace dpro::costmodel
