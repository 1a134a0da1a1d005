#include "profiler/session.h"

#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace dpro::profiler {
namespace {

native::Header make_header(const SessionConfig& c, std::int64_t base_time) {
  native::Header h;
  h.host = c.host;
  h.rank = c.rank.value_or(-1);
  h.local_rank = c.local_rank.value_or(-1);
  h.world_size = c.world_size.value_or(-1);
  h.pid = static_cast<std::uint64_t>(c.pid);
  h.base_time = base_time;
  return h;
}

void make_dirs(const std::string& dir) {
  for (std::size_t pos = 1; pos <= dir.size(); ++pos)
    if (pos == dir.size() || dir[pos] == '/') ::mkdir(dir.substr(0, pos).c_str(), 0755);
}

}  // namespace

long ProfilerSession::current_pid() { return this_process_id(); }

ProfilerSession::ProfilerSession(const SessionConfig& config)
    : config_(config),
      path_(trace_file_path(config)),
      base_time_(static_cast<std::int64_t>(realtime_ns())),
      owner_pid_(current_pid()),
      shared_encoder_(strings_, base_time_) {
  make_dirs(config_.out_dir);
  writer_ = std::make_unique<native::NativeFileWriter>(path_, make_header(config_, base_time_));
  path_ = writer_->path();  // another name when the first was taken
  shared_encoder_.add_metadata("producer", "dpro-profile");
  if (!config_.steps.empty()) shared_encoder_.add_metadata("steps", config_.steps);
  if (!config_.step_name.empty()) shared_encoder_.add_metadata("step_name", config_.step_name);
  if (config_.flush_ms > 0) flusher_ = std::thread([this] { flush_loop(); });
}

ProfilerSession::~ProfilerSession() { shutdown(); }

void ProfilerSession::encode(const std::function<void(native::RecordEncoder&)>& fn) {
  if (!active()) return;
  std::lock_guard lock(mutex_);
  fn(shared_encoder_);
}

void ProfilerSession::submit(native::EncodedBatch batch) {
  if (!active() || batch.index.empty()) return;
  std::lock_guard lock(mutex_);
  pending_.push_back(std::move(batch));
}

void ProfilerSession::add_flush_hook(std::function<void(bool)> hook) {
  std::lock_guard lock(mutex_);
  hooks_.push_back(std::move(hook));
}

void ProfilerSession::take_pending(std::vector<native::EncodedBatch>& out) {
  std::lock_guard lock(mutex_);
  out = std::move(pending_);
  pending_.clear();
  if (!shared_encoder_.empty()) out.push_back(shared_encoder_.take());
}

void ProfilerSession::flush() {
  if (!active()) return;
  std::lock_guard flush_lock(flush_mutex_);
  std::vector<std::function<void(bool)>> hooks;
  {
    std::lock_guard lock(mutex_);
    hooks = hooks_;
  }
  for (auto& hook : hooks) hook(false);
  std::vector<native::EncodedBatch> batches;
  take_pending(batches);
  std::uint64_t count = 0;
  for (const auto& b : batches) {
    count += b.index.size();
    activity_ += b.activity;
  }
  if (count > 0) writer_->write_now(merger_.merge(batches), count);
  else writer_->flush();
  report_writer_state();
}

void ProfilerSession::report_writer_state() {
  const std::string stopped = writer_->stopped_because();
  if (!stopped.empty()) {
    warn_once(path_ + ": the trace stops here (" + stopped + "); the job goes on untraced");
  } else if (writer_->stalled()) {
    warn_once(path_ + ": the disk is full; the trace waits in memory (up to " +
              std::to_string(native::NativeFileWriter::kMaxStalledBytes >> 20) + " MiB) until there is room");
  }
}

void ProfilerSession::flush_loop() {
  std::unique_lock lock(stop_mutex_);
  while (!stop_cv_.wait_for(lock, std::chrono::milliseconds(config_.flush_ms), [this] { return stop_; })) {
    lock.unlock();
    flush();
    lock.lock();
  }
}

void ProfilerSession::shutdown() {
  if (owner_pid_ != current_pid() || !active_.load()) return;
  {
    std::lock_guard lock(stop_mutex_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (flusher_.joinable()) flusher_.join();
  std::vector<std::function<void(bool)>> hooks;
  {
    std::lock_guard lock(mutex_);
    hooks = hooks_;
  }
  for (auto& hook : hooks) hook(true);  // e.g. cuptiActivityFlushAll(FORCED)
  flush();
  active_ = false;
  writer_->close(dropped_.load());
  report_writer_state();
  // A process that ran nothing on the GPU and no NCCL (torchrun's agent, a data-loader
  // worker that touched CUDA) leaves no trace file behind, only a header and metadata would.
  if (activity_ == 0 && dropped_.load() == 0) std::remove(path_.c_str());
}

void ProfilerSession::disable_after_fork() {
  // Single-threaded child: locks held by parent threads at fork time are never released, so
  // nothing here takes one. The flusher thread does not exist in the child.
  active_ = false;
  if (writer_) writer_->abandon();
  new (&flusher_) std::thread();  // forget the parent's thread handle without joining
}

void ProfilerSession::warn_once(const std::string& message) {
  {
    std::lock_guard lock(mutex_);
    if (std::find(warned_.begin(), warned_.end(), message) != warned_.end()) return;
    warned_.push_back(message);
  }
  std::fprintf(stderr, "dpro-profile: %s\n", message.c_str());
}

namespace {

ProfilerSession* g_session = nullptr;  // the process's session; see session.h
std::once_flag g_session_once;

void at_fork_child() {
  if (g_session) g_session->disable_after_fork();
}

void at_exit() {
  if (g_session) g_session->shutdown();
}

}  // namespace

ProfilerSession* ProfilerSession::process() {
  std::call_once(g_session_once, [] {
    SessionConfig config = config_from_env();
    if (config.disabled) return;
    try {
      // Deliberately never deleted: atexit and late NCCL/CUPTI callbacks may still use it.
      g_session = new ProfilerSession(config);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "dpro-profile: tracing disabled in pid %ld: %s\n", config.pid, e.what());
      return;
    }
    pthread_atfork(nullptr, nullptr, at_fork_child);
    std::atexit(at_exit);
  });
  return g_session;
}

}  // namespace dpro::profiler
