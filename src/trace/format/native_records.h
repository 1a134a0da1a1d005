#pragma once
// Typed records of the native trace format, as the profiler hands them to the encoder.
// Times are absolute nanoseconds in the trace's clock domain (CLOCK_REALTIME, as CUPTI);
// string_views only need to live until the encoder call returns (the encoder interns them).
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "trace/format/native_format.h"

namespace dpro::native {

struct Header {
  std::string host;
  std::int64_t rank = -1;  // -1: unknown
  std::int64_t local_rank = -1;
  std::int64_t world_size = -1;
  std::uint64_t pid = 0;
  std::string clock_domain = "CLOCK_REALTIME";
  std::uint64_t cupti_version = 0;  // cuptiGetVersion(), 0 when unknown
  std::uint64_t nccl_version = 0;   // NCCL_VERSION_CODE, 0 when unknown
  std::int64_t base_time = 0;       // ns; record times are stored relative to it
};

struct DeviceRecord {
  std::uint32_t id = 0;
  std::string_view name;
  std::uint64_t total_global_mem = 0;  // bytes
  std::uint32_t compute_major = 0, compute_minor = 0, num_sms = 0;
};

struct ApiRecord {
  ApiKind kind = ApiKind::kRuntime;
  std::uint32_t cbid = 0;
  std::uint64_t start = 0, end = 0;
  std::uint32_t pid = 0, tid = 0, correlation = 0;
  std::string_view name;  // "cudaLaunchKernel_v7000"
};

struct KernelRecord {
  std::uint64_t start = 0, end = 0;
  std::uint32_t device = 0, context = 0, stream = 0, correlation = 0;
  std::string_view name;
  std::array<std::int32_t, 3> grid{}, block{};
  std::uint32_t registers = 0;
  std::uint32_t shared_mem = 0;  // static + dynamic, bytes
};

struct MemcpyRecord {
  std::uint64_t start = 0, end = 0;
  std::uint32_t device = 0, context = 0, stream = 0, correlation = 0;
  std::uint64_t bytes = 0;
  std::uint32_t copy_kind = 0, src_kind = 0, dst_kind = 0;
  std::uint32_t src_device = 0, dst_device = 0;  // peer copies only
};

struct MemsetRecord {
  std::uint64_t start = 0, end = 0;
  std::uint32_t device = 0, context = 0, stream = 0, correlation = 0;
  std::uint64_t bytes = 0;
  std::uint32_t value = 0;
};

struct SyncRecord {
  std::uint64_t start = 0, end = 0;
  std::uint32_t type = 0;  // CUpti_ActivitySynchronizationType
  std::uint32_t context = 0;
  std::uint64_t stream = kNoStream;
  std::uint32_t event_id = 0, correlation = 0;
};

struct CudaEventRecord {
  std::uint32_t correlation = 0, event_id = 0, stream = 0, device = 0, context = 0;
};

struct ExternalCorrelationRecord {
  std::uint32_t kind = 0;
  std::uint64_t external_id = 0;
  std::uint32_t correlation = 0;
};

struct MarkerRecord {
  std::uint32_t flags = 0;  // kMarkerStart / kMarkerEnd / kMarkerInstant
  std::uint64_t timestamp = 0;
  std::uint32_t id = 0;
  std::uint32_t pid = 0, tid = 0;  // thread that pushed/popped the range
  std::string_view name, domain;   // name only on START/INSTANT records
};

struct DroppedRecord {
  std::uint64_t count = 0;
  std::uint32_t context = 0, stream = 0;
};

struct NcclCommRecord {
  std::uint64_t comm_hash = 0;
  std::string_view name;
  std::int32_t nranks = 0, rank = 0, nnodes = 0;
};

// A host-side ncclAllReduce()/ncclSend() call (CollApi/P2pApi events).
struct NcclApiRecord {
  std::uint64_t start = 0, end = 0;
  std::uint32_t pid = 0, tid = 0;
  std::uint64_t comm_hash = 0;
  std::string_view func, datatype;
  std::uint64_t count = 0;
};

// A KernelLaunch event: the id pushed as external correlation around the NCCL kernel launch.
struct NcclLaunchRecord {
  std::uint64_t launch_id = 0, comm_hash = 0, group_id = 0;
  std::uint64_t start = 0, end = 0;
  std::uint32_t pid = 0, tid = 0;
};

// A Coll or P2p event (one operation of one communicator).
struct NcclCollRecord {
  std::uint64_t id = 0, comm_hash = 0, group_id = 0;
  std::uint32_t flags = 0;  // kCollIsP2p, kCollHasSequence
  std::int32_t rank = 0;
  std::string_view func, datatype, algo, proto;
  std::uint64_t sequence = 0, count = 0;
  std::uint32_t channels = 0;
  std::int32_t root_or_peer = -1;
  std::uint64_t start = 0, end = 0;  // host enqueue span
  std::uint32_t pid = 0, tid = 0;
};

struct NcclKernelChRecord {
  std::uint64_t coll_id = 0;
  std::uint32_t channel = 0;
  std::uint64_t gpu_start = 0, gpu_stop = 0;  // %globaltimer ns
};

struct FooterRecord {
  std::uint64_t records = 0;
  std::uint64_t dropped = 0;
};

}  // namespace dpro::native
