#pragma once
// Measured vs predicted for one rank's iteration: what `dpro-exec validate` prints. The measured
// side is a RunResult of the schedule on a device; the predicted side is the replayer's simulation
// of the same workload graph the schedule was lowered from (the plan's rewrites applied), so each
// scheduled launch has one predicted span (its node's start and end in the replay).
//
// Per launch: measured = launch_end_ns - launch_start_ns of the run's last iteration (the runner
// keeps per-launch times of the last one only); predicted = end - start of its node in the replay.
// Per class: sums of those over the class's launches. Per stream: busy time, the sum of its
// launches' times (as the runner counts it; measured: median over iterations). Step: the runner's
// iteration times against the replay's predicted step of the rank in the schedule's window.
// Durations in ns; errors are (measured - predicted) / predicted, absent when predicted is 0.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "executor/runner.h"
#include "executor/schedule.h"
#include "replayer/engine.h"
#include "replayer/report.h"

namespace dpro::executor {

// The classes a validation reports: what a reader checks a prediction of.
enum class ValidationClass : std::uint8_t {
  kGemm,        // GemmCall
  kElementwise, // ElementwiseChain (one op or a fused chain)
  kCast,        // CastCall
  kCompress,    // CompressCall
  kCopy,        // CopyCall, MemsetCall
  kCollective,  // CollectiveCall (a stand-in on one GPU)
  kStandin,     // StandinKernel: any op without a real kernel here
};
inline constexpr int kValidationClassCount = static_cast<int>(ValidationClass::kStandin) + 1;
const char* to_string(ValidationClass c);  // "gemm", "elementwise/fused", "cast", "compress", "copy", ...
ValidationClass validation_class(const LoweredLaunch& launch);

struct Compared {
  Nanos measured = 0, predicted = 0;
  std::optional<double> error() const;  // (measured - predicted) / predicted; none when predicted is 0
};

struct ClassComparison {
  ValidationClass cls = ValidationClass::kStandin;
  std::size_t launches = 0;
  Compared time;  // sums over the class's launches
};

struct StreamComparison {
  std::string name;
  std::size_t launches = 0;
  Compared busy;  // measured: median over iterations
};

struct Validation {
  std::string device;
  int rank = 0;
  std::string window;
  Nanos recorded_ns = 0;                 // the window's length in the trace
  std::vector<Nanos> measured_step_ns;   // per iteration
  Nanos predicted_step_ns = 0;           // the replay's step of this rank in the window
  Compared step;                         // measured: the median iteration
  std::vector<Nanos> launch_measured_ns, launch_predicted_ns;  // per schedule launch
  std::array<ClassComparison, kValidationClassCount> classes{};  // every class, in enum order
  std::vector<StreamComparison> streams;                         // per schedule stream
};

// `simulation` is a replay of the graph `schedule` was built from (same node ids); `report` is
// make_report over it (times only suffice). `run` must have time_launches (per-launch times).
// Throws std::invalid_argument when the run has no per-launch times or the report has no step
// for the schedule's window and rank.
Validation compare_run(const Schedule& schedule, const RunResult& run, const replayer::Simulation& simulation,
                       const replayer::Report& report);

}  // namespace dpro::executor
