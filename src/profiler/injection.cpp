// InitializeInjection: the entry point the CUDA driver calls (inside cuInit) when
// CUDA_INJECTION64_PATH names this library. Only CUPTI setup happens here, never CUDA calls.
// It never fails the job: when CUPTI cannot trace, one warning is printed and the process
// runs on untraced (the NCCL plugin keeps working).
#include <cstdio>
#include <mutex>
#include <string>

#include "profiler/cupti_api_real.h"
#include "profiler/cupti_tracer.h"
#include "profiler/session.h"

namespace dpro::profiler {
namespace {

void start_cuda_tracing() {
  ProfilerSession* session = ProfilerSession::process();
  if (!session) return;
  // Never deleted: CUPTI and the session's exit handler may call them until the very end
  // (a static object would be destroyed before that handler runs).
  static CuptiApi* api = make_real_cupti_api().release();
  std::uint32_t version = api->version();
  session->encode([&](native::RecordEncoder& enc) {
    enc.add_metadata("cupti_version", std::to_string(version));
  });
  CuptiTracer::Options options;
  options.nvtx = session->config().nvtx;
  options.flush_period_ms = session->config().flush_ms;
  static CuptiTracer* tracer = new CuptiTracer(*api, *session, options);
  std::string reason;
  if (!tracer->start(reason)) {
    session->warn_once(reason);
    return;
  }
  if (!reason.empty()) session->warn_once(reason);
  session->add_flush_hook([](bool final) { tracer->flush(final); });
  session->set_correlation_hook(tracer);
}

}  // namespace
}  // namespace dpro::profiler

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  static std::once_flag once;
  std::call_once(once, [] {
    try {
      dpro::profiler::start_cuda_tracing();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "dpro-profile: CUDA tracing is off: %s\n", e.what());
    }
  });
  return 1;
}
