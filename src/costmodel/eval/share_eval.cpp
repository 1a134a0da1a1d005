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

FewShotSummary summarize(const std::vector<FewShotRun>& runs) {
  FewShotSummary s;
  s.min = s.max = runs.front().score.latency.mape_percent();
  std::map<ShareGroup, std::vector<double>> per_group;
  for (const FewShotRun& run : runs) {
    const double mape = run.score.latency.mape_percent();
    s.mean += mape / static_cast<double>(runs.size());
    s.min = std::min(s.min, mape);
    s.max = std::max(s.max, mape);
    for (const auto& [group, cell] : latency_by_group(run.score))
      if (cell.count) per_group[group].push_back(cell.mape_percent());
  }
  for (const auto& [group, values] : per_group) {
    double& mean = s.group_mean[group];
    for (double x : values) mean += x / static_cast<double>(values.size());
  }
  std::vector<double> kernel;
  std::map<ShareGroup, std::vector<double>> kernel_per_group;
  for (const FewShotRun& run : runs) {
    if (!run.score.kernel.count) continue;
    kernel.push_back(run.score.kernel.mape_percent());
    for (const auto& [group, cell] : kernel_by_group(run.score))
      if (cell.count) kernel_per_group[group].push_back(cell.mape_percent());
  }
  s.kernel_runs = kernel.size();
  if (!kernel.empty()) {
    s.kernel_min = *std::min_element(kernel.begin(), kernel.end());
    s.kernel_max = *std::max_element(kernel.begin(), kernel.end());
    for (double x : kernel) s.kernel_mean += x / static_cast<double>(kernel.size());
  }
  for (const auto& [group, values] : kernel_per_group) {
    double& mean = s.kernel_group_mean[group];
    for (double x : values) mean += x / static_cast<double>(values.size());
  }
  return s;
}

}  // namespace dpro::costmodel
