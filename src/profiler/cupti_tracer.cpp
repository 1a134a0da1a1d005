#include "profiler/cupti_tracer.h"

#include <algorithm>
#include <cstdlib>

namespace dpro::profiler {

CuptiTracer::CuptiTracer(CuptiApi& api, RecordSink& sink, Options options)
    : api_(api), sink_(sink), options_(options), encoder_(sink.strings(), sink.base_time()) {}

CuptiTracer::~CuptiTracer() = default;

// A superset of the calls whose role the graph builder reads (call_role in
// src/graph/rank_builder.cpp: synchronisation, event record and wait, copies and sets) plus the
// launches it joins to GPU work.
bool runtime_call_recorded(std::string_view name) {
  static constexpr std::string_view kPrefixes[] = {
      "cudaLaunch", "cudaMemcpy", "cudaMemset", "cudaDeviceSynchronize", "cudaThreadSynchronize",
      "cudaStreamSynchronize", "cudaEventSynchronize", "cudaStreamWaitEvent", "cudaEventRecord",
      "cudaGraphLaunch", "cudaMalloc", "cudaFree", "cudaHostAlloc", "cudaProfilerStart",
      "cudaProfilerStop"};
  for (auto p : kPrefixes)
    if (name.substr(0, p.size()) == p) return true;
  return false;
}

bool CuptiTracer::is_off(const char* what) const {
  for (const auto& o : options_.off)
    if (o == what) return true;
  return false;
}

std::vector<std::uint32_t> CuptiTracer::gpu_kinds() const {
  using namespace cupti_kind;
  std::vector<std::uint32_t> kinds;
  if (!is_off("kernel")) kinds.push_back(kConcurrentKernel);
  if (!is_off("memcpy")) kinds.insert(kinds.end(), {kMemcpy, kMemcpy2});
  if (!is_off("memset")) kinds.push_back(kMemset);
  if (!is_off("sync")) kinds.push_back(kSynchronization);
  if (!is_off("event")) kinds.push_back(kCudaEvent);
  if (!is_off("correlation")) kinds.push_back(kExternalCorrelation);
  return kinds;
}

std::string CuptiTracer::enable_gpu_kinds(std::vector<std::string>* optional) {
  for (auto kind : gpu_kinds()) {
    if (const int rc = api_.enable_kind(kind); rc == 0) {
      gpu_enabled_.push_back(kind);
    } else if (kind == cupti_kind::kConcurrentKernel) {  // required: CUPTI cannot trace at all
      return required_kind_failed(kind, rc);
    } else if (optional) {
      optional->push_back(std::to_string(kind));
    }
  }
  return "";
}

void CuptiTracer::disable_gpu_kinds() {
  for (auto kind : gpu_enabled_) api_.disable_kind(kind);
  gpu_enabled_.clear();
}

std::string CuptiTracer::enable_calls() {
  if (!is_off("runtime")) {
    if (!options_.all_runtime_calls) {
      // The runtime calls the replay uses, one callback id at a time.
      const std::uint32_t n = api_.runtime_api_count();
      for (std::uint32_t cbid = 1; cbid < n; ++cbid)
        if (runtime_call_recorded(api_.runtime_api_name(cbid)) && api_.enable_runtime_api(cbid, true) == 0)
          runtime_cbids_.push_back(cbid);
    }
    // Every runtime call: asked for, or a CUPTI without per-call selection (or without names).
    if (runtime_cbids_.empty()) {
      if (const int rc = api_.enable_kind(cupti_kind::kRuntime); rc != 0)
        return required_kind_failed(cupti_kind::kRuntime, rc);
      runtime_kind_ = true;
    }
  }
  if (!is_off("driver")) {
    for (auto cbid : {kCbidCuLaunchKernel, kCbidCuLaunchKernelEx, kCbidCuGraphLaunch}) api_.enable_driver_api(cbid, true);
    driver_calls_ = true;
  }
  return "";
}

void CuptiTracer::disable_calls() {
  if (runtime_kind_) api_.disable_kind(cupti_kind::kRuntime);
  runtime_kind_ = false;
  for (auto cbid : runtime_cbids_) api_.enable_runtime_api(cbid, false);
  runtime_cbids_.clear();
  if (driver_calls_)
    for (auto cbid : {kCbidCuLaunchKernel, kCbidCuLaunchKernelEx, kCbidCuGraphLaunch}) api_.enable_driver_api(cbid, false);
  driver_calls_ = false;
}

std::string CuptiTracer::required_kind_failed(std::uint32_t kind, int rc) {
  return "CUPTI activity kind " + std::to_string(kind) + " cannot be enabled (" + api_.error_text(rc) +
         "; no CUDA driver?); CUDA tracing is off";
}

bool CuptiTracer::start(std::string& reason) {
  bool subscribed = false;
  // Undo everything, so that a tool started later in the job (torch.profiler) can use CUPTI.
  auto fail = [&](const std::string& why) {
    disable_gpu_kinds();
    disable_calls();
    for (auto kind : always_enabled_) api_.disable_kind(kind);
    always_enabled_.clear();
    if (subscribed) api_.unsubscribe();
    reason = why;
    return false;
  };
  // The subscriber detects another CUPTI client and carries the NVTX callbacks of a step
  // window; "subscribe" off (diagnostics) measures what holding it costs the job.
  const bool subscribe = !is_off("subscribe");
  int rc = subscribe ? api_.subscribe() : 0;
  subscribed = subscribe && rc == 0;
  if (rc == kCuptiErrorMultipleSubscribers)
    return fail("another CUPTI client (Nsight Systems, torch.profiler/Kineto, ...) is already "
                "active; CUDA tracing is off for this process (import that tool's trace instead)");
  if (rc != 0) return fail("CUPTI cannot start (" + api_.error_text(rc) +
                               ": no GPU driver, or CUPTI unusable); CUDA tracing is off");
  if ((rc = api_.register_buffer_callbacks(*this)) != 0)
    return fail("CUPTI buffer callbacks refused (" + api_.error_text(rc) + "); CUDA tracing is off");
  std::vector<std::string> optional_failures;
  // Recorded all the time: devices and, when asked, NVTX ranges (they mark the steps).
  std::vector<std::uint32_t> always = {cupti_kind::kDevice};
  if (options_.nvtx && !is_off("nvtx")) always.push_back(cupti_kind::kMarker);
  for (auto kind : always) {
    if (api_.enable_kind(kind) == 0) always_enabled_.push_back(kind);
    else optional_failures.push_back(std::to_string(kind));
  }
  // The GPU kinds are enabled here even with a step window (then off until it opens), so that
  // a CUPTI that cannot trace is found now, not in the middle of the job.
  if (auto why = enable_gpu_kinds(&optional_failures); !why.empty()) return fail(why);
  if (auto why = enable_calls(); !why.empty()) return fail(why);
  std::string window_note;
  if (options_.window) {
    if (options_.nvtx && subscribed && (rc = api_.enable_nvtx_callbacks()) == 0) {
      disable_gpu_kinds();
      window_ = std::make_unique<StepWindow>(options_.window->first, options_.window->second, options_.step_name);
    } else {
      window_note = "the steps cannot be followed as they run (NVTX callbacks unavailable); the whole run is recorded";
    }
  }
  if (options_.flush_period_ms > 0) api_.flush_period(options_.flush_period_ms);
  running_ = true;
  if (!optional_failures.empty()) {
    std::string list;
    for (const auto& k : optional_failures) list += (list.empty() ? "" : ", ") + k;
    reason = "some CUPTI activity kinds are unavailable (" + list + ")";
  }
  if (!window_note.empty()) reason += (reason.empty() ? "" : "; ") + window_note;
  return true;
}

void CuptiTracer::apply(StepWindow::Action action) {
  if (action == StepWindow::Action::kNone) return;
  // The GPU kinds only: runtime and driver call records stay on all the run. On the H100
  // (CUPTI 13.0), calls whose records were switched off and on again from an NVTX callback
  // were not recorded again, while activity kinds came back (docs/gpu-validation.md).
  std::lock_guard lock(window_mutex_);
  if (action == StepWindow::Action::kStart) enable_gpu_kinds(nullptr);
  else disable_gpu_kinds();
}

void CuptiTracer::nvtx_push(std::string_view name) {
  if (window_) apply(window_->on_push(name));
}

void CuptiTracer::nvtx_pop() {
  if (window_) apply(window_->on_pop());
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
    records_ += encode_activity_buffer(buffer, valid_size, encoder_, names_, &probe_filter_).records;
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
