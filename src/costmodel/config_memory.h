#pragma once
// What the learned network leaves unexplained about an op configuration it was trained on,
// carried over to other GPUs. The shared data measure the same configurations (family, dims,
// dtype) on every GPU, and the network's log residual log(measured / predicted) of one
// configuration is strongly correlated between GPUs (conv: 0.80-0.89 for every pair of
// GPUs; docs/costmodel.md): something of the configuration that neither its shapes nor the
// kernel list show makes it fast or slow on every GPU alike. The memory keeps, per
// configuration seen in training, the mean over its GPUs of that residual; a query of the
// same configuration on any GPU (one of them, or one never measured) is multiplied by
// exp(w_f * n / (n + k_f) * mean), with n the number of GPUs behind the mean and the
// per-family weight w_f and shrinkage k_f fitted by predicting each training GPU's residual
// from the other GPUs' mean (so a GPU never predicts itself). Configurations not in the
// memory get factor 1.
#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "costmodel/dataset.h"
#include "costmodel/op_desc.h"

namespace dpro::costmodel {

class ConfigMemory {
 public:
  // `predicted_ms[i]`: the model's prediction for rows[i] on its own GPU, priced the way the
  // memory will be applied. Rows with a non-finite or non-positive prediction are skipped.
  static ConfigMemory build(const std::vector<const Measurement*>& rows, const std::vector<double>& predicted_ms);

  // exp(log_factor(op)).
  double factor(const OpDesc& op) const;
  double log_factor(const OpDesc& op) const;
  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  // Fitted per-family weight and shrinkage (0 weight: the family's memory is not used).
  double weight(OpFamily family) const { return weight_[static_cast<std::size_t>(family)]; }
  double shrinkage(OpFamily family) const { return shrink_[static_cast<std::size_t>(family)]; }

  // Compact binary form for the model file; parse() throws InputError(`path`, "memory", ...)
  // on a malformed blob.
  std::string serialise() const;
  static ConfigMemory parse(const std::string& blob, const std::string& path);

  // The key of a configuration: a 64-bit hash of what op_key() shows (family, dims, dtype).
  static std::uint64_t key_of(const OpDesc& op);

 private:
  struct Entry {
    float mean_log_residual = 0;
    std::uint8_t gpus = 0;
  };
  std::unordered_map<std::uint64_t, Entry> entries_;
  std::array<float, kOpFamilyCount> weight_{};
  std::array<float, kOpFamilyCount> shrink_{};
};

}  // namespace dpro::costmodel
