#include "executor/runner.h"

#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace dpro::executor {

namespace {

// Host-side counters the programs' threads wait on: how many times (over the iterations) each
// dependency event's record and each flag has been issued. A failure in one thread wakes the rest.
class HostSignals {
 public:
  HostSignals(std::size_t events, std::size_t flags) : recorded_(events, 0), raised_(flags, 0) {}

  void bump(bool event, std::uint32_t index) {
    {
      std::lock_guard lock(mutex_);
      ++(event ? recorded_ : raised_)[index];
    }
    cv_.notify_all();
  }
  // Blocks until the counter reaches `count`; throws once another thread failed.
  void await(bool event, std::uint32_t index, std::uint64_t count) {
    std::unique_lock lock(mutex_);
    const auto& counts = event ? recorded_ : raised_;
    cv_.wait(lock, [&] { return failed_ || counts[index] >= count; });
    if (failed_) throw std::runtime_error("another host thread failed");
  }
  void fail() {
    {
      std::lock_guard lock(mutex_);
      failed_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::uint64_t> recorded_, raised_;
  bool failed_ = false;
};

struct Handles {
  StreamHandle control = 0;
  std::vector<StreamHandle> streams;
  std::vector<EventHandle> events;          // dependency events
  std::vector<EventHandle> before, after;   // per launch (time_launches)
  std::vector<EventHandle> stream_end;      // per stream
  EventHandle begin = 0, end = 0;
};

Handles create_handles(Device& device, const Schedule& s, bool time_launches) {
  Handles h;
  h.control = device.create_stream();
  for (std::size_t i = 0; i < s.streams.size(); ++i) h.streams.push_back(device.create_stream());
  for (std::uint32_t i = 0; i < s.events; ++i) h.events.push_back(device.create_event());
  if (time_launches) {
    for (std::size_t i = 0; i < s.launches.size(); ++i) {
      h.before.push_back(device.create_event());
      h.after.push_back(device.create_event());
    }
  }
  for (std::size_t i = 0; i < s.streams.size(); ++i) h.stream_end.push_back(device.create_event());
  h.begin = device.create_event();
  h.end = device.create_event();
  return h;
}

// The launches with their spans pointing into `arena`.
// ... and each collective on its communicator.
std::vector<Launch> bind_arena(const Schedule& s, BufferHandle arena, const std::vector<CommHandle>* comms) {
  if (comms && comms->size() != s.launches.size()) throw std::invalid_argument("RunOptions::comms: one per launch");
  std::vector<Launch> out;
  out.reserve(s.launches.size());
  for (std::size_t i = 0; i < s.launches.size(); ++i) {
    out.push_back(s.launches[i].lowered.launch);
    for (const Slot& slot : slots_of(out.back())) slot.span->buffer = arena;
    if (auto* c = std::get_if<CollectiveCall>(&out.back()); c && comms) c->comm = (*comms)[i];
  }
  return out;
}

struct IterationContext {
  Device& device;
  const Schedule& schedule;
  const Handles& handles;
  const std::vector<Launch>& launches;
  HostSignals& signals;
  const std::function<void()>& on_failure;
  std::uint64_t generation;  // 1-based iteration: what the counters must reach
  Nanos start = 0;           // host clock at the iteration's start
};

void run_step(const IterationContext& c, const HostStep& step) {
  const Handles& h = c.handles;
  switch (step.kind) {
    case StepKind::kSpin: c.device.host_spin(step.spin); break;
    case StepKind::kSpinUntil:
      if (const Nanos left = c.start + step.spin - c.device.host_now(); left > 0) c.device.host_spin(left);
      break;
    case StepKind::kLaunch: {
      const StreamHandle stream = h.streams[c.schedule.launches[step.index].stream];
      if (!h.before.empty()) c.device.record(h.before[step.index], stream);
      c.device.launch(stream, c.launches[step.index]);
      if (!h.after.empty()) c.device.record(h.after[step.index], stream);
      break;
    }
    case StepKind::kRecord:
      c.device.record(h.events[step.index], h.streams[step.stream]);
      c.signals.bump(true, step.index);
      break;
    case StepKind::kWaitEvent:
      c.signals.await(true, step.index, c.generation);
      c.device.wait(h.streams[step.stream], h.events[step.index]);
      break;
    case StepKind::kSyncEvent:
      c.signals.await(true, step.index, c.generation);
      c.device.synchronize(h.events[step.index]);
      break;
    case StepKind::kSignal: c.signals.bump(false, step.index); break;
    case StepKind::kAwait: c.signals.await(false, step.index, c.generation); break;
  }
}

void run_iteration(const IterationContext& c) {
  const Handles& h = c.handles;
  c.device.record(h.begin, h.control);
  for (StreamHandle s : h.streams) c.device.wait(s, h.begin);
  std::vector<std::exception_ptr> errors(c.schedule.threads.size());
  std::atomic<int> first_failed{-1};  // the thread that failed on its own (the others: "another host thread failed")
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < c.schedule.threads.size(); ++t) {
    threads.emplace_back([&c, &errors, &first_failed, t] {
      try {
        for (const HostStep& step : c.schedule.threads[t].steps) run_step(c, step);
      } catch (...) {
        errors[t] = std::current_exception();
        int none = -1;
        if (first_failed.compare_exchange_strong(none, static_cast<int>(t)) && c.on_failure) c.on_failure();
        c.signals.fail();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  if (const int f = first_failed.load(); f >= 0) std::rethrow_exception(errors[static_cast<std::size_t>(f)]);
  // The iteration ends when both its GPU work and its host threads have: the end event is recorded
  // after the join (a host tail after the last launch counts, as it does in the recorded step).
  c.device.synchronize();
  for (std::size_t s = 0; s < h.streams.size(); ++s) {
    c.device.record(h.stream_end[s], h.streams[s]);
    c.device.wait(h.control, h.stream_end[s]);
  }
  c.device.record(h.end, h.control);
  c.device.synchronize(h.end);
}

void collect_timing(Device& device, const Schedule& s, const Handles& h, RunResult& r) {
  r.iteration_ns.push_back(device.elapsed(h.begin, h.end));
  if (h.before.empty()) return;
  std::vector<Nanos> busy(s.streams.size(), 0);
  r.launch_start_ns.assign(s.launches.size(), 0);
  r.launch_end_ns.assign(s.launches.size(), 0);
  for (std::size_t i = 0; i < s.launches.size(); ++i) {
    r.launch_start_ns[i] = device.elapsed(h.begin, h.before[i]);
    r.launch_end_ns[i] = device.elapsed(h.begin, h.after[i]);
    busy[s.launches[i].stream] += r.launch_end_ns[i] - r.launch_start_ns[i];
  }
  r.stream_busy_ns.push_back(std::move(busy));
}

}  // namespace

RunResult run_schedule(Device& device, const Schedule& schedule, const RunOptions& options) {
  if (options.iterations < 1) throw std::invalid_argument("iterations must be at least 1");
  RunResult r;
  r.device = device.name();
  const Handles h = create_handles(device, schedule, options.time_launches);
  r.arena_bytes = schedule.memory.arena_bytes;
  const BufferHandle arena = r.arena_bytes > 0 ? device.allocate(r.arena_bytes) : 0;
  struct FreeArena {
    Device& device;
    BufferHandle arena;
    bool allocated;
    ~FreeArena() {
      if (allocated) device.free(arena);
    }
  } guard{device, arena, r.arena_bytes > 0};
  const std::vector<Launch> launches = bind_arena(schedule, arena, options.comms);
  HostSignals signals(schedule.events, schedule.flags);
  for (int i = 0; i < options.iterations; ++i) {
    device.synchronize();
    run_iteration({device, schedule, h, launches, signals, options.on_failure, static_cast<std::uint64_t>(i) + 1, device.host_now()});
    collect_timing(device, schedule, h, r);
  }
  return r;
}

}  // namespace dpro::executor
