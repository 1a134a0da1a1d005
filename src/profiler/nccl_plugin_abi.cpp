// The exported NCCL profiler plugin symbols (ncclProfiler_v5 for NCCL 2.28, ncclProfiler_v4
// for 2.27): translate each version's descriptor into NcclEventDescr and forward to the
// process's NcclProfilerCore. NCCL gives no context to the plugin object itself, so the core
// is created on the first init and lives for the rest of the process.
#include <dlfcn.h>

#include <mutex>
#include <string>

#include "profiler/nccl_plugin.h"
#include "profiler/nccl_profiler_abi.h"
#include "profiler/session.h"

namespace dpro::profiler {
namespace {

namespace abi = nccl_abi;

// Forwards to whatever hook the CUPTI side has installed at the time of the call.
class SessionCorrelationHook final : public CorrelationHook {
 public:
  explicit SessionCorrelationHook(ProfilerSession& s) : session_(s) {}
  void push(std::uint64_t id) override {
    if (auto* h = session_.correlation_hook()) h->push(id);
  }
  void pop() override {
    if (auto* h = session_.correlation_hook()) h->pop();
  }

 private:
  ProfilerSession& session_;
};

NcclProfilerCore* core() {
  static NcclProfilerCore* instance = [] () -> NcclProfilerCore* {
    ProfilerSession* session = ProfilerSession::process();
    if (!session || !session->config().nccl) return nullptr;
    return new NcclProfilerCore(*session, new SessionCorrelationHook(*session));
  }();
  return instance;
}

NcclEventDescr from_v5(const abi::EventDescrV5& e) {
  NcclEventDescr d;
  d.type = e.type;
  d.parent = e.parentObj;
  d.rank = e.rank;
  switch (e.type) {
    case abi::kCollApi:
      d.func = e.collApi.func, d.count = e.collApi.count, d.datatype = e.collApi.datatype;
      d.root_or_peer = e.collApi.root;
      break;
    case abi::kP2pApi:
      d.func = e.p2pApi.func, d.count = e.p2pApi.count, d.datatype = e.p2pApi.datatype;
      break;
    case abi::kColl:
      d.func = e.coll.func, d.count = e.coll.count, d.datatype = e.coll.datatype;
      d.sequence = e.coll.seqNumber, d.has_sequence = true, d.root_or_peer = e.coll.root;
      d.algo = e.coll.algo, d.proto = e.coll.proto, d.channels = e.coll.nChannels;
      break;
    case abi::kP2p:
      d.func = e.p2p.func, d.count = e.p2p.count, d.datatype = e.p2p.datatype;
      d.root_or_peer = e.p2p.peer, d.channels = e.p2p.nChannels;
      break;
    case abi::kProxyOp:
      d.proxy_pid = e.proxyOp.pid;
      break;
    case abi::kKernelCh:
      d.channel_id = e.kernelCh.channelId, d.ptimer = e.kernelCh.pTimer;
      break;
    default:
      break;
  }
  return d;
}

NcclEventDescr from_v4(const abi::EventDescrV4& e) {
  NcclEventDescr d;
  d.type = e.type;
  d.parent = e.parentObj;
  d.rank = e.rank;
  switch (e.type) {
    case abi::kColl:
      d.func = e.coll.func, d.count = e.coll.count, d.datatype = e.coll.datatype;
      d.sequence = e.coll.seqNumber, d.has_sequence = true, d.root_or_peer = e.coll.root;
      d.algo = e.coll.algo, d.proto = e.coll.proto, d.channels = e.coll.nChannels;
      break;
    case abi::kP2p:
      d.func = e.p2p.func, d.count = e.p2p.count, d.datatype = e.p2p.datatype;
      d.root_or_peer = e.p2p.peer, d.channels = e.p2p.nChannels;
      break;
    case abi::kProxyOp:
      d.proxy_pid = e.proxyOp.pid;
      break;
    case abi::kKernelCh:
      d.channel_id = e.kernelCh.channelId, d.ptimer = e.kernelCh.pTimer;
      break;
    default:
      break;
  }
  return d;
}

// Records, once per process, which NCCL loaded the plugin: ncclGetVersion() when libnccl's
// symbols are visible to us, and the plugin ABI version in any case.
void record_nccl_version(int abi_version) {
  static std::once_flag once;
  std::call_once(once, [abi_version] {
    ProfilerSession* session = ProfilerSession::process();
    if (!session) return;
    int code = 0;
    using GetVersion = int (*)(int*);
    if (auto fn = reinterpret_cast<GetVersion>(::dlsym(RTLD_DEFAULT, "ncclGetVersion"))) fn(&code);
    session->encode([&](native::RecordEncoder& enc) {
      enc.add_metadata("nccl_profiler_abi", std::string("v").append(std::to_string(abi_version)));
      if (code > 0) enc.add_metadata("nccl_version", std::to_string(code));
    });
  });
}

abi::Result init_common(void** ctx, std::uint64_t comm, int* mask, const char* name, int nnodes,
                        int nranks, int rank, int version) {
  *ctx = nullptr;
  *mask = 0;
  if (NcclProfilerCore* c = core()) {
    record_nccl_version(version);
    *mask = c->init(ctx, comm, name, nnodes, nranks, rank, version);
  }
  return abi::kSuccess;  // never fail NCCL: without a core the plugin just records nothing
}

abi::Result init_v5(void** ctx, std::uint64_t comm, int* mask, const char* name, int nnodes,
                    int nranks, int rank, abi::DebugLogger) {
  return init_common(ctx, comm, mask, name, nnodes, nranks, rank, 5);
}

abi::Result init_v4(void** ctx, int* mask, const char* name, std::uint64_t comm, int nnodes,
                    int nranks, int rank, abi::DebugLogger) {
  return init_common(ctx, comm, mask, name, nnodes, nranks, rank, 4);
}

abi::Result start_v5(void* ctx, void** handle, abi::EventDescrV5* descr) {
  *handle = nullptr;
  if (NcclProfilerCore* c = core(); c && descr) *handle = c->start(ctx, from_v5(*descr));
  return abi::kSuccess;
}

abi::Result start_v4(void* ctx, void** handle, abi::EventDescrV4* descr) {
  *handle = nullptr;
  if (NcclProfilerCore* c = core(); c && descr) *handle = c->start(ctx, from_v4(*descr));
  return abi::kSuccess;
}

abi::Result stop(void* handle) {
  if (NcclProfilerCore* c = core()) c->stop(handle);
  return abi::kSuccess;
}

abi::Result record_state(void* handle, int state, abi::EventStateArgs* args) {
  if (NcclProfilerCore* c = core())
    c->record_state(handle, state, args ? args->kernelCh.pTimer : 0);
  return abi::kSuccess;
}

abi::Result finalize(void* ctx) {
  if (NcclProfilerCore* c = core()) c->finalize(ctx);
  return abi::kSuccess;
}

}  // namespace
}  // namespace dpro::profiler

extern "C" {
__attribute__((visibility("default"))) dpro::profiler::nccl_abi::ProfilerV5 ncclProfiler_v5 = {
    "dpro", dpro::profiler::init_v5, dpro::profiler::start_v5, dpro::profiler::stop,
    dpro::profiler::record_state, dpro::profiler::finalize};
__attribute__((visibility("default"))) dpro::profiler::nccl_abi::ProfilerV4 ncclProfiler_v4 = {
    "dpro", dpro::profiler::init_v4, dpro::profiler::start_v4, dpro::profiler::stop,
    dpro::profiler::record_state, dpro::profiler::finalize};
}
