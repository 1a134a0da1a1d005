#include "profiler/cupti_tracer.h"

#include <algorithm>
#include <cstdlib>

namespace dpro::profiler {

CuptiTracer::CuptiTracer(CuptiApi& api, RecordSink& sink, Options options)
    : api_(api), sink_(sink), options_(options), encoder_(sink.strings(), sink.base_time()) {}

CuptiTracer::~CuptiTracer() = default;

std::vector<std::uint32_t> CuptiTracer::kinds_to_enable() const {
  using namespace cupti_kind;
  // Required first: a failure there means CUPTI cannot trace at all.
  std::vector<std::uint32_t> kinds = {kConcurrentKernel, kRuntime, kMemcpy, kMemcpy2, kMemset,
                                      kSynchronization, kCudaEvent, kExternalCorrelation, kDevice};
  if (options_.nvtx) kinds.push_back(kMarker);
  return kinds;
}

bool CuptiTracer::start(std::string& reason) {
  bool subscribed = false;
  // Undo everything, so that a tool started later in the job (torch.profiler) can use CUPTI.
  auto fail = [&](const std::string& why) {
    for (auto kind : enabled_) api_.disable_kind(kind);
    enabled_.clear();
    if (subscribed) api_.unsubscribe();
    reason = why;
    return false;
  };
  int rc = api_.subscribe();
  subscribed = rc == 0;
  if (rc == kCuptiErrorMultipleSubscribers)
    return fail("another CUPTI client (Nsight Systems, torch.profiler/Kineto, ...) is already "
                "active; CUDA tracing is off for this process (import that tool's trace instead)");
  if (rc != 0) return fail("CUPTI cannot start (" + api_.error_text(rc) +
                               ": no GPU driver, or CUPTI unusable); CUDA tracing is off");
  if ((rc = api_.register_buffer_callbacks(*this)) != 0)
    return fail("CUPTI buffer callbacks refused (" + api_.error_text(rc) + "); CUDA tracing is off");
  std::vector<std::string> optional_failures;
  for (auto kind : kinds_to_enable()) {
    rc = api_.enable_kind(kind);
    bool required = kind == cupti_kind::kConcurrentKernel || kind == cupti_kind::kRuntime;
    if (rc == 0) enabled_.push_back(kind);
    else if (required)
      return fail("CUPTI activity kind " + std::to_string(kind) + " cannot be enabled (" +
                  api_.error_text(rc) + "; no CUDA driver?); CUDA tracing is off");
    else optional_failures.push_back(std::to_string(kind));
  }
  for (auto cbid : {kCbidCuLaunchKernel, kCbidCuLaunchKernelEx, kCbidCuGraphLaunch})
    api_.enable_driver_api(cbid);
  if (options_.flush_period_ms > 0) api_.flush_period(options_.flush_period_ms);
  running_ = true;
  if (!optional_failures.empty()) {
    std::string list;
    for (const auto& k : optional_failures) list += (list.empty() ? "" : ", ") + k;
    reason = "some CUPTI activity kinds are unavailable (" + list + ")";
  }
  return true;
}

void CuptiTracer::buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, options_.buffer_bytes));
  *size = *buffer ? options_.buffer_bytes : 0;
  *max_records = 0;  // as many as fit
}

void CuptiTracer::buffer_completed(void* context, std::uint32_t stream, std::uint8_t* buffer,
                                   std::size_t size, std::size_t valid_size) {
  if (buffer && valid_size > 0) {
    std::lock_guard lock(parse_mutex_);
    records_ += encode_activity_buffer(buffer, valid_size, encoder_, names_).records;
    sink_.submit(encoder_.take());
  }
  if (std::uint64_t dropped = api_.dropped_records(context, stream); dropped > 0) {
    sink_.count_dropped(dropped);
    sink_.encode([&](native::RecordEncoder& enc) {
      enc.add(native::DroppedRecord{dropped, 0, stream});
    });
  }
  std::free(buffer);
}

void CuptiTracer::flush(bool final) {
  if (running_) api_.flush_all(final);
}

void CuptiTracer::push(std::uint64_t id) {
  if (running_) api_.push_external_correlation(5 /* CUSTOM2 */, id);
}

void CuptiTracer::pop() {
  if (running_) api_.pop_external_correlation(5);
}

}  // namespace dpro::profiler
