#include <catch2/catch.hpp>

#include <algorithm>

#include "trace/iterations.h"
#include "trace/kineto_importer.h"
#include "trace_fixtures.h"

using namespace dpro;
using trace::EventKind;

TEST_CASE("Microsecond timestamps convert to exact nanoseconds") {
  Nanos ns = 0;
  REQUIRE(trace::parse_micros_as_nanos("1694128201426674", &ns));
  CHECK(ns == 1694128201426674000);
  REQUIRE(trace::parse_micros_as_nanos("4458676416788.066", &ns));
  CHECK(ns == 4458676416788066);  // a double would lose the last digit here
  REQUIRE(trace::parse_micros_as_nanos("2.5", &ns));
  CHECK(ns == 2500);
  REQUIRE(trace::parse_micros_as_nanos("0.0004", &ns));
  CHECK(ns == 0);
  REQUIRE(trace::parse_micros_as_nanos("0.0006", &ns));
  CHECK(ns == 1);
  REQUIRE(trace::parse_micros_as_nanos("1.5e3", &ns));
  CHECK(ns == 1500000);
  REQUIRE(trace::parse_micros_as_nanos("-3", &ns));
  CHECK(ns == -3000);
  CHECK_FALSE(trace::parse_micros_as_nanos("abc", &ns));
  // Beyond 3e15 us (3e18 ns) a time would overflow the nanosecond clock in sums: refused.
  CHECK_FALSE(trace::parse_micros_as_nanos("1e300", &ns));
  CHECK_FALSE(trace::parse_micros_as_nanos("-1e300", &ns));
  CHECK_FALSE(trace::parse_micros_as_nanos("9000000000000000", &ns));
  REQUIRE(trace::parse_micros_as_nanos("3000000000000000", &ns));
  CHECK(ns == trace::kMaxTraceNanos);
  CHECK_FALSE(trace::parse_micros_as_nanos("", &ns));
}

TEST_CASE("Collective operations are recognised from NCCL kernel names and Kineto metadata") {
  CHECK(trace::collective_op_from_name("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)") == "allreduce");
  CHECK(trace::collective_op_from_name("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)") == "sendrecv");
  CHECK(trace::collective_op_from_name("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)") == "reducescatter");
  CHECK(trace::collective_op_from_name("allreduce") == "allreduce");
  CHECK(trace::collective_op_from_name("all_gather") == "allgather");
  CHECK(trace::collective_op_from_name("_allgather_base") == "allgather");
  CHECK(trace::collective_op_from_name("volta_sgemm_128x64_nn") == "");
}

TEST_CASE("DLRM rank trace: ranks, devices, kinds, iterations and NCCL kernels") {
  test::CapturingLog log;
  const auto set = test::load({test::dlrm_files()[0]}, log.log);
  REQUIRE(set.ranks.size() == 1);
  const trace::TraceRank& r = set.ranks[0];
  CHECK(r.rank == 0);
  CHECK(r.rank_known);
  CHECK(r.world_size == 8);
  CHECK(r.backend == "nccl");
  REQUIRE(r.devices.size() == 8);
  CHECK(r.devices[0].name == "Tesla V100-SXM2-32GB");
  CHECK(r.devices[0].num_sms == 80);
  REQUIRE(r.iterations.size() == 1);
  CHECK(r.iterations[0].name == "ProfilerStep#10");
  CHECK(r.iterations[0].end - r.iterations[0].start == 14455000);
  auto count = [&](EventKind k) {
    return std::count_if(r.events.begin(), r.events.end(), [&](const trace::Event& e) { return e.kind == k; });
  };
  CHECK(count(EventKind::kCollective) == 8);
  CHECK(count(EventKind::kKernel) == 245 - 8);
  CHECK(count(EventKind::kMemcpy) == 16);
  CHECK(count(EventKind::kRuntimeCall) == 525);
  CHECK(count(EventKind::kCpuOp) == 1633);
  // Sorted by start, longer first on ties.
  CHECK(std::is_sorted(r.events.begin(), r.events.end(), [](const trace::Event& a, const trace::Event& b) {
    return a.start != b.start ? a.start < b.start : a.dur > b.dur;
  }));
  // A single rank of an 8-rank job is accepted with a warning.
  CHECK(log.contains("only rank 0 of a 8-rank job"));
}

TEST_CASE("A100 trace: baseTimeNanoseconds, fractional ts and NCCL collective metadata") {
  test::CapturingLog log;
  const auto set = test::load({test::source_path("traces/hta/a100-ws2-rank0-nccl.json.gz")}, log.log);
  const trace::TraceRank& r = set.ranks[0];
  REQUIRE(r.iterations.size() == 3);
  // ProfilerStep#4: ts 4458676416788.066 us after base 1711964646000000000 ns, dur 222442.191 us.
  CHECK(r.iterations[0].start == 1711964646000000000 + 4458676416788066);
  CHECK(r.iterations[0].end - r.iterations[0].start == 222442191);
  REQUIRE(r.process_groups.size() == 1);
  CHECK(r.process_groups[0].ranks == std::vector<int>{0, 1});
  std::size_t allreduce = 0, broadcast = 0;
  for (const trace::Event& e : r.events) {
    if (e.kind != EventKind::kCollective) continue;
    const trace::EventAttrs* a = r.attrs_of(e);
    REQUIRE(a);
    REQUIRE(a->collective);
    CHECK(a->collective->group_ranks == std::vector<int>{0, 1});
    CHECK(a->collective->group_name == "0");
    if (a->collective->op == "allreduce") {
      ++allreduce;
      CHECK(a->collective->in_nelems.value_or(0) > 0);
      CHECK(a->collective->dtype == "Float");
    }
    if (a->collective->op == "broadcast") ++broadcast;
  }
  CHECK(allreduce == 15);
  CHECK(broadcast == 6);
}

TEST_CASE("cuda_sync events keep the stream and the event record they wait on") {
  test::CapturingLog log;
  const auto set = test::load({test::source_path("traces/hta/alexnet-a100-single.json.gz")}, log.log);
  const trace::TraceRank& r = set.ranks[0];
  std::size_t waits = 0;
  for (const trace::Event& e : r.events) {
    if (e.kind != EventKind::kSync) continue;
    const trace::EventAttrs* a = r.attrs_of(e);
    REQUIRE(a);
    REQUIRE(a->sync);
    if (a->sync->sync_kind == "Stream Wait Event") {
      ++waits;
      CHECK(a->sync->wait_on_stream.has_value());
      CHECK(a->sync->event_record_correlation.has_value());
    }
  }
  CHECK(waits == 20);
}

TEST_CASE("ProfilerStep names give iteration numbers") {
  CHECK(trace::profiler_step_number("ProfilerStep#12") == 12);
  CHECK_FALSE(trace::profiler_step_number("ProfilerStep#").has_value());
  CHECK_FALSE(trace::profiler_step_number("ProfilerStep#1x").has_value());
  CHECK_FALSE(trace::profiler_step_number("aten::mm").has_value());
}

TEST_CASE("Process Group Ranks: PyTorch's list cut at 30 ranks is completed from the rank progression") {
  // PyTorch's profiler writes at most 30 ranks and then ", ...]"; beside them it records the
  // group's first global rank, the stride between its ranks (-1 when they are no progression)
  // and the group size. Before, the 30 listed ranks were taken for the whole group.
  const std::string dir = test::fresh_dir("pg_ranks");
  std::string listed = "[";
  for (int k = 0; k < 30; ++k) listed += (k ? ", " : "") + std::to_string(2 * k);
  listed += ", ...]";
  auto kernel = [](int ts, const std::string& ranks, const std::string& more) {
    return R"J({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "pid": 0, "tid": 7, "ts": )J" +
           std::to_string(ts) + R"(, "dur": 10, "args": {"Collective name": "allreduce", "Process Group Ranks": ")" + ranks +
           R"(", "In msg nelems": 1024, "dtype": "Float")" + more + "}}";
  };
  auto write_trace = [&](const std::string& name, const std::vector<std::string>& kernels) {
    std::string text = R"({"distributedInfo": {"rank": 0, "world_size": 128, "backend": "nccl"}, "traceEvents": [
      {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 10, "tid": 11, "ts": 100, "dur": 1000})";
    for (const auto& k : kernels) text += ",\n" + k;
    text += "]}";
    test::write_text(dir + "/" + name, text);
    return dir + "/" + name;
  };
  const std::string file = write_trace(
      "ok.json", {kernel(200, listed, R"(, "Global rank start": 0, "Global rank stride": 2, "Group size": 64)"),
                  kernel(300, listed, R"(, "Global rank start": 0, "Global rank stride": -1, "Group size": 64)"),
                  kernel(400, "[3, 1, 2]", R"(, "Group size": 3)"), kernel(500, "[]", R"(, "Group size": 1)"),
                  kernel(600, "", R"(, "Process Group Ranks": [4, 5])")});
  test::CapturingLog log;
  const auto set = test::load({file}, log.log);
  std::vector<std::vector<int>> groups;
  for (const trace::Event& e : set.ranks[0].events)
    if (e.kind == EventKind::kCollective) groups.push_back(set.ranks[0].attrs_of(e)->collective->group_ranks);
  REQUIRE(groups.size() == 5);
  REQUIRE(groups[0].size() == 64);  // 0, 2, ..., 126
  CHECK(groups[0].front() == 0);
  CHECK(groups[0].back() == 126);
  CHECK(groups[1].empty());         // not a progression: members unknown (the group size says 64)
  CHECK(groups[2] == std::vector<int>{3, 1, 2});
  CHECK(groups[3].empty());
  CHECK(groups[4] == std::vector<int>{4, 5});  // a JSON array instead of PyTorch's string
  // A list that is not one of distinct ranks is an error naming the event and the field.
  for (const std::string bad : {"[0, -1]", "[0, 1, 1]", "[0, 99999999999999999999]", "[0, 1", "ranks"}) {
    INFO(bad);
    const std::string f = write_trace("bad.json", {kernel(200, bad, "")});
    REQUIRE_THROWS_WITH(test::load({f}, log.log), Catch::Contains("bad.json") && Catch::Contains("Process Group Ranks") &&
                                                     Catch::Contains("ncclDevKernel_AllReduce"));
  }
}

TEST_CASE("distributedInfo and baseTimeNanoseconds out of range are errors naming the field") {
  // Before: a rank of -3 was replayed as rank -3, one of 2^32+1 as rank 1, "rank 5 of a 2-rank
  // job" only warned, a world size of -2 was ignored, and a base time of 9e18 ns overflowed the
  // events' start times.
  const std::string dir = test::fresh_dir("dist_info");
  auto write_trace = [&](const std::string& top) {
    const std::string file = dir + "/t.json";
    test::write_text(file, "{" + top + R"(, "traceEvents": [
      {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 10, "tid": 11, "ts": 100, "dur": 1000}]})");
    return file;
  };
  test::CapturingLog log;
  const auto ok = test::load({write_trace(R"("distributedInfo": {"rank": 1, "world_size": 2}, "baseTimeNanoseconds": 1711964646000000000)")},
                             log.log, true);
  CHECK(ok.ranks[0].rank == 1);
  CHECK(ok.ranks[0].events[0].start == 1711964646000000000 + 100000);
  const auto as_double = test::load({write_trace(R"("baseTimeNanoseconds": 1.711964646e18)")}, log.log, true);
  CHECK(as_double.ranks[0].events[0].start == 1711964646000000000 + 100000);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"("distributedInfo": {"rank": -3, "world_size": 2})", "distributedInfo.rank"},
      {R"("distributedInfo": {"rank": 4294967297, "world_size": 2})", "distributedInfo.rank"},
      {R"("distributedInfo": {"rank": "x", "world_size": 2})", "distributedInfo.rank"},
      {R"("distributedInfo": {"rank": 0, "world_size": 0})", "distributedInfo.world_size"},
      {R"("distributedInfo": {"rank": 5, "world_size": 2})", "rank 5 of a 2-rank job"},
      {R"("baseTimeNanoseconds": 9000000000000000000)", "baseTimeNanoseconds"},
      {R"("baseTimeNanoseconds": "soon")", "baseTimeNanoseconds"},
      {R"("baseTimeNanoseconds": 2999999999999999999)", "beyond 3e18"},
  };
  for (const auto& [top, expected] : bad) {
    INFO(top);
    REQUIRE_THROWS_WITH(test::load({write_trace(top)}, log.log, true), Catch::Contains("t.json") && Catch::Contains(expected));
  }
}

TEST_CASE("A kernel's occupancy, blocks and warps per SM are kept, by the one-pass reader and the general one alike") {
  // The second kernel's escaped name sends it to the simdjson reader; the memcpy has none of the fields.
  const std::string dir = test::fresh_dir("efficiency");
  test::write_text(dir + "/t.json", R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": 10, "dur": 5,
     "args": {"stream": 7, "correlation": 1, "blocks per SM": 0.8, "warps per SM": 3.2, "est. achieved occupancy %": 5}},
    {"ph": "X", "cat": "kernel", "name": "k\"2", "pid": 0, "tid": 7, "ts": 20, "dur": 5,
     "args": {"stream": 7, "correlation": 2, "blocks per SM": 12.5, "warps per SM": 50, "est. achieved occupancy %": 63}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7, "ts": 30, "dur": 5,
     "args": {"stream": 7, "correlation": 3, "bytes": 64}}]})");
  test::CapturingLog log;
  const auto traces = test::load({dir + "/t.json"}, log.log, true);
  const trace::TraceRank& rank = traces.ranks.at(0);
  std::vector<const trace::KernelEfficiency*> found;
  for (const trace::Event& e : rank.events) {
    const trace::EventAttrs* a = rank.attrs_of(e);
    found.push_back(a && a->efficiency ? &*a->efficiency : nullptr);
  }
  REQUIRE(found.size() == 3);
  REQUIRE(found[0] != nullptr);
  CHECK(found[0]->blocks_per_sm == 0.8);
  CHECK(found[0]->warps_per_sm == 3.2);
  CHECK(found[0]->achieved_occupancy_pct == 5.0);
  REQUIRE(found[1] != nullptr);
  CHECK(found[1]->blocks_per_sm == 12.5);
  CHECK(found[1]->warps_per_sm == 50.0);
  CHECK(found[1]->achieved_occupancy_pct == 63.0);
  CHECK(found[2] == nullptr);
}
