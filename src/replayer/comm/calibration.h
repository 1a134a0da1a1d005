#pragma once
// Fitting the collective model to a trace: each sized NCCL op gives a sample (operation,
// bytes, group placement, transfer time); the model's latency and byte-time scales of each
// operation family are fitted by least squares on the relative error, regressing the
// transfer time on the uncalibrated latency and byte time of the algorithm/protocol the model
// picks. evaluate_half_split() fits on every other collective instance (in time order; all
// ranks of an instance fall on the same side) and reports the error on the
// others.
#include <string>
#include <vector>

#include "replayer/comm/collective_model.h"
#include "replayer/comm/comm_ops.h"

namespace dpro::comm {

struct CommSample {
  CollectiveCall call;
  double time_us = 0;           // transfer time
  std::uint64_t instance = 0;   // same for every rank of one collective instance
  Nanos first_start = 0;        // of the instance, for ordering
  int rank = 0;
};

// Samples of the ops whose size came from the trace or a host execution trace (not inferred)
// and whose group has at least two ranks, placed on `origin`.
std::vector<CommSample> make_samples(const std::vector<CommOp>& ops, const ClusterSpec& origin);

// Identity calibration when there are no samples; a family without samples takes the scales
// of the other one.
Calibration fit_calibration(const ClusterSpec& cluster, const std::vector<CommSample>& samples);

struct OpError {
  std::string op;
  std::size_t train = 0, test = 0;  // samples
  double median_abs_error = 0;      // on the test samples, fraction
};

struct SplitEvaluation {
  Calibration calibration;          // fitted on the train half
  std::size_t train = 0, test = 0;  // samples
  std::size_t train_instances = 0, test_instances = 0;
  double median_abs_error = 0;      // over test samples, fraction (|pred - meas| / meas)
  double mean_abs_error = 0;
  std::vector<OpError> by_op;
};

SplitEvaluation evaluate_half_split(const ClusterSpec& cluster, const std::vector<CommSample>& samples);

}  // namespace dpro::comm
