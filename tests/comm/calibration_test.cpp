#include <catch2/catch.hpp>

#include "comm_fixtures.h"
#include "core/error.h"
#include "replayer/comm/calibration.h"

using namespace dpro;

namespace {

const comm::ClusterCatalog& catalog() {
  static const auto cat = comm::ClusterCatalog::load_directory(test::clusters_dir());
  return cat;
}

}  // namespace

TEST_CASE("DLRM's NCCL kernels get their sizes from the host execution traces") {
  const auto job = test::load_dlrm();
  auto ops = comm::find_comm_ops(job.built.dfg, job.traces);
  REQUIRE(ops.size() == 64);
  for (const auto& op : ops) CHECK_FALSE(op.bytes.has_value());  // Kineto has no sizes here
  comm::attach_host_et_sizes(ops, job.traces, comm::expand_host_et_paths({test::dlrm_host_et_dir()}));
  std::size_t alltoall = 0, allreduce = 0;
  for (const auto& op : ops) {
    REQUIRE(op.bytes.has_value());
    CHECK(op.size_source == comm::SizeSource::kHostEt);
    CHECK(op.matched());
    alltoall += op.op == comm::CollectiveOp::kAllToAll;
    allreduce += op.op == comm::CollectiveOp::kAllReduce;
  }
  CHECK(alltoall == 40);
  CHECK(allreduce == 24);
  CHECK(*ops[4].bytes == 394241 * 4);  // rank 0's first all-reduce: 394,241 floats
}

TEST_CASE("host execution traces that do not match the kernels are rejected") {
  const auto job = test::load_dlrm();
  auto ops = comm::find_comm_ops(job.built.dfg, job.traces);
  auto files = comm::expand_host_et_paths({test::dlrm_host_et_dir()});
  SECTION("too few files") {
    files.pop_back();
    REQUIRE_THROWS_WITH(comm::attach_host_et_sizes(ops, job.traces, files), Catch::Contains("one per rank"));
  }
  SECTION("another rank's trace with other ops") {
    const std::string dir = test::fresh_dir("comm_et");
    test::write_text(dir + "/et.json",
                     R"({"nodes": [{"id": 1, "name": "nccl:all_gather", "inputs": [[1, 2, 0, 8, 4, "cuda:0"]]}]})");
    files[0] = dir + "/et.json";
    REQUIRE_THROWS_WITH(comm::attach_host_et_sizes(ops, job.traces, files),
                        Catch::Contains("et.json") && Catch::Contains("1 nccl:* ops but rank 0 has 8"));
  }
}

TEST_CASE("the A100 trace's kernels carry sizes and its single-rank collectives stay unmatched") {
  const auto job = test::load_a100();
  const auto ops = comm::find_comm_ops(job.built.dfg, job.traces);
  REQUIRE(ops.size() == 21);
  for (const auto& op : ops) {
    CHECK(op.size_source == comm::SizeSource::kTrace);
    CHECK_FALSE(op.matched());
    CHECK(op.group_size == 2);
  }
}

TEST_CASE("fitted on half of DLRM's collectives the model predicts the other half") {
  // The issue asks for 10% median error; measured (bench_comm): all-reduce below 10%, all-to-all
  // and overall above it. See docs/communication.md.
  const auto job = test::load_dlrm();
  const auto ops = test::dlrm_sized_ops(job);
  const comm::ClusterSpec& origin = *catalog().guess(job.traces);
  const auto samples = comm::make_samples(ops, origin);
  REQUIRE(samples.size() == 64);
  const auto ev = comm::evaluate_half_split(origin, samples);
  CHECK(ev.train_instances == 4);
  CHECK(ev.test_instances == 4);
  CHECK(ev.train + ev.test == samples.size());
  CHECK(ev.median_abs_error < 0.15);
  REQUIRE(ev.by_op.size() == 2);
  CHECK(ev.by_op[0].op == "allreduce");
  CHECK(ev.by_op[0].median_abs_error < 0.10);
}

TEST_CASE("the A100 trace's half split reports its error (its kernel times include waiting)") {
  const auto job = test::load_a100();
  const auto ops = comm::find_comm_ops(job.built.dfg, job.traces);
  const comm::ClusterSpec& origin = *catalog().guess(job.traces);
  const auto ev = comm::evaluate_half_split(origin, comm::make_samples(ops, origin));
  CHECK(ev.train + ev.test == 21);
  CHECK(ev.median_abs_error > 0);
  CHECK(ev.median_abs_error < 1.0);
}

TEST_CASE("the calibration recovers known scales from synthetic samples") {
  const comm::ClusterSpec& c = catalog().get("dgx-a100");
  const comm::CollectiveModel truth(c, comm::Calibration{{1.5, 2.0}, {3.0, 0.5}});
  std::vector<comm::CommSample> samples;
  for (int op : {0, 5}) {
    for (std::int64_t bytes = 1024; bytes < (std::int64_t{1} << 31); bytes *= 4) {
      comm::CommSample s;
      s.call = {static_cast<comm::CollectiveOp>(op), bytes, comm::place(c, 8)};
      // The truth's choice may differ from the uncalibrated one; keep the samples where they agree.
      const auto raw = comm::CollectiveModel(c).estimate_uncalibrated(s.call);
      const auto t = truth.estimate(s.call);
      if (raw.algorithm != t.algorithm || raw.protocol != t.protocol) continue;
      s.time_us = t.time_us;
      samples.push_back(s);
    }
  }
  const comm::Calibration fit = comm::fit_calibration(c, samples);
  CHECK(fit.latency_scale[0] == Approx(1.5).epsilon(0.01));
  CHECK(fit.byte_time_scale[0] == Approx(3.0).epsilon(0.01));
  CHECK(fit.latency_scale[1] == Approx(2.0).epsilon(0.01));
  CHECK(fit.byte_time_scale[1] == Approx(0.5).epsilon(0.01));
  const comm::Calibration none = comm::fit_calibration(c, {});
  CHECK(none.latency_scale[0] == 1.0);
}
