#include "costmodel/eval/share_eval.h"

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
                                                          const ShareFitOptions& options) {
  std::map<std::string, std::vector<const Measurement*>> by_gpu;
  for (const Measurement* m : data) by_gpu[m->device->model_family()].push_back(m);
  std::map<std::string, ShareScore> out;
  for (const auto& [gpu, rows] : by_gpu) {
    std::vector<const Measurement*> others;
    for (const Measurement* m : data)
      if (m->device->model_family() != gpu) others.push_back(m);
    out[gpu] = score_share_table(fit_share_table(others, options), rows);
  }
  return out;
}

}  // namespace dpro::costmodel
