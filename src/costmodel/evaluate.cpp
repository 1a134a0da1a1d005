#include "costmodel/evaluate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>
#include <sstream>

#include "costmodel/features.h"
#include "costmodel/kmeans.h"
#include "costmodel/roofline.h"
#include "costmodel/scaling.h"

namespace dpro::costmodel {

std::vector<double> MapeTable::row_average() const {
  std::vector<double> avg(columns.size(), 0.0);
  if (rows.empty()) return avg;
  for (const auto& [name, cells] : rows)
    for (size_t c = 0; c < cells.size(); ++c) avg[c] += cells[c].mape_percent();
  for (auto& a : avg) a /= static_cast<double>(rows.size());
  return avg;
}

void MapeTable::add(const std::string& row, std::size_t column, double predicted, double measured) {
  if (!std::isfinite(predicted) || measured <= 0) return;
  auto& cells = rows[row];
  cells.resize(columns.size());
  cells[column].sum_ape += std::abs(predicted - measured) / measured;
  ++cells[column].count;
}

std::string op_key(const OpDesc& op) {
  std::string k = to_string(op.family);
  for (auto d : op.dims) k += "," + std::to_string(d);
  return k + "," + to_string(op.dtype);
}

bool in_test_split(const Measurement& m, double test_fraction, std::uint64_t seed) {
  std::uint64_t h = 1469598103934665603ull ^ (seed * 0x9e3779b97f4a7c15ull);
  for (unsigned char c : op_key(m.op) + "@" + m.device->name) { h ^= c; h *= 1099511628211ull; }
  h ^= h >> 33; h *= 0xff51afd7ed558ccdull; h ^= h >> 33;
  return static_cast<double>(h % 1000000) / 1e6 < test_fraction;
}

std::vector<const Measurement*> split_training_rows(const std::vector<Measurement>& data,
                                                    double test_fraction, std::uint64_t seed) {
  std::vector<const Measurement*> out;
  for (const auto& m : data)
    if (!in_test_split(m, test_fraction, seed)) out.push_back(&m);
  return out;
}

OriginIndex::OriginIndex(const std::vector<Measurement>& data) {
  for (const auto& m : data) by_op_[op_key(m.op)].push_back(&m);
}

namespace {
double spec_distance(const DeviceSpec& a, const DeviceSpec& b) {
  float fa[7], fb[7];
  device_features(a, fa);
  device_features(b, fb);
  double s = 0;
  for (int i = 0; i < 4; ++i) s += (fa[i] - fb[i]) * (fa[i] - fb[i]);  // bw, SMs, clock, peak
  return s;
}
}  // namespace

const Measurement* OriginIndex::nearest_origin(const Measurement& target,
                                               const std::string& exclude_family) const {
  auto it = by_op_.find(op_key(target.op));
  if (it == by_op_.end()) return nullptr;
  const Measurement* best = nullptr;
  double best_d = 0;
  for (const Measurement* m : it->second) {
    if (m->device->model_family() == exclude_family) continue;
    const double d = spec_distance(*m->device, *target.device);
    if (!best || d < best_d || (d == best_d && m->device->name < best->device->name)) {
      best = m;
      best_d = d;
    }
  }
  return best;
}

namespace {

// Learned prediction on the target scaled from a measured origin: T_o * f(d) / f(o).
std::vector<double> learned_from_origin(const LearnedModel& model, const std::vector<const Measurement*>& rows,
                                        const std::vector<const Measurement*>& origins,
                                        const std::vector<double>& on_target) {
  std::vector<PredictQuery> q;
  for (size_t i = 0; i < rows.size(); ++i)
    q.push_back({&rows[i]->op, origins[i] ? origins[i]->device : rows[i]->device});
  const auto on_origin = model.predict_ms(q);
  std::vector<double> out(rows.size(), std::nan(""));
  for (size_t i = 0; i < rows.size(); ++i)
    if (origins[i]) out[i] = origins[i]->latency_ms * on_target[i] / on_origin[i];
  return out;
}

std::vector<double> learned_on_own_device(const LearnedModel& model, const std::vector<const Measurement*>& rows) {
  std::vector<PredictQuery> q;
  for (const auto* m : rows) q.push_back({&m->op, m->device});
  return model.predict_ms(q);
}

MapeTable make_table(std::string title, std::string row_label, std::vector<std::string> columns) {
  MapeTable t;
  t.title = std::move(title);
  t.row_label = std::move(row_label);
  t.columns = std::move(columns);
  return t;
}

}  // namespace

void evaluate_split(const std::vector<Measurement>& data, const EvalOptions& options,
                    const LearnedModel* split_model, EvalReport& report, Logger& log) {
  LearnedModel trained;
  if (!split_model && LearnedModel::available()) {
    log.info("training the split model");
    trained = LearnedModel::train(split_training_rows(data, options.test_fraction, options.split_seed),
                                  options.train, log);
    split_model = &trained;
  }
  std::vector<const Measurement*> test;
  for (const auto& m : data)
    if (in_test_split(m, options.test_fraction, options.split_seed)) test.push_back(&m);
  const OriginIndex origins_index(data);
  std::vector<const Measurement*> origins;
  for (const auto* m : test) origins.push_back(origins_index.nearest_origin(*m, m->device->model_family()));
  std::vector<double> learned(test.size(), std::nan("")), learned_origin(test.size(), std::nan(""));
  if (split_model) {
    learned = learned_on_own_device(*split_model, test);
    learned_origin = learned_from_origin(*split_model, test, origins, learned);
  }
  const std::vector<std::string> cols = {"roofline", "scaling (nearest GPU)", "learned",
                                         "learned x origin"};
  auto by_family = make_table("(a) random 80/20 split: MAPE % per op family (test rows)", "op family", cols);
  auto by_gpu = make_table("(a) random 80/20 split: MAPE % per GPU (test rows)", "GPU", cols);
  for (size_t i = 0; i < test.size(); ++i) {
    const Measurement& m = *test[i];
    const double preds[4] = {roofline_ms(m.op, *m.device),
                             origins[i] ? scale_ms(m.op, *origins[i]->device, origins[i]->latency_ms, *m.device)
                                        : std::nan(""),
                             learned[i], learned_origin[i]};
    for (size_t c = 0; c < 4; ++c) {
      by_family.add(to_string(m.op.family), c, preds[c], m.latency_ms);
      by_gpu.add(m.device->model_family(), c, preds[c], m.latency_ms);
    }
  }
  report.tables.push_back(std::move(by_family));
  report.tables.push_back(std::move(by_gpu));
  std::ostringstream note;
  note << "(a) " << test.size() << " test rows of " << data.size() << " (hash split, fraction "
       << options.test_fraction << ", seed " << options.split_seed << "). Scaling and 'learned x origin' "
       << "start from the same op measured on the nearest other GPU model (spec distance). Learned model: "
       << (split_model ? split_model->provenance() : std::string("not available in this build"));
  report.notes.push_back(note.str());
}

void evaluate_leave_one_out(const std::vector<Measurement>& data, const EvalOptions& options,
                            EvalReport& report, Logger& log) {
  std::set<std::string> gpus;
  for (const auto& m : data) gpus.insert(m.device->model_family());
  const std::vector<std::string> cols = {"roofline", "scaling (nearest GPU)", "learned, 0 samples",
                                         "learned x origin, 0 samples",
                                         "learned, " + std::to_string(options.few_shot_samples) + " samples",
                                         "learned x origin, " + std::to_string(options.few_shot_samples) + " samples"};
  auto by_gpu = make_table("(b) leave one GPU out: MAPE % on the held-out GPU", "held-out GPU", cols);
  auto by_family = make_table("(b) leave one GPU out: MAPE % per op family (all held-out GPUs pooled)",
                              "op family", cols);
  const OriginIndex origins_index(data);
  for (const auto& gpu : gpus) {
    if (!options.only_gpus.empty() &&
        std::find(options.only_gpus.begin(), options.only_gpus.end(), gpu) == options.only_gpus.end())
      continue;
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<const Measurement*> train, target;
    for (const auto& m : data) (m.device->model_family() == gpu ? target : train).push_back(&m);
    std::vector<const Measurement*> origins;
    for (const auto* m : target) origins.push_back(origins_index.nearest_origin(*m, gpu));
    // Few-shot sample: k-means over the held-out GPU's ops; evaluated on the rest.
    std::vector<std::vector<float>> points;
    for (const auto* m : target) points.push_back(op_cluster_features(m->op));
    const auto picked = kmeans_select(points, options.few_shot_samples, options.split_seed);
    std::vector<bool> is_sample(target.size(), false);
    std::vector<const Measurement*> samples;
    for (auto i : picked) { is_sample[i] = true; samples.push_back(target[i]); }

    std::vector<double> l0(target.size(), std::nan("")), lo0 = l0, lk = l0, lok = l0;
    if (LearnedModel::available()) {
      log.info("leave-one-out: training without " + gpu);
      LearnedModel model = LearnedModel::train(train, options.train, log);
      l0 = learned_on_own_device(model, target);
      lo0 = learned_from_origin(model, target, origins, l0);
      model.fine_tune(samples, train, options.few_shot, log);
      lk = learned_on_own_device(model, target);
      lok = learned_from_origin(model, target, origins, lk);
    }
    for (size_t i = 0; i < target.size(); ++i) {
      const Measurement& m = *target[i];
      const double scaled = origins[i] ? scale_ms(m.op, *origins[i]->device, origins[i]->latency_ms, *m.device)
                                       : std::nan("");
      const double preds[6] = {roofline_ms(m.op, *m.device), scaled, l0[i], lo0[i],
                               is_sample[i] ? std::nan("") : lk[i], is_sample[i] ? std::nan("") : lok[i]};
      for (size_t c = 0; c < 6; ++c) {
        by_gpu.add(gpu, c, preds[c], m.latency_ms);
        by_family.add(to_string(m.op.family), c, preds[c], m.latency_ms);
      }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    report.notes.push_back("(b) held out " + gpu + ": trained on " + std::to_string(train.size()) +
                           " rows of the other GPUs, tested on " + std::to_string(target.size()) +
                           " rows; " + std::to_string(samples.size()) +
                           " k-means samples for few-shot (excluded from its columns); " +
                           std::to_string(static_cast<int>(seconds)) + " s");
  }
  report.tables.push_back(std::move(by_gpu));
  report.tables.push_back(std::move(by_family));
}

}  // namespace dpro::costmodel
