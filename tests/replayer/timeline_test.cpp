// The timeline's critical-path track, counters and side-by-side views (replayer/timeline.h).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "replayer/replay.h"
#include "replayer/timeline.h"
#include "replay_fixtures.h"
#include "trace_fixtures.h"

using namespace dpro;

TEST_CASE("The timeline's critical path covers the replay without gaps, and its counters balance") {
  const auto& set = test::dlrm_replayed().set;
  const auto& r = test::dlrm_replayed().replay;
  std::ostringstream out;
  replayer::write_timeline(out, set, r.graph, r.simulation);
  const auto j = nlohmann::json::parse(out.str());
  std::vector<std::pair<double, double>> path;
  std::map<std::pair<int, std::string>, std::vector<int>> counters;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") == "X" && e.at("pid") == replayer::kPathPid)
      path.push_back({e.at("ts").get<double>(), e.at("ts").get<double>() + e.at("dur").get<double>()});
    if (e.at("ph") == "C")
      for (const auto& [key, value] : e.at("args").items())
        counters[{e.at("pid").get<int>(), e.at("name").get<std::string>()}].push_back(value.get<int>());
  }
  // Segments in time order, each starting where the previous ended, from 0 to the last op's end.
  REQUIRE_FALSE(path.empty());
  std::sort(path.begin(), path.end());
  CHECK(path.front().first == Approx(0.0));
  for (std::size_t k = 1; k < path.size(); ++k) CHECK(path[k].first == Approx(path[k - 1].second).margin(1e-3));
  Nanos last = 0;
  for (const graph::NodeId id : r.graph.dfg.node_ids())
    if (graph::is_op(r.graph.dfg.node(id).kind)) last = std::max(last, r.simulation.end[id]);
  CHECK(path.back().second == Approx(static_cast<double>(last) / 1000.0).margin(1e-3));
  // Per rank: GPU busy streams and the launch queue, never negative, back to 0 at the end; the
  // queue holds at least what runs whenever it changes (an op is queued from its launch to its end).
  std::size_t ranks = 0;
  for (const auto& [key, values] : counters) {
    INFO(key.first << " " << key.second);
    CHECK(*std::min_element(values.begin(), values.end()) >= 0);
    CHECK(values.back() == 0);
    CHECK(*std::max_element(values.begin(), values.end()) > 0);
    ranks += key.second == "GPU busy streams";
  }
  CHECK(ranks == 8);
  // Every op carries its slack, never negative; the ops the critical path runs through have none.
  std::size_t ops = 0, critical = 0;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") != "X" || e.at("pid") == replayer::kPathPid || !e.at("args").contains("slack_us")) continue;
    ++ops;
    CHECK(e.at("args").at("slack_us").get<double>() >= 0);
    critical += e.at("args").at("slack_us").get<double>() == 0;
  }
  CHECK(ops > 10000);
  CHECK(critical > 100);
  CHECK(critical < ops);
}

TEST_CASE("Two views of the timeline share one file without sharing a process") {
  const auto& set = test::dlrm_replayed().set;
  const auto& r = test::dlrm_replayed().replay;
  std::ostringstream out;
  replayer::write_timeline(out, {{&set, &r.graph, &r.simulation, "baseline", std::nullopt},
                                 {&set, &r.graph, &r.simulation, "what-if", std::nullopt}});
  const auto j = nlohmann::json::parse(out.str());
  std::map<int, std::size_t> slices;  // per view
  std::vector<std::string> names;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") == "X") ++slices[e.at("pid").get<int>() / replayer::kViewPidStride];
    if (e.at("ph") == "M" && e.at("name") == "process_name") names.push_back(e.at("args").at("name"));
  }
  REQUIRE(slices.size() == 2);
  CHECK(slices[0] == slices[1]);  // the same replay twice
  CHECK(std::count(names.begin(), names.end(), "rank 3 (baseline)") == 1);
  CHECK(std::count(names.begin(), names.end(), "rank 3 (what-if)") == 1);
  CHECK(std::count(names.begin(), names.end(), "critical path (what-if)") == 1);
}

TEST_CASE("The simulated timeline is Chrome trace JSON with one process per rank") {
  const auto& set = test::dlrm_replayed().set;
  const auto& r = test::dlrm_replayed().replay;
  std::ostringstream out;
  replayer::write_timeline(out, set, r.graph, r.simulation);
  const auto j = nlohmann::json::parse(out.str());
  std::set<int> pids;
  std::size_t slices = 0, steps = 0;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") == "X" && e.at("pid") != replayer::kPathPid) {  // the critical path's own process apart
      ++slices;
      pids.insert(e.at("pid").get<int>());
      CHECK(e.at("dur").get<double>() >= 0);
      if (e.at("name") == "ProfilerStep#10") ++steps;
    }
  }
  CHECK(pids == std::set<int>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(steps == 8);
  CHECK(slices > r.graph.dfg.node_count() - 8);  // every op but the 8 barriers, plus enclosing ranges
}
