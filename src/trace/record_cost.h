#pragma once
// What a profiler's records cost the host of the job it traced: nanoseconds of the job's host
// time per record, by record class. dpro-profile measures some classes at start (a calibration,
// docs/profiler.md) and writes them into the capture's metadata (`record_cost`,
// docs/native-format.md); `dpro-replay replay --profiler-cost` gives them by hand. The graph pass
// graph/profiler_cost.h takes them out of the CPU side of a replay.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/time.h"

namespace dpro::trace {

// Which record a CPU-side op of the trace paid for. API records are the call's own; GPU-activity
// records (kernel, memcpy, memset, sync) are paid by the call that caused them (the launch, the
// copy, the synchronisation) on its thread.
enum class RecordClass : std::uint8_t {
  kRuntime,  // a CUDA runtime API call record
  kDriver,   // a CUDA driver API call record
  kKernel,   // a kernel's (or NCCL kernel's) activity record
  kMemcpy,   // a copy's activity record
  kMemset,   // a memset's activity record
  kSync,     // a synchronisation record
  kCpuOp,    // a framework operator record (torch.profiler's aten ops; emit_nvtx ranges; NCCL API calls)
};
inline constexpr int kRecordClassCount = static_cast<int>(RecordClass::kCpuOp) + 1;

// "runtime", "driver", "kernel", "memcpy", "memset", "sync", "cpu_op".
const char* to_string(RecordClass c);
std::optional<RecordClass> record_class_named(std::string_view name);
// The names above, comma-separated, for messages.
std::string record_class_names();

// Host nanoseconds per record, by class; a class without a value is not known (not calibrated,
// not given), which is not the same as costing nothing.
struct RecordCosts {
  std::array<std::optional<Nanos>, kRecordClassCount> ns{};

  std::optional<Nanos> of(RecordClass c) const { return ns[static_cast<int>(c)]; }
  void set(RecordClass c, Nanos v) { ns[static_cast<int>(c)] = v; }
  bool empty() const;
  // This, with each class `over` has replaced by its value.
  RecordCosts overridden_by(const RecordCosts& over) const;
  friend bool operator==(const RecordCosts&, const RecordCosts&) = default;
};

// Largest cost per record accepted (1 ms): beyond any profiler's record, so a typo.
inline constexpr Nanos kMaxRecordCost = kNanosPerMilli;

// Parses "runtime=2.1us,kernel=1500ns": comma-separated CLASS=VALUE, VALUE a non-negative
// decimal number with its unit (ns, us or ms). Throws OptionError(option, text, ...) for an
// unknown class (unless `unknown` is given: its name is appended there and the item skipped), a
// class given twice, a value without a unit, negative or over kMaxRecordCost, or an empty text.
RecordCosts parse_record_costs(std::string_view text, const std::string& option,
                               std::vector<std::string>* unknown = nullptr);

// "runtime=2104ns,driver=1876ns" (classes with a value, in enum order): what parse_record_costs
// reads back; "" when empty.
std::string format_record_costs(const RecordCosts& costs);

}  // namespace dpro::trace
