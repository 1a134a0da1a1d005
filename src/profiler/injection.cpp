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
#include "profiler/step_window.h"

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
  options.all_runtime_calls = session->config().all_cuda_calls;
  options.off = session->config().off;
  if (auto range = parse_step_range(session->config().steps); range && range->first <= range->second)
    options.window = range;
  options.step_name = session->config().step_name;
  for (const auto& name : session->config().unknown_off)
    session->warn_once("DPRO_PROFILE_OFF: unknown record class '" + name + "' ignored (known: " + known_off_classes() + ")");
  if (!options.off.empty()) {
    std::string list;
    for (const auto& name : options.off) list += (list.empty() ? "" : ",") + name;
    session->encode([&](native::RecordEncoder& enc) { enc.add_metadata("records_off", list); });
  }
  session->encode([&](native::RecordEncoder& enc) {
    enc.add_metadata("cuda_api", options.all_runtime_calls ? "all" : "replay");
  });
  static CuptiTracer* tracer = new CuptiTracer(*api, *session, options);
  std::string reason;
  if (!tracer->start(reason)) {
    session->warn_once(reason);
    return;
  }
  if (!reason.empty()) session->warn_once(reason);
  session->add_flush_hook([session](bool final) {
    tracer->flush(final);
    if (final && !tracer->window_opened() && tracer->nvtx_ranges_seen())
      session->warn_once("no NVTX range of steps " + session->config().steps +
                         " was seen, so no GPU activity (kernels, copies) was recorded (steps marked by "
                         "cudaProfilerStart/Stop: run without --steps)");
  });
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
