#include "executor/plan_rewrites.h"

#include <algorithm>
#include <map>

#include "hw/device_spec.h"
#include "whatif/comm_retime.h"

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

// Each rank's all-reduces of recorded size, in recorded order.
std::map<int, std::vector<graph::NodeId>> sized_allreduces(const graph::Dfg& dfg) {
  std::map<int, std::vector<graph::NodeId>> out;
  for (graph::NodeId id : dfg.node_ids()) {
    const graph::Node& n = dfg.node(id);
    const graph::OpDesc* op = n.kind == graph::NodeKind::kCollective ? dfg.op(id) : nullptr;
    if (!op || !op->collective || dfg.ops().name(op->collective->op) != "allreduce" || !op->collective->in_nelems) continue;
    out[n.rank].push_back(id);
  }
  for (auto& [rank, list] : out)
    std::stable_sort(list.begin(), list.end(),
                     [&](graph::NodeId a, graph::NodeId b) { return dfg.node(a).measured_start < dfg.node(b).measured_start; });
  return out;
}

void note_buckets(const graph::Dfg& dfg, const comm::BucketStats& b, AppliedRewrites& out) {
  for (const auto& [rank, list] : sized_allreduces(dfg)) {
    if (list.size() != b.allreduces) {
      out.notes.push_back("rank " + std::to_string(rank) + ": " + std::to_string(list.size()) + " all-reduces of recorded size, the bucket decision cut " +
                          std::to_string(b.allreduces) + ": they run as their own calls");
      continue;
    }
    std::size_t begin = 0;
    for (std::size_t end : b.bucket_end) {
      std::int64_t elements = 0;
      for (std::size_t k = begin; k < end; ++k) elements += *dfg.op(list[k])->collective->in_nelems;
      for (std::size_t k = begin; k < end; ++k) out.launch.buckets[list[k]] = {elements, k + 1 == end};
      begin = end;
    }
  }
}

}  // namespace

AppliedRewrites apply_rewrites(whatif::Workload& workload, const std::vector<whatif::Rewrite>& rewrites) {
  AppliedRewrites out;
  for (const whatif::Rewrite& r : rewrites) {
    out.changes.push_back(whatif::apply(workload, r));
    note_launch_options(r, out.launch);
  }
  if (!workload.graph.dfg.finalized()) workload.graph.dfg.finalize();
  for (const whatif::Change& c : out.changes)
    if (const auto* comm = std::get_if<whatif::CommChange>(&c); comm && comm->buckets && !comm->buckets->bucket_end.empty())
      note_buckets(workload.graph.dfg, *comm->buckets, out);
  return out;
}

}  // namespace dpro::executor
