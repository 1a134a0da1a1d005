#pragma once
// How fast one capture's host ran its CPU side relative to another's, from the CPU ops both
// ran: the `host.cpu_speed` that makes a what-if on the origin capture run its host like the
// target's (two machines, or one machine on two days, differ in CPU clock, turbo, kernel and
// Python build; a prediction of another GPU's step needs the other host's speed too).
//
// Per op name (framework ops, CUDA runtime and driver calls) that each graph runs at least
// `min_calls` times without waiting in them (no blocking edge from GPU work that ended after
// the call began: a sync that waited, a launch that found the queue full): the
// ratio of the median durations, origin / target. The speed is the median of these ratios
// weighted by the origin's time in each op (a few ops with odd ratios, e.g. ones that wait
// for a lock, move it little).
#include <string>
#include <vector>

#include "core/time.h"
#include "graph/dfg.h"

namespace dpro::whatif {

struct HostOpRatio {
  std::string name;
  std::size_t origin_calls = 0, target_calls = 0;
  Nanos origin_median = 0, target_median = 0;
  Nanos origin_total = 0;  // the weight
  double speed = 1.0;      // origin_median / target_median
};

struct HostSpeed {
  double cpu_speed = 1.0;          // the weighted median; 1 when no op is shared
  std::vector<HostOpRatio> ops;    // the shared ops, by origin_total, largest first
  Nanos origin_total = 0;          // CPU time of the origin's shared ops
  Nanos origin_cpu_total = 0;      // CPU time of all the origin's unblocked CPU ops
};

inline constexpr std::size_t kHostSpeedMinCalls = 20;

HostSpeed host_speed(const graph::Dfg& origin, const graph::Dfg& target, std::size_t min_calls = kHostSpeedMinCalls);

}  // namespace dpro::whatif
