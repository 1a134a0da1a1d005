// Round trip: native traces of a 2-host job (one host's clock skewed) -> load_traces (the
// trace model, iterations) -> clock alignment -> replay.
#include <catch2/catch.hpp>

#include "native_trace_builder.h"
#include "temp_dir.h"
#include "trace/loader.h"
#include "replayer/replay.h"

using namespace dpro;
using namespace dpro::native;

namespace {

constexpr std::uint64_t kStart = 1'700'000'000'000'000'000ull + 50'000'000;
constexpr std::uint64_t kComm = 0xfeed;
constexpr std::uint64_t kStep = 2'000'000;  // 2 ms per iteration

// Rank r of 2: per step a gemm (launch + kernel) then an allreduce whose kernel ends at the
// same true instant on both ranks. The rank's clock reads true time + skew.
// `record_cost`: the calibration dpro-profile would have written (none: a capture from before it).
void write_rank(const std::string& path, int r, const std::string& host, std::int64_t skew,
                const char* record_cost = nullptr) {
  test::NativeTraceBuilder b(test::header_for(r, host, 2));
  if (record_cost) b.add().add_metadata("record_cost", record_cost);
  b.add(DeviceRecord{0, "NVIDIA H100", 80ull << 30, 9, 0, 132});
  b.add(NcclCommRecord{kComm, "world", 2, r, 2});
  auto at = [&](std::uint64_t t) { return static_cast<std::uint64_t>(static_cast<std::int64_t>(t) + skew); };
  std::uint32_t corr = 1;
  for (std::uint64_t s = 0; s < 3; ++s) {
    std::uint64_t t = kStart + s * kStep;
    std::uint32_t id = static_cast<std::uint32_t>(s) + 1;
    b.add(MarkerRecord{kMarkerStart, at(t), id, 100, 101, "ProfilerStep#" + std::to_string(s), ""});
    std::uint64_t gemm = 400'000 + static_cast<std::uint64_t>(r) * 100'000;  // rank 1 is slower
    b.add(ApiRecord{ApiKind::kRuntime, 211, at(t + 10'000), at(t + 20'000), 100, 101, corr, "cudaLaunchKernel_v7000"});
    b.add(KernelRecord{at(t + 30'000), at(t + 30'000 + gemm), 0, 1, 7, corr, "sm90_gemm", {132, 1, 1}, {256, 1, 1}, 0, 0});
    ++corr;
    std::uint64_t group = 100 + s, launch = 1000 + s;
    b.add(NcclCollRecord{500 + s, kComm, group, kCollHasSequence, r, "AllReduce", "ncclBfloat16", "RING", "LL",
                         s, 1 << 20, 2, 0, at(t + 40'000), at(t + 45'000), 100, 101});
    b.add(NcclLaunchRecord{launch, kComm, group, at(t + 50'000), at(t + 60'000), 100, 101});
    b.add(ApiRecord{ApiKind::kDriver, 652, at(t + 52'000), at(t + 58'000), 100, 101, corr, "cuLaunchKernelEx"});
    b.add(ExternalCorrelationRecord{kNcclExternalKind, launch, corr});
    std::uint64_t nccl_start = t + 30'000 + gemm + 1'000, nccl_end = t + 1'200'000;
    b.add(KernelRecord{at(nccl_start), at(nccl_end), 0, 1, 9, corr, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", {2, 1, 1}, {640, 1, 1}, 0, 0});
    ++corr;
    b.add(ApiRecord{ApiKind::kRuntime, 131, at(t + 70'000), at(nccl_end + 5'000), 100, 101, corr, "cudaStreamSynchronize_v3020"});
    b.add(SyncRecord{at(t + 70'000), at(nccl_end + 5'000), 3, 1, 9, 0, corr});
    ++corr;
    b.add(MarkerRecord{kMarkerEnd, at(t + kStep - 10'000), id, 100, 101, "", ""});
  }
  b.write(path);
}

}  // namespace

TEST_CASE("native traces load as the trace model, align and replay", "[native][roundtrip]") {
  test::TempDir dir("roundtrip");
  const std::int64_t skew = 2'500'000;
  write_rank(dir.file("rank0.dpro"), 0, "host-a", 0);
  write_rank(dir.file("rank1.dpro"), 1, "host-b", skew);
  Logger log(LogLevel::kQuiet);
  trace::LoadOptions options;  // the loader aligns the clocks from the matched collectives
  trace::TraceSet set = trace::load_traces({dir.path()}, options, log);
  REQUIRE(set.ranks.size() == 2);
  CHECK(set.ranks[0].format == "native");
  CHECK(set.ranks[1].rank == 1);
  for (const auto& r : set.ranks) {
    REQUIRE(r.iterations.size() == 3);
    CHECK(r.iterations[1].name == "ProfilerStep#1");
    std::size_t collectives = 0;
    for (const auto& e : r.events)
      if (e.kind == trace::EventKind::kCollective) {
        ++collectives;
        CHECK(r.attrs_of(e)->collective->group_name == std::to_string(kComm));
      }
    CHECK(collectives == 3);
  }
  REQUIRE(set.ranks[1].clock_offset);
  CHECK(*set.ranks[1].clock_offset == -skew);
  CHECK(set.ranks[1].iterations[0].start == set.ranks[0].iterations[0].start);

  replayer::ReplayOptions replay_options;
  replayer::Report report = replayer::replay_trace_set(set, replay_options, log);
  REQUIRE(report.iterations.size() == 3);
  CHECK(report.ranks == 2);
  for (const auto& it : report.iterations) {
    CHECK(it.job_measured_ns > 0);
    CHECK(it.job_predicted_ns > 0);
    // Nothing changed, so the replay should reproduce the measured step closely.
    CHECK(std::abs(it.job_error()) < 0.01);
  }
}

TEST_CASE("native traces with a calibration replay without the profiler's cost, per rank, unless kept", "[native][roundtrip][profiler-cost]") {
  test::TempDir dir("roundtrip-cost");
  write_rank(dir.file("rank0.dpro"), 0, "host-a", 0, "runtime=1000ns");
  write_rank(dir.file("rank1.dpro"), 1, "host-b", 0, "runtime=2000ns,driver=1000ns");
  Logger log(LogLevel::kQuiet);
  const trace::TraceSet set = trace::load_traces({dir.path()}, trace::LoadOptions{}, log);
  replayer::ReplayOptions options;
  const replayer::Report taken = replayer::replay_trace_set(set, options, log);
  REQUIRE(taken.profiler_cost);
  CHECK(taken.profiler_cost->ranks_with_costs == 2);
  CHECK(taken.profiler_cost->rank_steps == 6);
  REQUIRE(taken.profiler_cost->classes.size() == 2);
  const graph::ClassRemoval& runtime = taken.profiler_cost->classes[0];
  CHECK(runtime.record_class == trace::RecordClass::kRuntime);
  CHECK(runtime.records == 12);  // a launch and a sync per step, 3 steps, 2 ranks
  CHECK(runtime.ns_min == 1000);
  CHECK(runtime.ns_max == 2000);
  CHECK(taken.profiler_cost->classes[1].records == 3);  // rank 1's cuLaunchKernelEx
  options.profiler_cost.keep = true;
  const replayer::Report kept = replayer::replay_trace_set(set, options, log);
  REQUIRE(kept.profiler_cost);
  CHECK(kept.profiler_cost->kept);
  for (std::size_t i = 0; i < kept.iterations.size(); ++i) {
    CHECK(kept.iterations[i].job_predicted_ns == kept.iterations[i].job_measured_ns);
    CHECK(taken.iterations[i].job_predicted_ns <= kept.iterations[i].job_predicted_ns);
  }
}
