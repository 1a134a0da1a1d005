#pragma once
// Records CUDA activity through the CUPTI Activity API into a RecordSink. The CUPTI calls go
// through CuptiApi (real or fake). Records, in three groups:
//   GPU kinds: concurrent kernels, memcpy (incl. peer), memset, synchronization, CUDA events,
//              external correlations (a --steps window switches these on and off);
//   calls:     the runtime calls the replay uses (launches, copies, sets, synchronisation,
//              event record and wait, allocation; every one with `all_runtime_calls`) and the
//              driver launch calls only (cuLaunchKernel, cuLaunchKernelEx, cuGraphLaunch);
//   always:    devices and, when asked, NVTX markers.
// Buffers are 4 MB, one per CUPTI thread buffer; each completed buffer is parsed and handed
// to the sink as one batch (the sink merges batches in time order).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/cupti_api.h"
#include "profiler/cupti_records.h"
#include "profiler/record_cost.h"
#include "profiler/record_sink.h"
#include "profiler/step_window.h"

namespace dpro::profiler {

class CuptiTracer final : public CorrelationHook {
 public:
  struct Options {
    bool nvtx = false;
    std::uint32_t flush_period_ms = 1000;
    std::size_t buffer_bytes = 4u << 20;
    // Every runtime API call (cudaGetDevice, cudaPeekAtLastError, ...), not only those the
    // replay uses: on the H100 a ResNet-50 capture was 4x larger (docs/gpu-validation.md).
    bool all_runtime_calls = false;
    // Diagnostics (DPRO_PROFILE_OFF): record classes left out, to measure what each costs.
    std::vector<std::string> off;
    // --steps A:B: record GPU activity only from step A's NVTX range to step B's (needs nvtx;
    // runtime and driver calls are recorded all the run); step_name as in StepWindow.
    // Without: the whole run.
    std::optional<std::pair<std::int64_t, std::int64_t>> window;
    std::string step_name;
  };
  // api and sink must outlive the tracer.
  CuptiTracer(CuptiApi& api, RecordSink& sink, Options options);
  ~CuptiTracer() override;

  // Starts recording. On failure returns false with a one-line reason; everything that was
  // enabled is disabled again, so the job runs on untraced.
  bool start(std::string& reason);
  bool running() const { return running_; }

  // CUPTI buffer callbacks (routed here by CuptiApi::register_buffer_callbacks).
  void buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records);
  void buffer_completed(void* context, std::uint32_t stream, std::uint8_t* buffer,
                        std::size_t size, std::size_t valid_size);

  // Asks CUPTI to hand over its buffers (forced at exit: includes incomplete ones).
  void flush(bool final);

  // NVTX callbacks (with a step window): start or stop recording at the window's edges.
  void nvtx_push(std::string_view name);
  void nvtx_pop();
  // With a step window: whether it ever opened (false at exit: nothing of the GPU recorded),
  // and whether the process pushed any NVTX range at all (a launcher such as torchrun's agent
  // pushes none and has nothing to warn about).
  bool window_opened() const { return !window_ || window_->started(); }
  bool nvtx_ranges_seen() const { return window_ && window_->any_range(); }

  // CorrelationHook: external correlation kind CUSTOM2 around NCCL kernel launches.
  void push(std::uint64_t id) override;
  void pop() override;

  std::uint64_t records() const { return records_; }

  // The calibration's own API records are dropped through this (record_cost.h).
  ProbeRecordFilter& probe_filter() { return probe_filter_; }

 private:
  bool is_off(const char* what) const;
  std::vector<std::uint32_t> gpu_kinds() const;
  // Each returns "" or why a required kind (concurrent kernels; the RUNTIME kind when used)
  // failed; failed optional kinds are added to `optional` when given.
  std::string enable_gpu_kinds(std::vector<std::string>* optional);
  void disable_gpu_kinds();
  std::string enable_calls();
  void disable_calls();
  std::string required_kind_failed(std::uint32_t kind, int rc);
  void apply(StepWindow::Action action);  // the step window's switch

  CuptiApi& api_;
  RecordSink& sink_;
  Options options_;
  bool running_ = false;
  std::vector<std::uint32_t> always_enabled_;  // devices, NVTX markers
  std::vector<std::uint32_t> gpu_enabled_;     // GPU kinds enabled now
  std::vector<std::uint32_t> runtime_cbids_;   // runtime calls enabled one by one
  bool runtime_kind_ = false;                  // or the whole RUNTIME kind
  bool driver_calls_ = false;
  std::unique_ptr<StepWindow> window_;
  std::mutex window_mutex_;
  std::mutex parse_mutex_;  // buffer completions may come from several CUPTI threads
  native::RecordEncoder encoder_;
  CallbackNames names_;
  ProbeRecordFilter probe_filter_;
  std::uint64_t records_ = 0;
};

// CUPTI activity kinds and callback ids used above (CUPTI's numbers).
namespace cupti_kind {
inline constexpr std::uint32_t kMemcpy = 1, kMemset = 2, kDriver = 4, kRuntime = 5, kDevice = 8,
                               kConcurrentKernel = 10, kMarker = 12, kMemcpy2 = 22,
                               kCudaEvent = 36, kSynchronization = 38,
                               kExternalCorrelation = 39;
}
inline constexpr std::uint32_t kCbidCuLaunchKernel = 307, kCbidCuLaunchKernelEx = 652,
                               kCbidCuGraphLaunch = 514;
inline constexpr int kCuptiErrorMultipleSubscribers = 39;

// Whether a runtime API call of this name (CUPTI's, e.g. "cudaLaunchKernel_v7000") is one the
// replay uses: launches, copies, sets, synchronisation, event record/wait, graph launches,
// allocation, profiler start/stop.
bool runtime_call_recorded(std::string_view cupti_name);

}  // namespace dpro::profiler
