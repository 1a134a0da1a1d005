// Real CUPTI record structs packed into activity buffers, walked with
// cuptiActivityGetNextRecord (works without a GPU driver), encoded and read back; and the
// CUPTI tracer's start-up, buffer and failure handling driven through a fake CuptiApi.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "cupti_buffers.h"
#include "native_trace_builder.h"
#include "profiler_fakes.h"
#include "profiler/cupti_records.h"
#include "profiler/cupti_tracer.h"
#include "temp_dir.h"
#include "trace/native/native_importer.h"
#include "trace/native/native_reader.h"

using namespace dpro;
using namespace dpro::profiler;

namespace {

using test::FakeCuptiApi;
using test::MemorySink;
using test::kBase;
constexpr std::uint64_t kT = kBase + 5'000;

test::ActivityBufferBuilder sample_buffer() {
  test::ActivityBufferBuilder b;
  b.add(test::marker_record(CUPTI_ACTIVITY_FLAG_MARKER_START, kT, 1, "ProfilerStep#0"));
  b.add(test::api_record(false, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, kT + 10, kT + 60, 21));
  b.add(test::kernel_record("sgemm_128x64", kT + 100, kT + 900, 21));
  b.add(test::api_record(true, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, kT + 70, kT + 90, 22));
  b.add(test::external_record(4242, 22));
  b.add(test::kernel_record("ncclDevKernel_AllReduce_Sum_f32_RING_LL", kT + 1000, kT + 3000, 22, 9));
  b.add(test::memcpy_record(kT + 3100, kT + 3300, 23, 1 << 20));
  CUpti_ActivityMemset4 ms{};
  ms.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  ms.bytes = 512;
  ms.start = kT + 3400;
  ms.end = kT + 3450;
  ms.streamId = 7;
  ms.contextId = 1;
  ms.correlationId = 24;
  b.add(ms);
  CUpti_ActivitySynchronization2 sync{};
  sync.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  sync.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  sync.start = kT + 3500;
  sync.end = kT + 3600;
  sync.contextId = 1;
  sync.streamId = 7;
  sync.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  sync.correlationId = 25;
  b.add(sync);
  b.add(test::marker_record(CUPTI_ACTIVITY_FLAG_MARKER_END, kT + 4000, 1, nullptr));
  return b;
}

CuptiTracer::Options opts(bool nvtx = false) {
  CuptiTracer::Options o;
  o.nvtx = nvtx;
  return o;
}

bool has(const std::vector<std::uint32_t>& v, std::uint32_t x) { return std::count(v.begin(), v.end(), x) > 0; }

}  // namespace

TEST_CASE("real CUPTI records in a buffer are walked and encoded", "[cupti]") {
  auto buffer = sample_buffer();
  native::StringInterner strings;
  native::RecordEncoder enc(strings, static_cast<std::int64_t>(kBase));
  CallbackNames names;
  auto result = encode_activity_buffer(buffer.data(), buffer.bytes(), enc, names);
  CHECK(result.records == 10);
  CHECK(result.ignored == 0);
  CHECK(names.runtime(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) == "cudaLaunchKernel_v7000");
  CHECK(names.driver(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx).starts_with("cuLaunchKernelEx"));
}

TEST_CASE("encoded CUPTI records import as the trace model", "[cupti]") {
  auto buffer = sample_buffer();
  MemorySink sink;
  native::RecordEncoder enc(sink.strings(), sink.base_time());
  CallbackNames names;
  encode_activity_buffer(buffer.data(), buffer.bytes(), enc, names);
  sink.submit(enc.take());
  test::TempDir dir("cupti");
  sink.write(dir.file("c.dpro"));
  StringTable strings;
  Logger log(LogLevel::kQuiet);
  auto rank = trace::make_native_importer()->read(dir.file("c.dpro"), strings, {}, log);
  CHECK(log.warning_count() == 0);
  auto find = [&](trace::EventKind kind) {
    std::vector<const trace::Event*> out;
    for (const auto& e : rank.events)
      if (e.kind == kind) out.push_back(&e);
    return out;
  };
  auto kernels = find(trace::EventKind::kKernel);
  REQUIRE(kernels.size() == 1);
  CHECK(strings.view(kernels[0]->name) == "sgemm_128x64");
  CHECK(kernels[0]->start == static_cast<Nanos>(kT + 100));
  CHECK(kernels[0]->dur == 800);
  CHECK(kernels[0]->correlation == 21);
  CHECK(rank.attrs_of(*kernels[0])->grid == std::array<int, 3>{80, 1, 1});
  auto runtime = find(trace::EventKind::kRuntimeCall);
  REQUIRE(runtime.size() == 1);
  CHECK(strings.view(runtime[0]->name) == "cudaLaunchKernel");  // CUPTI's "_v7000" dropped
  CHECK(rank.attrs_of(*runtime[0])->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
  auto nccl = find(trace::EventKind::kCollective);
  REQUIRE(nccl.size() == 1);
  CHECK(nccl[0]->external_id == 4242);
  CHECK(rank.attrs_of(*nccl[0])->collective->op == "allreduce");
  auto copies = find(trace::EventKind::kMemcpy);
  REQUIRE(copies.size() == 1);
  CHECK(rank.attrs_of(*copies[0])->bytes == (1 << 20));
  CHECK(strings.view(copies[0]->name) == "Memcpy HtoD");
  CHECK(find(trace::EventKind::kMemset).size() == 1);
  auto syncs = find(trace::EventKind::kSync);
  REQUIRE(syncs.size() == 1);
  CHECK(rank.attrs_of(*syncs[0])->sync->sync_kind == "Stream Sync");
  CHECK(rank.attrs_of(*syncs[0])->sync->stream == 7);
  auto steps = find(trace::EventKind::kUserAnnotation);
  REQUIRE(steps.size() == 1);
  CHECK(strings.view(steps[0]->name) == "ProfilerStep#0");
  CHECK(steps[0]->dur == 4000);
}

TEST_CASE("the tracer enables concurrent-kernel tracing and the launch driver calls only", "[cupti]") {
  FakeCuptiApi api;
  MemorySink sink;
  CuptiTracer tracer(api, sink, opts(true));
  std::string reason;
  REQUIRE(tracer.start(reason));
  CHECK(reason.empty());
  CHECK(api.subscribed);
  CHECK(has(api.enabled, cupti_kind::kConcurrentKernel));
  CHECK_FALSE(has(api.enabled, 3));  // KERNEL serialises kernels
  // Runtime calls: only those the replay uses, one callback id at a time.
  CHECK_FALSE(has(api.enabled, cupti_kind::kRuntime));
  CHECK(api.runtime_cbids == std::vector<std::uint32_t>{41, 135, 147, 165, 211});
  CHECK_FALSE(has(api.enabled, cupti_kind::kDriver));
  CHECK(has(api.enabled, cupti_kind::kExternalCorrelation));
  CHECK(has(api.enabled, cupti_kind::kMarker));
  CHECK(api.driver_cbids == std::vector<std::uint32_t>{307, 652, 514});
  tracer.push(17);
  tracer.pop();
  REQUIRE(api.pushed.size() == 1);
  CHECK(api.pushed[0] == std::make_pair(5u, std::uint64_t{17}));
  CHECK(api.pops == 1);
  tracer.flush(true);
  CHECK(api.forced_flushes == 1);
}

TEST_CASE("every runtime call or some record classes on request", "[cupti]") {
  FakeCuptiApi api;
  MemorySink sink;
  SECTION("all runtime calls: the whole RUNTIME kind") {
    auto o = opts();
    o.all_runtime_calls = true;
    CuptiTracer tracer(api, sink, o);
    std::string reason;
    REQUIRE(tracer.start(reason));
    CHECK(has(api.enabled, cupti_kind::kRuntime));
    CHECK(api.runtime_cbids.empty());
  }
  SECTION("a CUPTI without per-call selection records every runtime call") {
    api.ids_count = 0;
    CuptiTracer tracer(api, sink, {});
    std::string reason;
    REQUIRE(tracer.start(reason));
    CHECK(has(api.enabled, cupti_kind::kRuntime));
  }
  SECTION("diagnostics leave classes out") {
    auto o = opts(true);
    o.off = {"runtime", "driver", "nvtx", "event"};
    CuptiTracer tracer(api, sink, o);
    std::string reason;
    REQUIRE(tracer.start(reason));
    CHECK(has(api.enabled, cupti_kind::kConcurrentKernel));
    CHECK_FALSE(has(api.enabled, cupti_kind::kRuntime));
    CHECK_FALSE(has(api.enabled, cupti_kind::kMarker));
    CHECK_FALSE(has(api.enabled, cupti_kind::kCudaEvent));
    CHECK(api.runtime_cbids.empty());
    CHECK(api.driver_cbids.empty());
  }
  CHECK(runtime_call_recorded("cudaLaunchKernelExC_v11060"));
  CHECK(runtime_call_recorded("cudaStreamSynchronize_ptsz_v7000"));
  CHECK(runtime_call_recorded("cudaFree"));
  CHECK_FALSE(runtime_call_recorded("cudaGetErrorString_v3020"));
  CHECK_FALSE(runtime_call_recorded("cudaFuncGetAttributes_v3020"));
  CHECK_FALSE(runtime_call_recorded(""));
}

TEST_CASE("with --steps the tracer records from step A's NVTX range to the end of step B's", "[cupti]") {
  FakeCuptiApi api;
  MemorySink sink;
  auto o = opts(true);
  o.window = std::make_pair(std::int64_t{2}, std::int64_t{3});
  CuptiTracer tracer(api, sink, o);
  std::string reason;
  REQUIRE(tracer.start(reason));
  CHECK(reason.empty());
  CHECK(api.nvtx_callbacks);
  auto recording = [&] { return has(api.enabled, cupti_kind::kConcurrentKernel); };
  // Checked at start, then off until the window opens; NVTX ranges, devices and the runtime
  // and driver calls stay on (calls switched off and on again were lost on the H100).
  CHECK_FALSE(recording());
  CHECK(api.runtime_cbids.size() == 5);
  CHECK(api.driver_cbids.size() == 3);
  CHECK(has(api.enabled, cupti_kind::kMarker));
  CHECK(has(api.enabled, cupti_kind::kDevice));
  CHECK_FALSE(tracer.window_opened());
  tracer.nvtx_push("ProfilerStep#1");
  tracer.nvtx_pop();
  CHECK_FALSE(recording());
  tracer.nvtx_push("ProfilerStep#2");
  CHECK(recording());
  CHECK(has(api.enabled, cupti_kind::kMemset));
  CHECK(api.runtime_cbids.size() == 5);
  CHECK(api.driver_cbids.size() == 3);
  tracer.nvtx_push("ncclAllReduce");  // nested ranges of others change nothing
  tracer.nvtx_pop();
  tracer.nvtx_pop();  // end of step 2
  CHECK(recording());
  tracer.nvtx_push("ProfilerStep#3");
  tracer.nvtx_pop();  // end of step 3: the window closes
  CHECK_FALSE(recording());
  CHECK_FALSE(has(api.enabled, cupti_kind::kMemset));
  CHECK(api.runtime_cbids.size() == 5);
  CHECK(has(api.enabled, cupti_kind::kMarker));
  tracer.nvtx_push("ProfilerStep#2");  // only one window
  CHECK_FALSE(recording());
  CHECK(tracer.window_opened());
}

TEST_CASE("a step window needs NVTX callbacks or records the whole run", "[cupti]") {
  FakeCuptiApi api;
  MemorySink sink;
  api.nvtx_result = 999;
  auto o = opts(true);
  o.window = std::make_pair(std::int64_t{0}, std::int64_t{0});
  CuptiTracer tracer(api, sink, o);
  std::string reason;
  REQUIRE(tracer.start(reason));
  CHECK(reason.find("whole run is recorded") != std::string::npos);
  CHECK(has(api.enabled, cupti_kind::kConcurrentKernel));
  CHECK(tracer.window_opened());
}

TEST_CASE("diagnostics can leave CUPTI's callback subscriber out", "[cupti]") {
  FakeCuptiApi api;
  MemorySink sink;
  auto o = opts(true);
  o.off = {"subscribe"};
  o.window = std::make_pair(std::int64_t{2}, std::int64_t{3});
  CuptiTracer tracer(api, sink, o);
  std::string reason;
  REQUIRE(tracer.start(reason));
  CHECK_FALSE(api.subscribed);
  CHECK_FALSE(api.nvtx_callbacks);  // a window needs the subscriber: the whole run is recorded
  CHECK(reason.find("whole run is recorded") != std::string::npos);
  CHECK(tracer.window_opened());
  CHECK(has(api.enabled, cupti_kind::kConcurrentKernel));
  CHECK(has(api.enabled, cupti_kind::kMarker));
  CHECK(api.runtime_cbids == std::vector<std::uint32_t>{41, 135, 147, 165, 211});
  // Another client cannot be detected without a subscriber: the tracer starts anyway.
  FakeCuptiApi busy;
  busy.subscribe_result = kCuptiErrorMultipleSubscribers;
  CuptiTracer second(busy, sink, o);
  CHECK(second.start(reason));
}

TEST_CASE("completed buffers reach the sink with dropped-record counts", "[cupti]") {
  FakeCuptiApi api;
  MemorySink sink;
  CuptiTracer tracer(api, sink, {});
  std::string reason;
  REQUIRE(tracer.start(reason));
  std::uint8_t* buffer = nullptr;
  std::size_t size = 0, max_records = 0;
  tracer.buffer_requested(&buffer, &size, &max_records);
  REQUIRE(buffer);
  CHECK(reinterpret_cast<std::uintptr_t>(buffer) % 8 == 0);
  auto records = sample_buffer();
  REQUIRE(records.bytes() <= size);
  std::memcpy(buffer, records.data(), records.bytes());
  api.dropped = 12;
  tracer.buffer_completed(nullptr, 3, buffer, size, records.bytes());  // frees buffer
  CHECK(tracer.records() == 10);
  CHECK(sink.batch_count() == 1);
  CHECK(sink.dropped() == 12);
  test::TempDir dir("drop");
  sink.write(dir.file("d.dpro"));
  Logger log(LogLevel::kQuiet);
  auto c = native::read_native_capture(dir.file("d.dpro"), log);
  CHECK(c.dropped_records == 12);
  CHECK(c.kernels.size() == 2);
}

TEST_CASE("when CUPTI cannot trace, the tracer reports why and leaves nothing enabled", "[cupti]") {
  FakeCuptiApi api;
  MemorySink sink;
  SECTION("no driver: a required kind fails") {
    api.failing_kinds = {cupti_kind::kConcurrentKernel};
    CuptiTracer tracer(api, sink, {});
    std::string reason;
    CHECK_FALSE(tracer.start(reason));
    CHECK(reason.find("CUDA tracing is off") != std::string::npos);
    CHECK(api.enabled.empty());
    CHECK_FALSE(api.subscribed);  // CUPTI is left free for other tools
    tracer.push(1);  // harmless when not running
    CHECK(api.pushed.empty());
  }
  SECTION("no per-call selection and no RUNTIME kind") {
    api.ids_count = 0;
    api.failing_kinds = {cupti_kind::kRuntime};
    CuptiTracer tracer(api, sink, {});
    std::string reason;
    CHECK_FALSE(tracer.start(reason));
    CHECK(reason.find("CUDA tracing is off") != std::string::npos);
    CHECK(api.enabled.empty());
    CHECK_FALSE(api.subscribed);
  }
  SECTION("another profiler holds CUPTI") {
    api.subscribe_result = kCuptiErrorMultipleSubscribers;
    CuptiTracer tracer(api, sink, {});
    std::string reason;
    CHECK_FALSE(tracer.start(reason));
    CHECK(reason.find("another CUPTI client") != std::string::npos);
  }
  SECTION("an optional kind is missing: tracing goes on, with a note") {
    api.failing_kinds = {cupti_kind::kMemcpy2};
    CuptiTracer tracer(api, sink, {});
    std::string reason;
    CHECK(tracer.start(reason));
    CHECK(reason.find("22") != std::string::npos);
  }
}
