#pragma once
// The critical path: walking back from a point of the replayed timeline along the
// dependencies that decided each start and end, down to a stop time. Each segment of the path
// is attributed to one category a person can act on (docs/replay.md, section 4).
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "graph/builder.h"
#include "graph/dfg.h"
#include "replayer/engine.h"

namespace dpro::replayer {

// Where time on the path goes. The order is the order of the report's columns and JSON keys;
// to_string gives the stable snake_case name used in JSON (`<name>_ns`).
enum class Category : std::uint8_t {
  kCompute,         // a GPU kernel running
  kCommunication,   // a collective (or communication kernel) transferring after its last peer arrived
  kPeerWait,        // (per-rank breakdowns only) time on another rank's ops: waiting for that peer
  kCopies,          // memcpy / memset running
  kCpuOp,           // a CPU op or runtime call running (its own time), other than a launch
  kCpuUntraced,     // the untraced time before a CPU op starts (Python, framework code)
  kLaunch,          // a runtime call that launches GPU work, and a GPU op's launch latency
  kBlockedOnGpu,    // a CPU call returning after the GPU work it waited for (sync, full launch queue)
  kUnresolvedWait,  // a GPU op starting far after its launch with no edge to explain it
  kIdle,            // a GPU op held by its stream beyond its dependency; time before the first op
};
constexpr int kCategoryCount = 10;
const char* to_string(Category c);
// The category named `name` (to_string's inverse); false if none.
bool category_from_string(std::string_view name, Category& out);

// A GPU op that starts more than this after its launch call (beyond the launch edge's gap), and
// whose start no other edge decided, waited for something the trace does not show (a host-side
// lock, a full hardware queue, another process on the GPU, an event the builder could not
// resolve): an unresolved wait (graph/builder.h).
inline constexpr Nanos kUnresolvedWaitThreshold = graph::kUnresolvedWaitThreshold;
// Whether a node whose start edge `cause` decided, `wait` ns after that edge was satisfied,
// waited for something no edge explains: a GPU op started by its launch, far above the launch
// latency. The critical path's category and the report's count both ask this.
bool is_unresolved_wait(graph::NodeKind node, graph::EdgeKind cause, Nanos wait);

// True for GPU kernels that move data between GPUs although they are not NCCL/RCCL kernels
// (the importer already makes those collectives): DeepEP, NVSHMEM, custom all-reduce.
bool is_communication_kernel(std::string_view name);

// Which part of its node a segment is: the node running (or its end held by an end-edge), or
// the wait before it started.
enum class Part : std::uint8_t { kOwn, kBeforeStart };

struct PathSegment {
  graph::NodeId node;  // the op the time belongs to (none: before the first op)
  Category category = Category::kIdle;
  Part part = Part::kOwn;
  int rank = -1;    // whose timeline the time is on (the node's rank; -1 for barriers)
  Nanos begin = 0;  // replay clock
  Nanos end = 0;
};

// The category of the time each node spends running: GPU compute or communication (by the
// kernel's name, is_communication_kernel), copies, a CPU op, a launch (a runtime call that
// launches GPU work). A kernel's name is read once per distinct op of the op table, not once
// per instance and report window.
using ExecutionCategories = IdVector<graph::NodeId, Category>;
ExecutionCategories execution_categories(const graph::Dfg& dfg);

// Segments in time order, covering [stop_at, time of (from, point)] without gaps; `categories`:
// execution_categories(dfg).
std::vector<PathSegment> critical_path(const graph::Dfg& dfg, const Simulation& sim,
                                       const ExecutionCategories& categories, graph::NodeId from,
                                       graph::Point point, Nanos stop_at);

// Time per category, in ns, of the given segments.
struct Breakdown {
  Nanos by_category[kCategoryCount] = {};
  std::map<int, Nanos> peer_wait_by_rank;  // kPeerWait split by the rank whose ops took the time
  Nanos& operator[](Category c) { return by_category[static_cast<int>(c)]; }
  Nanos operator[](Category c) const { return by_category[static_cast<int>(c)]; }
  Nanos total() const;
  // The rank with the most peer wait (-1 if none).
  int main_peer() const;
};
// The job's view: every segment in its own category.
Breakdown breakdown_of(const std::vector<PathSegment>& path);
// Rank `rank`'s view: time on another rank's ops is peer_wait, counted per peer.
Breakdown breakdown_of(const std::vector<PathSegment>& path, int rank);

}  // namespace dpro::replayer
