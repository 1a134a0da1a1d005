// All-to-alls, also where the trace records them as grouped SendRecv kernels, are priced as
// all-to-alls over their group (issue 29): DLRM's (sized by their nccl:all_to_all ranges), the
// same with no size recorded (sizes inferred by inverting the model), and a small synthetic job.
#include <catch2/catch.hpp>

#include <memory>
#include <optional>

#include "costmodel/comm/comm_ops.h"
#include "test_paths.h"
#include "trace_fixtures.h"
#include "whatif/evaluate.h"
#include "workload_fixtures.h"

using namespace dpro;
using test::load_workload;

namespace {

constexpr int kAllToAll = static_cast<int>(comm::CollectiveOp::kAllToAll);
constexpr int kSendRecv = static_cast<int>(comm::CollectiveOp::kSendRecv);

whatif::CommRetime at_ranks(int ranks) {
  whatif::CommRetime c;
  c.clusters_dir = test::source_path("configs/clusters");
  c.ranks = ranks;
  return c;
}

Nanos job_ns(const replayer::Report& r) { return r.iterations.at(0).job_predicted_ns; }

const whatif::CommChange& comm_change(const whatif::Evaluation& e) {
  REQUIRE(e.changes.size() == 1);
  return std::get<whatif::CommChange>(e.changes[0]);
}

// A workload from trace files; `strip_sizes`: with every collective's recorded size left out,
// as a trace taken without record_shapes has them.
whatif::Workload workload_of(const std::vector<std::string>& paths, bool strip_sizes) {
  Logger quiet(LogLevel::kQuiet);
  trace::TraceSet traces = test::load(paths, quiet);
  if (strip_sizes) {
    for (trace::TraceRank& r : traces.ranks)
      for (trace::EventAttrs& a : r.attrs)
        if (a.collective) a.collective->in_nelems.reset();
  }
  auto shared = std::make_shared<const trace::TraceSet>(std::move(traces));
  graph::BuiltGraph built = graph::build_graph(*shared, graph::BuildOptions{}, quiet);
  return {shared, std::move(built)};
}

}  // namespace

TEST_CASE("all-to-alls: DLRM's SendRecv kernels are all-to-alls sized by the trace, and --ranks grows their transfer") {
  const whatif::Workload base = load_workload("traces/dlrm-8xV100");
  replayer::Simulator simulator;
  const Nanos plain = job_ns(whatif::evaluate(base, {}, simulator, {}).report);
  Nanos previous_transfer = 0, previous_job = 0;
  for (const int n : {8, 16, 32, 64, 128, 256, 512, 1024}) {
    INFO(n << " ranks");
    const whatif::Evaluation e = whatif::evaluate(base, {at_ranks(n)}, simulator, {});
    const whatif::CommChange& c = comm_change(e);
    CHECK(c.sized_by_trace == 64);
    CHECK(c.sizes_inferred == 0);
    // 40 all-to-alls (5 per rank), their transfers after the last peer arrived: 334 us in all.
    CHECK(c.retimed.before_by_op[kAllToAll] == 334 * kNanosPerMicro);
    CHECK(c.retimed.before_by_op[kSendRecv] == 0);
    const Nanos transfer = c.retimed.after_by_op[kAllToAll];
    if (n == 8) {
      CHECK(transfer == c.retimed.before_by_op[kAllToAll]);
      CHECK(job_ns(e.report) == plain);
    } else {
      CHECK(transfer > previous_transfer);
    }
    CHECK(job_ns(e.report) >= previous_job);
    previous_transfer = transfer;
    previous_job = job_ns(e.report);
  }
  // A latency/bandwidth estimate for 1024 V100s (128 DGX-1s): each all-to-all reaches 1023 peers
  // over the network, ~128 rounds of 8 peers at 2.5-5 us, 320-640 us; 5 per step: 1.6-3.2 ms of
  // all-to-all per rank and step. The trace holds 8 ranks of one step each.
  CHECK(previous_transfer / 8 >= 1600 * kNanosPerMicro);
  CHECK(previous_transfer / 8 <= 3200 * kNanosPerMicro);
  CHECK(previous_job > plain);
}

TEST_CASE("all-to-alls: the what-if re-times their transfer, never the wait for their last peer") {
  const whatif::Workload base = load_workload("traces/dlrm-8xV100");
  const auto ops = comm::find_comm_ops(base.graph.dfg, *base.traces);
  Nanos transfer = 0, measured = 0;
  for (const comm::CommOp& op : ops) {
    if (op.op != comm::CollectiveOp::kAllToAll) continue;
    CHECK(op.matched());
    transfer += op.transfer;
    measured += base.graph.dfg.node(op.node).measured_duration;
  }
  // The kernels' measured time is mostly waiting for peers (37.9 ms against 334 us of transfer).
  CHECK(transfer == 334 * kNanosPerMicro);
  CHECK(measured > 50 * transfer);
  replayer::Simulator simulator;
  const whatif::Evaluation e = whatif::evaluate(base, {at_ranks(1024)}, simulator, {});
  Nanos after = 0;
  for (const comm::CommOp& op : ops) {
    if (op.op != comm::CollectiveOp::kAllToAll) continue;
    const graph::Node& n = e.workload.graph.dfg.node(op.node);
    CHECK(n.duration == e.workload.graph.dfg.edge(op.end_edge).gap);  // the transfer after the barrier, no more
    after += n.duration;
  }
  CHECK(after == comm_change(e).retimed.after_by_op[kAllToAll]);
}

TEST_CASE("all-to-alls without a recorded size: sizes inferred by inverting the model, counted, and priced over the group") {
  const whatif::Workload base = workload_of({test::dlrm_dir()}, true);
  replayer::Simulator simulator;
  const Nanos plain = job_ns(whatif::evaluate(base, {}, simulator, {}).report);
  const whatif::Evaluation same = whatif::evaluate(base, {at_ranks(8)}, simulator, {});
  CHECK(comm_change(same).sizes_inferred == 64);
  CHECK(comm_change(same).alltoalls_inferred == 40);
  CHECK(job_ns(same.report) == plain);
  // Latency-bound, they come out near zero bytes, but their group still sets their latency:
  // 1023 peers instead of 7 make them far slower than their measured 334 us.
  const whatif::Evaluation big = whatif::evaluate(base, {at_ranks(1024)}, simulator, {});
  const whatif::CommChange& c = comm_change(big);
  CHECK(c.retimed.after_by_op[kAllToAll] > 20 * c.retimed.before_by_op[kAllToAll]);
  CHECK(job_ns(big.report) > plain);
}

TEST_CASE("all-to-alls: a small two-rank job recorded as grouped SendRecv kernels is priced as all-to-alls") {
  const std::string dir = test::fresh_dir("alltoall_job");
  const std::string kernel = "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)";
  const std::vector<test::NcclCall> calls = {{"nccl:all_to_all", kernel, "[[6144]]", R"(["float"])"},
                                             {"nccl:all_to_all", kernel, "", ""}};
  for (const int rank : {0, 1}) test::write_nccl_trace(dir, rank, 2, calls);
  const whatif::Workload base = workload_of({dir}, false);
  const auto ops = comm::find_comm_ops(base.graph.dfg, *base.traces);
  REQUIRE(ops.size() == 4);
  for (const comm::CommOp& op : ops) {
    CHECK(op.op == comm::CollectiveOp::kAllToAll);
    CHECK(op.trace_op == "alltoall");
    CHECK(op.matched());
    CHECK(op.group_size == 2);
  }
  CHECK(ops[0].bytes == 6144 * 4);
  CHECK(ops[0].size_source == comm::SizeSource::kTrace);
  CHECK_FALSE(ops[1].bytes);
  replayer::Simulator simulator;
  const Nanos plain = job_ns(whatif::evaluate(base, {}, simulator, {}).report);
  const whatif::Evaluation same = whatif::evaluate(base, {at_ranks(2)}, simulator, {});
  CHECK(job_ns(same.report) == plain);
  CHECK(comm_change(same).sized_by_trace == 2);
  CHECK(comm_change(same).alltoalls_inferred == 2);
  const whatif::Evaluation big = whatif::evaluate(base, {at_ranks(64)}, simulator, {});
  const whatif::CommChange& c = comm_change(big);
  CHECK(c.retimed.after_by_op[kAllToAll] > c.retimed.before_by_op[kAllToAll]);
  CHECK(c.retimed.after_by_op[kSendRecv] == 0);
}
