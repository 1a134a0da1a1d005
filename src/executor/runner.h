#pragma once
// Plays a Schedule on a Device: one std::thread per host program, every iteration the same
// schedule again (the recorded step repeated), the arena allocated once.
//
// Timing. Each iteration begins with an event on a control stream that every stream waits for,
// and ends with an event the control stream records, after the host threads joined and the device
// synchronised (so the host's tail after its last launch counts, as in the recorded step); the
// host synchronises on it before the next iteration, so iterations do not overlap. An iteration's time is the GPU time between the two (Device::elapsed). With
// time_launches, each launch is bracketed by two events on its stream, which gives its start and
// end relative to the iteration's begin and each stream's busy time (the sum of its launches').
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "executor/device.h"
#include "executor/schedule.h"

namespace dpro::executor {

struct RunOptions {
  int iterations = 1;         // >= 1
  bool time_launches = true;  // two events per launch; off: iteration times only
  // Per launch (schedule order), the communicator its CollectiveCall runs on (0: a stand-in);
  // empty: every collective a stand-in. Not owned; outlives the run.
  const std::vector<CommHandle>* comms = nullptr;
  // Called by the host thread that fails first, before the others stop: run_ranks aborts the
  // collective fabric with it, so that this rank's threads waiting in a collective stop too.
  std::function<void()> on_failure;
};

struct RunResult {
  std::string device;
  std::vector<Nanos> iteration_ns;                // per iteration
  std::vector<std::vector<Nanos>> stream_busy_ns;  // per iteration, per schedule stream (time_launches)
  // Last iteration, per launch (schedule order), relative to the iteration's begin (time_launches).
  std::vector<Nanos> launch_start_ns, launch_end_ns;
  std::uint64_t arena_bytes = 0;                  // allocated once for the run
};

// Throws std::invalid_argument for iterations < 1; what the device throws (a failed allocation, a
// CUDA error) after the host threads have stopped.
RunResult run_schedule(Device& device, const Schedule& schedule, const RunOptions& options);

}  // namespace dpro::executor
