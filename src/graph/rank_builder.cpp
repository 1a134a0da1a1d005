// Nodes and intra-rank dependencies of one rank: CPU thread order, launches, stream order,
// blocking syncs, cross-stream event waits, fork/join between threads, and what explains the GPU
// ops that started late.
#include <algorithm>
#include <unordered_map>

#include "core/error.h"
#include "graph/builder_internal.h"

namespace dpro::graph::detail {
namespace {

using trace::Event;
using trace::EventKind;

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

enum class CallRole { kOther, kDeviceSync, kStreamSync, kEventSync, kCopyOrSet, kEventRecord, kStreamWait };

CallRole call_role(std::string_view name) {
  if (contains(name, "DeviceSynchronize") || contains(name, "CtxSynchronize")) return CallRole::kDeviceSync;
  if (contains(name, "StreamSynchronize")) return CallRole::kStreamSync;
  if (contains(name, "EventSynchronize")) return CallRole::kEventSync;
  if (contains(name, "StreamWaitEvent")) return CallRole::kStreamWait;
  if (contains(name, "EventRecord")) return CallRole::kEventRecord;
  if (contains(name, "Memcpy") || contains(name, "Memset")) return CallRole::kCopyOrSet;
  return CallRole::kOther;
}

NodeKind node_kind(EventKind kind) {
  switch (kind) {
    case EventKind::kKernel: return NodeKind::kKernel;
    case EventKind::kCollective: return NodeKind::kCollective;
    case EventKind::kMemcpy: return NodeKind::kMemcpy;
    case EventKind::kMemset: return NodeKind::kMemset;
    case EventKind::kRuntimeCall:
    case EventKind::kDriverCall: return NodeKind::kRuntimeCall;
    default: return NodeKind::kCpuOp;
  }
}

// No GPU op: an index into RankBuilder::gpu_ that is none.
constexpr std::uint32_t kNoGpuOp = 0xffffffffu;

// A GPU op that started this long after its launch call returned, or earlier, was still being
// enqueued by the call when it became late (explain_late_starts).
constexpr Nanos kSlowLaunchSlack = 20 * kNanosPerMicro;
// A GPU op that started this long after another stream's op ended, or earlier, may have waited
// for it (explain_late_starts): cross-stream event waits resolve in 1-3 us on the bundled
// traces' GPUs.
constexpr Nanos kStreamWaitSlack = 10 * kNanosPerMicro;

// A GPU op as the rank builder sees it.
struct GpuOp {
  NodeId node;
  EventRef event;
  TrackId stream;
  Nanos launch_time = 0;         // start of the launching call, or the op's own start
  EdgeId launch;                 // the launch edge; none without a launching call
  NodeId call;                   // the launching call's node; none without one
};

// A runtime call node and what it launched.
struct Call {
  NodeId node;
  EventRef event;
  TrackId thread;
  CallRole role = CallRole::kOther;
  EventRef launcher_op;  // innermost enclosing cpu_op event
  std::vector<std::uint32_t> gpu_ops;  // indices into RankBuilder::gpu_
};

class RankBuilder {
 public:
  RankBuilder(const trace::TraceSet& traces, std::size_t rank_index, const BuildOptions& options,
              Dfg& dfg, RankNodes& out, BuildStats& stats, Logger& log)
      : traces_(traces), tr_(traces.ranks[rank_index]), options_(options), dfg_(dfg), out_(out),
        stats_(stats), log_(log) {}

  std::vector<CollectiveRef> build() {
    first_edge_ = EdgeId::at(dfg_.edge_count());
    out_.node_of_event.assign(tr_.events.size(), NodeId::none());
    out_.first_inside.assign(tr_.events.size(), NodeId::none());
    out_.last_inside.assign(tr_.events.size(), NodeId::none());
    make_tracks();
    std::vector<std::vector<EventRef>> cpu_events(tr_.resources.size());
    for (const EventRef i : event_ids()) {
      if (trace::is_cpu_side(ev(i).kind)) cpu_events[ev(i).resource].push_back(i);
    }
    for (std::uint32_t r = 0; r < tr_.resources.size(); ++r) {
      if (!cpu_events[r].empty()) flatten_thread(r, cpu_events[r]);
    }
    make_gpu_nodes();
    link_blocking_calls();
    link_stream_waits();
    explain_late_starts();
    link_threads();
    return collectives();
  }

 private:
  const Event& ev(EventRef i) const { return tr_.events[i.value]; }
  IdRange<EventRef> event_ids() const { return IdRange<EventRef>(tr_.events.size()); }
  const Node& node(NodeId n) const { return dfg_.node(n); }
  Nanos mstart(NodeId n) const { return node(n).measured_start; }
  Nanos mend(NodeId n) const { return node(n).measured_start + node(n).measured_duration; }

  EdgeId edge(NodeId src, NodeId dst, EdgeKind kind, Point sp = Point::kEnd, Point dp = Point::kStart, Nanos gap = 0) {
    return add_counted_edge(dfg_, stats_, Edge{src, dst, kind, sp, dp, gap});
  }

  void make_tracks() {
    track_of_resource_.assign(tr_.resources.size(), TrackId::none());
    std::vector<bool> used(tr_.resources.size(), false);
    for (const Event& e : tr_.events) {
      if (trace::is_cpu_side(e.kind) || trace::is_gpu_work(e.kind)) used[e.resource] = true;
    }
    for (std::uint32_t r = 0; r < tr_.resources.size(); ++r) {
      if (!used[r]) continue;
      const trace::Resource& res = tr_.resources[r];
      track_of_resource_[r] = dfg_.add_track(Track{tr_.rank, res.kind, res.pid, res.tid, res.name});
    }
  }

  NodeId add_node(EventRef event_index) {
    const Event& e = ev(event_index);
    Node n;
    n.kind = node_kind(e.kind);
    n.rank = tr_.rank;
    n.track = track_of_resource_[e.resource];
    n.name = e.name;
    n.measured_start = e.start;
    n.measured_duration = e.dur;
    n.duration = e.dur;
    n.event = event_index;
    const NodeId id = dfg_.add_node(n);
    out_.node_of_event[event_index] = id;
    return id;
  }

  // Leaf CPU events and runtime calls become a chain of nodes on their thread; enclosing
  // events remember the first and last node inside them. Linear in the thread's events, however
  // deep they nest: an open event notes how many leaf nodes its thread had when it opened, and
  // its first and last node inside are read off the thread's nodes when it closes; the
  // outermost open runtime call and the innermost open CPU op are carried on the stack.
  void flatten_thread(std::uint32_t resource, const std::vector<EventRef>& list) {
    struct Open {
      EventRef event;
      Nanos end;
      bool runtime;
      NodeId node;
      std::size_t leaves_before;  // thread_nodes.size() when it opened (after its own node)
      std::size_t runtime_at;     // stack index of the outermost open runtime call, or npos
      EventRef cpu_op;            // the innermost open CPU op, this one included; none if none
    };
    constexpr std::size_t kNone = static_cast<std::size_t>(-1);
    std::vector<Open> stack;
    NodeId previous;
    std::vector<NodeId>& thread_nodes = thread_nodes_[track_of_resource_[resource]];
    const auto close = [&](const Open& o) {
      if (thread_nodes.size() <= o.leaves_before) return;  // no leaf opened inside it
      if (!out_.first_inside[o.event].valid()) out_.first_inside[o.event] = thread_nodes[o.leaves_before];
      out_.last_inside[o.event] = thread_nodes.back();
    };
    for (std::size_t k = 0; k < list.size(); ++k) {
      const EventRef i = list[k];
      const Event& e = ev(i);
      while (!stack.empty() && stack.back().end <= e.start) {
        close(stack.back());
        stack.pop_back();
      }
      const std::size_t runtime_at = stack.empty() ? kNone : stack.back().runtime_at;
      const EventRef enclosing_op = stack.empty() ? EventRef::none() : stack.back().cpu_op;
      const EventRef own_op = e.kind == EventKind::kCpuOp ? i : enclosing_op;
      const bool is_call = e.kind == EventKind::kRuntimeCall || e.kind == EventKind::kDriverCall;
      if (runtime_at != kNone) {
        // Calls made inside a runtime call (driver calls of cudaLaunchKernel) belong to it.
        if (e.correlation) call_by_correlation_.emplace(*e.correlation, call_index_of_node_[stack[runtime_at].node]);
        stack.push_back(Open{i, e.end(), false, NodeId::none(), thread_nodes.size(), runtime_at, own_op});
        continue;
      }
      const bool has_child = k + 1 < list.size() && ev(list[k + 1]).start < e.end() &&
                             !(ev(list[k + 1]).start == e.start && e.dur == 0);
      NodeId id;
      if (is_call || !has_child) {
        id = add_node(i);
        // Every open event's first node inside, if it has none yet, is this one: the
        // leaves_before mark of each open event points at it (or at an earlier leaf).
        thread_nodes.push_back(id);
        out_.first_inside[i] = out_.last_inside[i] = id;
        if (previous.valid()) edge(previous, id, EdgeKind::kThreadOrder);
        previous = id;
        if (is_call) {
          Call call;
          call.node = id;
          call.event = i;
          call.thread = track_of_resource_[resource];
          call.role = call_role(traces_.name(e));
          call.launcher_op = enclosing_op;
          call_index_of_node_[id] = static_cast<std::uint32_t>(calls_.size());
          if (e.correlation) call_by_correlation_.emplace(*e.correlation, static_cast<std::uint32_t>(calls_.size()));
          calls_.push_back(std::move(call));
        }
      }
      stack.push_back(Open{i, e.end(), is_call, id, thread_nodes.size(), is_call ? stack.size() : kNone, own_op});
    }
    for (auto it = stack.rbegin(); it != stack.rend(); ++it) close(*it);
  }

  void make_gpu_nodes() {
    for (const EventRef i : event_ids()) {
      const Event& e = ev(i);
      if (!trace::is_gpu_work(e.kind)) continue;
      GpuOp op;
      op.node = add_node(i);
      op.event = i;
      op.stream = track_of_resource_[e.resource];
      op.launch_time = e.start;
      if (e.correlation) {
        if (auto it = call_by_correlation_.find(*e.correlation); it != call_by_correlation_.end()) {
          Call& call = calls_[it->second];
          op.launch = edge(call.node, op.node, EdgeKind::kLaunch, Point::kStart, Point::kStart);
          op.call = call.node;
          op.launch_time = ev(call.event).start;
          dfg_.node(op.node).parent_op = call.launcher_op;
          call.gpu_ops.push_back(static_cast<std::uint32_t>(gpu_.size()));
        }
      }
      std::vector<std::uint32_t>& on_stream = stream_ops_[op.stream];
      if (!on_stream.empty()) {
        // Programmatic dependent launch (Hopper): a kernel may start before its stream
        // predecessor ends (cuDNN's sm90 kernels overlapped by 2-4 us on the H100). The measured
        // overlap becomes a negative gap, so the replay keeps it rather than breaking the edge.
        const NodeId prev = gpu_[on_stream.back()].node;
        const Nanos overlap = mend(prev) - mstart(op.node);
        edge(prev, op.node, EdgeKind::kStreamOrder, Point::kEnd, Point::kStart,
             overlap > options_.tolerance ? -overlap : 0);
      }
      on_stream.push_back(static_cast<std::uint32_t>(gpu_.size()));
      gpu_.push_back(op);
    }
    // Launch order per stream equals execution order; keep it sorted for binary searches.
    for (auto& [stream, ops] : stream_ops_) {
      std::stable_sort(ops.begin(), ops.end(), [&](std::uint32_t a, std::uint32_t b) {
        return gpu_[a].launch_time < gpu_[b].launch_time;
      });
    }
    for (std::uint32_t c = 0; c < calls_.size(); ++c) {
      if (!calls_[c].gpu_ops.empty()) launching_calls_.push_back(c);
    }
    std::stable_sort(launching_calls_.begin(), launching_calls_.end(), [&](std::uint32_t a, std::uint32_t b) {
      return ev(calls_[a].event).start < ev(calls_[b].event).start;
    });
  }

  // The last op on `stream` launched before `t`, or kNoGpuOp.
  std::uint32_t last_launched_before(TrackId stream, Nanos t) const {
    auto it = stream_ops_.find(stream);
    if (it == stream_ops_.end()) return kNoGpuOp;
    const auto& ops = it->second;
    auto pos = std::partition_point(ops.begin(), ops.end(), [&](std::uint32_t g) { return gpu_[g].launch_time < t; });
    return pos == ops.begin() ? kNoGpuOp : *(pos - 1);
  }

  // The first op on `stream` launched after `t`, or kNoGpuOp.
  std::uint32_t first_launched_after(TrackId stream, Nanos t) const {
    auto it = stream_ops_.find(stream);
    if (it == stream_ops_.end()) return kNoGpuOp;
    const auto& ops = it->second;
    auto pos = std::partition_point(ops.begin(), ops.end(), [&](std::uint32_t g) { return gpu_[g].launch_time <= t; });
    return pos == ops.end() ? kNoGpuOp : *pos;
  }

  // Stream of the GPU op most recently launched before `t` by `thread` (any thread if none),
  // skipping `exclude`; none if there is none.
  TrackId recent_launch_stream(TrackId thread, Nanos t, TrackId exclude) const {
    auto pos = std::partition_point(launching_calls_.begin(), launching_calls_.end(), [&](std::uint32_t c) {
      return ev(calls_[c].event).start < t;
    });
    for (int steps = 0; pos != launching_calls_.begin() && steps < 256; ++steps) {
      --pos;
      const Call& call = calls_[*pos];
      if (thread.valid() && call.thread != thread) continue;
      const TrackId stream = gpu_[call.gpu_ops.back()].stream;
      if (stream != exclude) return stream;
    }
    return TrackId::none();
  }

  // Stream of the next GPU op launched by `thread` after `t`; none if there is none.
  TrackId next_launch_stream(TrackId thread, Nanos t) const {
    auto pos = std::partition_point(launching_calls_.begin(), launching_calls_.end(), [&](std::uint32_t c) {
      return ev(calls_[c].event).start <= t;
    });
    for (; pos != launching_calls_.end(); ++pos) {
      if (calls_[*pos].thread == thread) return gpu_[calls_[*pos].gpu_ops.front()].stream;
    }
    return TrackId::none();
  }

  const trace::SyncInfo* sync_info(const Event& call) const {
    if (!call.correlation) return nullptr;
    auto it = sync_by_correlation_.find(*call.correlation);
    return it == sync_by_correlation_.end() ? nullptr : it->second;
  }

  // The track of stream `stream` (CUPTI stream ids are unique within a process); none if no
  // track is.
  TrackId stream_track(std::int64_t stream) const {
    for (std::uint32_t r = 0; r < tr_.resources.size(); ++r) {
      const trace::Resource& res = tr_.resources[r];
      if (res.kind == trace::ResourceKind::kGpuStream && res.tid == stream) return track_of_resource_[r];
    }
    return TrackId::none();
  }

  // Adds call.End <- awaited.End if the measured times allow it; false if contradicted.
  bool add_blocking_edge(const Call& call, std::uint32_t gpu_index) {
    const Event& c = ev(call.event);
    const NodeId g = gpu_[gpu_index].node;
    if (mend(g) > c.end() + options_.tolerance) {
      ++stats_.dropped_edges;
      log_.debug("rank " + std::to_string(tr_.rank) + ": " + std::string(traces_.name(c)) + " at " + std::to_string(c.start) +
                 " returned before " + std::string(traces_.name(ev(gpu_[gpu_index].event))).substr(0, 40) + " ended (" +
                 std::to_string(mend(g) - c.end()) + " ns later): not waiting for it");
      return false;
    }
    edge(g, call.node, EdgeKind::kBlockingSync, Point::kEnd, Point::kEnd);
    return true;
  }

  // The last cudaEventRecord call of the rank that started before `t`.
  const Call* last_record_before(Nanos t) const {
    auto pos = std::partition_point(records_.begin(), records_.end(), [&](std::uint32_t r) {
      return ev(calls_[r].event).start < t;
    });
    return pos == records_.begin() ? nullptr : &calls_[*(pos - 1)];
  }

  void link_blocking_calls() {
    for (std::uint32_t c = 0; c < calls_.size(); ++c) {
      if (calls_[c].role == CallRole::kEventRecord) records_.push_back(c);
    }
    std::sort(records_.begin(), records_.end(), [&](std::uint32_t a, std::uint32_t b) {
      return ev(calls_[a].event).start < ev(calls_[b].event).start;
    });
    for (const Event& e : tr_.events) {
      if (e.kind == EventKind::kSync && e.correlation) {
        if (const trace::EventAttrs* a = tr_.attrs_of(e); a && a->sync) sync_by_correlation_[*e.correlation] = &*a->sync;
      }
    }
    for (const Call& call : calls_) {
      const Event& c = ev(call.event);
      bool blocking = false;
      switch (call.role) {
        case CallRole::kCopyOrSet:
          for (std::uint32_t g : call.gpu_ops) {
            const Nanos end = mend(gpu_[g].node);
            if (end > c.start && end <= c.end() + options_.tolerance) blocking |= add_blocking_edge(call, g);
          }
          break;
        case CallRole::kDeviceSync:
          for (const auto& [stream, ops] : stream_ops_) {
            const std::uint32_t g = last_launched_before(stream, c.start);
            if (g != kNoGpuOp) blocking |= add_blocking_edge(call, g);
          }
          break;
        case CallRole::kStreamSync:
        case CallRole::kEventSync: {
          // The stream waited on: from the CUPTI sync record when there is one; for an event,
          // the stream of the last event recorded before it; else the stream this thread last
          // launched to.
          TrackId stream;
          Nanos enqueued_before = c.start;
          if (const trace::SyncInfo* s = sync_info(c); s && s->stream) {
            stream = stream_track(*s->stream);
          }
          if (!stream.valid() && call.role == CallRole::kEventSync) {
            if (const Call* record = last_record_before(c.start)) {
              enqueued_before = ev(record->event).start;
              stream = recent_launch_stream(record->thread, enqueued_before, TrackId::none());
            }
          }
          if (!stream.valid()) stream = recent_launch_stream(call.thread, c.start, TrackId::none());
          const std::uint32_t g = stream.valid() ? last_launched_before(stream, enqueued_before) : kNoGpuOp;
          if (g != kNoGpuOp) blocking = add_blocking_edge(call, g);
          if (!blocking && g == kNoGpuOp) ++stats_.syncs_unresolved;
          break;
        }
        default:
          break;
      }
      if (blocking) ++stats_.blocking_calls;
    }
  }

  // The call a CUPTI sync record names as the event's record; nullptr if none.
  const Call* named_record(const trace::SyncInfo& s) const {
    if (!s.event_record_correlation) return nullptr;
    auto it = call_by_correlation_.find(*s.event_record_correlation);
    return it == call_by_correlation_.end() ? nullptr : &calls_[it->second];
  }

  // cudaEventRecord(stream A) ... cudaStreamWaitEvent(stream B): B's next op waits for A's
  // last op before the record.
  void link_stream_waits() {
    for (std::uint32_t c = 0; c < calls_.size(); ++c) {
      if (calls_[c].role == CallRole::kStreamWait) stream_waits_.push_back(c);
    }
    std::sort(stream_waits_.begin(), stream_waits_.end(), [&](std::uint32_t a, std::uint32_t b) {
      return ev(calls_[a].event).start < ev(calls_[b].event).start;
    });
    for (const Call& call : calls_) {
      if (call.role != CallRole::kStreamWait) continue;
      const Event& w = ev(call.event);
      TrackId waiting, recording;
      Nanos record_time = w.start;
      const trace::SyncInfo* s = sync_info(w);
      // CUPTI names the event's latest record as of when it writes the wait's record, which may
      // be a record made after the wait (cuDNN's multi-stream convolutions in the H100 traces):
      // that record, and the stream it names, say nothing of what the wait waited for.
      const Call* named = s ? named_record(*s) : nullptr;
      const bool named_later = named && ev(named->event).start > w.start;
      if (s && s->stream && s->wait_on_stream && !named_later) {
        waiting = stream_track(*s->stream);
        recording = stream_track(*s->wait_on_stream);
        if (named) record_time = ev(named->event).start;
      } else {
        waiting = s && s->stream ? stream_track(*s->stream) : next_launch_stream(call.thread, w.start);
        if (const Call* record = last_record_before(w.start)) {
          record_time = ev(record->event).start;
          recording = recent_launch_stream(record->thread, record_time, TrackId::none());
        }
        if (!recording.valid() || recording == waiting) recording = recent_launch_stream(TrackId::none(), w.start, waiting);
      }
      if (!waiting.valid() || !recording.valid() || waiting == recording) continue;
      const std::uint32_t awaited = last_launched_before(recording, record_time);
      const std::uint32_t waiter = first_launched_after(waiting, w.start);
      if (awaited == kNoGpuOp || waiter == kNoGpuOp) continue;
      if (mend(gpu_[awaited].node) > mstart(gpu_[waiter].node) + options_.tolerance) {
        ++stats_.dropped_edges;
        log_.debug("rank " + std::to_string(tr_.rank) + ": stream wait at " + std::to_string(w.start) + ": " +
                   std::string(traces_.name(ev(gpu_[waiter].event))).substr(0, 40) + " started before " +
                   std::string(traces_.name(ev(gpu_[awaited].event))).substr(0, 40) + " ended: not waiting for it");
        continue;
      }
      edge(gpu_[awaited].node, gpu_[waiter].node, EdgeKind::kStreamWait);
    }
  }

  // GPU ops that started more than kUnresolvedWaitThreshold after every dependency found so far
  // (their launch call's start, their stream's previous op, stream waits) waited for something.
  // Two things the trace shows explain it:
  //  - a slow launch: the op started before its launch call returned, or within
  //    kSlowLaunchSlack after: the call was still enqueueing it (CUDA loading the kernel's module
  //    at its first launch, a pageable copy staged by its call). The launch edge's gap becomes
  //    the time from the call's start to the op's start.
  //  - a stream wait the calls do not name (no CUPTI record, no cudaEventRecord in the trace,
  //    or a record named wrongly): another stream's op of the rank ended at most
  //    kStreamWaitSlack before the op started, and a cudaStreamWaitEvent of the rank (any
  //    thread: DDP's communication hooks make the compute stream wait from the autograd thread)
  //    came after that op's launch and before this op's: a kStreamWait edge from it.
  // Neither contradicts the measured times; what remains is the report's unresolved waits.
  void explain_late_starts() {
    if (gpu_.empty()) return;
    // Every start-edge into this rank's GPU ops is this rank's, and its GPU nodes are numbered
    // consecutively from gpu_[0].
    const std::uint32_t first_gpu = gpu_.front().node.value;
    DPRO_CHECK(gpu_.back().node.value - first_gpu + 1 == gpu_.size());
    std::vector<Nanos> ready(gpu_.size(), INT64_MIN);
    for (EdgeId e = first_edge_; e.below(dfg_.edge_count()); e = EdgeId(e.value + 1)) {
      const Edge& edge = dfg_.edge(e);
      const std::uint32_t k = edge.dst.value - first_gpu;
      if (edge.dst_point != Point::kStart || edge.dst.value < first_gpu || k >= gpu_.size()) continue;
      const Nanos at = edge.src_point == Point::kStart ? mstart(edge.src) : mend(edge.src);
      ready[k] = std::max(ready[k], at + edge.gap);
    }
    std::vector<std::uint32_t> by_end(gpu_.size());
    for (std::uint32_t k = 0; k < gpu_.size(); ++k) by_end[k] = k;
    std::sort(by_end.begin(), by_end.end(), [&](std::uint32_t a, std::uint32_t b) { return mend(gpu_[a].node) < mend(gpu_[b].node); });
    for (std::uint32_t k = 0; k < gpu_.size(); ++k) {
      const GpuOp& op = gpu_[k];
      if (!op.call.valid() || mstart(op.node) - ready[k] <= kUnresolvedWaitThreshold) continue;
      if (mstart(op.node) <= mend(op.call) + kSlowLaunchSlack) {
        dfg_.edge(op.launch).gap = mstart(op.node) - mstart(op.call);
        ++stats_.slow_launches;
      } else if (const std::uint32_t awaited = awaited_by_timing(k, by_end); awaited != kNoGpuOp) {
        edge(gpu_[awaited].node, op.node, EdgeKind::kStreamWait);
        ++stats_.stream_waits_by_timing;
      }
    }
  }

  // The op of another stream that gpu_[k] waited for by the measured times and the calls
  // (explain_late_starts), or kNoGpuOp. `by_end`: gpu_ indices by measured end.
  std::uint32_t awaited_by_timing(std::uint32_t k, const std::vector<std::uint32_t>& by_end) const {
    const GpuOp& op = gpu_[k];
    const Nanos start = mstart(op.node);
    auto pos = std::partition_point(by_end.begin(), by_end.end(), [&](std::uint32_t g) {
      return mend(gpu_[g].node) <= start + options_.tolerance;
    });
    while (pos != by_end.begin()) {
      const GpuOp& other = gpu_[*--pos];
      if (mend(other.node) < start - kStreamWaitSlack) break;
      if (other.stream == op.stream || other.launch_time >= op.launch_time) continue;
      if (stream_wait_between(other.launch_time, op.launch_time, op.stream)) return *pos;
    }
    return kNoGpuOp;
  }

  // Whether the rank called cudaStreamWaitEvent in (after, before), for `stream` or a stream
  // the trace does not name.
  bool stream_wait_between(Nanos after, Nanos before, TrackId stream) const {
    auto w = std::partition_point(stream_waits_.begin(), stream_waits_.end(), [&](std::uint32_t c) {
      return ev(calls_[c].event).start <= after;
    });
    for (; w != stream_waits_.end() && ev(calls_[*w].event).start < before; ++w) {
      const trace::SyncInfo* s = sync_info(ev(calls_[*w].event));
      if (!s || !s->stream || stream_track(*s->stream) == stream) return true;
    }
    return false;
  }

  // Fork/join between threads of one process: a thread that resumes after being idle waited
  // for the node that another thread finished last before it resumed.
  void link_threads() {
    std::unordered_map<std::int64_t, std::vector<NodeId>> by_process;
    for (const auto& [track, nodes] : thread_nodes_) {
      auto& all = by_process[dfg_.track(track).pid];
      all.insert(all.end(), nodes.begin(), nodes.end());
    }
    for (auto& [pid, all] : by_process) {
      std::sort(all.begin(), all.end(), [&](NodeId a, NodeId b) { return mend(a) < mend(b); });
      for (const auto& [track, nodes] : thread_nodes_) {
        if (dfg_.track(track).pid != pid) continue;
        for (std::size_t k = 0; k < nodes.size(); ++k) {
          const NodeId n = nodes[k];
          const Nanos lower = k == 0 ? INT64_MIN : mend(nodes[k - 1]);
          if (k > 0 && mstart(n) - lower < options_.cross_thread_min_idle) continue;
          auto pos = std::partition_point(all.begin(), all.end(), [&](NodeId m) { return mend(m) <= mstart(n); });
          while (pos != all.begin()) {
            const NodeId m = *--pos;
            if (mend(m) < lower) break;
            if (dfg_.node(m).track == track) continue;
            edge(m, n, EdgeKind::kCrossThread);
            break;
          }
        }
      }
    }
  }

  std::vector<CollectiveRef> collectives() const {
    std::vector<CollectiveRef> refs;
    for (const GpuOp& op : gpu_) {
      const Event& e = ev(op.event);
      if (e.kind != EventKind::kCollective) continue;
      CollectiveRef ref;
      ref.node = op.node;
      ref.event = op.event;
      ref.order_time = op.launch_time;
      const trace::CollectiveInfo* info = collective_info(tr_, dfg_.node(op.node));
      ref.op = info ? info->op : std::string();
      if (ref.op.empty()) ref.op = std::string(traces_.name(e));
      if (info) {
        ref.group_ranks = info->group_ranks;
        ref.group_size = info->group_size;
        ref.sequence = info->sequence;
        if (info->group_name) {
          ref.group = *info->group_name;
        } else if (!info->group_ranks.empty()) {
          for (int r : info->group_ranks) ref.group += std::to_string(r) + ",";
        }
      }
      if (ref.group.empty()) ref.group = "default";
      refs.push_back(std::move(ref));
    }
    std::stable_sort(refs.begin(), refs.end(), [](const CollectiveRef& a, const CollectiveRef& b) {
      return a.order_time < b.order_time;
    });
    return refs;
  }

  const trace::TraceSet& traces_;
  const trace::TraceRank& tr_;
  const BuildOptions& options_;
  Dfg& dfg_;
  RankNodes& out_;
  BuildStats& stats_;
  Logger& log_;

  std::vector<TrackId> track_of_resource_;  // by trace resource index
  std::unordered_map<TrackId, std::vector<NodeId>> thread_nodes_;  // track -> nodes in order
  std::vector<Call> calls_;
  std::unordered_map<NodeId, std::uint32_t> call_index_of_node_;
  std::unordered_map<std::int64_t, std::uint32_t> call_by_correlation_;
  std::vector<GpuOp> gpu_;
  std::unordered_map<TrackId, std::vector<std::uint32_t>> stream_ops_;  // track -> gpu_ indices
  std::vector<std::uint32_t> launching_calls_;  // calls that launched GPU work, in time order
  std::vector<std::uint32_t> records_;          // cudaEventRecord calls, in time order
  std::vector<std::uint32_t> stream_waits_;     // cudaStreamWaitEvent calls, in time order
  EdgeId first_edge_;  // the first edge of this rank
  std::unordered_map<std::int64_t, const trace::SyncInfo*> sync_by_correlation_;
};

}  // namespace

EdgeId add_counted_edge(Dfg& dfg, BuildStats& stats, const Edge& edge) {
  ++stats.edges_by_kind[static_cast<int>(edge.kind)];
  return dfg.add_edge(edge);
}

std::vector<CollectiveRef> build_rank(const trace::TraceSet& traces, std::size_t rank_index,
                                      const BuildOptions& options, Dfg& dfg, RankNodes& out,
                                      BuildStats& stats, Logger& log) {
  return RankBuilder(traces, rank_index, options, dfg, out, stats, log).build();
}

}  // namespace dpro::graph::detail
