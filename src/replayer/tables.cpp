#include "replayer/tables.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "replayer/tables_internal.h"

namespace dpro::replayer {

using nlohmann::json;

namespace {

double bus_factor(const std::string& op, int n) {
  if (n < 2) return 1.0;
  const double ranks = static_cast<double>(n);
  if (op == "allreduce") return 2.0 * (ranks - 1) / ranks;
  if (op == "allgather" || op == "reducescatter" || op == "_allgather_base" || op == "_reduce_scatter_base") return (ranks - 1) / ranks;
  return 1.0;
}

// Bytes one call moves per rank: the larger of its input and output (an all-gather's output).
std::int64_t call_bytes(const graph::Dfg& dfg, const graph::CollectiveDesc& c) {
  const std::int64_t elem = trace::element_bytes(dfg.ops().name(c.dtype));
  return elem * std::max(c.in_nelems.value_or(0), c.out_nelems.value_or(0));
}

// Duration-weighted sums of a kernel name's efficiency fields (GpuOpRow), in the order occupancy,
// blocks per SM, warps per SM.
struct EfficiencySums {
  double value[3] = {}, weight[3] = {};

  void add(const trace::KernelEfficiency& e, Nanos duration) {
    const double w = static_cast<double>(std::max<Nanos>(duration, 1));
    const std::optional<double> fields[3] = {e.achieved_occupancy_pct, e.blocks_per_sm, e.warps_per_sm};
    for (int k = 0; k < 3; ++k)
      if (fields[k]) value[k] += *fields[k] * w, weight[k] += w;
  }
  void fill(GpuOpRow& r) const {
    std::optional<double>* fields[3] = {&r.occupancy_pct, &r.blocks_per_sm, &r.warps_per_sm};
    for (int k = 0; k < 3; ++k)
      if (weight[k] > 0) *fields[k] = value[k] / weight[k];
  }
};

// `rank`: the node's rank's trace (nullptr when the set has none).
const trace::KernelEfficiency* efficiency_of(const trace::TraceRank* rank, const graph::Node& n) {
  const trace::Event* e = rank ? graph::event_of(*rank, n.event) : nullptr;
  const trace::EventAttrs* a = e ? rank->attrs_of(*e) : nullptr;
  return a && a->efficiency ? &*a->efficiency : nullptr;
}

template <typename Row>
void sort_rows(std::vector<Row>& rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.predicted > b.predicted; });
}

}  // namespace

Tables make_tables(const trace::TraceSet& traces, const graph::BuiltGraph& built, const Simulation& sim,
                   const Report& report, const std::vector<std::string>& only) {
  Tables t;
  t.iterations = report.iterations.size();
  auto wanted = [&](std::string_view name) { return only.empty() || std::find(only.begin(), only.end(), name) != only.end(); };
  if (wanted("operators")) t.operators = operator_rows(traces, report);
  if (wanted("phases")) t.phases = phase_rows(traces, report);
  if (wanted("memory")) t.memory = memory_rows(traces, report);
  if (wanted("overlap")) t.overlap = overlap_rows(traces, built.dfg, sim, report);
  if (wanted("idle")) t.idle = idle_rows(traces, built.dfg, sim, report);
  if (!wanted("gpu_ops") && !wanted("collectives")) return t;
  const graph::Dfg& dfg = built.dfg;
  const auto windows = predicted_windows(report);
  std::map<std::pair<int, std::string>, GpuOpRow> gpu;
  std::map<std::pair<int, std::string>, CollectiveRow> coll;
  std::map<std::pair<int, std::string>, std::pair<double, int>> bus;  // busBw-weighted bytes, group size
  std::map<std::pair<int, std::string>, EfficiencySums> efficiency;
  std::map<int, Nanos> rank_gpu_time;
  std::map<int, const trace::TraceRank*> rank_trace;  // looked up once per rank, not per kernel
  for (const trace::TraceRank& r : traces.ranks) rank_trace.emplace(r.rank, &r);
  for (const graph::NodeId id : dfg.node_ids()) {
    const graph::Node& n = dfg.node(id);
    if (!graph::on_gpu(n.kind) || !graph::is_op(n.kind)) continue;
    const auto w = windows.find(n.rank);
    if (w == windows.end() || !window_of(w->second, sim.start[id])) continue;
    const graph::OpDesc* op = dfg.op(id);
    const std::string name(n.name.value == 0 && op ? dfg.ops().name(op->name) : traces.strings.view(n.name));
    const Nanos replayed = sim.end[id] - sim.start[id];
    rank_gpu_time[n.rank] += replayed;
    if (n.kind == graph::NodeKind::kCollective) {
      CollectiveRow& r = coll[{n.rank, name}];
      r.rank = n.rank;
      r.name = name;
      ++r.count;
      r.measured += n.measured_duration;
      r.predicted += replayed;
      r.transfer += std::min(n.duration, replayed);
      if (op && op->collective) {
        const graph::CollectiveDesc& c = *op->collective;
        r.op = std::string(dfg.ops().name(c.op));
        const std::int64_t bytes = call_bytes(dfg, c);
        r.bytes += bytes;
        const int group = c.group_size.value_or(static_cast<int>(c.group_ranks.size()));
        bus[{n.rank, name}].first += static_cast<double>(bytes) * bus_factor(r.op, group);
      }
      continue;
    }
    GpuOpRow& r = gpu[{n.rank, name}];
    r.rank = n.rank;
    r.name = name;
    r.kind = n.kind;
    ++r.count;
    r.measured += n.measured_duration;
    r.predicted += replayed;
    r.max = std::max(r.max, replayed);
    const auto rank = rank_trace.find(n.rank);
    if (const trace::KernelEfficiency* e = efficiency_of(rank == rank_trace.end() ? nullptr : rank->second, n)) efficiency[{n.rank, name}].add(*e, n.measured_duration);
  }
  for (auto& [key, r] : gpu) {
    if (const auto e = efficiency.find(key); e != efficiency.end()) e->second.fill(r);
    const Nanos total = rank_gpu_time[r.rank];
    r.share = total > 0 ? static_cast<double>(r.predicted) / static_cast<double>(total) : 0.0;
    t.gpu_ops.push_back(std::move(r));
  }
  for (auto& [key, r] : coll) {
    const double moved = bus[key].first;
    if (moved > 0 && r.transfer > 0) r.bus_gbps = moved / static_cast<double>(r.transfer);  // bytes/ns = GB/s
    t.collectives.push_back(std::move(r));
  }
  sort_rows(t.gpu_ops);
  sort_rows(t.collectives);
  return t;
}

namespace {

bool any_efficiency(const Tables& t) {
  return std::any_of(t.gpu_ops.begin(), t.gpu_ops.end(), [](const GpuOpRow& r) { return r.occupancy_pct || r.blocks_per_sm || r.warps_per_sm; });
}

std::string optional_figure(const std::optional<double>& v, int width, int decimals) {
  return v ? fmt::format("{:>{}.{}f}", *v, width, decimals) : fmt::format("{:>{}}", "-", width);
}

json optional_json(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

}  // namespace

std::string render_gpu_ops(const Tables& t, std::size_t top) {
  const Nanos n = static_cast<Nanos>(std::max<std::size_t>(1, t.iterations));
  // The efficiency columns only for traces that record them (Kineto's kernel args).
  const bool efficiency = any_efficiency(t);
  std::string out = fmt::format("GPU ops over {} iteration(s), by replayed time (per iteration: the total / {}{}):\n"
                                "  {:>4}  {:>7}  {:>8}  {:>12}  {:>12}  {:>12}  {:>6}  {}{}\n",
                                t.iterations, t.iterations,
                                efficiency ? "; occupancy %, blocks and warps per SM: means weighted by measured time" : "", "rank",
                                "kind", "count", "per iter", "measured", "max", "share",
                                efficiency ? fmt::format("{:>6}  {:>7}  {:>8}  ", "occ %", "blk/SM", "warps/SM") : "", "name");
  for (std::size_t k = 0; k < std::min(top, t.gpu_ops.size()); ++k) {
    const GpuOpRow& r = t.gpu_ops[k];
    const std::string figures = efficiency ? optional_figure(r.occupancy_pct, 6, 1) + "  " + optional_figure(r.blocks_per_sm, 7, 2) +
                                                 "  " + optional_figure(r.warps_per_sm, 8, 2) + "  "
                                           : "";
    out += fmt::format("  {:>4}  {:>7}  {:>8}  {:>12}  {:>12}  {:>12}  {:>5.1f}%  {}{}\n", r.rank, graph::to_string(r.kind), r.count,
                       format_duration(r.predicted / n), format_duration(r.measured / n), format_duration(r.max),
                       100.0 * r.share, figures, r.name.substr(0, 100));
  }
  if (t.gpu_ops.size() > top) out += fmt::format("  ... {} more (--top)\n", t.gpu_ops.size() - top);
  return out;
}

std::string render_collectives(const Tables& t, std::size_t top) {
  const Nanos n = static_cast<Nanos>(std::max<std::size_t>(1, t.iterations));
  std::string out = fmt::format(
      "collectives over {} iteration(s), by replayed time (per iteration; measured and replayed = waiting for\n"
      "peers + transfer; bus bandwidth over the transfer):\n"
      "  {:>4}  {:>13}  {:>6}  {:>12}  {:>12}  {:>12}  {:>12}  {:>10}  {}\n",
      t.iterations, "rank", "op", "count", "bytes", "replayed", "transfer", "measured", "bus GB/s", "name");
  if (t.collectives.empty()) out += "  none\n";
  for (std::size_t k = 0; k < std::min(top, t.collectives.size()); ++k) {
    const CollectiveRow& r = t.collectives[k];
    out += fmt::format("  {:>4}  {:>13}  {:>6}  {:>12}  {:>12}  {:>12}  {:>12}  {:>10}  {}\n", r.rank, r.op.empty() ? "?" : r.op,
                       r.count, r.bytes / n, format_duration(r.predicted / n), format_duration(r.transfer / n),
                       format_duration(r.measured / n),
                       r.bus_gbps ? fmt::format("{:.1f}", *r.bus_gbps) : std::string("-"), r.name.substr(0, 80));
  }
  if (t.collectives.size() > top) out += fmt::format("  ... {} more (--top)\n", t.collectives.size() - top);
  return out;
}

json to_json(const Tables& t) {
  json gpu = json::array(), coll = json::array();
  for (const GpuOpRow& r : t.gpu_ops)
    gpu.push_back({{"rank", r.rank}, {"name", r.name}, {"kind", graph::to_string(r.kind)}, {"count", r.count},
                   {"measured_ns", r.measured}, {"predicted_ns", r.predicted}, {"max_ns", r.max}, {"share", r.share},
                   {"occupancy_percent", optional_json(r.occupancy_pct)}, {"blocks_per_sm", optional_json(r.blocks_per_sm)},
                   {"warps_per_sm", optional_json(r.warps_per_sm)}});
  for (const CollectiveRow& r : t.collectives)
    coll.push_back({{"rank", r.rank}, {"name", r.name}, {"op", r.op}, {"count", r.count}, {"bytes", r.bytes},
                    {"measured_ns", r.measured}, {"predicted_ns", r.predicted}, {"transfer_ns", r.transfer},
                    {"bus_gbps", r.bus_gbps ? json(*r.bus_gbps) : json(nullptr)}});
  json out = {{"iterations", t.iterations}, {"gpu_ops", gpu}, {"collectives", coll}};
  add_views_json(t, out);
  return out;
}

std::string gpu_ops_csv(const Tables& t) {
  std::string out = "rank,kind,name,count,measured_ns,predicted_ns,max_ns,share,occupancy_percent,blocks_per_sm,warps_per_sm\n";
  const auto field = [](const std::optional<double>& v) { return v ? fmt::format("{:.4f}", *v) : std::string(); };
  for (const GpuOpRow& r : t.gpu_ops)
    out += fmt::format("{},{},{},{},{},{},{},{:.6f},{},{},{}\n", r.rank, graph::to_string(r.kind), csv_field(r.name), r.count,
                       r.measured, r.predicted, r.max, r.share, field(r.occupancy_pct), field(r.blocks_per_sm), field(r.warps_per_sm));
  return out;
}

std::string collectives_csv(const Tables& t) {
  std::string out = "rank,op,name,count,bytes,measured_ns,predicted_ns,transfer_ns,bus_gbps\n";
  for (const CollectiveRow& r : t.collectives)
    out += fmt::format("{},{},{},{},{},{},{},{},{}\n", r.rank, r.op, csv_field(r.name), r.count, r.bytes, r.measured, r.predicted,
                       r.transfer,
                       r.bus_gbps ? fmt::format("{:.3f}", *r.bus_gbps) : std::string());
  return out;
}

}  // namespace dpro::replayer
