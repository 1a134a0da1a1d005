// The calibration of what dpro-profile's records cost the host (src/profiler/record_cost.h),
// driven by a fake CUPTI and a fake probe whose clock advances by a known cost per call and per
// record; its metadata read back by the native reader and importer.
#include <catch2/catch.hpp>

#include <atomic>

#include "core/log.h"
#include "profiler/record_cost.h"
#include "profiler_fakes.h"
#include "temp_dir.h"
#include "trace/native/native_importer.h"
#include "trace/native/native_reader.h"

using namespace dpro;
using namespace dpro::profiler;

namespace {

constexpr std::uint32_t kGetDevice = 17, kDeviceGetCount = 4;  // CUPTI's callback ids
const std::vector<std::string> kRecorded = {"kernel", "runtime", "driver", "memcpy", "memset", "sync"};

// Each call costs call_ns, plus the record's cost while the fake CUPTI has its record switched
// on; batch number `hiccup_batch` (counting every call() of the run) takes hiccup_ns longer.
class FakeProbe final : public CostProbe {
 public:
  explicit FakeProbe(const test::FakeCuptiApi& api) : api_(api) {}
  std::int64_t call_ns = 300, runtime_record_ns = 2000, driver_record_ns = 1500;
  int hiccup_batch = -1;
  std::int64_t hiccup_ns = 0;
  int not_ready = 0;  // ready() answers false this many times
  int batches = 0;

  const std::vector<ProbeCall>& calls() const override { return calls_; }
  bool ready() override { return not_ready-- <= 0; }
  void call(std::size_t index, int n) override {
    const bool runtime = calls_[index].kind == native::ApiKind::kRuntime;
    const bool on = runtime ? api_.runtime_on(calls_[index].cbid) : api_.driver_on(calls_[index].cbid);
    clock_ += n * (call_ns + (on ? (runtime ? runtime_record_ns : driver_record_ns) : 0));
    if (batches++ == hiccup_batch) clock_ += hiccup_ns;
  }
  std::int64_t now_ns() override { return clock_ += 10; }  // reading the clock takes a little time
  std::int64_t trace_clock_ns() override { return static_cast<std::int64_t>(test::kBase) + clock_; }

 private:
  const test::FakeCuptiApi& api_;
  std::vector<ProbeCall> calls_ = {{"runtime", native::ApiKind::kRuntime, kGetDevice, "cudaGetDevice"},
                                   {"driver", native::ApiKind::kDriver, kDeviceGetCount, "cuDeviceGetCount"}};
  std::int64_t clock_ = 0;
};

const ClassCost* cost_of(const Calibration& c, const std::string& cls) {
  for (const auto& k : c.costs)
    if (k.record_class == cls) return &k;
  return nullptr;
}

}  // namespace

TEST_CASE("the calibration measures each record class's host cost through a fake CUPTI and clock", "[calibration]") {
  test::FakeCuptiApi api;
  FakeProbe probe(api);
  const Calibration c = calibrate_record_costs(api, probe, kRecorded, CalibrationOptions{});
  REQUIRE(c.costs.size() == 2);
  const ClassCost* runtime = cost_of(c, "runtime");
  const ClassCost* driver = cost_of(c, "driver");
  REQUIRE(runtime);
  REQUIRE(driver);
  CHECK(runtime->ns == 2000);
  CHECK(driver->ns == 1500);
  CHECK(runtime->probe == "cudaGetDevice");
  CHECK(runtime->repetitions == 9);
  CHECK(runtime->calls == 200);
  CHECK(runtime->low_ns == 2000);
  CHECK(runtime->high_ns == 2000);
  CHECK(c.failures.empty());
  // 2 classes x (1 warm-up + 9 x 2 batches) x 200 calls, each 300 ns and half of them recorded.
  CHECK(c.took_ns == Approx(2 * 19 * 200 * 300 + 9 * 200 * (2000 + 1500)).epsilon(0.01));
  // The session records neither call: both records are off again.
  CHECK_FALSE(api.runtime_on(kGetDevice));
  CHECK_FALSE(api.driver_on(kDeviceGetCount));
  CHECK(uncalibrated_classes(kRecorded, c) == std::vector<std::string>{"kernel", "memcpy", "memset", "sync"});
}

TEST_CASE("a disturbed batch does not move the calibration's median", "[calibration]") {
  test::FakeCuptiApi api;
  FakeProbe probe(api);
  probe.hiccup_batch = 5;  // a batch of the runtime class's third repetition
  probe.hiccup_ns = 400'000;  // 2 us per call of that batch
  const Calibration c = calibrate_record_costs(api, probe, kRecorded, CalibrationOptions{});
  const ClassCost* runtime = cost_of(c, "runtime");
  REQUIRE(runtime);
  CHECK(runtime->ns == 2000);
  CHECK((runtime->low_ns == 0 || runtime->high_ns == 4000));  // the disturbed repetition is an extreme
}

TEST_CASE("the calibration leaves the probes' records as the session records them", "[calibration]") {
  test::FakeCuptiApi api;
  FakeProbe probe(api);
  CalibrationOptions o;
  o.all_runtime_calls = true;  // --all-cuda-calls: cudaGetDevice is one of the job's records
  const Calibration c = calibrate_record_costs(api, probe, kRecorded, o);
  CHECK(c.costs.size() == 2);
  CHECK(api.runtime_on(kGetDevice));
  CHECK_FALSE(api.driver_on(kDeviceGetCount));
}

TEST_CASE("only the classes the session records are calibrated", "[calibration]") {
  test::FakeCuptiApi api;
  FakeProbe probe(api);
  const std::vector<std::string> recorded = {"kernel", "runtime"};  // DPRO_PROFILE_OFF=driver,...
  const Calibration c = calibrate_record_costs(api, probe, recorded, CalibrationOptions{});
  REQUIRE(c.costs.size() == 1);
  CHECK(c.costs[0].record_class == "runtime");
  CHECK(probe.batches == 19);
  CHECK(uncalibrated_classes(recorded, c) == std::vector<std::string>{"kernel"});
}

TEST_CASE("a class whose records cannot be switched is a failure, not a figure", "[calibration]") {
  test::FakeCuptiApi api;
  api.driver_api_result = 999;
  FakeProbe probe(api);
  const Calibration c = calibrate_record_costs(api, probe, kRecorded, CalibrationOptions{});
  REQUIRE(c.costs.size() == 1);
  CHECK(c.costs[0].record_class == "runtime");
  REQUIRE(c.failures.size() == 1);
  CHECK(c.failures[0].starts_with("driver: "));
  CHECK(c.failures[0].find("CUPTI_ERROR_999") != std::string::npos);
}

TEST_CASE("the calibration keeps to its time budget on a slow machine", "[calibration]") {
  test::FakeCuptiApi api;
  FakeProbe probe(api);
  probe.call_ns = 200'000;  // 40 ms a batch
  CalibrationOptions o;
  o.budget_ns = 250'000'000;
  const Calibration c = calibrate_record_costs(api, probe, kRecorded, o);
  REQUIRE(c.costs.size() == 2);
  CHECK(cost_of(c, "runtime")->ns == 2000);
  CHECK(cost_of(c, "runtime")->repetitions < 9);
  CHECK(cost_of(c, "driver")->repetitions == 3);  // past the budget: the minimum
  CHECK(c.took_ns < 700'000'000);
}

TEST_CASE("the calibration's costs go into the trace's metadata and come back through the importer", "[calibration]") {
  test::FakeCuptiApi api;
  FakeProbe probe(api);
  probe.not_ready = 2;  // CUDA is still in cuInit for the first polls
  test::MemorySink sink;
  ProbeRecordFilter filter;
  filter.set_probes(probe.calls());
  CalibrationRun run;
  run.recorded = kRecorded;
  std::atomic<bool> stop{false};
  run_calibration(api, probe, filter, sink, run, stop);

  test::TempDir dir("calibration");
  sink.write(dir.file("c.dpro"));
  Logger log(LogLevel::kQuiet);
  const native::NativeCapture capture = native::read_native_capture(dir.file("c.dpro"), log);
  CHECK(capture.metadata.at("record_cost") == "runtime=2000ns,driver=1500ns");
  CHECK(capture.metadata.at("record_cost.calibration").starts_with("runtime: cudaGetDevice, 9 x 200 calls, median 2000 ns"));
  CHECK(capture.metadata.at("record_cost.uncalibrated") == "kernel,memcpy,memset,sync");
  StringTable strings;
  const trace::TraceRank rank = trace::make_native_importer()->read(dir.file("c.dpro"), strings, {}, log);
  REQUIRE(rank.record_costs);
  CHECK(rank.record_costs->of(trace::RecordClass::kRuntime) == 2000);
  CHECK(rank.record_costs->of(trace::RecordClass::kDriver) == 1500);
  CHECK_FALSE(rank.record_costs->of(trace::RecordClass::kKernel));
  CHECK(log.warning_count() == 0);

  // Inside the calibration's window the probes' own records are dropped, nothing else.
  const std::int64_t inside = static_cast<std::int64_t>(test::kBase) + 100'000;
  CHECK(filter.drops(native::ApiKind::kRuntime, kGetDevice, inside));
  CHECK(filter.drops(native::ApiKind::kDriver, kDeviceGetCount, inside));
  CHECK_FALSE(filter.drops(native::ApiKind::kDriver, kGetDevice, inside));
  CHECK_FALSE(filter.drops(native::ApiKind::kRuntime, 211, inside));  // cudaLaunchKernel
  CHECK_FALSE(filter.drops(native::ApiKind::kRuntime, kGetDevice, static_cast<std::int64_t>(test::kBase)));
  CHECK_FALSE(filter.drops(native::ApiKind::kRuntime, kGetDevice, inside + 1'000'000'000));
}

TEST_CASE("a calibration that never finds CUDA ready says so in the metadata", "[calibration]") {
  test::FakeCuptiApi api;
  FakeProbe probe(api);
  probe.not_ready = 1'000'000;
  test::MemorySink sink;
  ProbeRecordFilter filter;
  CalibrationRun run;
  run.recorded = kRecorded;
  std::atomic<bool> stop{true};  // the job is exiting
  run_calibration(api, probe, filter, sink, run, stop);
  test::TempDir dir("calibration-off");
  sink.write(dir.file("c.dpro"));
  Logger log(LogLevel::kQuiet);
  const native::NativeCapture capture = native::read_native_capture(dir.file("c.dpro"), log);
  CHECK(capture.metadata.count("record_cost") == 0);
  CHECK(capture.metadata.at("record_cost.calibration") == "not run: CUDA was not ready");
  StringTable strings;
  CHECK_FALSE(trace::make_native_importer()->read(dir.file("c.dpro"), strings, {}, log).record_costs);
}
