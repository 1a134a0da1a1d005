// Clock alignment recovers known per-host offsets from synthetic skewed ranks.
#include <catch2/catch.hpp>

#include <random>

#include "trace/native/clock_alignment.h"

using namespace dpro;
using namespace dpro::trace;

namespace {

// A rank on `host` whose clock reads true_time + skew. It runs n allreduces on group "0"
// ending at 1 ms intervals (plus up to `jitter` ns of per-rank noise) and one ProfilerStep.
TraceRank skewed_rank(TraceSet& set, int rank, const std::string& host, Nanos skew, int n,
                      Nanos jitter, std::mt19937& rng, bool with_sequence = true) {
  TraceRank r;
  r.rank = rank;
  r.rank_known = true;
  r.host = host;
  r.resources.push_back({ResourceKind::kGpuStream, 0, 7, "stream 7"});
  std::uniform_int_distribution<Nanos> noise(0, jitter);
  const Nanos t0 = 1'700'000'000'000'000'000;
  for (int k = 0; k < n; ++k) {
    Event e;
    e.kind = EventKind::kCollective;
    e.dur = 200'000 + noise(rng);  // starts differ (waiting for peers), ends agree
    e.start = t0 + (k + 1) * kNanosPerMilli + noise(rng) + skew - e.dur;
    e.name = set.strings.intern("ncclDevKernel_AllReduce");
    e.attrs = static_cast<std::uint32_t>(r.attrs.size());
    EventAttrs a;
    a.collective = CollectiveInfo{};
    a.collective->op = "allreduce";
    a.collective->group_name = std::string("0");
    if (with_sequence) a.collective->sequence = k;
    r.attrs.push_back(a);
    r.events.push_back(e);
  }
  r.iterations.push_back({"ProfilerStep#0", 0, t0 + skew, t0 + skew + n * kNanosPerMilli, 0});
  return r;
}

}  // namespace

TEST_CASE("per-host offsets are recovered from matched collectives", "[clock]") {
  std::mt19937 rng(7);
  TraceSet set;
  const Nanos skew_b = 3'500'000, skew_c = -1'250'000, jitter = 2'000;
  for (int rank = 0; rank < 12; ++rank) {
    std::string host = rank < 4 ? "a" : rank < 8 ? "b" : "c";
    Nanos skew = host == "a" ? 0 : host == "b" ? skew_b : skew_c;
    set.ranks.push_back(skewed_rank(set, rank, host, skew, 50, jitter, rng, rank % 2 == 0));
  }
  Nanos b_start_before = set.ranks[5].events[0].start;
  Logger log(LogLevel::kQuiet);
  align_clocks(set, log);
  CHECK(log.warning_count() == 0);
  for (const auto& r : set.ranks) {
    Nanos expected = r.host == "a" ? 0 : r.host == "b" ? -skew_b : -skew_c;
    if (r.host == "a") {
      CHECK_FALSE(r.clock_offset);
      continue;
    }
    REQUIRE(r.clock_offset);
    CHECK(std::abs(*r.clock_offset - expected) <= jitter);
    CHECK(std::abs(r.iterations[0].start - 1'700'000'000'000'000'000) <= jitter);
  }
  // All ranks of a host share one offset.
  CHECK(set.ranks[4].clock_offset == set.ranks[7].clock_offset);
  CHECK(set.ranks[5].events[0].start == b_start_before + *set.ranks[5].clock_offset);
}

TEST_CASE("collectives without sequence numbers match by per-group order", "[clock]") {
  std::mt19937 rng(11);
  TraceSet set;
  set.ranks.push_back(skewed_rank(set, 0, "a", 0, 20, 1'000, rng, false));
  set.ranks.push_back(skewed_rank(set, 1, "b", 42'000'000, 20, 1'000, rng, false));
  Logger log(LogLevel::kQuiet);
  align_clocks(set, log);
  REQUIRE(set.ranks[1].clock_offset);
  CHECK(std::abs(*set.ranks[1].clock_offset + 42'000'000) <= 1'000);
}

TEST_CASE("one host, or no shared collectives, leaves clocks unchanged", "[clock]") {
  std::mt19937 rng(3);
  SECTION("single host") {
    TraceSet set;
    set.ranks.push_back(skewed_rank(set, 0, "a", 0, 5, 0, rng));
    set.ranks.push_back(skewed_rank(set, 1, "a", 9'000, 5, 0, rng));
    Nanos before = set.ranks[1].events[0].start;
    Logger log(LogLevel::kQuiet);
    align_clocks(set, log);
    CHECK_FALSE(set.ranks[1].clock_offset);
    CHECK(set.ranks[1].events[0].start == before);
  }
  SECTION("no matched collectives") {
    TraceSet set;
    set.ranks.push_back(skewed_rank(set, 0, "a", 0, 5, 0, rng));
    set.ranks.push_back(skewed_rank(set, 1, "b", 9'000, 0, 0, rng));
    Logger log(LogLevel::kQuiet);
    align_clocks(set, log);
    CHECK_FALSE(set.ranks[1].clock_offset);
    CHECK(log.warning_count() == 1);
  }
}

TEST_CASE("a few outliers do not move the median offset", "[clock]") {
  std::mt19937 rng(5);
  TraceSet set;
  set.ranks.push_back(skewed_rank(set, 0, "a", 0, 41, 0, rng));
  set.ranks.push_back(skewed_rank(set, 1, "b", 2'000'000, 41, 0, rng));
  for (int k = 0; k < 5; ++k) set.ranks[1].events[static_cast<std::size_t>(k)].start += 900'000'000;
  Logger log(LogLevel::kQuiet);
  align_clocks(set, log);
  REQUIRE(set.ranks[1].clock_offset);
  CHECK(*set.ranks[1].clock_offset == -2'000'000);
}
