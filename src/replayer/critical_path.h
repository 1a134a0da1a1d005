#pragma once
// The critical path: walking back from a point of the replayed timeline along the
// dependencies that decided each start and end, down to a stop time. Each segment of the path
// is attributed to one category of the breakdown.
#include <string>
#include <vector>

#include "graph/dfg.h"
#include "replayer/engine.h"

namespace dpro::replayer {

enum class Category : std::uint8_t { kCompute, kCommunication, kCopies, kCpu, kIdle };
constexpr int kCategoryCount = 5;
const char* to_string(Category c);

struct PathSegment {
  graph::NodeId node;  // the op the time belongs to (none: before the first op)
  Category category = Category::kIdle;
  Nanos begin = 0;  // replay clock
  Nanos end = 0;
};

// Segments in time order, covering [stop_at, time of (from, point)] without gaps.
std::vector<PathSegment> critical_path(const graph::Dfg& dfg, const Simulation& sim, graph::NodeId from,
                                       graph::Point point, Nanos stop_at);

// Time per category, in ns, of the given segments.
struct Breakdown {
  Nanos by_category[kCategoryCount] = {};
  Nanos& operator[](Category c) { return by_category[static_cast<int>(c)]; }
  Nanos operator[](Category c) const { return by_category[static_cast<int>(c)]; }
  Nanos total() const;
};
Breakdown breakdown_of(const std::vector<PathSegment>& path);

}  // namespace dpro::replayer
