#pragma once
// Where profiler components send records: the session's shared encoder (low-rate producers
// such as the NCCL plugin) or whole encoded batches (the CUPTI buffer thread).
#include <cstdint>
#include <functional>

#include "trace/format/native_writer.h"

namespace dpro::profiler {

class RecordSink {
 public:
  virtual ~RecordSink() = default;
  // Runs fn with exclusive use of a shared encoder; thread-safe.
  virtual void encode(const std::function<void(native::RecordEncoder&)>& fn) = 0;
  // Hands over records encoded by a producer's own encoder (with the sink's string table).
  virtual void submit(native::EncodedBatch batch) = 0;
  // Counts records a producer lost (CUPTI's dropped records), for the file's footer.
  virtual void count_dropped(std::uint64_t count) = 0;
  virtual native::StringInterner& strings() = 0;
  virtual std::int64_t base_time() const = 0;
};

// Pushes/pops CUPTI external correlation ids on the calling thread (CUDA-only; a no-op
// implementation is used when CUPTI is not running).
class CorrelationHook {
 public:
  virtual ~CorrelationHook() = default;
  virtual void push(std::uint64_t id) = 0;
  virtual void pop() = 0;
};

// CLOCK_REALTIME in ns: the clock CUPTI stamps activities with.
std::uint64_t realtime_ns();
// OS thread id of the caller (cached per thread).
std::uint32_t current_tid();
// getpid() without a syscall: cached, refreshed in the child by a pthread_atfork handler.
long this_process_id();

}  // namespace dpro::profiler
