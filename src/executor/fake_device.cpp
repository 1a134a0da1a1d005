#include "executor/fake_device.h"

#include <algorithm>

#include "executor/fake_fabric.h"
#include "executor/launch_lowering.h"

namespace dpro::executor {

Nanos& FakeDevice::clock() {
  auto [it, fresh] = clocks_.try_emplace(std::this_thread::get_id());
  ThreadClock& c = it->second;
  if (fresh) c.index = clocks_.size() - 1;
  if (fresh || c.epoch_generation != epoch_generation_) {
    c.now = std::max(c.now, epoch_);
    c.epoch_generation = epoch_generation_;
  }
  return c.now;
}

FakeDevice::Call& FakeDevice::log(CallKind kind) {
  if (!options_.keep_calls) calls_.clear();  // the last call only, for the caller to fill
  Call c;
  c.kind = kind;
  c.thread = std::this_thread::get_id();
  c.host_time = clock();
  c.thread_index = clocks_.at(c.thread).index;
  calls_.push_back(std::move(c));
  return calls_.back();
}

std::size_t FakeDevice::stream_index(StreamHandle s, const char* call) {
  if (s >= stream_end_.size()) {
    violations_.push_back(std::string(call) + ": unknown stream " + std::to_string(s));
    stream_end_.resize(s + 1, 0);
  }
  return s;
}

FakeDevice::Event& FakeDevice::event(EventHandle e, const char* call) {
  if (e >= events_.size()) {
    violations_.push_back(std::string(call) + ": unknown event " + std::to_string(e));
    events_.resize(e + 1);
  }
  return events_[e];
}

StreamHandle FakeDevice::create_stream() {
  std::lock_guard lock(mutex_);
  stream_end_.push_back(0);
  return static_cast<StreamHandle>(stream_end_.size() - 1);
}

EventHandle FakeDevice::create_event() {
  std::lock_guard lock(mutex_);
  events_.emplace_back();
  return static_cast<EventHandle>(events_.size() - 1);
}

BufferHandle FakeDevice::allocate(std::uint64_t bytes) {
  std::lock_guard lock(mutex_);
  const BufferHandle b = next_buffer_++;
  buffers_[b] = bytes;
  allocated_ += bytes;
  peak_allocated_ = std::max(peak_allocated_, allocated_);
  ++allocations_;
  log(CallKind::kAllocate);
  return b;
}

void FakeDevice::free(BufferHandle buffer) {
  std::lock_guard lock(mutex_);
  const auto it = buffers_.find(buffer);
  if (it == buffers_.end()) {
    violations_.push_back("free: buffer " + std::to_string(buffer) + " is not allocated");
    return;
  }
  allocated_ -= it->second;
  buffers_.erase(it);
  log(CallKind::kFree);
}

Nanos FakeDevice::launch_duration(const Launch& launch) const {
  if (const auto* s = std::get_if<StandinKernel>(&launch)) return s->duration;
  if (const auto* c = std::get_if<CollectiveCall>(&launch)) return c->standin_duration;
  return options_.kernel_ns;
}

void FakeDevice::check_spans(const Launch& launch) {
  Launch copy = launch;
  for (const Slot& s : slots_of(copy)) {
    const auto it = buffers_.find(s.span->buffer);
    if (it == buffers_.end() || s.span->offset + s.span->bytes > it->second)
      violations_.push_back("launch: span [" + std::to_string(s.span->offset) + ", +" + std::to_string(s.span->bytes) +
                            ") outside buffer " + std::to_string(s.span->buffer));
  }
}

void FakeDevice::join(FakeFabric& fabric, CommHandle comm, int member) {
  std::lock_guard lock(mutex_);
  comms_[comm] = {&fabric, member};
}

// The stream's ready time is taken under the lock, the wait for the other members without it (the
// device's other threads go on), the stream's end set under it again: the schedule issues nothing
// else on this stream meanwhile (a stream's launches are issued in order).
void FakeDevice::launch_collective(StreamHandle stream, const CollectiveCall& call) {
  Nanos ready = 0;
  Membership m;
  {
    std::lock_guard lock(mutex_);
    check_spans(call);
    const auto it = comms_.find(call.comm);
    if (it == comms_.end()) {
      violations_.push_back("launch: communicator " + std::to_string(call.comm) + " was not opened on this device");
      return;
    }
    m = it->second;
    ready = std::max(stream_end_[stream_index(stream, "launch")], clock());
  }
  const FakeFabric::Started started = m.fabric->issue(call.comm, m.member, call, ready);
  std::lock_guard lock(mutex_);
  if (!started.mismatch.empty()) violations_.push_back(started.mismatch);
  Call& c = log(CallKind::kLaunch);
  c.stream = stream;
  c.launch = call;
  c.start = started.start;
  c.end = started.start + started.duration;
  c.collective_wait = started.start - ready;
  stream_end_[stream] = c.end;
  clock() += options_.launch_ns;
}

void FakeDevice::launch(StreamHandle stream, const Launch& launch) {
  if (const auto* c = std::get_if<CollectiveCall>(&launch); c && c->comm != 0) return launch_collective(stream, *c);
  std::lock_guard lock(mutex_);
  check_spans(launch);
  Call& c = log(CallKind::kLaunch);
  Nanos& end = stream_end_[stream_index(stream, "launch")];
  c.stream = stream;
  c.launch = launch;
  c.start = std::max(end, c.host_time);
  c.end = c.start + launch_duration(launch);
  end = c.end;
  clock() += options_.launch_ns;
}

void FakeDevice::record(EventHandle e, StreamHandle stream) {
  std::lock_guard lock(mutex_);
  Call& c = log(CallKind::kRecord);
  const Nanos end = stream_end_[stream_index(stream, "record")];
  c.stream = stream;
  c.event = e;
  c.start = c.end = std::max(end, c.host_time);
  Event& ev = event(e, "record");
  ev.recorded = true;
  ev.time = c.end;
  clock() += options_.launch_ns;
}

void FakeDevice::wait(StreamHandle stream, EventHandle e) {
  std::lock_guard lock(mutex_);
  Call& c = log(CallKind::kWait);
  c.stream = stream;
  c.event = e;
  const Event& ev = event(e, "wait");
  if (!ev.recorded) violations_.push_back("wait: event " + std::to_string(e) + " was never recorded (CUDA would not wait)");
  Nanos& end = stream_end_[stream_index(stream, "wait")];
  end = std::max(end, ev.time);
  c.start = c.end = end;
  clock() += options_.launch_ns;
}

void FakeDevice::synchronize(EventHandle e) {
  std::lock_guard lock(mutex_);
  Call& c = log(CallKind::kSyncEvent);
  c.event = e;
  const Event& ev = event(e, "synchronize");
  if (!ev.recorded) violations_.push_back("synchronize: event " + std::to_string(e) + " was never recorded");
  Nanos& now = clock();
  now = std::max(now, ev.time);
  c.start = c.host_time;
  c.end = now;
}

void FakeDevice::synchronize() {
  std::lock_guard lock(mutex_);
  Call& c = log(CallKind::kSyncDevice);
  Nanos latest = c.host_time;
  for (Nanos e : stream_end_) latest = std::max(latest, e);
  for (const auto& [id, t] : clocks_) latest = std::max(latest, t.now);
  epoch_ = latest;
  ++epoch_generation_;
  clock() = latest;
  c.start = c.host_time;
  c.end = latest;
}

Nanos FakeDevice::elapsed(EventHandle from, EventHandle to) {
  std::lock_guard lock(mutex_);
  const Event& a = event(from, "elapsed");
  const Event& b = event(to, "elapsed");
  if (!a.recorded || !b.recorded) violations_.push_back("elapsed: an event was never recorded");
  return b.time - a.time;
}

Nanos FakeDevice::host_now() {
  std::lock_guard lock(mutex_);
  return clock();
}

void FakeDevice::host_spin(Nanos duration) {
  std::lock_guard lock(mutex_);
  Call& c = log(CallKind::kSpin);
  c.start = c.host_time;
  c.end = c.host_time + duration;
  clock() = c.end;
}

std::vector<FakeDevice::Call> FakeDevice::calls() const {
  std::lock_guard lock(mutex_);
  return calls_;
}

std::vector<std::string> FakeDevice::violations() const {
  std::lock_guard lock(mutex_);
  return violations_;
}

std::uint64_t FakeDevice::allocated_bytes() const {
  std::lock_guard lock(mutex_);
  return allocated_;
}

std::uint64_t FakeDevice::peak_allocated_bytes() const {
  std::lock_guard lock(mutex_);
  return peak_allocated_;
}

std::size_t FakeDevice::allocations() const {
  std::lock_guard lock(mutex_);
  return allocations_;
}

}  // namespace dpro::executor
