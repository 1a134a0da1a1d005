#pragma once
// The CUDA launch queue. A GPU holds a bounded number of launched-but-unfinished ops; a launch
// call made when the queue is full blocks until an op finishes and frees its slot, so on a job
// whose CPU runs ahead of its GPU, cudaLaunchKernel takes tens of microseconds that are waiting,
// not work. The graph says so with an edge per launch: the i-th GPU op launched on a device
// cannot be launched (its call cannot return) before the (i - depth)-th has finished
// (EdgeKind::kLaunchQueue, into the call's end, like a blocking sync). The call's own cost is
// what is left after that op finished; a what-if that speeds the GPU up frees the CPU with it.
//
// The depth is estimated from the trace where launches blocked: a launch far longer than the
// device's typical launch that returned just after some GPU op finished, with the queue about
// as full as it ever was, found it full; the queue never holds more than its depth, so the most
// ops ever in flight (launched, unfinished) is the depth. Where fewer than kMinBlockedLaunches
// launches blocked, the depth is
// kDefaultLaunchQueueDepth: the queue never filled, and the edges only matter to a what-if
// that slows the GPU down enough to fill it. A default depth is a guess to within far more than
// a few launches, so it is modelled at that granularity: an edge for every kDefaultDepthStride-th
// launch (the CPU may get up to depth + stride - 1 ops ahead), which keeps the graph 1/16 as
// large in edges as an edge per launch and the replay about as fast as without the queue.
#include <cstdint>

#include "core/time.h"

namespace dpro::graph {

// CUDA does not document its queue's size; on current drivers a host thread gets about a
// thousand kernels ahead before cudaLaunchKernel blocks (it varies with the kernels'
// argument sizes). The estimate from the trace takes precedence wherever launches blocked.
inline constexpr std::uint32_t kDefaultLaunchQueueDepth = 1024;
inline constexpr std::size_t kMinBlockedLaunches = 8;
inline constexpr std::size_t kDefaultDepthStride = 16;
// No driver queues fewer ops than this; a slow launch with fewer in flight did not find it full.
inline constexpr std::uint32_t kMinPlausibleDepth = 64;
// A blocked launch returns this soon after the op that freed its slot finished.
inline constexpr Nanos kLaunchWakeWindow = 20 * kNanosPerMicro;

}  // namespace dpro::graph
