#pragma once
// Accuracy experiments for the cost models on measured data (the `costmodel eval` command
// and docs/costmodel.md): MAPE per op family and per GPU for roofline, cross-device scaling
// and the learned model, on (a) a random 80/20 split and (b) leave-one-GPU-out with 0 and N
// k-means-chosen samples of the held-out GPU. Computes tables; rendering is in report.h.
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/log.h"
#include "costmodel/dataset.h"
#include "costmodel/learned_model.h"
#include "costmodel/roofline_share.h"

namespace dpro::costmodel {

struct MapeCell {
  double sum_ape = 0;  // sum of |pred - measured| / measured
  std::size_t count = 0;
  double mape_percent() const { return count ? 100.0 * sum_ape / static_cast<double>(count) : 0.0; }
  void add(double predicted, double measured) {  // measured > 0
    sum_ape += std::abs(predicted - measured) / measured;
    ++count;
  }
};

struct MapeTable {
  std::string title;
  std::string row_label;             // "op family" or "GPU"
  std::vector<std::string> columns;  // model names
  std::map<std::string, std::vector<MapeCell>> rows;
  // Mean over rows of each column's MAPE (each row weighs the same); NaN for a column no row
  // has data in (rendered "-", null in JSON).
  std::vector<double> row_average() const;
  void add(const std::string& row, std::size_t column, double predicted, double measured);
};

// Deterministic row split: true for the ~`test_fraction` of rows in the test set. Depends
// only on the op, the device and the seed, so training and evaluation agree.
bool in_test_split(const Measurement& m, double test_fraction, std::uint64_t seed);

// Measurements of the same op on other GPUs: the origins cross-device predictions start
// from. Tables average over every available origin (a fair expected error for "the trace
// came from some other GPU"), rather than picking a favourable one.
class OriginIndex {
 public:
  explicit OriginIndex(const std::vector<Measurement>& data);
  // Same op, every GPU whose model family differs from `exclude_family`.
  std::vector<const Measurement*> origins(const Measurement& target, const std::string& exclude_family) const;

 private:
  std::map<std::string, std::vector<const Measurement*>> by_op_;
};

struct EvalOptions {
  double test_fraction = 0.2;
  std::uint64_t split_seed = 7;
  TrainOptions train;
  FewShotOptions few_shot;
  int few_shot_samples = 200;
  bool leave_one_out = true;
  std::vector<std::string> only_gpus;  // leave-one-out targets (model families); empty: all
};

struct EvalReport {
  std::vector<MapeTable> tables;
  std::vector<std::string> notes;  // how each figure was obtained
};

// Split experiment. `split_model`: a model trained on exactly the training side of the same
// split (e.g. the shipped model); when null, one is trained here.
void evaluate_split(const std::vector<Measurement>& data, const EvalOptions& options,
                    const LearnedModel* split_model, EvalReport& report, Logger& log);
// Leave-one-GPU-out experiment (trains one model per held-out GPU).
void evaluate_leave_one_out(const std::vector<Measurement>& data, const EvalOptions& options,
                            EvalReport& report, Logger& log);

// `replay --device`'s kernel re-timing scored on ops measured on two GPUs with their kernels' GPU
// time (Measurement::kernel_ms; tools/gpu/measure_ops.py records it): each op of `target` (one
// GPU) whose op_key has a row in `origin` (another GPU) and a kernel time on both is predicted
// from the origin's kernel time by each rule --device has. One table, MAPE % of the target's
// kernel time per op family; columns kRetimeColumns (the learned one empty without `model`, the
// same-chip one empty for GPUs of two chips). `origin_file`/`target_file` name the inputs in
// errors (a target of two GPUs, no kernel time in `origin`, no op in common); a row without a
// match or without a kernel time is left out and counted in the report's note. With `shares`,
// the last column is what `--device --pricer roofline-share` uses (its kernel-time ratio where the
// table prices the op) and is named so.
extern const std::vector<std::string> kRetimeColumns;
EvalReport kernel_retime_report(const std::vector<Measurement>& origin, const std::vector<Measurement>& target,
                                const LearnedModel* model, const std::string& origin_file,
                                const std::string& target_file, const ShareTable* shares = nullptr);

// Every row of `data`, as the row lists training and evaluation take.
std::vector<const Measurement*> all_rows(const std::vector<Measurement>& data);
// The GPU models (DeviceSpec::model_family: V100, not V100-PCIE-32GB) the data was measured on:
// the GPUs leave-one-out holds out, and the names EvalOptions::only_gpus may give.
std::set<std::string> gpu_models(const std::vector<Measurement>& data);

// Training rows of the split (what `costmodel train` fits the shipped model on).
std::vector<const Measurement*> split_training_rows(const std::vector<Measurement>& data,
                                                    double test_fraction, std::uint64_t seed);

}  // namespace dpro::costmodel
