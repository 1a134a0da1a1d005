// The launch queue's edges (launch_queue.h).
#include "graph/launch_queue.h"

#include <algorithm>
#include <map>
#include <queue>

#include "graph/builder_internal.h"

namespace dpro::graph::detail {
namespace {

struct Launch {
  NodeId call, op;
  Nanos call_start = 0, call_end = 0, op_end = 0;
};

Nanos end_of(const Node& n) { return n.measured_start + n.measured_duration; }

// The launches of each device of each rank, in launch order (their calls' start).
std::map<std::pair<int, std::int64_t>, std::vector<Launch>> launches_by_device(const Dfg& dfg) {
  std::map<std::pair<int, std::int64_t>, std::vector<Launch>> by_device;
  for (const Edge& e : dfg.edges()) {
    if (e.kind != EdgeKind::kLaunch) continue;
    const Node& op = dfg.node(e.dst);
    const Node& call = dfg.node(e.src);
    if (!on_gpu(op.kind) || !op.track.valid()) continue;
    by_device[{op.rank, dfg.track(op.track).pid}].push_back(
        {e.src, e.dst, call.measured_start, end_of(call), end_of(op)});
  }
  for (auto& [device, launches] : by_device) {
    std::stable_sort(launches.begin(), launches.end(), [](const Launch& a, const Launch& b) {
      return a.call_start != b.call_start ? a.call_start < b.call_start : a.op < b.op;
    });
  }
  return by_device;
}

// What the launches of one device say of its queue.
struct QueueEvidence {
  std::uint32_t most_in_flight = 0;  // ops launched and unfinished when a call returned, its own included
  std::vector<std::uint32_t> blocked;  // the same, at each launch that blocked on a full queue
};

// A launch blocked on a full queue when it took at least four times the device's typical launch
// (its 5th percentile) and 20 us more, returned within kLaunchWakeWindow of an earlier op's end (the one that freed
// its slot), and then had the queue nearly as full as it ever was (at least 90 % of the most
// ops in flight) and at least kMinPlausibleDepth deep: a slow launch with few ops in flight
// (a first launch loading its module, a host hiccup) found no full queue.
QueueEvidence queue_evidence(const std::vector<Launch>& launches) {
  std::vector<Nanos> durations;
  for (const Launch& l : launches) durations.push_back(l.call_end - l.call_start);
  // A launch's own cost: the 5th percentile (on a GPU-bound job most launches block).
  auto low = durations.begin() + static_cast<std::ptrdiff_t>(durations.size() / 20);
  std::nth_element(durations.begin(), low, durations.end());
  const Nanos typical = *low;
  const Nanos blocked_above = std::max(4 * typical, typical + 20 * kNanosPerMicro);
  QueueEvidence out;
  std::vector<std::uint32_t> candidates;
  std::priority_queue<Nanos, std::vector<Nanos>, std::greater<>> in_flight;  // ends of earlier ops
  for (const Launch& l : launches) {
    Nanos freed = INT64_MIN;  // the latest end among the ops that finished by this call's return
    while (!in_flight.empty() && in_flight.top() <= l.call_end) {
      freed = in_flight.top();
      in_flight.pop();
    }
    const bool blocked = l.call_end - l.call_start > blocked_above && freed >= l.call_start &&
                         l.call_end - freed <= kLaunchWakeWindow;
    const auto occupied = static_cast<std::uint32_t>(in_flight.size() + 1);  // with this launch's op
    out.most_in_flight = std::max(out.most_in_flight, occupied);
    if (blocked) candidates.push_back(occupied);
    in_flight.push(l.op_end);
  }
  for (std::uint32_t d : candidates)
    if (d >= kMinPlausibleDepth && 10 * std::uint64_t{d} >= 9 * std::uint64_t{out.most_in_flight}) out.blocked.push_back(d);
  return out;
}

}  // namespace

void add_launch_queue_edges(Dfg& dfg, const BuildOptions& options, BuildStats& stats) {
  for (const auto& [device, launches] : launches_by_device(dfg)) {
    std::uint32_t depth = options.launch_queue_depth.value_or(kDefaultLaunchQueueDepth);
    std::size_t stride = options.launch_queue_depth ? 1 : kDefaultDepthStride;
    const QueueEvidence evidence = queue_evidence(launches);
    stats.launches_blocked += evidence.blocked.size();
    // The queue never held more than its depth: where launches blocked, the most ops ever in
    // flight is the depth.
    if (!options.launch_queue_depth && evidence.blocked.size() >= kMinBlockedLaunches) {
      depth = evidence.most_in_flight;
      stride = 1;
      stats.launch_queue_estimated = true;
    }
    depth = std::max<std::uint32_t>(depth, 1);
    stats.launch_queue_depth = std::max(stats.launch_queue_depth, depth);
    for (std::size_t i = depth; i < launches.size(); i += stride) {
      const Launch& freeing = launches[i - depth];
      const Launch& l = launches[i];
      // The measured times say the call returned before that op finished: the queue was deeper
      // then (an estimate below the truth, or a kernel that left the queue before it finished).
      if (freeing.op_end > l.call_end + options.tolerance) {
        ++stats.launch_queue_contradicted;
        continue;
      }
      add_counted_edge(dfg, stats, Edge{freeing.op, l.call, EdgeKind::kLaunchQueue, Point::kEnd, Point::kEnd, 0});
    }
  }
}

}  // namespace dpro::graph::detail
