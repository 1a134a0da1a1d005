// Schedules of bundled traces played on the fake device: every dependency of the graph is kept,
// host threads issue their launches in recorded order, fused nodes run as one kernel.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"
#include "executor_fixtures.h"
#include "whatif/op_fusion.h"

using namespace dpro;
using executor::HostStep;
using executor::StepKind;
using graph::EdgeKind;

namespace {

using Call = executor::FakeDevice::Call;

// Positions of the scheduled GPU ops, by node.
std::map<graph::NodeId, std::uint32_t> positions(const executor::Schedule& s) {
  std::map<graph::NodeId, std::uint32_t> out;
  for (std::uint32_t i = 0; i < s.launches.size(); ++i) out[s.launches[i].node] = i;
  return out;
}

// The fake's launch calls of the first iteration (up to the second whole-device sync), per thread.
std::map<std::thread::id, std::vector<Call>> first_iteration_launches(const executor::FakeDevice& device) {
  std::map<std::thread::id, std::vector<Call>> out;
  int syncs = 0;
  for (const Call& c : device.calls()) {
    if (c.kind == executor::FakeDevice::CallKind::kSyncDevice && ++syncs == 2) break;
    if (c.kind == executor::FakeDevice::CallKind::kLaunch) out[c.thread].push_back(c);
  }
  return out;
}

bool same_launch(const executor::Launch& a, const executor::Launch& b, const executor::FakeDevice& d) {
  if (a.index() != b.index() || d.launch_duration(a) != d.launch_duration(b)) return false;
  const auto* sa = std::get_if<executor::StandinKernel>(&a);
  const auto* sb = std::get_if<executor::StandinKernel>(&b);
  return !sa || (sa->grid == sb->grid && sa->block == sb->block);
}

// Every GPU -> GPU edge of the window: the later op ran after the earlier one (last iteration).
void require_gpu_order(const graph::Dfg& dfg, const test::FakeRun& run) {
  const auto pos = positions(run.schedule);
  std::size_t checked = 0;
  for (graph::EdgeId e : dfg.edge_ids()) {
    const graph::Edge& edge = dfg.edge(e);
    const auto src = pos.find(edge.src), dst = pos.find(edge.dst);
    if (src == pos.end() || dst == pos.end()) continue;
    const Nanos after = edge.dst_point == graph::Point::kStart ? run.result.launch_start_ns[dst->second]
                                                               : run.result.launch_end_ns[dst->second];
    INFO("edge " << graph::to_string(edge.kind) << " " << edge.src.value << " -> " << edge.dst.value);
    REQUIRE(after >= run.result.launch_end_ns[src->second]);
    ++checked;
  }
  CHECK(checked > 0);
}

// Each CPU node's launches come after its spin on its thread; each blocking call synchronises on an
// event recorded right after the GPU op it waited for.
void require_host_edges(const graph::Dfg& dfg, const executor::Schedule& s) {
  std::map<graph::NodeId, std::pair<std::size_t, std::size_t>> spin_at;  // node -> (thread, step)
  std::map<graph::NodeId, std::pair<std::size_t, std::size_t>> launch_at;
  std::map<graph::NodeId, std::uint32_t> event_after;
  std::map<graph::NodeId, std::set<std::uint32_t>> synced;
  for (std::size_t t = 0; t < s.threads.size(); ++t) {
    const auto& steps = s.threads[t].steps;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const HostStep& st = steps[i];
      if (st.kind == StepKind::kSpin) spin_at[st.node] = {t, i};
      if (st.kind == StepKind::kLaunch) launch_at[st.node] = {t, i};
      if (st.kind == StepKind::kRecord) event_after[st.node] = st.index;
      if (st.kind == StepKind::kSyncEvent) synced[st.node].insert(st.index);
    }
  }
  std::size_t launches = 0, syncs = 0;
  for (graph::EdgeId e : dfg.edge_ids()) {
    const graph::Edge& edge = dfg.edge(e);
    if (edge.kind == EdgeKind::kLaunch && launch_at.contains(edge.dst) && spin_at.contains(edge.src)) {
      REQUIRE(launch_at[edge.dst].first == spin_at[edge.src].first);
      REQUIRE(launch_at[edge.dst].second > spin_at[edge.src].second);
      ++launches;
    }
    if (edge.kind == EdgeKind::kBlockingSync && launch_at.contains(edge.src) && (spin_at.contains(edge.dst) || synced.contains(edge.dst))) {
      REQUIRE(event_after.contains(edge.src));
      REQUIRE(synced[edge.dst].contains(event_after[edge.src]));
      ++syncs;
    }
  }
  CHECK(launches > 0);
  CHECK(syncs == s.stats.kept[static_cast<int>(EdgeKind::kBlockingSync)]);
}

// Each program's launches, in program order: as the fake received them from one thread, and in the
// recorded order of the CPU ops that launched them.
void require_issue_order(const graph::Dfg& dfg, const test::FakeRun& run) {
  const auto by_thread = first_iteration_launches(run.device);
  std::set<std::thread::id> matched;
  for (const executor::HostThread& t : run.schedule.threads) {
    std::vector<const executor::ScheduledLaunch*> program;
    Nanos last_spin_start = 0;
    for (const HostStep& st : t.steps) {
      if (st.kind == StepKind::kSpin) {
        REQUIRE(dfg.node(st.node).measured_start >= last_spin_start);  // recorded order
        last_spin_start = dfg.node(st.node).measured_start;
      }
      if (st.kind == StepKind::kLaunch) program.push_back(&run.schedule.launches[st.index]);
    }
    if (program.empty()) continue;
    bool found = false;
    for (const auto& [id, calls] : by_thread) {
      if (matched.contains(id) || calls.size() != program.size()) continue;
      bool same = true;
      for (std::size_t i = 0; same && i < calls.size(); ++i) same = same_launch(*calls[i].launch, program[i]->lowered.launch, run.device);
      if (same) {
        matched.insert(id);
        found = true;
        break;
      }
    }
    INFO("host thread " << t.name << " with " << program.size() << " launches");
    REQUIRE(found);
  }
}

void check_schedule(const char* path, int rank, std::size_t min_launches = 10) {
  const whatif::Workload w = test::load_workload(path);
  test::FakeRun run;
  executor::ScheduleOptions options;
  options.rank = rank;
  run.schedule = executor::build_schedule(w, options);
  REQUIRE(run.schedule.launches.size() >= min_launches);
  test::run_on_fake(run, 2);
  const auto violations = run.device.violations();
  INFO((violations.empty() ? std::string() : violations.front()));
  REQUIRE(violations.empty());
  REQUIRE(run.result.iteration_ns.size() == 2);
  CHECK(run.result.iteration_ns[1] > 0);
  // The fake is deterministic and the second iteration reuses the events of the first: same time.
  CHECK(run.result.iteration_ns[0] == run.result.iteration_ns[1]);
  require_gpu_order(w.graph.dfg, run);
  require_host_edges(w.graph.dfg, run.schedule);
  require_issue_order(w.graph.dfg, run);
  // Every launch ran once per iteration.
  std::size_t launch_calls = 0;
  for (const Call& c : run.device.calls()) launch_calls += c.kind == executor::FakeDevice::CallKind::kLaunch;
  CHECK(launch_calls == 2 * run.schedule.launches.size());
}

}  // namespace

TEST_CASE("schedule: a multi-stream trace keeps stream order, event waits, launches and syncs on the fake device") {
  check_schedule("traces/hta/cuda-event-sync-multistream.json.gz", 0, 5);
}

TEST_CASE("schedule: one step of GPT-2 on an H100 keeps every dependency on the fake device") {
  check_schedule("traces/h100/gpt2-emit-nvtx-step", 0);
}

TEST_CASE("schedule: one step of BERT under DDP keeps every dependency on the fake device") {
  check_schedule("traces/h100/bert-ddp", 0);
}

TEST_CASE("schedule: DLRM rank 3 of 8 keeps every dependency of its own and runs its collectives as stand-ins") {
  check_schedule("traces/dlrm-8xV100", 3);
  const whatif::Workload w = test::load_workload("traces/dlrm-8xV100");
  executor::ScheduleOptions options;
  options.rank = 3;
  const executor::Schedule s = executor::build_schedule(w, options);
  std::size_t collectives = 0;
  for (const executor::ScheduledLaunch& l : s.launches) {
    const auto* c = std::get_if<executor::CollectiveCall>(&l.lowered.launch);
    REQUIRE((c != nullptr) == (w.graph.dfg.node(l.node).kind == graph::NodeKind::kCollective));
    if (!c) continue;
    ++collectives;
    REQUIRE(c->standin_duration == w.graph.dfg.node(l.node).duration);
  }
  CHECK(collectives > 0);
  CHECK(s.stats.other_ranks > 0);  // the collectives' peers are on other ranks
}

TEST_CASE("schedule: a stream-wait trace schedules event waits and syncs") {
  const whatif::Workload w = test::load_workload("traces/hta/cuda-event-sync-multistream.json.gz");
  const executor::Schedule s = executor::build_schedule(w, {});
  CHECK(s.streams.size() >= 2);
  CHECK(s.events > 0);
  CHECK(s.stats.kept[static_cast<int>(EdgeKind::kStreamWait)] > 0);
  CHECK(s.stats.kept[static_cast<int>(EdgeKind::kBlockingSync)] > 0);
}

TEST_CASE("schedule: an unknown rank and an iteration past the rank's are option errors") {
  const whatif::Workload w = test::load_workload("traces/h100/gpt2-emit-nvtx-step");
  executor::ScheduleOptions bad_rank;
  bad_rank.rank = 5;
  CHECK_THROWS_AS(executor::build_schedule(w, bad_rank), OptionError);
  executor::ScheduleOptions bad_iteration;
  bad_iteration.iteration = 1000;
  CHECK_THROWS_AS(executor::build_schedule(w, bad_iteration), OptionError);
}

TEST_CASE("schedule: the op-fusion rewrite's fused nodes run as one kernel each") {
  whatif::Workload w = test::load_workload("traces/h100/gpt2-emit-nvtx-step");
  executor::ScheduleOptions options;
  options.iteration = 12;  // the step the capture recorded shapes in (emit_nvtx ran in it only)
  const executor::Schedule before = executor::build_schedule(w, options);
  const auto fusion = whatif::fuse_candidates(whatif::find_fusion_candidates(w));
  const whatif::OpFusionChange change = whatif::op_fusion(w, fusion);
  REQUIRE(change.instances > 0);
  test::FakeRun run;
  run.schedule = executor::build_schedule(w, options);
  const graph::Dfg& dfg = w.graph.dfg;
  std::size_t fused = 0, parts = 0, chains = 0;
  for (const executor::ScheduledLaunch& l : run.schedule.launches) {
    const graph::OpDesc* op = dfg.op(l.node);
    if (!op || op->parts.empty()) continue;
    ++fused;
    parts += op->parts.size();
    REQUIRE(l.lowered.op_class == executor::OpClass::kFused);
    if (const auto* c = std::get_if<executor::ElementwiseChain>(&l.lowered.launch)) {
      ++chains;
      REQUIRE(c->steps.size() == op->parts.size());
    }
  }
  INFO(fused << " fused nodes of " << parts << " kernels in the window, " << chains << " as elementwise chains");
  REQUIRE(fused > 0);
  // The parts' launches became one launch per fused node.
  CHECK(run.schedule.launches.size() == before.launches.size() - (parts - fused));
  test::run_on_fake(run, 1);
  REQUIRE(run.device.violations().empty());
  std::size_t launch_calls = 0;
  for (const Call& c : run.device.calls()) launch_calls += c.kind == executor::FakeDevice::CallKind::kLaunch;
  CHECK(launch_calls == run.schedule.launches.size());
  CHECK(chains > 0);
}

TEST_CASE("schedule: on the fake device a recorded step's host pacing reproduces its recorded duration within 5%") {
  // These steps are host-bound (the GPU idles between launches), so the iteration is the host
  // threads' spins, syncs and cross-thread waits as scheduled: a lost CPU gap, a thread started
  // early or a dropped sync would move it.
  for (const char* path : {"traces/h100/gpt2-emit-nvtx-step", "traces/h100/resnet50", "traces/h100/bert-ddp"}) {
    SECTION(path) {
      const whatif::Workload w = test::load_workload(path);
      test::FakeRun run;
      run.schedule = executor::build_schedule(w, {});
      test::run_on_fake(run, 2);
      const auto recorded = static_cast<double>(run.schedule.window_end - run.schedule.window_start);
      const auto measured = static_cast<double>(run.result.iteration_ns.back());
      INFO(path << ": recorded " << recorded << " ns, fake " << measured << " ns");
      CHECK(std::abs(measured - recorded) <= 0.05 * recorded);
    }
  }
}

TEST_CASE("schedule: host programs waiting for a record no thread issues are found before they run") {
  const whatif::Workload w = test::load_workload("traces/hta/cuda-event-sync-multistream.json.gz");
  executor::Schedule s = executor::build_schedule(w, {});
  CHECK(executor::stuck_host_step(s).empty());
  // Drop every record of one event: its waits and syncs can never be met.
  bool dropped = false;
  for (executor::HostThread& t : s.threads) {
    auto& steps = t.steps;
    const auto before = steps.size();
    steps.erase(std::remove_if(steps.begin(), steps.end(),
                               [](const HostStep& st) { return st.kind == StepKind::kRecord && st.index == 0; }),
                steps.end());
    dropped = dropped || steps.size() < before;
  }
  REQUIRE(dropped);
  CHECK(executor::stuck_host_step(s).find("waits for nothing") != std::string::npos);
}

TEST_CASE("schedule: every bundled trace's iteration runs on the fake device without a violation") {
  for (const char* path : {"traces/hta/alexnet-a100-single.json.gz", "traces/hta/amd-mi250-toy.json.gz",
                           "traces/hta/cuda-event-sync.json.gz", "traces/hta/cupti-counters.json.gz",
                           "traces/hta/no-rank.json.gz", "traces/hta/triton.json.gz", "traces/hta/cpu-only.json.gz",
                           "traces/h100/resnet18-gloo2", "traces/h100/resnet50-bf16", "traces/h200/gpt2-emit-nvtx-step"}) {
    SECTION(path) {
      const whatif::Workload w = test::load_workload(path);
      test::FakeRun run;
      run.schedule = executor::build_schedule(w, {});
      test::run_on_fake(run, 2);
      const auto v = run.device.violations();
      INFO((v.empty() ? std::string() : v.front()));
      CHECK(v.empty());
      CHECK(run.result.iteration_ns.size() == 2);
    }
  }
}
