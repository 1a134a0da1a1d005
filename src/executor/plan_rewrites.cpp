#include "executor/plan_rewrites.h"

#include "hw/device_spec.h"

namespace dpro::executor {

namespace {

// Casts narrow fp32 to a 16-bit type; a target without one (tf32: same width, fp8) inserts none.
void note_launch_options(const whatif::Rewrite& rewrite, LaunchOptions& launch) {
  if (const auto* p = std::get_if<whatif::Precision>(&rewrite)) {
    const auto d = hw::parse_dtype(p->dtype);
    if (d == hw::DType::kFloat16) launch.cast_to = DType::kF16;
    if (d == hw::DType::kBFloat16) launch.cast_to = DType::kBF16;
  }
  if (const auto* c = std::get_if<whatif::CommRetime>(&rewrite); c && c->compression) launch.compression = *c->compression;
}

}  // namespace

AppliedRewrites apply_rewrites(whatif::Workload& workload, const std::vector<whatif::Rewrite>& rewrites) {
  AppliedRewrites out;
  for (const whatif::Rewrite& r : rewrites) {
    out.changes.push_back(whatif::apply(workload, r));
    note_launch_options(r, out.launch);
  }
  if (!workload.graph.dfg.finalized()) workload.graph.dfg.finalize();
  return out;
}

}  // namespace dpro::executor
