#pragma once
// Few-shot correction of a cost model on one GPU from a handful of ops measured on it (the
// k-means-chosen samples of kmeans.h). Each sample leaves its log residual
// r = log(measured / predicted); a query op gets a kernel-regression estimate of r from the
// samples of its op family near it in op-feature space (log FLOPs, bytes, bytes written,
// intensity), shrunk towards the family's mean residual, which is itself shrunk towards the
// mean of all samples. The prediction is multiplied by exp(r).
//
// Why not (only) fine-tuning the network: what a new GPU gets wrong is mostly smooth in op
// size per family (the launch floor of its host, the efficiency of the library's kernels at
// a size range), which 200 samples pin down locally, while a network fine-tuned on 200
// samples moves everywhere at once. docs/costmodel.md has the comparison.
#include <vector>

#include "costmodel/dataset.h"
#include "costmodel/learned_model.h"
#include "costmodel/op_desc.h"

namespace dpro::costmodel {

struct ResidualCorrectionOptions {
  double bandwidth = 1.5;      // Gaussian kernel width, in log2 units of the op features
  double family_prior = 1.0;   // pseudo-weight of the family mean against the near samples
  double global_prior = 2.0;   // pseudo-weight of the all-sample mean against a family's samples
};

class ResidualCorrection {
 public:
  explicit ResidualCorrection(ResidualCorrectionOptions options = {}) : options_(options) {}

  // One measured sample of the GPU and the model's prediction for it (both > 0).
  void add(const OpDesc& op, double predicted_ms, double measured_ms);
  std::size_t size() const { return samples_.size(); }

  // exp(estimated log residual) for an op: the factor its prediction is multiplied by
  // (1 without samples).
  double factor(const OpDesc& op) const;

 private:
  struct Sample {
    float point[4];
    int family;
    double log_residual;
  };
  static void point_of(const OpDesc& op, float* out);

  ResidualCorrectionOptions options_;
  std::vector<Sample> samples_;
};

// The correction of `model` on `device` from ops measured on it (load_samples_of). Priced as a
// what-if prices the GPU's other ops (their kernels unknown).
ResidualCorrection correction_from_samples(const LearnedModel& model, const std::vector<Measurement>& samples,
                                           const DeviceSpec& device);

}  // namespace dpro::costmodel
