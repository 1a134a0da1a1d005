#pragma once
// The trace model: what one or more ranks of a training job did, as events on resources
// (CPU threads and GPU streams), all in one clock. Importers (Kineto JSON, the native dpro
// format) fill it; the graph builder reads it. Times are absolute nanoseconds (Nanos) in the
// trace's clock domain; durations are non-negative.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/strings.h"
#include "core/time.h"
#include "trace/record_cost.h"

namespace dpro::trace {

enum class EventKind : std::uint8_t {
  kCpuOp,           // framework operator (aten::*, autograd, record_param_comms, ...)
  kUserAnnotation,  // record_function ranges, ProfilerStep#N, NVTX ranges on the CPU
  kPythonFunction,  // python stack frames
  kRuntimeCall,     // CUDA runtime API call (cudaLaunchKernel, cudaStreamSynchronize, ...)
  kDriverCall,      // CUDA driver API call (cuLaunchKernel, ...)
  kKernel,          // GPU kernel (not NCCL)
  kCollective,      // NCCL (or RCCL) kernel: a collective or p2p operation on the GPU
  kMemcpy,          // GPU copy
  kMemset,          // GPU memset
  kSync,            // CUPTI synchronization record (information only, not GPU work)
  kGpuAnnotation,   // a user annotation drawn on a GPU stream (information only)
  kMarker,          // instant or other event kept for display
};

const char* to_string(EventKind kind);
bool is_gpu_work(EventKind kind);  // kernel, collective, memcpy, memset
bool is_cpu_side(EventKind kind);  // cpu op, annotation, python, runtime, driver

enum class ResourceKind : std::uint8_t { kCpuThread, kGpuStream };

// A CPU thread (pid, tid) or a GPU stream (device, stream) of one rank.
struct Resource {
  ResourceKind kind = ResourceKind::kCpuThread;
  std::int64_t pid = 0;     // OS pid for threads; device index for streams
  std::int64_t tid = 0;     // OS tid for threads; stream id for streams
  std::string name;         // "thread 59811 (python3)", "stream 7"
};
using ResourceId = std::uint32_t;

// Collective metadata, from Kineto's NCCL kernel / record_param_comms args or from the NCCL
// profiler plugin. Every field is optional in real traces.
struct CollectiveInfo {
  std::string op;                          // normalised: "allreduce", "sendrecv", "allgather", ...
  std::optional<std::string> group_name;   // process group name ("0") or communicator id
  std::optional<std::string> group_desc;   // "default_pg"
  std::vector<int> group_ranks;            // global ranks of the group, empty when unknown
  std::optional<int> group_size;
  std::optional<std::int64_t> in_nelems;
  std::optional<std::int64_t> out_nelems;
  std::optional<std::string> dtype;        // "Float", "ncclFloat32", ...
  std::optional<std::int64_t> sequence;    // per (group, op) sequence when the source has it
  std::optional<std::string> algorithm;    // RING, TREE, NVLS ...
  std::optional<std::string> protocol;     // LL, LL128, SIMPLE
  std::optional<int> channels;
};

// Bytes of one element of a collective's data type as traces record it: NCCL's names
// ("ncclFloat32", "Float"), PyTorch's "Input type" names ("float", "long int", "c10::Half",
// "unsigned char", ...); 0 when the name is no data type ("Scalar", "TensorList", "").
std::int64_t element_bytes(std::string_view dtype);

// CUPTI synchronization details (Kineto cat "cuda_sync").
struct SyncInfo {
  std::string sync_kind;                            // "Stream Sync", "Event Sync", "Context Sync", "Stream Wait Event"
  std::optional<std::int64_t> stream;               // stream synchronised or waiting
  std::optional<std::int64_t> wait_on_stream;       // for Stream Wait Event
  std::optional<std::int64_t> event_record_correlation;  // correlation of the cudaEventRecord waited on
};

// What CUPTI (through Kineto) estimates of a kernel launch's use of the GPU, when the trace says.
struct KernelEfficiency {
  std::optional<double> achieved_occupancy_pct;  // "est. achieved occupancy %": 0 .. 100
  std::optional<double> blocks_per_sm;           // "blocks per SM": the grid's blocks / the GPU's SMs
  std::optional<double> warps_per_sm;            // "warps per SM"
};

// An optional value kept out of line: one pointer where it is absent, so that a large member few
// records have (collective and sync details) costs the others 8 bytes instead of its size.
// Reads like std::optional; copies copy the value.
template <class T>
class Boxed {
 public:
  Boxed() = default;
  Boxed(std::nullopt_t) {}  // NOLINT: as std::optional
  Boxed(T value) : p_(std::make_unique<T>(std::move(value))) {}  // NOLINT: as std::optional
  Boxed(std::optional<T> value) : p_(value ? std::make_unique<T>(std::move(*value)) : nullptr) {}  // NOLINT
  Boxed(const Boxed& other) : p_(other.p_ ? std::make_unique<T>(*other.p_) : nullptr) {}
  Boxed(Boxed&&) noexcept = default;
  Boxed& operator=(const Boxed& other) {
    if (this != &other) p_ = other.p_ ? std::make_unique<T>(*other.p_) : nullptr;
    return *this;
  }
  Boxed& operator=(Boxed&&) noexcept = default;
  ~Boxed() = default;

  bool has_value() const { return p_ != nullptr; }
  explicit operator bool() const { return has_value(); }
  T& operator*() { return *p_; }
  const T& operator*() const { return *p_; }
  T* operator->() { return p_.get(); }
  const T* operator->() const { return p_.get(); }
  T& value() {
    if (!p_) throw std::bad_optional_access();
    return *p_;
  }
  const T& value() const {
    if (!p_) throw std::bad_optional_access();
    return *p_;
  }
  template <class... Args>
  T& emplace(Args&&... args) {
    p_ = std::make_unique<T>(std::forward<Args>(args)...);
    return *p_;
  }
  void reset() { p_.reset(); }

 private:
  std::unique_ptr<T> p_;
};

// Attributes that only some events carry; stored out of line (Event::attrs indexes them).
// Collective, sync and kernel-efficiency details are boxed: a record without them is about 200 bytes, not 600.
struct EventAttrs {
  std::optional<std::int64_t> bytes;        // memcpy/memset size
  std::optional<std::int64_t> device;
  std::optional<std::int64_t> stream;
  std::optional<std::int64_t> cbid;         // CUPTI callback id of runtime/driver calls
  std::optional<std::array<int, 3>> grid;
  std::optional<std::array<int, 3>> block;
  std::optional<std::int64_t> sequence_number;  // autograd sequence number
  std::optional<std::int64_t> fwd_thread_id;
  std::string input_dims;   // raw JSON text of "Input Dims", empty when absent
  std::string input_types;  // raw JSON text of "Input type", empty when absent
  Boxed<CollectiveInfo> collective;
  Boxed<SyncInfo> sync;
  Boxed<KernelEfficiency> efficiency;  // kernels of Kineto traces
};

constexpr std::uint32_t kNoAttrs = 0xffffffffu;

// The bounds on times every importer's events are held to (the loader checks them once for all
// formats: trace/event_checks.h). Times beyond kMaxTraceNanos in magnitude (3e18 ns, the year
// 2065 as a Unix time) are refused: sums and differences of a few of them stay within int64.
// A rank's events lie within kMaxTraceSpanNanos of each other (2^52 ns, 52 days): a sum of
// busy times over up to 2,048 concurrent tracks then stays within int64 too.
inline constexpr Nanos kMaxTraceNanos = 3'000'000'000'000'000'000;
inline constexpr Nanos kMaxTraceSpanNanos = Nanos{1} << 52;

// Largest rank and world size a trace may give (2^20): beyond any job, so a larger value is a
// corrupt trace (or one that wrapped through a 32-bit int), not a rank to replay.
inline constexpr int kMaxRank = 1 << 20;

struct Event {
  Nanos start = 0;  // absolute, trace clock
  Nanos dur = 0;    // >= 0
  StringId name;
  ResourceId resource = 0;
  std::optional<std::int64_t> correlation;  // CUPTI correlation id (runtime call <-> GPU op)
  std::optional<std::int64_t> external_id;  // framework op id (cpu op <-> launched GPU ops)
  std::uint32_t attrs = kNoAttrs;           // index into TraceRank::attrs
  EventKind kind = EventKind::kCpuOp;       // last: with attrs it fills one 8-byte word (64 bytes in all)

  Nanos end() const { return start + dur; }
};
static_assert(sizeof(Event) <= 64, "an event is one cache line; a field added here costs every event");

// One ProfilerStep#N (or other iteration marker) span on one rank.
struct Iteration {
  std::string name;    // "ProfilerStep#10"
  std::int64_t number = 0;
  Nanos start = 0;
  Nanos end = 0;
  std::uint32_t event = 0;  // index of the marking event in TraceRank::events
};

struct DeviceProperties {
  int id = 0;
  std::string name;  // "Tesla V100-SXM2-32GB"
  std::optional<std::int64_t> total_global_mem;
  std::optional<int> compute_major, compute_minor, num_sms;
};

struct ProcessGroup {
  std::string name;  // "0"
  std::string desc;  // "default_pg"
  std::vector<int> ranks;
};

// One Kineto "[memory]" instant event of a CUDA device: what the caching allocator held after an
// allocation or free, in bytes.
struct MemorySample {
  Nanos at = 0;                          // trace clock, like Event::start
  std::int64_t allocated = 0;            // "Total Allocated"
  std::optional<std::int64_t> reserved;  // "Total Reserved", when recorded
};

// Everything recorded for one rank.
struct TraceRank {
  std::string file;  // source path, for messages
  std::string format;  // "kineto" or "native"
  int rank = 0;
  bool rank_known = false;        // false when the trace did not say which rank it is
  std::optional<int> world_size;  // from distributedInfo / native header
  std::string host;
  std::string backend;            // "nccl", "gloo", ...
  std::vector<DeviceProperties> devices;
  std::vector<ProcessGroup> process_groups;
  std::vector<Resource> resources;
  std::vector<Event> events;  // sorted by (start, longer first) after import
  std::vector<EventAttrs> attrs;
  std::vector<Iteration> iterations;  // in time order
  std::optional<Nanos> clock_offset;  // applied shift into the set's common clock, if any
  // What each of the profiler's records cost this rank's host, where the trace says (dpro-profile's
  // calibration at start: native metadata `record_cost`); none for traces without one.
  std::optional<RecordCosts> record_costs;
  // The most GPU memory the rank's allocator held, in bytes, from Kineto's "[memory]" instant
  // events (profile_memory=True): the largest "Total Reserved" (else "Total Allocated") of a CUDA
  // device; none for traces without them.
  std::optional<std::int64_t> peak_gpu_memory_bytes;
  // The "[memory]" samples of CUDA devices that give "Total Allocated", in trace order (Kineto
  // traces only; the native format does not carry them), for peaks per iteration.
  std::vector<MemorySample> gpu_memory;

  const EventAttrs* attrs_of(const Event& e) const {
    return e.attrs == kNoAttrs ? nullptr : &attrs[e.attrs];
  }
  ResourceId intern_resource(ResourceKind kind, std::int64_t pid, std::int64_t tid);
};

// All ranks of one job, sharing a string table and one clock.
struct TraceSet {
  StringTable strings;
  std::vector<TraceRank> ranks;  // ordered by rank

  std::string_view name(const Event& e) const { return strings.view(e.name); }
  const TraceRank* find_rank(int rank) const;
  // The CUDA names of the GPUs the ranks recorded (device properties), in rank order.
  std::vector<std::string> gpu_names() const;
};

}  // namespace dpro::trace
