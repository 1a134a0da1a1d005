#pragma once
// Records CUDA activity through the CUPTI Activity API into a RecordSink. The CUPTI calls go
// through CuptiApi (real or fake). Enables concurrent kernels, memcpy (incl. peer), memset,
// runtime calls, the driver launch calls only (cuLaunchKernel, cuLaunchKernelEx,
// cuGraphLaunch), synchronization, CUDA events, external correlations, devices and, when
// asked, NVTX markers. Buffers are 4 MB, one per CUPTI thread buffer; each completed buffer
// is parsed and handed to the sink as one batch (the sink merges batches in time order).
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "profiler/cupti_api.h"
#include "profiler/cupti_records.h"
#include "profiler/record_sink.h"

namespace dpro::profiler {

class CuptiTracer final : public CorrelationHook {
 public:
  struct Options {
    bool nvtx = false;
    std::uint32_t flush_period_ms = 1000;
    std::size_t buffer_bytes = 4u << 20;
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

  // CorrelationHook: external correlation kind CUSTOM2 around NCCL kernel launches.
  void push(std::uint64_t id) override;
  void pop() override;

  std::uint64_t records() const { return records_; }

 private:
  std::vector<std::uint32_t> kinds_to_enable() const;

  CuptiApi& api_;
  RecordSink& sink_;
  Options options_;
  bool running_ = false;
  std::vector<std::uint32_t> enabled_;
  std::mutex parse_mutex_;  // buffer completions may come from several CUPTI threads
  native::RecordEncoder encoder_;
  CallbackNames names_;
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

}  // namespace dpro::profiler
