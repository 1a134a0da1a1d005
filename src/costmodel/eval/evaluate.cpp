#include "costmodel/eval/evaluate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "costmodel/features.h"
#include "costmodel/kernel_time.h"
#include "costmodel/pricer.h"
#include "costmodel/eval/kmeans.h"
#include "costmodel/residual_correction.h"
#include "costmodel/roofline.h"
#include "costmodel/scaling.h"

namespace dpro::costmodel {

std::vector<double> MapeTable::row_average() const {
  std::vector<double> avg(columns.size(), 0.0);
  std::vector<bool> any(columns.size(), false);
  for (const auto& [name, cells] : rows)
    for (size_t c = 0; c < cells.size(); ++c) {
      avg[c] += cells[c].mape_percent();
      any[c] = any[c] || cells[c].count > 0;
    }
  for (size_t c = 0; c < avg.size(); ++c)
    avg[c] = any[c] ? avg[c] / static_cast<double>(rows.size()) : std::nan("");
  return avg;
}

void MapeTable::add(const std::string& row, std::size_t column, double predicted, double measured) {
  if (!std::isfinite(predicted) || measured <= 0) return;
  auto& cells = rows[row];
  cells.resize(columns.size());
  cells[column].add(predicted, measured);
}

bool in_test_split(const Measurement& m, double test_fraction, std::uint64_t seed) {
  std::uint64_t h = 1469598103934665603ull ^ (seed * 0x9e3779b97f4a7c15ull);
  for (unsigned char c : op_key(m.op) + "@" + m.device->name) { h ^= c; h *= 1099511628211ull; }
  h ^= h >> 33; h *= 0xff51afd7ed558ccdull; h ^= h >> 33;
  return static_cast<double>(h % 1000000) / 1e6 < test_fraction;
}

std::vector<const Measurement*> all_rows(const std::vector<Measurement>& data) {
  std::vector<const Measurement*> out;
  out.reserve(data.size());
  for (const auto& m : data) out.push_back(&m);
  return out;
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

std::vector<const Measurement*> OriginIndex::origins(const Measurement& target,
                                                    const std::string& exclude_family) const {
  std::vector<const Measurement*> out;
  auto it = by_op_.find(op_key(target.op));
  if (it == by_op_.end()) return out;
  for (const Measurement* m : it->second)
    if (m->device->model_family() != exclude_family) out.push_back(m);
  return out;
}

namespace {

// (target row, origin measurement) pairs: every other GPU that measured the same op.
struct OriginPairs {
  std::vector<std::size_t> row;  // index into the target rows
  std::vector<const Measurement*> origin;
};

OriginPairs origin_pairs(const OriginIndex& index, const std::vector<const Measurement*>& rows) {
  OriginPairs p;
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (const Measurement* o : index.origins(*rows[i], rows[i]->device->model_family())) {
      p.row.push_back(i);
      p.origin.push_back(o);
    }
  return p;
}

// Per pair: f(op, origin), with the origin's identity only where the target has one (the
// ratio f(target) / f(origin) then uses one pathway for both, as the --device what-if does).
std::vector<double> predicted_on_origin(const LearnedModel& model, const std::vector<const Measurement*>& rows,
                                        const OriginPairs& pairs) {
  std::vector<PredictQuery> q;
  for (std::size_t k = 0; k < pairs.row.size(); ++k) {
    const DeviceSpec* target = rows[pairs.row[k]]->device;
    q.push_back({&rows[pairs.row[k]]->op, pairs.origin[k]->device, model.knows_device(*target)});
  }
  return model.predict_ms(q);
}

// Per pair: T_o * f(op, target) / f(op, origin) with the learned model f (`on_origin`: per
// pair, from predicted_on_origin).
std::vector<double> learned_from_origin(const OriginPairs& pairs, const std::vector<double>& on_target,
                                        const std::vector<double>& on_origin) {
  std::vector<double> out(pairs.row.size());
  for (std::size_t k = 0; k < pairs.row.size(); ++k)
    out[k] = pairs.origin[k]->latency_ms * on_target[pairs.row[k]] / on_origin[k];
  return out;
}

double scaled_from_origin(const Measurement& m, const Measurement& origin) {
  return scale_ms(m.op, *origin.device, origin.latency_ms, *m.device);
}

// kernel_known: the rows' recorded kernels ran on their devices and may be used (the split);
// false for a held-out GPU, where nothing of it is known.
// use_memory: with the residual memory of the training configurations (config_memory.h).
std::vector<double> learned_on_own_device(const LearnedModel& model, const std::vector<const Measurement*>& rows,
                                          bool kernel_known, bool use_memory = true) {
  std::vector<PredictQuery> q;
  for (const auto* m : rows) q.push_back({&m->op, m->device, true, kernel_known, use_memory});
  return model.predict_ms(q);
}

MapeTable make_table(std::string title, std::string row_label, std::vector<std::string> columns) {
  MapeTable t;
  t.title = std::move(title);
  t.row_label = std::move(row_label);
  t.columns = std::move(columns);
  return t;
}

// (d): re-timing a kernel time measured on another GPU, as `replay --device` does with a
// trace's kernels. A row's kernel time is its latency less its GPU's measurement overhead
// (kernel_time.h, fitted on all rows of that GPU: the reference, not the model's); pairs
// whose kernel time is at least kKernelTableMinMs on both GPUs (above every floor, where
// latency = overhead + kernel holds). `on_target`: the model's latency on each target row
// as the what-if predicts it (kernel not given); `on_origin`: per pair, predicted_on_origin.
constexpr double kKernelTableMinMs = 0.015;
const std::vector<std::string> kKernelColumns = {
    "scaling with shapes (what --device uses)", "scaling with shapes, no part held fixed",
    "scaling, kernel name only (what --device uses without shapes)", "scaling, op unknown (bandwidth ratio)",
    "learned, latency ratio", "learned, kernel-time ratio (what --device uses)"};

std::size_t add_kernel_rows(MapeTable& table, const LearnedModel& model, const std::vector<const Measurement*>& rows,
                            const OriginPairs& pairs, const std::vector<double>& on_target,
                            const std::vector<double>& on_origin,
                            const std::map<std::string, double>& reference_overheads) {
  // The model's overheads per (device, identity), looked up once per GPU rather than per pair.
  std::map<std::pair<const DeviceSpec*, bool>, double> model_overhead;
  auto overhead_of = [&](const DeviceSpec* device, bool identity) {
    const auto [it, fresh] = model_overhead.try_emplace({device, identity}, 0.0);
    if (fresh) it->second = model.measurement_overhead_ms(*device, identity);
    return it->second;
  };
  std::map<const DeviceSpec*, bool> known;
  std::size_t used = 0;
  for (std::size_t k = 0; k < pairs.row.size(); ++k) {
    const Measurement& m = *rows[pairs.row[k]];
    const Measurement& origin = *pairs.origin[k];
    const auto ct = reference_overheads.find(m.device->name), co = reference_overheads.find(origin.device->name);
    if (ct == reference_overheads.end() || co == reference_overheads.end()) continue;
    const double kernel = m.latency_ms - ct->second, origin_kernel = origin.latency_ms - co->second;
    if (kernel < kKernelTableMinMs || origin_kernel < kKernelTableMinMs) continue;
    const double t = on_target[pairs.row[k]], o = on_origin[k];
    const auto [it, fresh] = known.try_emplace(m.device, false);
    if (fresh) it->second = model.knows_device(*m.device);
    const double ratio = learned_kernel_factor(m.op, *origin.device, *m.device, t, o, overhead_of(m.device, true),
                                               overhead_of(origin.device, it->second), model.unseen_floor_ms(m.op.family));
    const std::string row = m.device->model_family();
    OpDesc named;  // what a trace without shapes tells of the op: the kernel that ran on the origin
    named.kernel_name = origin.op.kernel_name;
    table.add(row, 0, scale_ms(m.op, *origin.device, origin_kernel, *m.device), kernel);
    table.add(row, 1, origin_kernel * scaling_ratio(m.op, *origin.device, *m.device), kernel);
    table.add(row, 2, scale_ms(named, *origin.device, origin_kernel, *m.device), kernel);
    table.add(row, 3, scale_ms(OpDesc{}, *origin.device, origin_kernel, *m.device), kernel);
    table.add(row, 4, origin_kernel * t / o, kernel);
    table.add(row, 5, origin_kernel * ratio, kernel);
    ++used;
  }
  return used;
}

std::string kernel_table_note(const std::string& which, std::size_t pairs,
                              const std::map<std::string, double>& reference_overheads) {
  std::string note = which + ": " + std::to_string(pairs) + " (row, other GPU) pairs with a kernel time of " +
                     std::to_string(static_cast<int>(kKernelTableMinMs * 1e3)) +
                     " us or more on both; kernel time = latency - the GPU's measurement overhead (";
  bool first = true;
  for (const auto& [device, ms] : reference_overheads) {
    note += (first ? "" : ", ") + device + " " + std::to_string(static_cast<int>(std::lround(ms * 1e3))) + " us";
    first = false;
  }
  if (first) note += "none could be fitted on these rows";
  return note + "; kernel_time.h)";
}

// (c): the what-if's price of an op that has no family of its own (like_family()): the test
// rows of a family priced through another family with the same memory traffic, against their
// own family (`learned_origin`, per pair, as table (a) has it) and against scaling.
void evaluate_like_ops(const LearnedModel& model, const std::vector<const Measurement*>& test,
                       const OriginPairs& pairs, const std::vector<double>& learned_origin, EvalReport& report) {
  // The like families dpro uses (relu, tanh, mul), tried on families that have their own.
  // gelu is the exception the table shows: it scales across GPUs unlike the other unary ops.
  const std::pair<OpFamily, OpFamily> like[] = {
      {OpFamily::kAdd, OpFamily::kMul},        {OpFamily::kDiv, OpFamily::kMul},
      {OpFamily::kAddScalar, OpFamily::kRelu}, {OpFamily::kMulScalar, OpFamily::kRelu},
      {OpFamily::kDivScalar, OpFamily::kRelu}, {OpFamily::kTanh, OpFamily::kRelu},
      {OpFamily::kRelu, OpFamily::kTanh},      {OpFamily::kPowScalar, OpFamily::kTanh},
      {OpFamily::kGelu, OpFamily::kTanh}};
  auto table = make_table("(c) a what-if's error on ops priced as a like family (test rows, from another GPU)",
                          "op family, priced as", {"scaling from another GPU", "learned x origin, own family",
                                                   "learned x origin, as the like family"});
  for (const auto& [own, as] : like) {
    const std::string row = std::string(to_string(own)) + " as " + to_string(as);
    std::vector<std::size_t> which;  // pair indices of this family
    for (std::size_t k = 0; k < pairs.row.size(); ++k)
      if (test[pairs.row[k]]->op.family == own) which.push_back(k);
    std::vector<OpDesc> ops;
    ops.reserve(which.size());  // the queries point into it
    std::vector<PredictQuery> on_target, on_origin;
    for (auto k : which) {
      const Measurement& m = *test[pairs.row[k]];
      ops.push_back(m.op);
      ops.back().family = as;
      on_target.push_back({&ops.back(), m.device, true});
      on_origin.push_back({&ops.back(), pairs.origin[k]->device, model.knows_device(*m.device)});
    }
    const auto t = model.predict_ms(on_target), o = model.predict_ms(on_origin);
    for (std::size_t j = 0; j < which.size(); ++j) {
      const std::size_t k = which[j];
      const Measurement& m = *test[pairs.row[k]];
      const Measurement& origin = *pairs.origin[k];
      table.add(row, 0, scaled_from_origin(m, origin), m.latency_ms);
      table.add(row, 1, learned_origin[k], m.latency_ms);
      table.add(row, 2, origin.latency_ms * t[j] / o[j], m.latency_ms);
    }
  }
  report.tables.push_back(std::move(table));
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
  const OriginPairs pairs = origin_pairs(origins_index, test);
  std::vector<double> learned(test.size(), std::nan("")), learned_nok = learned, learned_nomem = learned,
      learned_origin(pairs.row.size(), std::nan("")), on_origin = learned_origin;
  if (split_model) {
    learned = learned_on_own_device(*split_model, test, true);
    learned_nomem = learned_on_own_device(*split_model, test, true, false);
    learned_nok = learned_on_own_device(*split_model, test, false);
    // The ratio f(target) / f(origin) uses one pathway for both: the kernel the library
    // would pick on the target is not known when only the origin ran the op.
    on_origin = predicted_on_origin(*split_model, test, pairs);
    learned_origin = learned_from_origin(pairs, learned_nok, on_origin);
  }
  const std::vector<std::string> cols = {"roofline", "scaling from another GPU", "learned",
                                         "learned, kernel not given", "learned x origin",
                                         "learned without memory"};
  auto by_family = make_table("(a) random 80/20 split: MAPE % per op family (test rows)", "op family", cols);
  auto by_gpu = make_table("(a) random 80/20 split: MAPE % per GPU (test rows)", "GPU", cols);
  auto add = [&](const Measurement& m, std::size_t c, double pred) {
    by_family.add(to_string(m.op.family), c, pred, m.latency_ms);
    by_gpu.add(m.device->model_family(), c, pred, m.latency_ms);
  };
  for (std::size_t i = 0; i < test.size(); ++i) {
    add(*test[i], 0, roofline_ms(test[i]->op, *test[i]->device));
    add(*test[i], 2, learned[i]);
    add(*test[i], 3, learned_nok[i]);
    add(*test[i], 5, learned_nomem[i]);
  }
  for (std::size_t k = 0; k < pairs.row.size(); ++k) {
    const Measurement& m = *test[pairs.row[k]];
    add(m, 1, scaled_from_origin(m, *pairs.origin[k]));
    add(m, 4, learned_origin[k]);
  }
  report.tables.push_back(std::move(by_family));
  report.tables.push_back(std::move(by_gpu));
  if (split_model) evaluate_like_ops(*split_model, test, pairs, learned_origin, report);
  if (split_model) {
    const auto overheads = measurement_overheads_ms(all_rows(data));
    auto kernels = make_table("(d) a trace kernel re-timed from another GPU: MAPE % of the kernel time (test rows)",
                              "GPU", kKernelColumns);
    const std::size_t used = add_kernel_rows(kernels, *split_model, test, pairs, learned_nok, on_origin, overheads);
    report.tables.push_back(std::move(kernels));
    report.notes.push_back(kernel_table_note("(d) split", used, overheads));
  }
  std::ostringstream note;
  note << "(a) " << test.size() << " test rows of " << data.size() << " (hash split, fraction "
       << options.test_fraction << ", seed " << options.split_seed << "). 'Scaling' and 'learned x origin' "
       << "start from the same op measured on another GPU model, averaged over every such GPU "
       << "(" << pairs.row.size() << " pairs). Learned model: "
       << (split_model ? split_model->provenance() : std::string("not available in this build"));
  report.notes.push_back(note.str());
}

std::set<std::string> gpu_models(const std::vector<Measurement>& data) {
  std::set<std::string> models;
  for (const auto& m : data) models.insert(m.device->model_family());
  return models;
}

void evaluate_leave_one_out(const std::vector<Measurement>& data, const EvalOptions& options,
                            EvalReport& report, Logger& log) {
  const std::set<std::string> gpus = gpu_models(data);
  const std::vector<std::string> cols = {"roofline", "scaling from another GPU", "learned, 0 samples",
                                         "learned x origin, 0 samples",
                                         "learned, " + std::to_string(options.few_shot_samples) + " samples",
                                         "learned x origin, " + std::to_string(options.few_shot_samples) + " samples",
                                         "learned + correction, " + std::to_string(options.few_shot_samples) + " samples",
                                         "learned x origin + correction, " + std::to_string(options.few_shot_samples) + " samples",
                                         "fine-tuned + correction, " + std::to_string(options.few_shot_samples) + " samples",
                                         "learned without memory, 0 samples",
                                         "fine-tuned + correction without memory, " + std::to_string(options.few_shot_samples) + " samples"};
  auto by_gpu = make_table("(b) leave one GPU out: MAPE % on the held-out GPU", "held-out GPU", cols);
  auto by_family = make_table("(b) leave one GPU out: MAPE % per op family (all held-out GPUs pooled)",
                              "op family", cols);
  auto kernels = make_table("(d) a trace kernel re-timed from another GPU to the held-out GPU, 0 samples: MAPE % "
                            "of the kernel time", "held-out GPU", kKernelColumns);
  const auto overheads = measurement_overheads_ms(all_rows(data));
  std::size_t kernel_pairs = 0;
  const OriginIndex origins_index(data);
  for (const auto& gpu : gpus) {
    if (!options.only_gpus.empty() &&
        std::find(options.only_gpus.begin(), options.only_gpus.end(), gpu) == options.only_gpus.end())
      continue;
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<const Measurement*> train, target;
    for (const auto& m : data) (m.device->model_family() == gpu ? target : train).push_back(&m);
    const OriginPairs pairs = origin_pairs(origins_index, target);
    // Few-shot sample: k-means over the held-out GPU's ops; evaluated on the rest.
    std::vector<std::vector<float>> points;
    for (const auto* m : target) points.push_back(op_cluster_features(m->op));
    const auto picked = kmeans_select(points, options.few_shot_samples, options.split_seed);
    std::vector<bool> is_sample(target.size(), false);
    std::vector<const Measurement*> samples;
    for (auto i : picked) { is_sample[i] = true; samples.push_back(target[i]); }

    std::vector<double> l0(target.size(), std::nan("")), lk = l0;
    std::vector<double> lo0(pairs.row.size(), std::nan("")), lok = lo0;
    std::vector<double> lc(target.size(), std::nan("")), loc(pairs.row.size(), std::nan("")), lkc = lc;
    std::vector<double> l0_nomem = lc, lkc_nomem = lc;
    if (LearnedModel::available()) {
      log.info("leave-one-out: training without " + gpu);
      LearnedModel model = LearnedModel::train(train, options.train, log);
      l0 = learned_on_own_device(model, target, false);
      l0_nomem = learned_on_own_device(model, target, false, false);
      const auto on_origin = predicted_on_origin(model, target, pairs);
      lo0 = learned_from_origin(pairs, l0, on_origin);
      kernel_pairs += add_kernel_rows(kernels, model, target, pairs, l0, on_origin, overheads);
      // Residual correction from the same samples: the factor of every target row for the
      // predictions `predicted` (one per target row).
      auto correction_factors = [&](const std::vector<double>& predicted) {
        ResidualCorrection correction;
        for (std::size_t i = 0; i < target.size(); ++i)
          if (is_sample[i]) correction.add(target[i]->op, predicted[i], target[i]->latency_ms);
        std::vector<double> f(target.size());
        for (std::size_t i = 0; i < target.size(); ++i) f[i] = correction.factor(target[i]->op);
        return f;
      };
      // Of the zero-shot model; the ratio T_origin x f(target) / f(origin) gets the same factor
      // on f(target) (what `replay --device X --device-samples F` does).
      const auto zero_shot_factor = correction_factors(l0);
      for (std::size_t i = 0; i < target.size(); ++i) lc[i] = l0[i] * zero_shot_factor[i];
      for (std::size_t k = 0; k < pairs.row.size(); ++k) loc[k] = lo0[k] * zero_shot_factor[pairs.row[k]];
      model.fine_tune(samples, train, options.few_shot, log);
      lk = learned_on_own_device(model, target, false);
      lok = learned_from_origin(pairs, lk, predicted_on_origin(model, target, pairs));
      // Of the fine-tuned model.
      const auto tuned_factor = correction_factors(lk);
      for (std::size_t i = 0; i < target.size(); ++i) lkc[i] = lk[i] * tuned_factor[i];
      // The same without the residual memory (the fine-tuned network keeps the memory of the
      // network it started from).
      const auto lk_nomem = learned_on_own_device(model, target, false, false);
      const auto tuned_nomem_factor = correction_factors(lk_nomem);
      for (std::size_t i = 0; i < target.size(); ++i) lkc_nomem[i] = lk_nomem[i] * tuned_nomem_factor[i];
    }
    auto add = [&](const Measurement& m, std::size_t c, double pred) {
      by_gpu.add(gpu, c, pred, m.latency_ms);
      by_family.add(to_string(m.op.family), c, pred, m.latency_ms);
    };
    for (std::size_t i = 0; i < target.size(); ++i) {
      add(*target[i], 0, roofline_ms(target[i]->op, *target[i]->device));
      add(*target[i], 2, l0[i]);
      if (!is_sample[i]) add(*target[i], 4, lk[i]);
      if (!is_sample[i]) add(*target[i], 6, lc[i]);
      if (!is_sample[i]) add(*target[i], 8, lkc[i]);
      add(*target[i], 9, l0_nomem[i]);
      if (!is_sample[i]) add(*target[i], 10, lkc_nomem[i]);
    }
    for (std::size_t k = 0; k < pairs.row.size(); ++k) {
      const std::size_t i = pairs.row[k];
      add(*target[i], 1, scaled_from_origin(*target[i], *pairs.origin[k]));
      add(*target[i], 3, lo0[k]);
      if (!is_sample[i]) add(*target[i], 5, lok[k]);
      if (!is_sample[i]) add(*target[i], 7, loc[k]);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::map<std::string, int> per_family;
    for (const auto* m : samples) ++per_family[to_string(m->op.family)];
    std::string spread;
    for (const auto& [family, n] : per_family) spread += (spread.empty() ? "" : ", ") + family + " " + std::to_string(n);
    report.notes.push_back("(b) held out " + gpu + ": trained on " + std::to_string(train.size()) +
                           " rows of the other GPUs, tested on " + std::to_string(target.size()) +
                           " rows; " + std::to_string(samples.size()) +
                           " k-means samples for few-shot (excluded from its columns; " + spread + "); " +
                           std::to_string(static_cast<int>(seconds)) + " s");
  }
  report.tables.push_back(std::move(by_gpu));
  report.tables.push_back(std::move(by_family));
  if (kernel_pairs) {
    report.tables.push_back(std::move(kernels));
    report.notes.push_back(kernel_table_note("(d) leave one GPU out", kernel_pairs, overheads));
  }
}

const std::vector<std::string> kRetimeColumns = {
    "keep the origin's time", "bandwidth ratio", "scaling (--device without the learned model)",
    "learned kernel-time factor (--device on described ops, other chips)", "same chip (--device between GPUs of one chip)",
    "what --device uses"};

EvalReport kernel_retime_report(const std::vector<Measurement>& origin, const std::vector<Measurement>& target,
                                const LearnedModel* model, const std::string& origin_file,
                                const std::string& target_file, const ShareTable* shares) {
  const DeviceSpec* device = nullptr;
  for (const Measurement& m : target) {
    if (device && m.device != device)
      throw InputError(target_file, "Device",
                       "rows of two GPUs (" + device->name + ", " + m.device->name + "); give one GPU's rows");
    device = m.device;
  }
  if (!device) throw InputError(target_file, "", "no rows");
  std::map<std::string, const Measurement*> by_key;
  bool any_kernel = false;
  for (const Measurement& m : origin)
    if (m.device != device) {
      by_key.emplace(op_key(m.op), &m);
      any_kernel = any_kernel || m.kernel_ms > 0;
    }
  if (!any_kernel)
    throw InputError(origin_file, "Kernel Time",
                     "no row with a kernel time on a GPU other than " + device->name +
                         " (tools/gpu/measure_ops.py records a Kernel Time column)");
  std::vector<const Measurement*> on_origin, on_target;
  std::size_t without_kernel = 0, unmatched = 0;
  std::set<std::string> seen;
  for (const Measurement& m : target) {
    const auto it = by_key.find(op_key(m.op));
    if (it == by_key.end() || !seen.insert(it->first).second) { ++unmatched; continue; }
    if (!(m.kernel_ms > 0) || !(it->second->kernel_ms > 0)) { ++without_kernel; continue; }
    on_origin.push_back(it->second);
    on_target.push_back(&m);
  }
  if (on_target.empty())
    throw InputError(target_file, "",
                     "no op of it has a kernel time here and in " + origin_file + " (rows are matched by OPName and dimensions)");
  std::vector<double> learned;
  if (model) {
    std::vector<OpDesc> ops;
    std::vector<const DeviceSpec*> origins;
    for (std::size_t i = 0; i < on_target.size(); ++i) {
      ops.push_back(on_origin[i]->op);  // the op as the trace would describe it: kernel as on the origin
      origins.push_back(on_origin[i]->device);
    }
    learned = learned_kernel_factors(*model, ops, origins, *device, nullptr).factor;
  }
  // What --device uses: the one pricing policy (pricer.h), as whatif::device_retime prices a kernel.
  std::vector<PriceRequest> requests;
  for (const Measurement* o : on_origin) requests.push_back({o->op, o->device, o->kernel_ms, true});
  Pricer pricer = shares ? Pricer(*device, *shares) : Pricer(*device, model, nullptr);
  const std::vector<Price> policy = pricer.price(requests);
  std::vector<std::string> columns = kRetimeColumns;
  if (shares) columns.back() = "what --device --pricer roofline-share uses (its kernel-time ratio on described ops)";
  MapeTable t = make_table("Kernel time on " + device->name + " predicted from another GPU's: MAPE % per op family",
                           "op family", columns);
  std::set<std::string> origin_gpus;
  std::size_t same = 0;
  for (std::size_t i = 0; i < on_target.size(); ++i) {
    const Measurement& o = *on_origin[i];
    const OpDesc& op = o.op;
    const std::string row = to_string(op.family);
    const double measured = on_target[i]->kernel_ms, k = o.kernel_ms;
    origin_gpus.insert(o.device->name);
    t.add(row, 0, k, measured);
    t.add(row, 1, k * o.device->memory_bandwidth_gbs / device->memory_bandwidth_gbs, measured);
    const double scaled = scale_ms(op, *o.device, k, *device);
    t.add(row, 2, scaled, measured);
    if (model) t.add(row, 3, k * learned[i], measured);
    const auto chip = same_chip_factor(op, *o.device, *device, k);
    if (chip) {
      t.add(row, 4, k * *chip, measured);
      ++same;
    }
    t.add(row, 5, policy[i].ms, measured);
  }
  EvalReport report;
  report.tables.push_back(std::move(t));
  report.notes.push_back(fmt::format(
      "{} ops of {} matched in {} (origin: {}), {} of them between GPUs of one chip; {} matched rows without a "
      "kernel time (in either file) and {} without a match (or repeated) left out",
      on_target.size(), target_file, origin_file, fmt::join(origin_gpus, ", "), same,
      without_kernel, unmatched));
  if (!model) report.notes.push_back("no learned model in this build: its column is empty");
  if (shares) {
    std::size_t by_shares = 0;
    for (const Price& p : policy) by_shares += p.by == PricedBy::kRooflineShare;
    report.notes.push_back(fmt::format("--pricer roofline-share: {} of the {} ops priced by the share table's kernel-time ratio",
                                       by_shares, policy.size()));
  }
  return report;
}

}  // namespace dpro::costmodel
