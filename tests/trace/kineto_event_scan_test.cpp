// The one-pass event reader: what it reads from common events, and that it declines (leaving the
// event to the simdjson reader and its messages) whatever is out of the common case.
#include <catch2/catch.hpp>

#include "trace/kineto_event_scan.h"

using namespace dpro;
using namespace dpro::trace;

namespace {
std::size_t scan(std::string_view text, ParsedEvent& e) { return scan_event(text, e); }
bool declines(std::string_view text) {
  ParsedEvent e;
  return scan_event(text, e) == 0;
}
}  // namespace

TEST_CASE("scan_event reads a kernel event in one pass", "[trace][kineto]") {
  const std::string text =
      R"({"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce", "pid": 0, "tid": 7, "ts": 1694128201426674.066, )"
      R"("dur": 12.5, "args": {"External id": 31, "device": 0, "stream": 7, "correlation": 95, "grid": [4, 2], )"
      R"("block": [512, 1, 1], "Collective name": "allreduce", "Process Group Ranks": "[0, 1]", "In msg nelems": "1024", )"
      R"("Input Dims": [[2, 3], []], "queued": 0.0, "note": {"x": [true, null, -1.5e3]}}} , )";
  ParsedEvent e;
  REQUIRE(scan(text, e) == text.find('}', text.find("-1.5e3")) + 3);
  CHECK(e.ph == "X");
  CHECK(e.cat == "kernel");
  CHECK(e.name == "ncclKernel_AllReduce");
  CHECK(e.pid == 0);
  CHECK(e.tid == 7);
  CHECK(e.ts == 1694128201426674066);
  CHECK(e.dur == 12500);
  CHECK(e.args.external_id == 31);
  CHECK(e.args.correlation == 95);
  CHECK(e.args.stream == 7);
  CHECK(e.args.grid == std::array<int, 3>{4, 2, 1});
  CHECK(e.args.block == std::array<int, 3>{512, 1, 1});
  CHECK(e.args.collective_name == "allreduce");
  CHECK(e.args.pg_ranks == "[0, 1]");
  CHECK(e.args.in_nelems == 1024);
  CHECK(e.args.input_dims == "[[2, 3], []]");
  ParsedEvent k;
  REQUIRE(scan(R"({"ph": "X", "ts": 1, "dur": 1, "args": {"blocks per SM": 0.8, "warps per SM": 3.2, "est. achieved occupancy %": 5}})", k) > 0);
  CHECK(k.args.blocks_per_sm == 0.8);
  CHECK(k.args.warps_per_sm == 3.2);
  CHECK(k.args.occupancy_pct == 5.0);
}

TEST_CASE("scan_event reads thread names and text pids", "[trace][kineto]") {
  ParsedEvent e;
  REQUIRE(scan(R"({"name": "thread_name", "ph": "M", "pid": 5, "tid": 9, "args": {"name": "python3"}})", e) > 0);
  REQUIRE(e.thread_names.size() == 1);
  CHECK(e.thread_names[0].name == "python3");
  ParsedEvent spans;
  REQUIRE(scan(R"({"ph": "X", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 1, "dur": 2})", spans) > 0);
  CHECK(!spans.pid);
}

TEST_CASE("scan_event declines what the general reader must judge", "[trace][kineto]") {
  CHECK(declines(R"({"ph": "X", "name": "a\"b", "ts": 1, "dur": 1})"));       // an escape
  CHECK(declines("{\"ph\": \"X\", \"name\": \"\xff\xfe\", \"ts\": 1}"));        // invalid UTF-8
  CHECK(declines(R"({"ph": "X", "pid": 1.5, "ts": 1, "dur": 1})"));             // a pid that is no whole number
  CHECK(declines(R"({"ph": "X", "ts": "12", "dur": 1})"));                      // a time as text
  CHECK(declines(R"({"ph": "X", "ts": 1e999, "dur": 1})"));                     // a time out of bounds
  CHECK(declines(R"({"ph": "X", "ts": 1, "dur": 1, "args": {"bytes": 0.5}})"));  // a size with a fraction
  CHECK(declines(R"({"ph": "X", "ts": 1, "dur": 1, "args": {"blocks per SM": "0.8"}})"));  // an efficiency figure as text
  CHECK(declines(R"({"ph": "X", "ts": 1, "dur": 1, "args": {"grid": null}})"));
  CHECK(declines(R"({"ph": "X", "ts": 01, "dur": 1, "extra": 01})"));           // leading zero
  CHECK(declines(R"({"ph": "X", "ts": 1, "dur": 1,})"));                         // trailing comma
  CHECK(declines(R"({"ph": "X", "ts": 1, "dur": 1)"));                           // not complete yet
  CHECK(declines(R"({"ph": X})"));
  CHECK(!declines("{\"name\": \"caf\xc3\xa9\", \"ph\": \"X\"}"));               // valid UTF-8
}
