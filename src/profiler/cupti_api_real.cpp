#include "profiler/cupti_api_real.h"

#include <cupti.h>
#include <generated_nvtx_meta.h>

#include <atomic>

#include "profiler/cupti_records.h"
#include "profiler/cupti_tracer.h"

namespace dpro::profiler {
namespace {

std::atomic<CuptiTracer*> g_buffer_target{nullptr};  // see cupti_api_real.h

void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  if (auto* t = g_buffer_target.load()) return t->buffer_requested(buffer, size, max_records);
  *buffer = nullptr;
  *size = 0;
}

void CUPTIAPI on_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t size,
                                  size_t valid) {
  if (auto* t = g_buffer_target.load()) return t->buffer_completed(ctx, stream, buffer, size, valid);
  std::free(buffer);
}

// NVTX range push/pop (only enabled for a --steps window): the range's name goes to the tracer.
void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  auto* t = g_buffer_target.load();
  if (!t || domain != CUPTI_CB_DOMAIN_NVTX || !data) return;
  const void* params = static_cast<const CUpti_NvtxData*>(data)->functionParams;
  if (!params) return;
  auto ascii = [](const nvtxEventAttributes_t* a) -> const char* {
    return a && a->messageType == NVTX_MESSAGE_TYPE_ASCII ? a->message.ascii : nullptr;
  };
  const char* name = nullptr;
  switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxRangePushA:
      name = static_cast<const nvtxRangePushA_params*>(params)->message;
      break;
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
      name = ascii(static_cast<const nvtxRangePushEx_params*>(params)->eventAttrib);
      break;
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
      name = ascii(static_cast<const nvtxDomainRangePushEx_params*>(params)->core.eventAttrib);
      break;
    case CUPTI_CBID_NVTX_nvtxRangePop:
    case CUPTI_CBID_NVTX_nvtxDomainRangePop:
      t->nvtx_pop();
      return;
    default:
      return;
  }
  t->nvtx_push(name ? name : "");
}

class RealCuptiApi final : public CuptiApi {
 public:
  std::uint32_t version() override {
    std::uint32_t v = 0;
    return cuptiGetVersion(&v) == CUPTI_SUCCESS ? v : 0;
  }
  int subscribe() override { return cuptiSubscribe(&subscriber_, on_callback, nullptr); }
  void unsubscribe() override {
    if (subscriber_) cuptiUnsubscribe(subscriber_);
    subscriber_ = nullptr;
  }
  int enable_kind(std::uint32_t kind) override {
    return cuptiActivityEnable(static_cast<CUpti_ActivityKind>(kind));
  }
  int disable_kind(std::uint32_t kind) override {
    return cuptiActivityDisable(static_cast<CUpti_ActivityKind>(kind));
  }
  int enable_driver_api(std::uint32_t cbid, bool on) override { return cuptiActivityEnableDriverApi(cbid, on); }
  int enable_runtime_api(std::uint32_t cbid, bool on) override { return cuptiActivityEnableRuntimeApi(cbid, on); }
  int enable_nvtx_callbacks() override {
    int rc = 0;
    for (CUpti_CallbackId cbid : {CUPTI_CBID_NVTX_nvtxRangePushA, CUPTI_CBID_NVTX_nvtxRangePushEx,
                                  CUPTI_CBID_NVTX_nvtxDomainRangePushEx, CUPTI_CBID_NVTX_nvtxRangePop,
                                  CUPTI_CBID_NVTX_nvtxDomainRangePop})
      if (int r = cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_NVTX, cbid); r != CUPTI_SUCCESS) rc = r;
    return rc;
  }
  std::uint32_t runtime_api_count() override { return CUPTI_RUNTIME_TRACE_CBID_SIZE; }
  std::string runtime_api_name(std::uint32_t cbid) override {
    return cupti_callback_name(CUPTI_CB_DOMAIN_RUNTIME_API, cbid);
  }
  int register_buffer_callbacks(CuptiTracer& tracer) override {
    g_buffer_target.store(&tracer);
    return cuptiActivityRegisterCallbacks(on_buffer_requested, on_buffer_completed);
  }
  int flush_period(std::uint32_t ms) override { return cuptiActivityFlushPeriod(ms); }
  void flush_all(bool forced) override { cuptiActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0); }
  void push_external_correlation(std::uint32_t kind, std::uint64_t id) override {
    cuptiActivityPushExternalCorrelationId(static_cast<CUpti_ExternalCorrelationKind>(kind), id);
  }
  void pop_external_correlation(std::uint32_t kind) override {
    std::uint64_t id = 0;
    cuptiActivityPopExternalCorrelationId(static_cast<CUpti_ExternalCorrelationKind>(kind), &id);
  }
  std::uint64_t dropped_records(void* context, std::uint32_t stream) override {
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(static_cast<CUcontext>(context), stream, &dropped) != CUPTI_SUCCESS)
      return 0;
    return dropped;
  }
  std::string error_text(int result) override {
    const char* text = nullptr;
    cuptiGetResultString(static_cast<CUptiResult>(result), &text);
    return text ? std::string(text) : "CUPTI error " + std::to_string(result);
  }

 private:
  CUpti_SubscriberHandle subscriber_ = nullptr;
};

}  // namespace

std::unique_ptr<CuptiApi> make_real_cupti_api() { return std::make_unique<RealCuptiApi>(); }

}  // namespace dpro::profiler
