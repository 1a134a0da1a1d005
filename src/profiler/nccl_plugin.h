#pragma once
// The NCCL profiler plugin's logic, independent of the ABI version and of CUDA. NCCL calls
// (through nccl_plugin_abi.cpp) init per communicator, startEvent/stopEvent/recordEventState
// per event, from any thread, with children possibly stopped after their parents. Each event
// is a ref-counted NcclEvent: it lives until it is stopped and all its children are released,
// so parentObj pointers stay valid. Records written:
//   init          -> NcclComm
//   CollApi/P2pApi stop -> NcclApi (host call span)
//   KernelLaunch  -> pushes its id as a CUPTI external correlation (kind CUSTOM2) around the
//                    NCCL kernel launch, NcclLaunch at stop (joins the kernel to its group)
//   Coll/P2p stop -> NcclColl (communicator, group, rank, op, sequence, count, type, algo,
//                    protocol, channels)
//   KernelCh stop -> NcclKernelCh (GPU %globaltimer start/stop of one channel)
#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>

#include <unistd.h>

#include "profiler/record_sink.h"

namespace dpro::profiler {

// A version-independent view of an event descriptor (filled by the ABI shims).
struct NcclEventDescr {
  std::uint64_t type = 0;  // nccl_abi::EventType bit
  void* parent = nullptr;
  int rank = 0;
  const char* func = nullptr;
  const char* datatype = nullptr;
  const char* algo = nullptr;
  const char* proto = nullptr;
  std::uint64_t count = 0;
  std::uint64_t sequence = 0;
  bool has_sequence = false;
  int root_or_peer = -1;
  std::uint32_t channels = 0;
  pid_t proxy_pid = 0;
  std::uint32_t channel_id = 0;
  std::uint64_t ptimer = 0;
};

struct NcclComm {
  std::uint64_t hash = 0;
  std::string name;
  int nnodes = 0, nranks = 0, rank = 0;
};

class NcclProfilerCore {
 public:
  // hook may be null (no CUPTI). Both must outlive the core.
  NcclProfilerCore(RecordSink& sink, CorrelationHook* hook)
      : sink_(sink), hook_(hook), pid_(static_cast<std::uint32_t>(::getpid())) {}
  ~NcclProfilerCore();

  // Returns the activation mask for this ABI version (5 or 4).
  int init(void** context, std::uint64_t comm_hash, const char* name, int nnodes, int nranks,
           int rank, int abi_version);
  // Returns the handle to give NCCL (null for events we do not follow).
  void* start(void* context, const NcclEventDescr& descr);
  void stop(void* handle);
  void record_state(void* handle, int state, std::uint64_t ptimer);
  void finalize(void* context);

  std::uint64_t live_events() const { return live_.load(); }

 private:
  struct Event;
  void release(Event* e);
  void emit(const Event& e, std::uint64_t end);

  RecordSink& sink_;
  CorrelationHook* hook_;
  std::uint32_t pid_;  // records are only written by the process that created the core
  std::mutex comms_mutex_;
  std::deque<NcclComm> comms_;  // never shrinks: events may outlive finalize
  std::atomic<std::uint64_t> next_id_{1};
  std::atomic<std::uint64_t> live_{0};
};

}  // namespace dpro::profiler
