#pragma once
// One profiling session per traced process: the output file, the shared string table and
// encoder, the periodic flush thread, and the fork/exit guards. Created on first use by the
// CUPTI injection or the NCCL plugin (whichever the process reaches first); both are entry
// points called by foreign code (the CUDA driver, NCCL) with no context argument, so
// ProfilerSession::process() is the single process-wide instance. Everything else takes the
// session (or a RecordSink) explicitly.
//
// Fork: a child forked after the session exists inherits it; the child handler abandons the
// inherited file without writing (buffered records belong to the parent), and nothing is
// written from a pid other than the one that opened the file.
// Exit: an atexit handler runs the flush hooks (CUPTI FlushAll), then writes the footer; a
// trace that recorded no activity (no API call, kernel, copy, NVTX range or NCCL record) is
// removed then.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "profiler/record_sink.h"
#include "profiler/session_config.h"
#include "trace/format/native_writer.h"

namespace dpro::profiler {

class ProfilerSession final : public RecordSink {
 public:
  // Opens the output file; throws std::runtime_error when it cannot.
  explicit ProfilerSession(const SessionConfig& config);
  ~ProfilerSession() override;

  // The process's session, created from the environment on first call; null when profiling
  // is off for this process or the file could not be created (one warning on stderr).
  static ProfilerSession* process();

  void encode(const std::function<void(native::RecordEncoder&)>& fn) override;
  void submit(native::EncodedBatch batch) override;
  native::StringInterner& strings() override { return strings_; }
  std::int64_t base_time() const override { return base_time_; }

  // Called before each flush (periodic and final), e.g. to make CUPTI hand over buffers.
  void add_flush_hook(std::function<void(bool final)> hook);
  void count_dropped(std::uint64_t count) override { dropped_ += count; }
  // Merges pending batches in time order and writes them to the file.
  void flush();
  // Final flush and footer; later calls and all calls from other processes do nothing.
  void shutdown();
  // In a forked child: drop the parent's pending data and stop writing.
  void disable_after_fork();
  bool active() const { return active_.load() && owner_pid_ == current_pid(); }

  // The CUPTI side installs its external-correlation hook here (null: none); not owned.
  void set_correlation_hook(CorrelationHook* hook) { correlation_hook_.store(hook); }
  CorrelationHook* correlation_hook() const { return correlation_hook_.load(); }

  const std::string& path() const { return path_; }
  const SessionConfig& config() const { return config_; }
  // Prints "dpro-profile: <message>" once per distinct message.
  void warn_once(const std::string& message);

 private:
  static long current_pid();
  void flush_loop();
  // A warning, once, when the trace file's disk is full or the writer stopped.
  void report_writer_state();
  void take_pending(std::vector<native::EncodedBatch>& out);

  SessionConfig config_;
  std::string path_;
  std::int64_t base_time_;
  long owner_pid_;
  native::StringInterner strings_;
  std::unique_ptr<native::NativeFileWriter> writer_;
  std::mutex mutex_;  // guards shared_encoder_, pending_, hooks_, warned_
  native::RecordEncoder shared_encoder_;
  std::vector<native::EncodedBatch> pending_;
  std::uint64_t activity_ = 0;  // activity records written (under flush_mutex_)
  std::vector<std::function<void(bool)>> hooks_;
  std::vector<std::string> warned_;
  std::mutex flush_mutex_;  // one flush at a time; guards merger_
  native::TimeOrderMerger merger_;
  std::atomic<bool> active_{true};
  std::atomic<std::uint64_t> dropped_{0};
  std::atomic<CorrelationHook*> correlation_hook_{nullptr};
  std::thread flusher_;
  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
};

}  // namespace dpro::profiler
