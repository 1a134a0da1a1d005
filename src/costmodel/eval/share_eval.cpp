#include "costmodel/eval/share_eval.h"

#include <algorithm>

namespace dpro::costmodel {

ShareScore score_share_table(const ShareTable& table, const std::vector<const Measurement*>& rows) {
  ShareScore s;
  for (const Measurement* m : rows) {
    const auto latency = table.latency_ms(m->op, *m->device);
    const auto kernel = table.kernel_ms(m->op, *m->device);
    if (!latency || !kernel) {
      ++s.not_priced;
      continue;
    }
    const std::string family = to_string(m->op.family);
    s.latency.add(*latency, m->latency_ms);
    s.latency_by_family[family].add(*latency, m->latency_ms);
    if (m->kernel_ms > 0) {
      s.kernel.add(*kernel, m->kernel_ms);
      s.kernel_by_family[family].add(*kernel, m->kernel_ms);
    }
  }
  return s;
}

std::map<std::string, ShareScore> share_leave_one_gpu_out(const std::vector<const Measurement*>& data,
                                                          const ShareFitOptions& options, bool blank_kernels) {
  std::map<std::string, std::vector<const Measurement*>> by_gpu;
  for (const Measurement* m : data) by_gpu[m->device->model_family()].push_back(m);
  std::map<std::string, ShareScore> out;
  for (const auto& [gpu, rows] : by_gpu) {
    std::vector<const Measurement*> others;
    for (const Measurement* m : data)
      if (m->device->model_family() != gpu) others.push_back(m);
    if (!blank_kernels) {
      out[gpu] = score_share_table(fit_share_table(others, options), rows);
      continue;
    }
    std::vector<Measurement> blanked;
    blanked.reserve(rows.size());
    for (const Measurement* m : rows) {
      blanked.push_back(*m);
      OpDesc& op = blanked.back().op;
      op.kernel_name.clear();
      op.kernel_list.clear();
      op.grid.reset();
      op.block.reset();
    }
    std::vector<const Measurement*> held_out;
    for (const Measurement& m : blanked) held_out.push_back(&m);
    out[gpu] = score_share_table(fit_share_table(others, options), held_out);
  }
  return out;
}

std::vector<FewShotRun> share_few_shot(const ShareTable& prior, const std::vector<const Measurement*>& rows,
                                       const DeviceSpec& device, std::size_t n, const std::vector<std::uint64_t>& seeds,
                                       const DeviceFitOptions& options,
                                       const std::vector<const Measurement*>& extra) {
  std::vector<OpDesc> ops;
  for (const Measurement* m : rows) ops.push_back(m->op);
  std::vector<FewShotRun> out;
  for (const std::uint64_t seed : seeds) {
    const std::vector<std::size_t> picked = pick_share_samples(ops, device, n, seed);
    std::vector<bool> is_sample(rows.size());
    std::vector<const Measurement*> samples, rest;
    for (std::size_t i : picked) is_sample[i] = true, samples.push_back(rows[i]);
    for (std::size_t i = 0; i < rows.size(); ++i)
      if (!is_sample[i]) rest.push_back(rows[i]);
    const std::size_t drawn = samples.size();
    samples.insert(samples.end(), extra.begin(), extra.end());
    FewShotRun run{seed, drawn, {}, fit_device_scalars(prior, samples, device, options)};
    run.score = score_share_table(with_device_scalars(prior, run.scalars), rest);
    out.push_back(std::move(run));
  }
  return out;
}

namespace {

std::map<ShareGroup, MapeCell> by_group(const std::map<std::string, MapeCell>& by_family) {
  std::map<ShareGroup, MapeCell> out;
  for (const auto& [family, cell] : by_family) {
    MapeCell& c = out[share_group(family_from_name(family))];
    c.sum_ape += cell.sum_ape;
    c.count += cell.count;
  }
  return out;
}

}  // namespace

std::map<ShareGroup, MapeCell> latency_by_group(const ShareScore& score) { return by_group(score.latency_by_family); }
std::map<ShareGroup, MapeCell> kernel_by_group(const ShareScore& score) { return by_group(score.kernel_by_family); }

namespace {

// One measure's MAPE % over the runs (in run order): mean, lowest, highest, and per family group
// the mean over the runs that scored it. `all`: every run counts; else only runs whose total
// scored rows.
struct Spread {
  std::size_t runs = 0;
  double mean = 0, min = 0, max = 0;
  std::map<ShareGroup, double> group_mean;
};
Spread spread(const std::vector<FewShotRun>& runs, MapeCell ShareScore::*total,
              std::map<std::string, MapeCell> ShareScore::*by_family, bool all) {
  std::vector<double> values;
  std::map<ShareGroup, std::vector<double>> per_group;
  for (const FewShotRun& run : runs) {
    if (!all && !(run.score.*total).count) continue;
    values.push_back((run.score.*total).mape_percent());
    for (const auto& [group, cell] : by_group(run.score.*by_family))
      if (cell.count) per_group[group].push_back(cell.mape_percent());
  }
  Spread out;
  out.runs = values.size();
  if (values.empty()) return out;
  out.min = *std::min_element(values.begin(), values.end());
  out.max = *std::max_element(values.begin(), values.end());
  for (double x : values) out.mean += x / static_cast<double>(values.size());
  for (const auto& [group, xs] : per_group) {
    double& mean = out.group_mean[group];
    for (double x : xs) mean += x / static_cast<double>(xs.size());
  }
  return out;
}

}  // namespace

FewShotSummary summarize(const std::vector<FewShotRun>& runs) {
  const Spread latency = spread(runs, &ShareScore::latency, &ShareScore::latency_by_family, true);
  const Spread kernel = spread(runs, &ShareScore::kernel, &ShareScore::kernel_by_family, false);
  FewShotSummary s;
  s.mean = latency.mean, s.min = latency.min, s.max = latency.max, s.group_mean = latency.group_mean;
  s.kernel_runs = kernel.runs;
  s.kernel_mean = kernel.mean, s.kernel_min = kernel.min, s.kernel_max = kernel.max;
  s.kernel_group_mean = kernel.group_mean;
  return s;
}

}  // namespace dpro::costmodel
