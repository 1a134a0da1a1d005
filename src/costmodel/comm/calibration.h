#pragma once
// Fitting the collective model to a trace: each sized NCCL op gives a sample (operation,
// bytes, group placement, transfer time). Per operation (or per family: reductions/gathers vs
// point-to-point) the model's latency and byte-time scales are fitted, regressing the
// transfer time on the uncalibrated latency and byte time of the algorithm/protocol the model
// picks. The default fit is least absolute deviations of the relative error (the quantity
// the accuracy target is stated in), so that a few samples inflated by waiting do not pull
// the fit the way least squares lets them.
//
// evaluate_half_split() fits on every other collective instance (in time order; all ranks
// of an instance fall on the same side) and reports the error on the others.
#include <string>
#include <vector>

#include "costmodel/comm/collective_model.h"
#include "costmodel/comm/comm_ops.h"

namespace dpro::comm {

struct CommSample {
  CollectiveCall call;
  double time_us = 0;           // transfer time
  std::uint64_t instance = 0;   // same for every rank of one collective instance
  Nanos first_start = 0;        // of the instance, for ordering
  int rank = 0;
};

// Samples of the ops matched across ranks whose size came from the trace or a host execution
// trace (not inferred) and whose group has at least two ranks, placed on `origin`. An unmatched
// op's time includes its wait for peers outside the trace, so it is no transfer time and no
// sample, unless `unmatched_too` (to study what a fit on such times means: bench_comm).
std::vector<CommSample> make_samples(const std::vector<CommOp>& ops, const ClusterSpec& origin,
                                     bool unmatched_too = false);

enum class FitMethod {
  kLeastSquares,   // minimises sum ((pred - meas) / meas)^2
  kLeastAbsolute,  // minimises sum |pred - meas| / meas (LAD on the relative error)
};
enum class FitGrouping {
  kFamily,     // one latency/byte-time pair for reductions/gathers, one for point-to-point
  kOperation,  // one pair per operation; an operation without samples takes its family's
};
const char* to_string(FitMethod m);
const char* to_string(FitGrouping g);

struct FitOptions {
  FitMethod method = FitMethod::kLeastAbsolute;
  FitGrouping grouping = FitGrouping::kOperation;
};

// Where an operation's scales came from.
enum class ScaleSource { kDefault, kOperation, kFamily, kOtherFamily };
const char* to_string(ScaleSource s);  // "default", "operation", "family", "other family"

struct CalibrationFit {
  Calibration calibration;
  ScaleSource source[kCollectiveOpCount] = {};
  std::size_t samples[kCollectiveOpCount] = {};  // per operation
};

// Scales are positive: a fit whose best solution drops the latency or the byte time (scale
// 0) falls back to one common scale for both, so the model keeps reacting to latency and
// bandwidth changes. Operations (or families) with samples of a single size get one common
// scale. Identity calibration when there are no samples.
CalibrationFit fit_calibration_detailed(const ClusterSpec& cluster, const std::vector<CommSample>& samples,
                                        const FitOptions& options = {});
Calibration fit_calibration(const ClusterSpec& cluster, const std::vector<CommSample>& samples,
                            const FitOptions& options = {});

struct OpError {
  std::string op;
  std::size_t train = 0, test = 0;   // samples
  double median_abs_error = 0;       // on the test samples, fraction
  double size_oracle_median_abs_error = 0;  // see SplitEvaluation
  std::size_t size_oracle_samples = 0;
};

struct SplitOptions {
  FitOptions fit;
  // Replace, within each half separately, the samples of one rank and one (operation, size,
  // group) by the fastest of them (the lower envelope of the durations per message size).
  // Meant for unmatched collectives, whose kernel time includes waiting for peers outside the
  // trace: the fastest instance of a size is the one with the least waiting. The two halves
  // never share a sample. This changes what is measured; report it beside the plain figure.
  bool lower_envelope = false;
};

struct SplitEvaluation {
  Calibration calibration;          // fitted on the train half
  std::size_t train = 0, test = 0;  // samples
  std::size_t train_instances = 0, test_instances = 0;
  double median_abs_error = 0;      // over test samples, fraction (|pred - meas| / meas)
  double mean_abs_error = 0;
  // Secondary figure: one error per test instance, its measurement being the median over
  // the instance's ranks (removes per-rank timing noise; not the target's definition).
  double instance_median_abs_error = 0;
  // Reference, not a model: the median error if every test sample were predicted by the
  // weighted median of the test samples of its own (operation, size, group), i.e. the best
  // one could do from the size alone on this half. It measures the spread of identical-size
  // samples; it is not a strict bound on the median. Only sizes with at least 3 test samples
  // count (fewer say nothing about spread); size_oracle_samples says how many samples that is.
  double size_oracle_median_abs_error = 0;
  std::size_t size_oracle_samples = 0;
  std::vector<OpError> by_op;
  std::vector<CommSample> train_samples, test_samples;  // as fitted and tested
};

SplitEvaluation evaluate_half_split(const ClusterSpec& cluster, const std::vector<CommSample>& samples,
                                    const SplitOptions& options = {});

// Spread of the transfer times of identical calls (operation, size, group size).
struct SizeSpread {
  CollectiveOp op = CollectiveOp::kAllReduce;
  std::int64_t bytes = 0;
  int ranks = 0;
  std::size_t samples = 0, instances = 0;
  double min_us = 0, median_us = 0, max_us = 0;
};
std::vector<SizeSpread> size_spread(const std::vector<CommSample>& samples);

}  // namespace dpro::comm
