#include <catch2/catch.hpp>

#include <algorithm>

#include "comm_fixtures.h"
#include "core/error.h"
#include "costmodel/comm/calibration.h"
#include "whatif/comm/retime.h"
#include "whatif/comm/scale_out.h"
#include "replayer/replay.h"

using namespace dpro;

namespace {

const comm::ClusterCatalog& catalog() {
  static const auto cat = comm::ClusterCatalog::load_directory(test::clusters_dir());
  return cat;
}

struct Retimed {
  graph::Dfg dfg;
  comm::RetimeStats stats;
};

// The DLRM graph with collectives re-timed from its own cluster to `target` on `ranks` ranks.
Retimed retimed(const test::LoadedJob& job, const comm::ClusterSpec& target, int ranks) {
  Retimed r{job.built.dfg, {}};
  auto ops = comm::find_comm_ops(r.dfg, job.traces);
  comm::attach_host_et_sizes(ops, job.traces, trace::expand_host_et_paths({test::dlrm_host_et_dir()}));
  const comm::ClusterSpec& origin = *catalog().guess(job.traces.gpu_names());
  const auto cal = comm::fit_calibration(origin, comm::make_samples(ops, origin));
  r.stats = comm::retime_collectives(r.dfg, ops, comm::CollectiveModel(origin, cal), comm::CollectiveModel(target, cal), ranks);
  return r;
}

Nanos plain_job(const test::LoadedJob& job) {
  Logger quiet(LogLevel::kQuiet);
  return replayer::replay_traces(job.traces, replayer::ReplayOptions{}, quiet).report.iterations.at(0).job_predicted_ns;
}

}  // namespace

TEST_CASE("ranks equal to the world size on the trace's own cluster reproduce the plain replay") {
  const auto job = test::load_dlrm();
  const Nanos plain = plain_job(job);
  const auto r = retimed(job, *catalog().guess(job.traces.gpu_names()), 8);
  CHECK(r.stats.ops == 64);
  CHECK(r.stats.after == r.stats.before);
  for (bool expand : {false, true}) {
    const auto s = comm::simulate_scaled_job(job.traces, job.built.ranks, r.dfg, 8, expand);
    REQUIRE(s.iterations.size() == 1);
    CHECK(s.iterations[0].number == 10);
    CHECK(std::abs(s.iterations[0].job_predicted_ns - plain) <= plain / 100);
    CHECK(s.iterations[0].job_predicted_ns == plain);
  }
}

TEST_CASE("without ProfilerStep the scaled job is the whole trace and matches the report at its own size") {
  auto job = test::load_dlrm();
  for (auto& rank : job.traces.ranks) rank.iterations.clear();  // as if recorded without a schedule
  Logger quiet(LogLevel::kQuiet);
  const auto report = replayer::replay_traces(job.traces, replayer::ReplayOptions{}, quiet).report;
  REQUIRE(report.iterations.size() == 1);
  REQUIRE(report.iterations[0].whole_trace);
  const Nanos plain = report.iterations[0].job_predicted_ns;
  const auto own = retimed(job, *catalog().guess(job.traces.gpu_names()), 8);
  for (bool expand : {false, true}) {
    const auto s = comm::simulate_scaled_job(job.traces, job.built.ranks, own.dfg, 8, expand);
    REQUIRE(s.iterations.size() == 1);
    CHECK(s.iterations[0].whole_trace);
    CHECK(s.iterations[0].job_predicted_ns == plain);
  }
  // Scale-in: the 4-rank job's window covers ranks 0-3 only, so it cannot outlast the 8-rank one
  // by more than the all-to-alls it no longer waits for could add; it is a time, not nothing.
  const auto in = retimed(job, *catalog().guess(job.traces.gpu_names()), 4);
  const auto s4 = comm::simulate_scaled_job(job.traces, job.built.ranks, in.dfg, 4, false);
  REQUIRE(s4.iterations.size() == 1);
  CHECK(s4.iterations[0].whole_trace);
  CHECK(s4.iterations[0].job_predicted_ns > plain / 2);
  CHECK(s4.iterations[0].job_predicted_ns < plain);
}

TEST_CASE("symmetric scale-out equals the fully expanded replay") {
  const auto job = test::load_dlrm();
  for (int ranks : {16, 64}) {
    INFO(ranks << " ranks");
    const auto r = retimed(job, *catalog().guess(job.traces.gpu_names()), ranks);
    CHECK(r.stats.resized_groups == 64);
    CHECK(r.stats.after > r.stats.before);  // a 64-rank ring has more hops than an 8-rank one
    const auto sym = comm::simulate_scaled_job(job.traces, job.built.ranks, r.dfg, ranks, false);
    const auto full = comm::simulate_scaled_job(job.traces, job.built.ranks, r.dfg, ranks, true);
    CHECK_FALSE(sym.expanded);
    CHECK(full.expanded);
    CHECK(full.nodes > sym.nodes * (ranks / 8 - 1));
    REQUIRE(sym.iterations.size() == 1);
    REQUIRE(full.iterations.size() == 1);
    CHECK(sym.iterations[0].job_predicted_ns == full.iterations[0].job_predicted_ns);
    CHECK(sym.iterations[0].job_predicted_ns >= plain_job(job));
  }
}

TEST_CASE("the expanded graph replicates every rank and shares one barrier per collective instance") {
  const auto job = test::load_dlrm();
  std::vector<IdVector<graph::NodeId, graph::NodeId>> maps;
  const graph::Dfg g = comm::replicate_ranks(job.built.dfg, job.traces, 24, maps);
  std::size_t barriers = 0, rank_nodes = 0;
  for (const auto& n : job.built.dfg.nodes()) (n.kind == graph::NodeKind::kBarrier ? barriers : rank_nodes) += 1;
  CHECK(g.node_count() == barriers + 3 * rank_nodes);
  REQUIRE(maps.size() == 3);
  int max_rank = 0;
  for (const auto& n : g.nodes()) max_rank = std::max(max_rank, n.rank);
  CHECK(max_rank == 23);
  CHECK(g.tracks().size() == 3 * job.built.dfg.tracks().size());
  // Each replica keeps its op's description (the graph's op table), the barriers theirs.
  for (const graph::NodeId id : job.built.dfg.node_ids())
    for (const auto& block : maps) {
      REQUIRE(block[id].valid());
      REQUIRE(g.op_of(block[id]) == job.built.dfg.op_of(id));
    }
  const auto& nodes = job.built.dfg.nodes();
  const auto first_op = std::find_if(nodes.begin(), nodes.end(), [](const graph::Node& n) { return graph::is_op(n.kind); });
  REQUIRE(first_op != nodes.end());
  CHECK(job.built.dfg.op_of(graph::NodeId::at(static_cast<std::size_t>(first_op - nodes.begin()))).valid());
}

TEST_CASE("scale-in to fewer ranks than the trace replays the expanded graph of those ranks") {
  const auto job = test::load_dlrm();
  const auto r = retimed(job, *catalog().guess(job.traces.gpu_names()), 4);
  const auto s = comm::simulate_scaled_job(job.traces, job.built.ranks, r.dfg, 4, false);
  CHECK(s.expanded);
  REQUIRE(s.iterations.size() == 1);
  CHECK(s.iterations[0].job_predicted_ns > 0);
  CHECK(s.iterations[0].job_predicted_ns <= plain_job(job));
}

TEST_CASE("scale_in gives the graph of the first N ranks: its report is the expanded N-rank job, ranks 0..N-1") {
  const auto job = test::load_dlrm();
  for (int n : {1, 4, 7}) {
    INFO(n);
    const auto r = retimed(job, *catalog().guess(job.traces.gpu_names()), n);
    const Nanos expanded = comm::simulate_scaled_job(job.traces, job.built.ranks, r.dfg, n, true).iterations.at(0).job_predicted_ns;
    graph::BuiltGraph full = job.built;
    full.dfg = r.dfg;
    const graph::BuiltGraph in = comm::scale_in(full, job.traces, n);
    const auto sim = replayer::simulate(in.dfg);
    const auto report = replayer::make_report(job.traces, in, sim, replayer::ReportOptions{});
    REQUIRE(report.iterations.size() == 1);
    const auto& it = report.iterations[0];
    REQUIRE(it.ranks.size() == static_cast<std::size_t>(n));
    for (int k = 0; k < n; ++k) CHECK(it.ranks[k].rank == k);
    CHECK(it.job_predicted_ns == expanded);
    for (const auto& node : in.dfg.nodes()) CHECK((node.kind == graph::NodeKind::kBarrier || node.rank < n));
  }
  // The 4-rank job is not the 8-rank one (the bug: the 8 trace ranks were reported).
  const auto r4 = retimed(job, *catalog().guess(job.traces.gpu_names()), 4);
  CHECK(comm::simulate_scaled_job(job.traces, job.built.ranks, r4.dfg, 4, true).iterations.at(0).job_predicted_ns !=
        plain_job(job));
}

TEST_CASE("scale-out to ranks that do not fill whole nodes is rejected") {
  const auto job = test::load_dlrm();
  REQUIRE_THROWS_WITH(retimed(job, *catalog().guess(job.traces.gpu_names()), 12), Catch::Contains("whole nodes of 8"));
}
