#pragma once
// Scores of the roofline-share model (roofline_share.h): MAPE of its latencies and kernel
// times on measured rows, and leave-one-GPU-out over the training GPUs (how its form was chosen).
#include <map>
#include <string>
#include <vector>

#include "costmodel/dataset.h"
#include "costmodel/eval/evaluate.h"
#include "costmodel/roofline_share.h"
#include "costmodel/share_device_fit.h"

namespace dpro::costmodel {

struct ShareScore {
  MapeCell latency, kernel;  // kernel: rows with a Kernel Time only
  std::map<std::string, MapeCell> latency_by_family, kernel_by_family;
  std::size_t not_priced = 0;  // rows of a family without a curve
};

ShareScore score_share_table(const ShareTable& table, const std::vector<const Measurement*>& rows);

// Per GPU model (DeviceSpec::model_family: both A100s of the data are one "A100", as in the learned
// model's leave-one-GPU-out): the table fitted on the other GPUs' rows, scored on its rows; with
// `blank_kernels` scored on its rows with their kernel name, kernel list and launch geometry
// removed (an op whose kernel is not known: GemmWaves' likely kernel).
std::map<std::string, ShareScore> share_leave_one_gpu_out(const std::vector<const Measurement*>& data,
                                                          const ShareFitOptions& options,
                                                          bool blank_kernels = false);

// Few-shot, scored honestly: for each seed, `n` rows of `rows` (all measured on `device`) drawn by
// pick_share_samples, the device's scalars fitted on them, and the MAPE of the rest only.
struct FewShotRun {
  std::uint64_t seed = 0;
  std::size_t samples = 0;
  ShareScore score;  // the rows not drawn
  DeviceScalars scalars;
};
// `extra`: samples added to every draw's (a device profile's: share_profile.h); with them `n` may
// be 0 (the extra samples alone, every row scored).
std::vector<FewShotRun> share_few_shot(const ShareTable& prior, const std::vector<const Measurement*>& rows,
                                       const DeviceSpec& device, std::size_t n, const std::vector<std::uint64_t>& seeds,
                                       const DeviceFitOptions& options = {},
                                       const std::vector<const Measurement*>& extra = {});

// A score's latency (kernel time) MAPE per family group (groups with scored rows only).
std::map<ShareGroup, MapeCell> latency_by_group(const ShareScore& score);
std::map<ShareGroup, MapeCell> kernel_by_group(const ShareScore& score);

// The runs' latency MAPE %: mean, lowest and highest over the runs, and per family group the mean
// over the runs that scored it; the same of the Kernel Time MAPE over the runs that scored rows
// with a Kernel Time (kernel_runs of them; 0: no figures). Runs must not be empty.
struct FewShotSummary {
  double mean = 0, min = 0, max = 0;
  std::map<ShareGroup, double> group_mean;
  std::size_t kernel_runs = 0;
  double kernel_mean = 0, kernel_min = 0, kernel_max = 0;
  std::map<ShareGroup, double> kernel_group_mean;
};
FewShotSummary summarize(const std::vector<FewShotRun>& runs);

}  // namespace dpro::costmodel
