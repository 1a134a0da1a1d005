// Plans' other rewrites as the executor runs them: the precision rewrite's casts as CastCalls, the
// compression rewrite's kernels as CompressCalls with the decision's parameters.
#include <catch2/catch.hpp>

#include <set>

#include "costmodel/paths.h"
#include "executor/plan_rewrites.h"
#include "executor_fixtures.h"

using namespace dpro;

TEST_CASE("rewrites: the precision rewrite's casts run as casts of the weight of the op they serve") {
  whatif::Workload w = test::load_workload("traces/h100/resnet50-emit-nvtx-step");
  whatif::Precision p;
  p.dtype = "bf16";
  p.device_dir = costmodel::default_device_dir();
  const executor::AppliedRewrites applied = executor::apply_rewrites(w, {p});
  REQUIRE(std::get<whatif::PrecisionChange>(applied.changes.at(0)).casts > 0);
  CHECK(applied.launch.cast_to == executor::DType::kBF16);
  executor::ScheduleOptions options;
  options.iteration = 12;  // the step with shapes
  options.launch = applied.launch;
  test::FakeRun run;
  run.schedule = executor::build_schedule(w, options);
  std::size_t casts = 0, sized = 0;
  for (const executor::ScheduledLaunch& l : run.schedule.launches) {
    if (l.lowered.op_class != executor::OpClass::kCast) continue;
    ++casts;
    const auto* c = std::get_if<executor::CastCall>(&l.lowered.launch);
    if (!c) continue;
    ++sized;
    REQUIRE(c->to == executor::DType::kBF16);
    REQUIRE(c->elements > 0);
    REQUIRE(c->dst.bytes == static_cast<std::uint64_t>(c->elements) * 2);
  }
  INFO(casts << " casts, " << sized << " sized");
  CHECK(sized > 0);
  test::run_on_fake(run, 1);
  CHECK(run.device.violations().empty());
}

TEST_CASE("rewrites: the compression rewrite's kernels run as compression of the collective's gradient") {
  whatif::Workload w = test::load_workload("traces/dlrm-8xV100");
  whatif::CommRetime c;
  c.clusters_dir = test::source_path("configs/clusters");
  c.compression = comm::parse_compression("topk:0.05");
  const executor::AppliedRewrites applied = executor::apply_rewrites(w, {c});
  REQUIRE(applied.launch.compression.all.method == comm::CompressionMethod::kTopK);
  test::FakeRun run;
  run.schedule = executor::build_schedule(w, {.rank = 0, .iteration = std::nullopt, .launch = applied.launch});
  std::size_t compress = 0, decompress = 0;
  std::set<std::uint64_t> residual_of_compress, residual_of_decompress;
  for (const executor::ScheduledLaunch& l : run.schedule.launches) {
    const auto* k = std::get_if<executor::CompressCall>(&l.lowered.launch);
    if (!k) continue;
    (k->decompress ? decompress : compress) += 1;
    (k->decompress ? residual_of_decompress : residual_of_compress).insert(k->residual.offset);
    REQUIRE(k->method == executor::CompressMethod::kTopK);
    REQUIRE(k->param == Approx(0.05));
    REQUIRE(k->elements > 0);
    REQUIRE(k->residual.bytes == static_cast<std::uint64_t>(k->elements) * 4);
    const std::uint64_t payload = k->decompress ? k->src.bytes : k->dst.bytes;
    REQUIRE(payload == 8 * static_cast<std::uint64_t>(std::ceil(0.05 * static_cast<double>(k->elements))));
  }
  CHECK(compress > 0);
  CHECK(compress == decompress);
  // One residual per all-reduce, live for the whole run, shared by its two kernels.
  CHECK(residual_of_compress.size() == compress);
  CHECK(residual_of_compress == residual_of_decompress);
  test::run_on_fake(run, 1);
  CHECK(run.device.violations().empty());
}

TEST_CASE("rewrites: a partition plan's buckets run, each all-reduce a stand-in of its bucketed time") {
  whatif::Workload w = test::load_workload("traces/dlrm-8xV100");
  whatif::CommRetime c;
  c.clusters_dir = test::source_path("configs/clusters");
  c.bucket_boundaries = std::vector<std::size_t>{};  // one bucket per step: the earlier all-reduces take no time
  const executor::AppliedRewrites applied = executor::apply_rewrites(w, {c});
  const auto& change = std::get<whatif::CommChange>(applied.changes.at(0));
  REQUIRE(change.buckets);
  REQUIRE(change.buckets->buckets < change.buckets->allreduces);
  test::FakeRun run;
  run.schedule = executor::build_schedule(w, {.rank = 0, .iteration = std::nullopt, .launch = applied.launch});
  // As for a bucket size: each bucket one call where its last member ran, the others empty stand-ins.
  std::size_t carriers = 0, members = 0;
  for (const executor::ScheduledLaunch& l : run.schedule.launches) {
    const auto member = applied.launch.buckets.find(l.node);
    if (member == applied.launch.buckets.end()) continue;
    if (member->second.last) {
      CHECK(std::holds_alternative<executor::CollectiveCall>(l.lowered.launch));
      ++carriers;
    } else {
      const auto* s = std::get_if<executor::StandinKernel>(&l.lowered.launch);
      REQUIRE(s != nullptr);
      CHECK(s->duration == 0);
      ++members;
    }
  }
  CHECK(carriers > 0);
  CHECK(members > 0);  // one bucket per step: the earlier all-reduces merged into it
  test::run_on_fake(run, 1);
  CHECK(run.device.violations().empty());
  // A boundary past the step's all-reduces is refused by name.
  whatif::Workload again = test::load_workload("traces/dlrm-8xV100");
  c.bucket_boundaries = std::vector<std::size_t>{9};
  CHECK_THROWS_WITH(executor::apply_rewrites(again, {c}), Catch::Contains("boundary out of range"));
}

TEST_CASE("rewrites: a bucket decision runs each bucket as one collective call of its members' bytes") {
  const whatif::Workload plain = test::load_workload("traces/dlrm-8xV100");
  const executor::Schedule before = executor::build_schedule(plain, {.rank = 0, .iteration = std::nullopt, .launch = {}});
  whatif::Workload w = test::load_workload("traces/dlrm-8xV100");
  whatif::CommRetime c;
  c.clusters_dir = test::source_path("configs/clusters");
  c.bucket_mb = 64;
  const executor::AppliedRewrites applied = executor::apply_rewrites(w, {c});
  CHECK(applied.notes.empty());
  REQUIRE_FALSE(applied.launch.buckets.empty());
  test::FakeRun run;
  run.schedule = executor::build_schedule(w, {.rank = 0, .iteration = std::nullopt, .launch = applied.launch});
  // The all-reduces of the window: their bytes before, and the calls the bucketed schedule makes.
  std::uint64_t recorded_bytes = 0, bucket_bytes = 0;
  std::size_t recorded_calls = 0, bucket_calls = 0, members_without_call = 0;
  for (const executor::ScheduledLaunch& l : before.launches)
    if (const auto* k = std::get_if<executor::CollectiveCall>(&l.lowered.launch); k && k->op == "all_reduce" && k->bytes > 0) {
      recorded_bytes += k->bytes;
      ++recorded_calls;
    }
  for (const executor::ScheduledLaunch& l : run.schedule.launches) {
    const auto member = applied.launch.buckets.find(l.node);
    if (member == applied.launch.buckets.end()) continue;
    if (!member->second.last) {
      const auto* s = std::get_if<executor::StandinKernel>(&l.lowered.launch);
      REQUIRE(s != nullptr);
      CHECK(s->duration == 0);
      ++members_without_call;
      continue;
    }
    const auto& k = std::get<executor::CollectiveCall>(l.lowered.launch);
    CHECK(k.bytes == static_cast<std::uint64_t>(member->second.bucket_elements) * executor::dtype_bytes(k.dtype));
    CHECK(k.buffer.bytes == k.bytes);
    bucket_bytes += k.bytes;
    ++bucket_calls;
  }
  INFO(recorded_calls << " all-reduces of " << recorded_bytes << " bytes -> " << bucket_calls << " calls");
  CHECK(bucket_calls >= 1);
  CHECK(bucket_calls < recorded_calls);
  CHECK(bucket_calls + members_without_call == recorded_calls);
  CHECK(bucket_bytes == recorded_bytes);
  test::run_on_fake(run, 1);
  CHECK(run.device.violations().empty());
}
