#include "profiler/nccl_plugin.h"

#include <pthread.h>
#include <unistd.h>

#include "profiler/nccl_profiler_abi.h"

namespace dpro::profiler {

namespace abi = nccl_abi;

struct NcclProfilerCore::Event {
  std::uint64_t type = 0;
  std::uint64_t id = 0;
  std::uint64_t group_id = 0;  // the GroupApi (v5) or Group (v4) event this belongs to
  const NcclComm* comm = nullptr;
  Event* parent = nullptr;     // holds a reference
  std::atomic<int> refs{1};    // 1 until stopped, +1 per child
  std::uint64_t start = 0;
  std::uint32_t tid = 0;
  bool pushed_correlation = false;
  NcclEventDescr descr;        // string pointers are NCCL's static tables
  std::uint64_t ptimer_stop = 0;
};

std::uint64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

namespace {

std::atomic<long> g_process_id{0};  // a cache of getpid(), see this_process_id()

void refresh_process_id() { g_process_id.store(static_cast<long>(::getpid())); }

}  // namespace

long this_process_id() {
  static const bool registered = [] {
    refresh_process_id();
    pthread_atfork(nullptr, nullptr, refresh_process_id);
    return true;
  }();
  (void)registered;
  return g_process_id.load(std::memory_order_relaxed);
}

std::uint32_t current_tid() {
  // Cached per thread (a syscall otherwise), keyed by pid: fork() copies only the calling
  // thread, whose cached id would be the parent's.
  thread_local long cached_pid = 0;
  thread_local std::uint32_t cached_tid = 0;
  long pid = this_process_id();
  if (pid != cached_pid) {
    cached_pid = pid;
    cached_tid = static_cast<std::uint32_t>(::gettid());
  }
  return cached_tid;
}

NcclProfilerCore::~NcclProfilerCore() = default;

int NcclProfilerCore::init(void** context, std::uint64_t comm_hash, const char* name, int nnodes,
                           int nranks, int rank, int abi_version) {
  const NcclComm* comm;
  {
    std::lock_guard lock(comms_mutex_);
    comms_.push_back({comm_hash, name ? name : "", nnodes, nranks, rank});
    comm = &comms_.back();
  }
  *context = const_cast<NcclComm*>(comm);
  sink_.encode([&](native::RecordEncoder& enc) {
    enc.add(native::NcclCommRecord{comm->hash, comm->name, nranks, rank, nnodes});
  });
  std::uint64_t mask = abi::kColl | abi::kP2p | abi::kKernelCh;
  if (abi_version >= 5) mask |= abi::kGroupApi | abi::kCollApi | abi::kP2pApi | abi::kKernelLaunch;
  else mask |= abi::kGroup;
  return static_cast<int>(mask);
}

void* NcclProfilerCore::start(void* context, const NcclEventDescr& d) {
  constexpr std::uint64_t kFollowed = abi::kGroup | abi::kGroupApi | abi::kCollApi | abi::kP2pApi |
                                      abi::kKernelLaunch | abi::kColl | abi::kP2p | abi::kKernelCh;
  if (!(d.type & kFollowed) || context == nullptr) return nullptr;
  auto* e = new Event;
  e->type = d.type;
  e->id = next_id_.fetch_add(1);
  e->comm = static_cast<const NcclComm*>(context);
  e->descr = d;
  e->start = realtime_ns();
  e->tid = current_tid();
  // parentObj is one of our handles (or null); we hold it until this event is released.
  if (d.parent) {
    e->parent = static_cast<Event*>(d.parent);
    e->parent->refs.fetch_add(1);
    e->group_id = e->parent->group_id;
  }
  if (d.type == abi::kGroup || d.type == abi::kGroupApi) e->group_id = e->id;
  if (d.type == abi::kKernelLaunch && hook_) {
    hook_->push(e->id);
    e->pushed_correlation = true;
  }
  live_.fetch_add(1);
  return e;
}

void NcclProfilerCore::emit(const Event& e, std::uint64_t end) {
  const auto& d = e.descr;
  auto pid = pid_;
  auto text = [](const char* s) { return s ? std::string_view(s) : std::string_view(); };
  switch (e.type) {
    case abi::kCollApi:
    case abi::kP2pApi:
      sink_.encode([&](native::RecordEncoder& enc) {
        enc.add(native::NcclApiRecord{e.start, end, pid, e.tid, e.comm->hash, text(d.func),
                                      text(d.datatype), d.count});
      });
      break;
    case abi::kKernelLaunch:
      sink_.encode([&](native::RecordEncoder& enc) {
        enc.add(native::NcclLaunchRecord{e.id, e.comm->hash, e.group_id, e.start, end, pid, e.tid});
      });
      break;
    case abi::kColl:
    case abi::kP2p: {
      native::NcclCollRecord r;
      r.id = e.id;
      r.comm_hash = e.comm->hash;
      r.group_id = e.group_id;
      r.flags = (e.type == abi::kP2p ? native::kCollIsP2p : 0) |
                (d.has_sequence ? native::kCollHasSequence : 0);
      r.rank = d.rank;
      r.func = text(d.func);
      r.datatype = text(d.datatype);
      r.algo = text(d.algo);
      r.proto = text(d.proto);
      r.sequence = d.sequence;
      r.count = d.count;
      r.channels = d.channels;
      r.root_or_peer = d.root_or_peer;
      r.start = e.start;
      r.end = end;
      r.pid = pid;
      r.tid = e.tid;
      sink_.encode([&](native::RecordEncoder& enc) { enc.add(r); });
      break;
    }
    case abi::kKernelCh:
      sink_.encode([&](native::RecordEncoder& enc) {
        enc.add(native::NcclKernelChRecord{e.parent ? e.parent->id : 0, d.channel_id, d.ptimer,
                                           e.ptimer_stop});
      });
      break;
    default:
      break;  // Group/GroupApi only provide group ids
  }
}

void NcclProfilerCore::stop(void* handle) {
  if (!handle) return;
  auto* e = static_cast<Event*>(handle);
  std::uint64_t end = realtime_ns();
  // The correlation stack is per thread: pop only on the thread that pushed.
  if (e->pushed_correlation && e->tid == current_tid()) hook_->pop();
  emit(*e, end);
  live_.fetch_sub(1);
  release(e);
}

void NcclProfilerCore::release(Event* e) {
  while (e && e->refs.fetch_sub(1) == 1) {
    Event* parent = e->parent;
    delete e;
    e = parent;
  }
}

void NcclProfilerCore::record_state(void* handle, int state, std::uint64_t ptimer) {
  if (!handle) return;
  auto* e = static_cast<Event*>(handle);
  if (e->type == abi::kKernelCh && state == abi::kStateKernelChStop) e->ptimer_stop = ptimer;
}

void NcclProfilerCore::finalize(void* context) {
  // Communicator records stay alive (events may still reference them); nothing to flush
  // here: the session writes on its own schedule and at exit.
}

}  // namespace dpro::profiler
