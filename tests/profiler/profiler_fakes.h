#pragma once
// Fakes of the profiler's hardware side for tests: a RecordSink that keeps what it is given in
// memory (and writes it as a native trace), and a CuptiApi that records what is switched on.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "native_trace_builder.h"
#include "profiler/cupti_api.h"
#include "profiler/record_sink.h"
#include "trace/format/native_writer.h"

namespace dpro::test {

using profiler::CuptiApi;
using profiler::CuptiTracer;
using profiler::RecordSink;

inline constexpr std::uint64_t kBase = 1'700'000'000'000'000'000ull;

// A sink that keeps batches in memory and writes them to a file on request.
class MemorySink final : public RecordSink {
 public:
  MemorySink() : shared_(strings_, static_cast<std::int64_t>(kBase)) {}
  void encode(const std::function<void(native::RecordEncoder&)>& fn) override { fn(shared_); }
  void submit(native::EncodedBatch batch) override { batches_.push_back(std::move(batch)); }
  native::StringInterner& strings() override { return strings_; }
  std::int64_t base_time() const override { return static_cast<std::int64_t>(kBase); }
  void count_dropped(std::uint64_t count) override { dropped_ += count; }
  std::uint64_t dropped() const { return dropped_; }
  std::size_t batch_count() const { return batches_.size(); }
  void write(const std::string& path) {
    batches_.push_back(shared_.take());
    native::Header h = test::header_for(0, "h");
    h.base_time = static_cast<std::int64_t>(kBase);
    native::NativeFileWriter w(path, h);
    std::uint64_t n = 0;
    for (const auto& b : batches_) n += b.index.size();
    w.append(native::merge_in_time_order(batches_), n);
    w.close(0);
  }

 private:
  native::StringInterner strings_;
  native::RecordEncoder shared_;
  std::vector<native::EncodedBatch> batches_;
  std::uint64_t dropped_ = 0;
};

class FakeCuptiApi final : public CuptiApi {
 public:
  int subscribe_result = 0;
  std::vector<std::uint32_t> failing_kinds;
  int failure = 999;  // CUPTI_ERROR_UNKNOWN, what libcupti returns without a driver
  std::vector<std::uint32_t> enabled, driver_cbids;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> pushed;
  int pops = 0, flushes = 0, forced_flushes = 0;
  std::uint64_t dropped = 0;
  CuptiTracer* tracer = nullptr;

  std::uint32_t version() override { return 130001; }
  bool subscribed = false;
  int subscribe() override {
    subscribed = subscribe_result == 0;
    return subscribe_result;
  }
  void unsubscribe() override { subscribed = false; }
  int enable_kind(std::uint32_t kind) override {
    if (std::count(failing_kinds.begin(), failing_kinds.end(), kind)) return failure;
    enabled.push_back(kind);
    return 0;
  }
  int disable_kind(std::uint32_t kind) override {
    std::erase(enabled, kind);
    return 0;
  }
  int driver_api_result = 0;  // what enable_driver_api returns (nonzero: it refuses)
  int enable_driver_api(std::uint32_t cbid, bool on) override {
    if (driver_api_result != 0) return driver_api_result;
    if (on) driver_cbids.push_back(cbid);
    else std::erase(driver_cbids, cbid);
    return 0;
  }
  int nvtx_result = 0;
  bool nvtx_callbacks = false;
  int enable_nvtx_callbacks() override {
    nvtx_callbacks = nvtx_result == 0;
    return nvtx_result;
  }
  // A few runtime callback ids with CUPTI's names; ids_count = 0: no per-call selection.
  std::vector<std::uint32_t> runtime_cbids;
  std::uint32_t ids_count = 300;
  int enable_runtime_api(std::uint32_t cbid, bool on) override {
    if (on) runtime_cbids.push_back(cbid);
    else std::erase(runtime_cbids, cbid);
    return 0;
  }
  bool runtime_on(std::uint32_t cbid) const { return std::count(runtime_cbids.begin(), runtime_cbids.end(), cbid) > 0; }
  bool driver_on(std::uint32_t cbid) const { return std::count(driver_cbids.begin(), driver_cbids.end(), cbid) > 0; }
  std::uint32_t runtime_api_count() override { return ids_count; }
  std::string runtime_api_name(std::uint32_t cbid) override {
    switch (cbid) {
      case 3: return "cudaGetDevice_v3020";
      case 41: return "cudaMemcpyAsync_v3020";
      case 135: return "cudaEventRecord_v3020";
      case 147: return "cudaStreamWaitEvent_v3020";
      case 165: return "cudaDeviceSynchronize_v3020";
      case 211: return "cudaLaunchKernel_v7000";
      case 279: return "cudaPeekAtLastError_v3020";
      default: return "";
    }
  }
  int register_buffer_callbacks(CuptiTracer& t) override {
    tracer = &t;
    return 0;
  }
  int flush_period(std::uint32_t) override { return 0; }
  void flush_all(bool forced) override { ++(forced ? forced_flushes : flushes); }
  void push_external_correlation(std::uint32_t kind, std::uint64_t id) override { pushed.emplace_back(kind, id); }
  void pop_external_correlation(std::uint32_t) override { ++pops; }
  std::uint64_t dropped_records(void*, std::uint32_t) override { return std::exchange(dropped, 0); }
  std::string error_text(int result) override { return "CUPTI_ERROR_" + std::to_string(result); }
};

}  // namespace dpro::test
