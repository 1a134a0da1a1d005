#pragma once
// The slice of CUPTI the tracer uses, behind an interface so tests can run the tracer's
// logic with a fake (libkineto's CuptiActivityApi pattern). Result codes are CUptiResult
// values (0 = success); kinds and callback ids are CUPTI's numbers. No CUDA types here.
#include <cstddef>
#include <cstdint>
#include <string>

namespace dpro::profiler {

class CuptiTracer;

class CuptiApi {
 public:
  virtual ~CuptiApi() = default;
  virtual std::uint32_t version() = 0;  // cuptiGetVersion, 0 when it fails
  // Subscribes for callbacks; fails with MULTIPLE_SUBSCRIBERS when another tool holds CUPTI.
  virtual int subscribe() = 0;
  virtual void unsubscribe() = 0;  // gives CUPTI back to other tools
  virtual int enable_kind(std::uint32_t kind) = 0;
  virtual int disable_kind(std::uint32_t kind) = 0;
  // Records of one driver / runtime API call (without the whole DRIVER / RUNTIME kind).
  virtual int enable_driver_api(std::uint32_t cbid, bool enable) = 0;
  virtual int enable_runtime_api(std::uint32_t cbid, bool enable) = 0;
  // NVTX range push/pop callbacks, routed to the tracer given to register_buffer_callbacks
  // (CuptiTracer::nvtx_push / nvtx_pop). Needs NVTX_INJECTION64_PATH = libcupti.
  virtual int enable_nvtx_callbacks() = 0;
  // Runtime API callback ids are 1 .. runtime_api_count() - 1; name of one ("" when unknown).
  virtual std::uint32_t runtime_api_count() = 0;
  virtual std::string runtime_api_name(std::uint32_t cbid) = 0;
  // Routes CUPTI's buffer requests/completions to tracer (which must outlive the API use).
  virtual int register_buffer_callbacks(CuptiTracer& tracer) = 0;
  virtual int flush_period(std::uint32_t ms) = 0;
  virtual void flush_all(bool forced) = 0;
  virtual void push_external_correlation(std::uint32_t kind, std::uint64_t id) = 0;
  virtual void pop_external_correlation(std::uint32_t kind) = 0;
  // Records CUPTI dropped for (context, stream) since the last call.
  virtual std::uint64_t dropped_records(void* context, std::uint32_t stream) = 0;
  virtual std::string error_text(int result) = 0;
};

}  // namespace dpro::profiler
