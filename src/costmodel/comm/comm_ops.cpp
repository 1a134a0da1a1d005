#include "costmodel/comm/comm_ops.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cctype>
#include <filesystem>
#include <functional>
#include <map>

#include "core/byte_source.h"
#include "core/error.h"
#include "graph/builder.h"
#include "trace/host_et/host_et_reader.h"
#include "trace/kineto_importer.h"

namespace dpro::comm {

namespace {

// How many of the per-rank message PyTorch records make the model's message: all-gather's and
// gather's 'In msg nelems' (and their host trace input) is one rank's piece of the gathered
// buffer; every other operation records the model's message itself (scatter: the whole buffer).
std::int64_t recorded_pieces(CollectiveOp op, int group_size) {
  return op == CollectiveOp::kAllGather || op == CollectiveOp::kGather ? group_size : 1;
}

}  // namespace

int world_size(const trace::TraceSet& traces) {
  int w = static_cast<int>(traces.ranks.size());
  for (const auto& r : traces.ranks) w = std::max(w, r.world_size.value_or(0));
  return w;
}

std::vector<CommOp> find_comm_ops(const graph::Dfg& dfg, const trace::TraceSet& traces) {
  DPRO_CHECK(dfg.finalized());
  std::map<int, std::size_t> index_of_rank;
  for (std::size_t i = 0; i < traces.ranks.size(); ++i) index_of_rank[traces.ranks[i].rank] = i;
  const int world = world_size(traces);
  std::vector<CommOp> ops;
  std::vector<std::pair<std::string, CollectiveOp>> parsed_ops;  // trace_op -> parse_collective_op's answer
  for (const graph::NodeId id : dfg.node_ids()) {
    const graph::Node& n = dfg.node(id);
    if (n.kind != graph::NodeKind::kCollective) continue;
    auto it = index_of_rank.find(n.rank);
    if (it == index_of_rank.end()) continue;
    const trace::TraceRank& tr = traces.ranks[it->second];
    CommOp op;
    op.node = id;
    op.rank = n.rank;
    op.rank_index = it->second;
    op.measured_start = n.measured_start;
    op.transfer = n.duration;
    // The kernel's metadata, or its launching record_param_comms op's (as the graph matched it).
    const trace::CollectiveInfo* info = graph::collective_info(tr, n);
    const std::string_view name = traces.strings.view(n.name);
    // The kernel named in an error; made only for one (it was most of this function's time).
    const auto where = [&] {
      return "NCCL kernel '" + std::string(name.substr(0, 60)) + "' at ts " + std::to_string(n.measured_start);
    };
    op.trace_op = info && !info->op.empty() ? info->op : trace::collective_op_from_name(name);
    if (op.trace_op.empty())
      throw InputError(tr.file, where(),
                       "its name does not say which collective it runs (NCCL's generic kernels do not), and the "
                       "trace records no 'Collective name' for it, on the kernel or on the op that launched it");
    // A job names a few operations over many kernels: each name is parsed once. A name that
    // does not parse throws on its first kernel, as before.
    const auto parsed = std::find_if(parsed_ops.begin(), parsed_ops.end(),
                                     [&](const auto& p) { return p.first == op.trace_op; });
    if (parsed != parsed_ops.end()) {
      op.op = parsed->second;
    } else {
      op.op = parse_collective_op(op.trace_op, tr.file, where());
      parsed_ops.emplace_back(op.trace_op, op.op);
    }
    op.group_size = world;
    if (info) {
      std::int64_t group = world;
      if (!info->group_ranks.empty()) group = static_cast<std::int64_t>(info->group_ranks.size());
      else if (info->group_size) group = *info->group_size;
      if (group < 1 || group > kMaxGroupSize)
        throw InputError(tr.file, where(), "a group of " + std::to_string(group) + " ranks (from 'Group size' or " +
                                             "'Process Group Ranks'): not from 1 to 2^20");
      op.group_size = static_cast<int>(group);
      op.world_group = op.group_size >= world;
      if (info->in_nelems && info->dtype && trace::element_bytes(*info->dtype) > 0) {
        // The message (for all-gather and gather the gathered output) must fit below kMaxMessageBytes.
        const std::int64_t element = trace::element_bytes(*info->dtype);
        const std::int64_t copies = recorded_pieces(op.op, op.group_size);
        const std::int64_t nelems = *info->in_nelems;
        if (nelems < 0 || nelems > kMaxMessageBytes / element / copies)
          throw InputError(tr.file, where(), "'In msg nelems' " + std::to_string(nelems) + " of " + *info->dtype +
                                               " is not a message size (0 to 2^40 bytes)");
        op.bytes = nelems * element * copies;
        op.size_source = SizeSource::kTrace;
      }
    }
    dfg.for_each_in_edge(id, [&](graph::EdgeId e) {
      const graph::Edge& edge = dfg.edge(e);
      if (edge.kind == graph::EdgeKind::kCollective && edge.dst_point == graph::Point::kEnd) {
        op.end_edge = e;
        op.barrier = edge.src;
      }
    });
    ops.push_back(std::move(op));
  }
  std::stable_sort(ops.begin(), ops.end(), [](const CommOp& a, const CommOp& b) {
    return a.rank_index != b.rank_index ? a.rank_index < b.rank_index : a.measured_start < b.measured_start;
  });
  return ops;
}

void set_transfer(graph::Dfg& dfg, CommOp& op, Nanos transfer) {
  op.transfer = transfer;
  dfg.node(op.node).duration = op.waiting + transfer;
  if (op.end_edge.valid()) dfg.edge(op.end_edge).gap = transfer;
}

std::size_t attach_host_et_sizes(std::vector<CommOp>& ops, const trace::TraceSet& traces,
                                 const std::vector<std::string>& files) {
  if (files.size() != traces.ranks.size())
    throw OptionError("comm_sizes", "",
                      std::to_string(files.size()) + " host execution trace(s)" +
                         (files.empty() ? std::string() : " (" + files.front() + (files.size() > 1 ? " ... " + files.back() : "") + ")") +
                         " for " + std::to_string(traces.ranks.size()) + " trace rank(s); give one per rank");
  std::size_t attached = 0;
  for (std::size_t ri = 0; ri < traces.ranks.size(); ++ri) {
    const std::vector<trace::HostEtComm> comms = trace::load_host_et_comms(files[ri]);
    std::vector<CommOp*> mine;
    for (CommOp& op : ops)
      if (op.rank_index == ri) mine.push_back(&op);
    if (comms.size() != mine.size())
      throw InputError(files[ri], "", "has " + std::to_string(comms.size()) + " nccl:* ops but rank " +
                                          std::to_string(traces.ranks[ri].rank) + " has " +
                                          std::to_string(mine.size()) + " NCCL kernels");
    for (std::size_t k = 0; k < mine.size(); ++k) {
      CommOp& op = *mine[k];
      const CollectiveOp et_op = parse_collective_op(comms[k].op, files[ri], "nccl:" + comms[k].op + " #" + std::to_string(k));
      // NCCL runs all-to-all, gather and scatter as grouped send/recv kernels.
      const bool compatible = et_op == op.op || (is_point_to_point(et_op) && op.op == CollectiveOp::kSendRecv);
      if (!compatible)
        throw InputError(files[ri], "nccl:" + comms[k].op + " #" + std::to_string(k),
                         std::string("does not match NCCL kernel #") + std::to_string(k) + " of rank " +
                             std::to_string(op.rank) + " (" + op.trace_op + ")");
      op.op = et_op;
      if (op.size_source == SizeSource::kTrace) continue;
      // A scatter's input is the root's list; the other ranks record an empty tensor, which
      // says nothing of the size (left to be inferred).
      if (et_op == CollectiveOp::kScatter && comms[k].bytes == 0) continue;
      const std::int64_t pieces = recorded_pieces(et_op, op.group_size);
      if (comms[k].bytes > kMaxMessageBytes / pieces)
        throw InputError(files[ri], "nccl:" + comms[k].op + " #" + std::to_string(k),
                         "a gathered message above 2^40 bytes: not a message size");
      op.bytes = comms[k].bytes * pieces;
      op.size_source = SizeSource::kHostEt;
      ++attached;
    }
  }
  return attached;
}

std::size_t split_peer_waiting(std::vector<CommOp>& ops, const CollectiveModel& origin, Nanos* waiting) {
  std::size_t split = 0;
  *waiting = 0;
  for (CommOp& op : ops) {
    if (op.matched() || !op.bytes || op.size_source == SizeSource::kInferred || op.group_size < 2) continue;
    const CollectiveCall call{op.op, *op.bytes, place(origin.cluster(), op.group_size)};
    const auto priced = static_cast<Nanos>(std::llround(origin.estimate(call).time_us * 1000.0));
    const Nanos transfer = std::clamp<Nanos>(priced, 0, op.transfer);
    op.waiting = op.transfer - transfer;
    op.transfer = transfer;
    *waiting += op.waiting;
    ++split;
  }
  return split;
}

std::size_t infer_sizes(std::vector<CommOp>& ops, const CollectiveModel& model, const ClusterSpec& origin) {
  std::size_t inferred = 0;
  for (CommOp& op : ops) {
    if (op.bytes) continue;
    CollectiveCall call{op.op, 0, place(origin, op.group_size)};
    const double target_us = static_cast<double>(op.transfer) / 1000.0;
    std::int64_t lo = 0, hi = std::int64_t{1} << 40;
    call.bytes = 0;
    if (model.estimate(call).time_us < target_us) {
      while (hi - lo > 1) {
        const std::int64_t mid = lo + (hi - lo) / 2;
        call.bytes = mid;
        (model.estimate(call).time_us < target_us ? lo : hi) = mid;
      }
    }
    op.bytes = lo;
    op.size_source = SizeSource::kInferred;
    ++inferred;
  }
  return inferred;
}

}  // namespace dpro::comm
