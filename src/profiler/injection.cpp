// InitializeInjection: the entry point the CUDA driver calls (inside cuInit) when
// CUDA_INJECTION64_PATH names this library. Only CUPTI setup happens here, never CUDA calls.
// It never fails the job: when CUPTI cannot trace, one warning is printed and the process
// runs on untraced (the NCCL plugin keeps working).
#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

#include "profiler/cost_probe_real.h"
#include "profiler/cupti_api_real.h"
#include "profiler/cupti_tracer.h"
#include "profiler/session.h"
#include "profiler/step_window.h"

namespace dpro::profiler {
namespace {

// The calibration of the records' host cost (record_cost.h) runs on a thread of its own: no CUDA
// call may be made from here, inside cuInit, so it waits until cuInit has completed. The thread
// is stopped and joined at exit (a flush hook of the final flush).
void start_calibration(ProfilerSession* session, CuptiApi* api, CuptiTracer* tracer, CostProbe* probe) {
  static std::atomic<bool> stop{false};
  CalibrationRun run;
  run.recorded = recorded_classes(session->config());
  run.options.all_runtime_calls = session->config().all_cuda_calls;
  static std::thread* thread = new std::thread([=] {
    try {
      run_calibration(*api, *probe, tracer->probe_filter(), *session, run, stop);
    } catch (const std::exception& e) {
      session->warn_once(std::string("the calibration of the records' cost failed: ") + e.what());
    }
  });
  session->add_flush_hook([](bool final) {
    if (!final || !thread->joinable()) return;
    stop.store(true);
    thread->join();
  });
}

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
  // Found now (the CUDA libraries the job has loaded; no CUDA call), so that the calibration's
  // records are known to the tracer before it records anything.
  static CostProbe* probe = session->config().calibrate ? make_real_cost_probe().release() : nullptr;
  if (probe) tracer->probe_filter().set_probes(probe->calls());
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
  if (!probe) {
    session->encode([](native::RecordEncoder& enc) { write_no_calibration(enc, "off"); });
  } else if (probe->calls().empty()) {
    session->encode([](native::RecordEncoder& enc) {
      write_no_calibration(enc, "not run: neither the CUDA runtime nor the driver was found loaded");
    });
  } else {
    start_calibration(session, api, tracer, probe);
  }
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
