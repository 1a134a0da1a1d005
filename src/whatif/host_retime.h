#pragma once
// Host re-timing: the job on a host whose CPU runs its host-side work `cpu_speed` times as
// fast (2: twice as fast). Every op on a CPU thread (framework ops, CUDA runtime and driver
// calls) costs 1/cpu_speed of what it cost, and so does the untraced time before it (Python and
// framework code no one recorded: the thread's kUntraced nodes, and the delay of ops after a
// shorter gap). What CPU ops wait for is not
// scaled: a blocking call still returns when the GPU work it waits for ends, a launch still
// needs its stream, GPU ops and their launch latency keep their times.
//
// `--set host.cpu_speed=X` on the command line; host_speed.h measures X between two captures.
#include <optional>
#include <string>
#include <vector>

#include "core/time.h"
#include "whatif/workload.h"

namespace dpro::whatif {

struct HostRetime {
  double cpu_speed = 1.0;  // > 0; the target host's speed relative to the trace's
};

struct HostChange {
  HostRetime options;
  std::size_t cpu_ops = 0;       // ops on CPU threads re-timed (untraced work is no op)
  Nanos op_time_before = 0, op_time_after = 0;          // their own durations, summed
  Nanos untraced_before = 0, untraced_after = 0;        // the untraced time before them, summed
};

// The host settings among `--set`-style "key=value" strings (keys "host.*"): the host rewrite
// they ask for, or none; `rest` gets the others, in order. Throws OptionError("set", ...) for
// an unknown host key or a value that is not a positive finite number.
std::optional<HostRetime> host_retime_from_settings(const std::vector<std::string>& settings,
                                                    std::vector<std::string>* rest);

// Whether a `--set`-style "key=value" string is a host setting ("host.*").
bool is_host_setting(const std::string& setting);

// Scales the CPU side of the workload's graph in place.
HostChange host_retime(Workload& workload, const HostRetime& options);

}  // namespace dpro::whatif
