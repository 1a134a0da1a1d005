#pragma once
// The calibration at session start: what one record of each class costs the host of the traced
// job. For each record class it has a probe for (a cheap CUDA call whose API record can be
// switched on and off by its callback id), it times batches of the call with the record off and
// on, alternately; the cost per record is the median over the repetitions of
// (time on - time off) / calls, never below 0. A few thousand calls in all: milliseconds.
//
// The result goes into the trace's metadata (docs/native-format.md, "Metadata keys":
// record_cost, record_cost.calibration, record_cost.uncalibrated), where dpro-replay finds it and
// takes the cost out of the CPU side of a replay (src/graph/profiler_cost.h).
//
// The CUDA calls and the clocks are behind CostProbe (the real one, cost_probe_real.h, opens the
// CUDA driver and runtime the job loaded), the record switches behind CuptiApi: tests run all of
// this with fakes. No CUDA here.
#include <atomic>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/cupti_api.h"
#include "profiler/record_sink.h"
#include "trace/format/native_format.h"

namespace dpro::profiler {

// A cheap CUDA call the calibration times, and the record its calls make.
struct ProbeCall {
  std::string record_class;                         // "runtime" or "driver" (DPRO_PROFILE_OFF's names)
  native::ApiKind kind = native::ApiKind::kRuntime;
  std::uint32_t cbid = 0;                           // CUPTI callback id of the call
  std::string name;                                 // "cudaRuntimeGetVersion"
};

class CostProbe {
 public:
  virtual ~CostProbe() = default;
  // The calls this process can make (none where the CUDA libraries were not found).
  virtual const std::vector<ProbeCall>& calls() const = 0;
  // Whether the calls work yet (the driver has finished cuInit).
  virtual bool ready() = 0;
  // `n` calls of calls()[index], back to back.
  virtual void call(std::size_t index, int n) = 0;
  virtual std::int64_t now_ns() = 0;          // a steady clock, for timing the calls
  virtual std::int64_t trace_clock_ns() = 0;  // the clock records are stamped with (CLOCK_REALTIME)
};

struct CalibrationOptions {
  int calls = 200;        // per timed batch
  int repetitions = 9;    // batches with the record on, and as many off, per class
  // After this much time a class gets no further repetitions (it keeps its first 3 at least).
  std::int64_t budget_ns = 250'000'000;
  // The session records every runtime call (--all-cuda-calls): the probe's records are switched
  // back on afterwards instead of off.
  bool all_runtime_calls = false;
};

struct ClassCost {
  std::string record_class;  // "runtime", "driver"
  std::string probe;         // the call timed
  std::int64_t ns = 0;       // median cost per record
  std::int64_t low_ns = 0, high_ns = 0;  // the repetitions' extremes (may be negative: noise)
  int repetitions = 0;
  int calls = 0;
};

struct Calibration {
  std::vector<ClassCost> costs;
  std::vector<std::string> failures;  // "driver: ..." for a class that could not be measured
  std::int64_t took_ns = 0;
};

// Measures each recorded class (`recorded`: DPRO_PROFILE_OFF's names) the probe has a call for.
// Leaves each probe's record switched as the session has it (off, or on with all_runtime_calls).
Calibration calibrate_record_costs(CuptiApi& api, CostProbe& probe, const std::vector<std::string>& recorded,
                                   const CalibrationOptions& options);

// The recorded classes the calibration has no figure for, in `recorded`'s order.
std::vector<std::string> uncalibrated_classes(const std::vector<std::string>& recorded, const Calibration& calibration);

// Metadata records of a calibration: record_cost ("runtime=2104ns,driver=1876ns", absent when no
// class was measured), record_cost.calibration (how, or why not), record_cost.uncalibrated.
void write_calibration_metadata(native::RecordEncoder& out, const Calibration& calibration,
                                const std::vector<std::string>& uncalibrated);
// record_cost.calibration = `why` ("off", "not run: ..."): the trace says it has no calibration.
void write_no_calibration(native::RecordEncoder& out, std::string_view why);

// The calibration's own API records, left out of the trace: those of the probes' callback ids
// stamped inside the calibration's window. Set the probes before recording starts; open and
// close the window from any thread; drops() is called by the buffer threads.
class ProbeRecordFilter {
 public:
  void set_probes(const std::vector<ProbeCall>& calls);
  void open(std::int64_t from) { from_.store(from); }
  void close(std::int64_t to) { to_.store(to); }
  bool drops(native::ApiKind kind, std::uint32_t cbid, std::int64_t start) const;

 private:
  std::vector<std::pair<native::ApiKind, std::uint32_t>> probes_;
  std::atomic<std::int64_t> from_{std::numeric_limits<std::int64_t>::max()};
  std::atomic<std::int64_t> to_{std::numeric_limits<std::int64_t>::max()};
};

struct CalibrationRun {
  std::vector<std::string> recorded;  // the session's record classes
  CalibrationOptions options;
  std::int64_t wait_ns = 30'000'000'000;  // for CUDA to be ready; the calibration is skipped after
};

// Waits until the probe is ready (polling each millisecond; gives up at `stop` or after
// run.wait_ns), calibrates with the probes' records filtered out, and writes the metadata to
// `sink`. Runs on a thread of its own in the traced process (injection.cpp).
void run_calibration(CuptiApi& api, CostProbe& probe, ProbeRecordFilter& filter, RecordSink& sink,
                     const CalibrationRun& run, const std::atomic<bool>& stop);

}  // namespace dpro::profiler
