#pragma once
// A Device without a GPU, for tests and for `dpro-exec schedule --dry-run`-like checks: it
// records every call and simulates what CUDA would do with a logical clock, so that a test can
// check that a schedule keeps every dependency of the graph.
//
// The model (all times logical ns):
//   - each calling host thread has a clock; host_spin advances it, host_now reads it; a thread's
//     clock starts at the device's epoch, which synchronize() (the whole device) moves to the
//     latest time anything reached;
//   - a stream is FIFO: an op enqueued on it starts at max(the stream's last end, the enqueuing
//     thread's clock) and a launch lasts launch_duration(): a stand-in its duration, a collective
//     its standin_duration, any other kernel `Options::kernel_ns`; a collective on a communicator
//     (CollectiveCall::comm, fake_fabric.h) starts when every member's stream has reached it;
//   - record(event, stream) completes when the stream reaches it (same rule); wait(stream, event)
//     holds the stream until the event's last record completed; synchronize(event) moves the
//     thread's clock to it; elapsed() is the difference of two completion times.
// Misuse a real device would punish or silently mishandle is kept as a violation (waiting on an
// event never recorded, which CUDA ignores; a span outside an allocated buffer; elapsed on an
// unrecorded event; freeing twice): tests require none.
// Thread-safe: one mutex around everything, except the wait of a collective on a communicator for
// its other members (fake_fabric.h), which holds none of this device.
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "executor/device.h"

namespace dpro::executor {

class FakeDevice final : public Device {
 public:
  struct Options {
    Nanos kernel_ns = 2'000;  // a real kernel's duration (the fake does not compute)
    Nanos launch_ns = 0;      // host time a launch, record or wait call costs
    bool keep_calls = true;   // false: calls() stays empty (long runs); violations are kept either way
  };
  enum class CallKind : std::uint8_t { kLaunch, kRecord, kWait, kSyncEvent, kSyncDevice, kSpin, kAllocate, kFree };
  struct Call {
    CallKind kind = CallKind::kLaunch;
    std::thread::id thread;
    std::size_t thread_index = 0;  // order in which the fake first saw the calling thread
    StreamHandle stream = 0;
    EventHandle event = 0;
    std::optional<Launch> launch;
    Nanos host_time = 0;            // the calling thread's clock when it called
    Nanos start = 0, end = 0;       // on the stream (launches, records), or the host (spins, syncs)
    // A collective on a communicator (fake_fabric.h): how long it waited for its last member after
    // its own stream was ready.
    Nanos collective_wait = 0;
  };

  FakeDevice() : FakeDevice(Options{}) {}
  explicit FakeDevice(Options options) : options_(options) {}

  std::string name() const override { return "fake"; }
  StreamHandle create_stream() override;
  EventHandle create_event() override;
  BufferHandle allocate(std::uint64_t bytes) override;
  void free(BufferHandle buffer) override;
  void launch(StreamHandle stream, const Launch& launch) override;
  void record(EventHandle event, StreamHandle stream) override;
  void wait(StreamHandle stream, EventHandle event) override;
  void synchronize(EventHandle event) override;
  void synchronize() override;
  Nanos elapsed(EventHandle from, EventHandle to) override;
  Nanos host_now() override;
  void host_spin(Nanos duration) override;

  // What a launch lasts on the fake.
  Nanos launch_duration(const Launch& launch) const;
  std::vector<Call> calls() const;
  std::vector<std::string> violations() const;
  std::uint64_t allocated_bytes() const;  // now
  std::uint64_t peak_allocated_bytes() const;
  std::size_t allocations() const;        // allocate() calls so far

  // Called by FakeFabric::open: this device is member `member` of communicator `comm`.
  void join(class FakeFabric& fabric, CommHandle comm, int member);

 private:
  struct Event {
    bool recorded = false;
    Nanos time = 0;
  };
  struct ThreadClock {
    Nanos now = 0;
    std::uint64_t epoch_generation = 0;
    std::size_t index = 0;
  };
  Nanos& clock();  // the calling thread's (mutex held)
  Call& log(CallKind kind);
  void check_spans(const Launch& launch);
  Event& event(EventHandle e, const char* call);
  std::size_t stream_index(StreamHandle s, const char* call);

  void launch_collective(StreamHandle stream, const CollectiveCall& call);

  Options options_;
  mutable std::mutex mutex_;
  struct Membership {
    class FakeFabric* fabric = nullptr;
    int member = 0;
  };
  std::map<CommHandle, Membership> comms_;
  std::vector<Nanos> stream_end_;
  std::vector<Event> events_;
  std::map<BufferHandle, std::uint64_t> buffers_;  // live buffers and their sizes
  BufferHandle next_buffer_ = 1;
  std::uint64_t allocated_ = 0, peak_allocated_ = 0;
  std::size_t allocations_ = 0;
  std::map<std::thread::id, ThreadClock> clocks_;
  Nanos epoch_ = 0;
  std::uint64_t epoch_generation_ = 0;
  std::vector<Call> calls_;
  std::vector<std::string> violations_;
};

}  // namespace dpro::executor
