#pragma once
// A one-line verdict on what bounds a step, from its critical-path breakdown and the GPU's
// busy time (union over streams). Rules (docs/replay.md, section 4), in order:
//   1. GPU-bound when the GPU is busy (any stream) for at least kGpuBoundBusyShare of the step:
//      the GPU, not what feeds it, sets the pace.
//   2. Otherwise the largest group of the path decides:
//        GPU work (compute, copies, blocked_on_gpu)          -> GPU-bound
//        host work (cpu_op, cpu_untraced, launch)            -> CPU-bound
//        communication                                       -> communication-bound
//        peer_wait                                           -> waiting for rank N (the peer with most)
//        unresolved_wait                                     -> bound by unresolved waits
//        idle                                                -> idle
//      Ties go to the earlier line.
#include <string>

#include "replayer/critical_path.h"

namespace dpro::replayer {

inline constexpr double kGpuBoundBusyShare = 0.9;

struct Verdict {
  enum class Bound : std::uint8_t { kGpu, kCpu, kCommunication, kPeer, kUnresolvedWaits, kIdle };
  Bound bound = Bound::kIdle;
  int peer = -1;          // kPeer: the rank waited for
  double path_share = 0;  // the deciding group's share of the path
  double gpu_busy_share = 0;
};

// `path`: a rank's breakdown (with peer_wait); `gpu_busy`: union of its GPU streams' busy time
// in the step; `step`: the step's predicted time.
Verdict verdict_of(const Breakdown& path, Nanos gpu_busy, Nanos step);
// "GPU-bound", "CPU-bound", "communication-bound", "waiting for rank 3", ...
std::string headline(const Verdict& v);
// The headline with its evidence: "CPU-bound (host work 92.0% of the critical path, GPU busy 31.0%)".
std::string describe(const Verdict& v);

}  // namespace dpro::replayer
