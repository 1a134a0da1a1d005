// The arena plan: tensors live at one time never share bytes, storage is reused, and on the
// schedules of bundled traces the arena stays within 1.2x of the live-tensor peak.
#include <catch2/catch.hpp>

#include "executor/memory_plan.h"
#include "executor_fixtures.h"

using namespace dpro;
using executor::TensorLife;

namespace {

void require_no_overlap(const std::vector<TensorLife>& tensors, const executor::MemoryPlan& plan) {
  for (std::size_t a = 0; a < tensors.size(); ++a) {
    REQUIRE(plan.offsets[a] + executor::aligned_bytes(tensors[a].bytes) <= plan.arena_bytes);
    for (std::size_t b = a + 1; b < tensors.size(); ++b) {
      const bool together = tensors[a].first <= tensors[b].last && tensors[b].first <= tensors[a].last;
      if (!together) continue;
      const std::uint64_t a_end = plan.offsets[a] + executor::aligned_bytes(tensors[a].bytes);
      const std::uint64_t b_end = plan.offsets[b] + executor::aligned_bytes(tensors[b].bytes);
      const bool disjoint = a_end <= plan.offsets[b] || b_end <= plan.offsets[a];
      if (!disjoint) FAIL("tensors " << a << " and " << b << " are live together and overlap");
    }
  }
}

}  // namespace

TEST_CASE("memory plan: tensors whose lifetimes do not overlap share storage") {
  // A chain a -> b -> c of 1 MiB outputs: a and c never live together.
  const std::vector<TensorLife> chain = {{1 << 20, 0, 1}, {1 << 20, 1, 2}, {1 << 20, 2, 3}};
  const executor::MemoryPlan plan = executor::plan_memory(chain);
  require_no_overlap(chain, plan);
  CHECK(plan.live_peak_bytes == 2u << 20);
  CHECK(plan.arena_bytes == 2u << 20);
  CHECK(plan.offsets[0] == plan.offsets[2]);
}

TEST_CASE("memory plan: the live peak counts aligned sizes at the busiest position") {
  const std::vector<TensorLife> t = {{1, 0, 0}, {300, 0, 5}, {1000, 3, 4}, {10, 5, 5}};
  // Position 3 and 4: 512 + 1024; position 5: 512 + 256.
  CHECK(executor::live_peak(t) == 512 + 1024);
  const executor::MemoryPlan plan = executor::plan_memory(t);
  require_no_overlap(t, plan);
  CHECK(plan.arena_bytes >= plan.live_peak_bytes);
}

TEST_CASE("memory plan: a bundled trace's schedule needs at most 1.2x its live-tensor peak, in one allocation") {
  const char* traces[] = {"traces/h100/gpt2-emit-nvtx-step", "traces/h100/resnet50-bf16-emit-nvtx-step",
                          "traces/h100/bert-ddp-emit-nvtx-step", "traces/dlrm-8xV100"};
  for (const char* path : traces) {
    SECTION(path) {
      const whatif::Workload w = test::load_workload(path);
      test::FakeRun run;
      run.schedule = executor::build_schedule(w, {});
      const executor::Schedule& s = run.schedule;
      INFO(path << ": " << s.tensors.size() << " tensors, arena " << s.memory.arena_bytes << " B, live peak "
                << s.memory.live_peak_bytes << " B");
      REQUIRE(s.tensors.size() > 100);  // the window's launches have sized operands
      require_no_overlap(s.tensors, s.memory);
      CHECK(s.memory.arena_bytes >= s.memory.live_peak_bytes);
      CHECK(static_cast<double>(s.memory.arena_bytes) <= 1.2 * static_cast<double>(s.memory.live_peak_bytes));
      std::uint64_t sum = 0;
      for (const TensorLife& t : s.tensors) sum += executor::aligned_bytes(t.bytes);
      CHECK(s.memory.arena_bytes < sum);  // storage is reused
      test::run_on_fake(run, 1);
      CHECK(run.device.allocations() == 1);
      CHECK(run.device.peak_allocated_bytes() == s.memory.arena_bytes);
      CHECK(run.device.violations().empty());
    }
  }
}

TEST_CASE("memory plan: random lifetimes and sizes never overlap while live, and stay near the live peak") {
  std::uint64_t state = 12345;  // a fixed LCG: the same tensors every run
  auto next = [&](std::uint64_t bound) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % bound;
  };
  for (int round = 0; round < 20; ++round) {
    std::vector<TensorLife> t;
    for (int i = 0; i < 300; ++i) {
      const auto first = static_cast<std::uint32_t>(next(1000));
      const auto length = static_cast<std::uint32_t>(next(next(2) ? 5 : 200));
      t.push_back({1 + next(1ull << (10 + next(14))), first, first + length});
    }
    const executor::MemoryPlan plan = executor::plan_memory(t);
    require_no_overlap(t, plan);
    CHECK(plan.arena_bytes >= plan.live_peak_bytes);
    CHECK(static_cast<double>(plan.arena_bytes) <= 1.5 * static_cast<double>(plan.live_peak_bytes));
  }
}
