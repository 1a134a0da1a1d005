// The GPU-op and collective tables, checked against sums computed straight from the raw Kineto
// JSON (not through dpro's importer or graph).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <map>

#include "core/byte_source.h"
#include "replayer/replay.h"
#include "replayer/tables.h"
#include "trace_fixtures.h"

using namespace dpro;

namespace {

struct RawSums {
  int rank = 0;
  double steps_us = 0;       // the ProfilerSteps' total (or the span of all GPU work without them)
  double gpu_ops_us = 0;     // kernels (not NCCL), copies, sets starting inside a step
  std::size_t collectives = 0;  // NCCL kernels starting inside a step
};

// Kineto: ts and dur in microseconds; GPU events of cat kernel, gpu_memcpy, gpu_memset.
RawSums raw_sums(const std::string& file) {
  const auto j = nlohmann::json::parse(read_whole_file(file));
  RawSums s;
  if (j.contains("distributedInfo")) s.rank = j["distributedInfo"].value("rank", 0);
  std::vector<std::pair<double, double>> steps;
  for (const auto& e : j.at("traceEvents"))
    if (e.value("ph", "") == "X" && e.value("name", "").rfind("ProfilerStep#", 0) == 0)
      steps.emplace_back(e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>());
  for (const auto& [b, e] : steps) s.steps_us += e - b;
  for (const auto& e : j.at("traceEvents")) {
    const std::string cat = e.value("cat", "");
    if (e.value("ph", "") != "X" || (cat != "kernel" && cat != "gpu_memcpy" && cat != "gpu_memset")) continue;
    const double ts = e["ts"].get<double>();
    const bool in = steps.empty() || std::any_of(steps.begin(), steps.end(), [&](const auto& w) { return ts >= w.first && ts < w.second; });
    if (!in) continue;
    if (e.value("name", "").rfind("ncclKernel", 0) == 0 || e.value("name", "").rfind("ncclDevKernel", 0) == 0) ++s.collectives;
    else s.gpu_ops_us += e["dur"].get<double>();
  }
  return s;
}

void check_against_raw(const std::vector<std::string>& inputs, const std::string& file) {
  test::CapturingLog log;
  const auto traces = test::load(inputs, log.log, true);
  const auto replay = replayer::replay_traces(traces, {}, log.log);
  const replayer::Tables t = replayer::make_tables(traces, replay.graph, replay.simulation, replay.report);
  const RawSums raw = raw_sums(file);
  Nanos measured = 0, predicted = 0;
  std::size_t collectives = 0;
  for (const auto& r : t.gpu_ops)
    if (r.rank == raw.rank) measured += r.measured, predicted += r.predicted;
  for (const auto& r : t.collectives)
    if (r.rank == raw.rank) collectives += r.count;
  double step_us = raw.steps_us;
  if (step_us == 0)  // no ProfilerStep: the whole trace is one window, judged against its replayed span
    for (const auto& it : replay.report.iterations) step_us += static_cast<double>(it.job_predicted_ns) / 1000.0;
  INFO(file << ": table " << measured << " ns, raw " << raw.gpu_ops_us << " us, steps " << step_us << " us");
  CHECK(std::abs(static_cast<double>(measured) / 1000.0 - raw.gpu_ops_us) <= 0.01 * step_us);
  CHECK(std::abs(static_cast<double>(predicted) / 1000.0 - raw.gpu_ops_us) <= 0.01 * step_us);  // the baseline replays as measured
  CHECK(collectives == raw.collectives);
  double shares = 0;
  for (const auto& r : t.gpu_ops)
    if (r.rank == raw.rank) shares += r.share;
  CHECK(shares <= 1.0 + 1e-9);
}

}  // namespace

TEST_CASE("GPU-op and collective tables agree with sums over the raw trace: A100 DDP rank 0") {
  const std::string f = test::source_path("traces/hta/a100-ws2-rank0-nccl.json.gz");
  check_against_raw({f}, f);
}

TEST_CASE("GPU-op and collective tables agree with sums over the raw trace: one rank of 8-rank DLRM") {
  const auto files = test::dlrm_files();
  check_against_raw({test::dlrm_dir()}, files.at(3));
}

TEST_CASE("GPU-op and collective tables agree with sums over the raw trace: AlexNet without ProfilerStep") {
  const std::string f = test::source_path("traces/hta/alexnet-a100-single.json.gz");
  check_against_raw({f}, f);
}

TEST_CASE("Tables render as text, JSON and CSV with one row per name and rank") {
  test::CapturingLog log;
  const auto traces = test::load({test::dlrm_dir()}, log.log);
  const auto replay = replayer::replay_traces(traces, {}, log.log);
  const replayer::Tables t = replayer::make_tables(traces, replay.graph, replay.simulation, replay.report);
  REQUIRE_FALSE(t.collectives.empty());
  const std::string csv = replayer::collectives_csv(t);
  CHECK(static_cast<std::size_t>(std::count(csv.begin(), csv.end(), '\n')) == t.collectives.size() + 1);
  CHECK(csv.rfind("rank,op,name,count,bytes,measured_ns,predicted_ns,transfer_ns,bus_gbps\n", 0) == 0);
  const auto j = replayer::to_json(t);
  CHECK(j.at("gpu_ops").size() == t.gpu_ops.size());
  for (const auto& r : t.collectives) {
    CHECK(r.transfer <= r.predicted);
    CHECK((r.op == "alltoall" || r.op == "allreduce"));
    CHECK(r.bytes > 0);
    REQUIRE(r.bus_gbps);
  }
  CHECK_THAT(replayer::render_collectives(t, 3), Catch::Contains("alltoall") && Catch::Contains("more (--top)"));
  for (std::size_t k = 1; k < t.gpu_ops.size(); ++k) CHECK(t.gpu_ops[k - 1].predicted >= t.gpu_ops[k].predicted);
}

TEST_CASE("Overlap and idle tables agree with the report's GPU breakdown on every rank and step of DLRM") {
  test::CapturingLog log;
  const auto traces = test::load({test::dlrm_dir()}, log.log);
  const auto replay = replayer::replay_traces(traces, {}, log.log);
  const replayer::Tables t = replayer::make_tables(traces, replay.graph, replay.simulation, replay.report);
  std::size_t rank_steps = 0;
  for (const auto& it : replay.report.iterations) rank_steps += it.ranks.size();
  REQUIRE(t.overlap.size() == rank_steps);
  REQUIRE(t.idle.size() == rank_steps);
  std::size_t k = 0;
  Nanos communication = 0;
  for (const auto& it : replay.report.iterations)
    for (const auto& r : it.ranks) {
      const replayer::OverlapRow& o = t.overlap[k];
      const replayer::IdleRow& i = t.idle[k++];
      REQUIRE(o.rank == r.rank);
      // The report gives compute first and communication only where no compute runs: exposed.
      CHECK(o.compute == r.gpu_busy[replayer::Category::kCompute]);
      CHECK(o.exposed() == r.gpu_busy[replayer::Category::kCommunication]);
      CHECK(o.overlapped <= std::min(o.compute, o.communication));
      CHECK(i.idle == r.gpu_idle);
      CHECK(i.host_wait + i.kernel_wait + i.peer_wait + i.other == i.idle);
      CHECK(o.span == r.predicted_ns);
      communication += o.communication;
    }
  CHECK(communication > 0);  // DLRM's all-to-alls and all-reduces
}

TEST_CASE("Operators: self within total, launched GPU time within the rank's GPU time, shapes where recorded") {
  test::CapturingLog log;
  const std::string f = test::source_path("traces/hta/sampled-ws128-rank0.json.gz");  // records "Input Dims"
  const auto traces = test::load({f}, log.log, true);
  const auto replay = replayer::replay_traces(traces, {}, log.log);
  const replayer::Tables t = replayer::make_tables(traces, replay.graph, replay.simulation, replay.report);
  REQUIRE(t.operators.size() > 10);
  bool shapes = false, launched = false;
  for (std::size_t k = 0; k < t.operators.size(); ++k) {
    const replayer::OperatorRow& r = t.operators[k];
    CHECK(r.self <= r.total);
    CHECK(r.gpu_self <= r.gpu);
    CHECK(r.name.rfind("ProfilerStep#", 0) != 0);  // the iteration marker is no operator
    if (k > 0) CHECK(t.operators[k - 1].self >= r.self);
    shapes = shapes || !r.shapes.empty();
    launched = launched || (r.name.rfind("aten::", 0) == 0 && r.gpu_self > 0);
  }
  CHECK(shapes);
  CHECK(launched);
  const std::string text = replayer::render_operators(t, 5);
  CHECK_THAT(text, Catch::Contains("more (--top)"));
  CHECK(replayer::to_json(t).at("operators").size() == t.operators.size());
}

TEST_CASE("Phases: forward, backward and optimizer of every step of the A100 trace, each inside its step") {
  test::CapturingLog log;
  const std::string f = test::source_path("traces/hta/a100-ws2-rank0-nccl.json.gz");
  const auto traces = test::load({f}, log.log, true);
  const auto replay = replayer::replay_traces(traces, {}, log.log);
  const replayer::Tables t = replayer::make_tables(traces, replay.graph, replay.simulation, replay.report);
  std::map<std::int64_t, Nanos> step_ns;
  for (const auto& it : replay.report.iterations) step_ns[it.number] = it.ranks.at(0).measured_ns;
  std::map<std::string, std::size_t> steps_with;
  for (const replayer::PhaseRow& p : t.phases) {
    ++steps_with[p.phase];
    CHECK(p.cpu <= step_ns.at(p.step));
    CHECK(p.ranges > 0);
  }
  for (const std::string phase : {"forward", "backward", "optimizer"}) CHECK(steps_with[phase] == step_ns.size());
  // Memory: a trace without "[memory]" events says so, per rank.
  REQUIRE(t.memory.size() == 1);
  CHECK_FALSE(t.memory.front().recorded);
  CHECK_THAT(replayer::render_memory(t), Catch::Contains("not recorded"));
}
