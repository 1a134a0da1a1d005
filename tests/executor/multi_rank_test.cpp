// Several ranks of the bundled 8-rank DLRM trace, one fake device each, joined by the fake
// collective fabric: every group's collectives are issued in the same order on every member, a
// collective waits for its last member, a rank that never issues one ends the run with an error.
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <numeric>

#include "core/error.h"
#include "executor/fake_fabric.h"
#include "executor/multi_rank.h"
#include "executor_fixtures.h"

using namespace dpro;
using executor::FakeDevice;

namespace {

const whatif::Workload& dlrm() {
  static const whatif::Workload w = test::load_workload("traces/dlrm-8xV100");
  return w;
}

struct MultiFakeRun {
  std::vector<std::unique_ptr<FakeDevice>> devices;
  std::vector<executor::RunResult> results;
};

MultiFakeRun run_on_fakes(const executor::MultiRankSchedule& m, int iterations,
                          std::chrono::milliseconds patience = std::chrono::seconds(60)) {
  MultiFakeRun run;
  executor::FakeFabric fabric(patience);
  std::vector<executor::Device*> devices;
  for (std::size_t r = 0; r < m.ranks.size(); ++r) {
    run.devices.push_back(std::make_unique<FakeDevice>());
    devices.push_back(run.devices.back().get());
  }
  executor::RunOptions options;
  options.iterations = iterations;
  run.results = executor::run_ranks(devices, &fabric, m, options);
  return run;
}

// The fake's collective launches on communicators, in the order the device saw them.
std::vector<FakeDevice::Call> collective_calls(const FakeDevice& d) {
  std::vector<FakeDevice::Call> out;
  for (const FakeDevice::Call& c : d.calls()) {
    if (c.kind != FakeDevice::CallKind::kLaunch) continue;
    const auto* call = std::get_if<executor::CollectiveCall>(&*c.launch);
    if (call && call->comm != 0) out.push_back(c);
  }
  return out;
}

Nanos total_wait(const FakeDevice& d) {
  Nanos sum = 0;
  for (const FakeDevice::Call& c : collective_calls(d)) sum += c.collective_wait;
  return sum;
}

void check_ranks_run(const std::vector<int>& ranks) {
  const executor::MultiRankSchedule m = executor::build_multi_rank_schedule(dlrm(), ranks, {});
  REQUIRE(m.ranks.size() == ranks.size());
  REQUIRE_FALSE(m.groups.empty());
  for (const executor::RankGroup& g : m.groups) {
    CHECK(g.ranks == ranks);  // DLRM's groups span the job: narrowed to the scheduled ranks
    CHECK(g.collectives > 0);
  }
  for (const executor::Schedule& s : m.ranks) CHECK(s.window == m.ranks.front().window);
  const MultiFakeRun run = run_on_fakes(m, 2);
  std::size_t per_rank = 0;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    INFO("rank " << ranks[r]);
    CHECK(run.devices[r]->violations().empty());
    REQUIRE(run.results[r].iteration_ns.size() == 2);
    CHECK(run.results[r].iteration_ns.back() > 0);
    const std::vector<FakeDevice::Call> calls = collective_calls(*run.devices[r]);
    if (r == 0) per_rank = calls.size();
    CHECK(calls.size() == per_rank);  // every member issued every collective, both iterations
  }
  std::size_t expected = 0;
  for (const executor::RankGroup& g : m.groups) expected += 2 * g.collectives;
  CHECK(per_rank == expected);
}

}  // namespace

TEST_CASE("multi-rank: DLRM ranks 0-3 run their collectives on one communicator per group, same order, no violation") {
  check_ranks_run({0, 1, 2, 3});
}

TEST_CASE("multi-rank: all 8 DLRM ranks run their collectives together on fake devices without a deadlock") {
  check_ranks_run({0, 1, 2, 3, 4, 5, 6, 7});
}

TEST_CASE("multi-rank: a late rank delays the others' collectives, and the wait is measured") {
  executor::MultiRankSchedule m = executor::build_multi_rank_schedule(dlrm(), {0, 1, 2, 3}, {});
  const MultiFakeRun on_time = run_on_fakes(m, 1);
  // Rank 1's main thread starts 50 ms late: longer than the whole step (about 18 ms on the fake).
  constexpr Nanos kLate = 50'000'000;
  auto& steps = m.ranks[1].threads.front().steps;
  steps.insert(steps.begin(), executor::HostStep{executor::StepKind::kSpin, 0, 0, kLate, {}});
  const MultiFakeRun late = run_on_fakes(m, 1);
  for (std::size_t r : {0u, 2u, 3u}) {
    const Nanos step = on_time.results[r].iteration_ns[0];
    INFO("rank " << r << ": step " << step << " ns; waited " << total_wait(*on_time.devices[r]) << " ns on time, "
                 << total_wait(*late.devices[r]) << " ns with rank 1 late");
    REQUIRE(step < kLate);
    // Its first collective waits for rank 1: at least the lateness less the step's own length.
    CHECK(collective_calls(*late.devices[r]).front().collective_wait >= kLate - step);
    CHECK(total_wait(*late.devices[r]) >= total_wait(*on_time.devices[r]) + kLate - step);
    // And its GPU work, which the iteration waits for, ends after rank 1 arrived.
    CHECK(late.results[r].iteration_ns[0] >= kLate);
  }
  // The late rank does not wait for its first collective: everyone else was there before it.
  CHECK(collective_calls(*late.devices[1]).front().collective_wait == 0);
}

TEST_CASE("multi-rank: members that would issue different collectives are found before the run, naming the group") {
  executor::MultiRankSchedule m = executor::build_multi_rank_schedule(dlrm(), {0, 1}, {});
  CHECK(executor::collective_order_mismatch(dlrm().graph.dfg, m).empty());
  for (std::size_t i = 0; i < m.launch_group[1].size(); ++i) {
    if (m.launch_group[1][i] == executor::kNoGroup) continue;
    std::get<executor::CollectiveCall>(m.ranks[1].launches[i].lowered.launch).bytes += 4;  // rank 1's first collective grows
    break;
  }
  const std::string bad = executor::collective_order_mismatch(dlrm().graph.dfg, m);
  INFO(bad);
  CHECK(bad.find("group ") == 0);
  CHECK(bad.find("position 0") != std::string::npos);
  // Run anyway, the fake fabric keeps the mismatch as a violation of rank 1's device.
  // (whichever of the two issues it second keeps it).
  const MultiFakeRun run = run_on_fakes(m, 1);
  std::vector<std::string> seen = run.devices[0]->violations();
  for (const std::string& v : run.devices[1]->violations()) seen.push_back(v);
  REQUIRE(seen.size() == 1);
  CHECK(seen.front().find("collective #0: member ") == 0);
  CHECK(seen.front().find("24580 bytes") != std::string::npos);
}

namespace {

// Each launch's index among its group's collectives, counted in launch order.
std::vector<std::vector<std::uint32_t>> positions(const executor::MultiRankSchedule& m) {
  std::vector<std::vector<std::uint32_t>> out(m.ranks.size());
  for (std::size_t r = 0; r < m.ranks.size(); ++r) {
    std::vector<std::uint32_t> seen(m.groups.size(), 0);
    for (std::uint32_t g : m.launch_group[r]) out[r].push_back(g == executor::kNoGroup ? 0 : seen[g]++);
  }
  return out;
}

// Rank r's first `count` collectives of a group, by launch index.
std::vector<std::size_t> first_collectives(const executor::MultiRankSchedule& m, std::size_t r, std::size_t count) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < m.launch_group[r].size() && out.size() < count; ++i)
    if (m.launch_group[r][i] != executor::kNoGroup) out.push_back(i);
  return out;
}

}  // namespace

TEST_CASE("multi-rank: two groups' collectives issued in opposite stream orders on two ranks are a cycle, found before the run") {
  executor::MultiRankSchedule m = executor::build_multi_rank_schedule(dlrm(), {0, 1}, {});
  REQUIRE(m.groups.size() == 1);
  CHECK(executor::collective_wait_cycle(m, positions(m)).empty());
  const std::vector<std::size_t> a = first_collectives(m, 0, 2), b = first_collectives(m, 1, 2);
  REQUIRE(a.size() == 2);
  REQUIRE(b.size() == 2);
  REQUIRE(m.ranks[0].launches[a[0]].stream == m.ranks[0].launches[a[1]].stream);
  REQUIRE(m.ranks[1].launches[b[0]].stream == m.ranks[1].launches[b[1]].stream);
  m.groups.push_back({"B", {0, 1}, 2, 0});
  SECTION("the same collective moved to group B on both ranks: both issue B#0 first, no cycle") {
    m.launch_group[0][a[0]] = 1;
    m.launch_group[1][b[0]] = 1;
    CHECK(executor::collective_wait_cycle(m, positions(m)).empty());
  }
  SECTION("rank 0 issues B#0 before A#0, rank 1 A#0 before B#0: a cycle naming both ranks and collectives") {
    m.launch_group[0][a[0]] = 1;
    m.launch_group[1][b[1]] = 1;
    const std::string cycle = executor::collective_wait_cycle(m, positions(m));
    INFO(cycle);
    CHECK(cycle.find("cycle (NCCL would hang)") != std::string::npos);
    CHECK(cycle.find("rank 0 issues group B #0 before group ") != std::string::npos);
    CHECK(cycle.find("rank 1 issues group ") != std::string::npos);
    CHECK(cycle.find(" before group B #0") != std::string::npos);
  }
}

TEST_CASE("multi-rank: a rank that never issues a collective ends the run with an error naming it, not a hang") {
  executor::MultiRankSchedule m = executor::build_multi_rank_schedule(dlrm(), {0, 1, 2}, {});
  std::size_t last = 0;
  for (std::size_t i = 0; i < m.launch_group[2].size(); ++i)
    if (m.launch_group[2][i] != executor::kNoGroup) last = i;
  m.launch_group[2][last] = executor::kNoGroup;  // rank 2 runs its last collective as a stand-in
  try {
    run_on_fakes(m, 1, std::chrono::milliseconds(300));
    FAIL("the run should have failed");
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("fake collective deadlock") != std::string::npos);
    CHECK(what.find("member(s) 2 did not issue it") != std::string::npos);
  }
}

TEST_CASE("multi-rank: bad rank lists are option errors") {
  CHECK_THROWS_AS(executor::build_multi_rank_schedule(dlrm(), {0, 9}, {}), OptionError);
  CHECK_THROWS_AS(executor::build_multi_rank_schedule(dlrm(), {1, 1}, {}), OptionError);
  CHECK_THROWS_AS(executor::build_multi_rank_schedule(dlrm(), {}, {}), OptionError);
}
