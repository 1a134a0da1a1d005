#pragma once
// The seam between LearnedModel (learned_model.h, in dpro_costmodel, no LibTorch) and its
// LibTorch implementation, which lives in a plugin (the MODULE library dpro_learned_torch,
// learned_model_torch.cpp) that learned_plugin.cpp opens with dlopen the first time a command
// needs the learned model: a plain replay never loads LibTorch's ~290 shared libraries.
//
// The plugin exports one extern "C" function, kPluginFactorySymbol, of type PluginFactory.
// Only this header's types cross the boundary: abstract classes, and the plain dpro types of
// learned_model.h (OpDesc, DeviceSpec, FeatureRow, Measurement, Logger, std containers); no
// LibTorch type. Both sides are built from one source tree by one compiler, so their layouts
// agree; kPluginAbiVersion guards against a stale plugin file from another build. Exceptions
// (InputError) thrown in the plugin reach the caller's handlers: libstdc++ matches exception
// types by their mangled names, and the plugin's private copies of dpro_core/dpro_costmodel
// are hidden from the dynamic linker (--exclude-libs), so they never interpose the caller's.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "costmodel/learned_model.h"

namespace dpro::costmodel::learned {

// One trained network pair with its residual memories: the state behind a LearnedModel.
// The semantics of each method are those of the LearnedModel method of the same name.
class ModelBackend {
 public:
  virtual ~ModelBackend() = default;
  virtual void fine_tune(const std::vector<const Measurement*>& target,
                         const std::vector<const Measurement*>& replay, const FewShotOptions& options,
                         Logger& log) = 0;
  virtual std::string serialise() const = 0;
  virtual std::vector<double> predict_queries(const std::vector<PredictQuery>& queries) const = 0;
  // `count` rows from `rows`, their device_known and kernel_known flags used as given.
  virtual std::vector<double> predict_rows(const FeatureRow* rows, std::size_t count) const = 0;
  virtual std::string provenance() const = 0;
  virtual void set_provenance(std::string text) = 0;
  virtual DevicePricing pricing_of(const DeviceSpec& device) const = 0;
  virtual double unseen_floor_ms(OpFamily family) const = 0;
  virtual double measurement_overhead_ms(const DeviceSpec& device, bool allow_identity) const = 0;
};

// The plugin's process-wide entry points. The object lives as long as the process (the plugin
// is never unloaded: LibTorch does not support it), so callers never delete it.
class Plugin {
 public:
  virtual void set_threads(int threads) = 0;
  // Throws InputError naming `path` for a missing, truncated, edited or foreign file.
  virtual std::unique_ptr<ModelBackend> load(const std::string& path) = 0;
  virtual std::unique_ptr<ModelBackend> train(const std::vector<const Measurement*>& data,
                                              const TrainOptions& options, Logger& log) = 0;
  // openblas_get_corename() of the BLAS that LibTorch loaded, nullptr when it is not OpenBLAS
  // (blas_tuning.h).
  virtual const char* blas_core() const = 0;

 protected:
  ~Plugin() = default;
};

// Bump when anything above, or a type it passes, changes layout.
inline constexpr int kPluginAbiVersion = 1;
// Returns the plugin's singleton, or nullptr when `abi_version` is not the one it was built with.
using PluginFactory = Plugin* (*)(int abi_version);
inline constexpr const char* kPluginFactorySymbol = "dpro_learned_torch_plugin";

}  // namespace dpro::costmodel::learned
