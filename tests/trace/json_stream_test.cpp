#include <catch2/catch.hpp>

#include <zlib.h>

#include <nlohmann/json.hpp>

#include <climits>
#include <cstdint>

#include "core/error.h"
#include "trace/chrome_json.h"
#include "trace/json_stream.h"
#include "trace_fixtures.h"

using namespace dpro;

namespace {
struct Collected {
  std::vector<std::string> events;
  std::vector<std::pair<std::string, std::string>> members;
};

Collected stream_text(const std::string& text) {
  const std::string dir = test::fresh_dir("json_stream");
  test::write_text(dir + "/t.json", text);
  ByteSource source(dir + "/t.json");
  trace::JsonEventStream stream(source);
  Collected c;
  stream.run([&](std::string_view k, std::string_view v) { c.members.emplace_back(std::string(k), std::string(v)); },
             [&](std::string_view e, std::uint64_t) { c.events.emplace_back(e); });
  return c;
}
}  // namespace

TEST_CASE("Events are streamed one by one, and members before and after traceEvents are kept") {
  const auto c = stream_text(R"({"a": 1, "traceEvents": [{"name": "x}{[\"", "ts": 1}, {"b": [1, {"c": 2}]}], "baseTimeNanoseconds": 77})");
  REQUIRE(c.events.size() == 2);
  CHECK(c.events[0] == R"({"name": "x}{[\"", "ts": 1})");
  CHECK(c.events[1] == R"({"b": [1, {"c": 2}]})");
  REQUIRE(c.members.size() == 2);
  CHECK(c.members[0] == std::make_pair(std::string("a"), std::string("1")));
  CHECK(c.members[1] == std::make_pair(std::string("baseTimeNanoseconds"), std::string("77")));
}

TEST_CASE("A bare JSON array of events is a valid trace container") {
  const auto c = stream_text(R"([{"ph": "X"}, {"ph": "M"}])");
  CHECK(c.events.size() == 2);
}

TEST_CASE("Events larger than one read chunk are reassembled") {
  std::string big(3 << 20, 'x');
  const auto c = stream_text(R"({"traceEvents": [{"name": ")" + big + R"("}, {"n": 1}]})");
  REQUIRE(c.events.size() == 2);
  CHECK(c.events[0].size() == big.size() + 12);
}

TEST_CASE("Structural errors carry the byte offset") {
  CHECK_THROWS_WITH(stream_text(R"({"traceEvents": [{"a": 1}, 5]})"), Catch::Contains("byte 27"));
  CHECK_THROWS_WITH(stream_text(R"({"traceEvents": [{"a": 1})"), Catch::Contains("truncated"));
  CHECK_THROWS_WITH(stream_text(R"({"traceEvents": []} trailing)"), Catch::Contains("after the end"));
}

TEST_CASE("Chrome JSON times and strings are valid JSON for any time and any bytes") {
  using dpro::trace::chrome_micros;
  CHECK(chrome_micros(1234) == "1.234");
  CHECK(chrome_micros(-75) == "-0.075");
  CHECK(chrome_micros(INT64_MIN) == "-9223372036854775.808");
  CHECK(chrome_micros(INT64_MAX) == "9223372036854775.807");
  for (const std::int64_t t : {INT64_MIN, INT64_MIN + 1, std::int64_t{-1}, std::int64_t{0}, INT64_MAX})
    CHECK_NOTHROW(nlohmann::json::parse(chrome_micros(t)));
  // A name that is not UTF-8 comes out as valid JSON (the bad bytes replaced), never copied.
  const std::string name = dpro::trace::chrome_string(std::string("aten::mm\xff\xfe", 10));
  CHECK_NOTHROW(nlohmann::json::parse(name));
}

TEST_CASE("A value spanning many read chunks is scanned once: escapes and strings cut at chunk edges included") {
  // Strings with escapes placed across the 1 MiB chunk edges, nested arrays around them.
  std::string inner;
  while (inner.size() < (5u << 20)) inner += R"(["a\"b\\", {"k": "]}[{"}], )";
  inner += "0";
  const auto c = stream_text(R"({"traceEvents": [{"args": [)" + inner + R"(]}, {"n": 1}]})");
  REQUIRE(c.events.size() == 2);
  CHECK(c.events[1] == R"({"n": 1})");
}

TEST_CASE("One value of hundreds of megabytes is refused in linear time, not scanned again per chunk") {
  // 300 MiB of '[' in one event (the quadratic rescan took minutes on it): compressed, the file is small.
  const std::string dir = test::fresh_dir("json_huge");
  const std::string path = dir + "/t.json.gz";
  gzFile gz = gzopen(path.c_str(), "wb1");
  REQUIRE(gz);
  const std::string head = R"({"traceEvents": [{"args": )";
  gzwrite(gz, head.data(), static_cast<unsigned>(head.size()));
  const std::string block(1 << 20, '[');
  for (int i = 0; i < 300; ++i) gzwrite(gz, block.data(), static_cast<unsigned>(block.size()));
  gzclose(gz);
  ByteSource source(path);
  trace::JsonEventStream stream(source);
  // Refused when it passes the bound on one value (kMaxValueBytes), after 64 MiB, not 300.
  CHECK_THROWS_WITH(stream.run([](std::string_view, std::string_view) {}, [](std::string_view, std::uint64_t) {}),
                    Catch::Contains("longer than 64 MiB"));
}

TEST_CASE("One JSON value longer than the bound is an InputError, and one just below it is read") {
  const std::size_t bound = trace::JsonEventStream::kMaxValueBytes;
  // An event whose name alone is 1 MiB over the bound, and the events around it.
  std::string text = R"({"traceEvents": [{"name": "a", "ts": 1}, {"name": ")";
  text.append(bound + (1 << 20), 'x');
  text += R"(", "ts": 2}]})";
  CHECK_THROWS_WITH(stream_text(text), Catch::Contains("t.json: byte ") && Catch::Contains("longer than 64 MiB"));
  // 2 MiB under the bound: read whole.
  text = R"({"traceEvents": [{"name": ")";
  text.append(bound - (2 << 20), 'y');
  text += R"(", "ts": 2}]})";
  const auto c = stream_text(text);
  REQUIRE(c.events.size() == 1);
  CHECK(c.events[0].size() > bound - (2 << 20));
}

TEST_CASE("Files of any size around the read chunks' edges are read whole and event by event") {
  // The buffer starts at 64 KiB, reads into its free room, and grows by doubling: files just
  // below, at and above those sizes, with events of uneven lengths, must come back unchanged.
  for (const std::size_t target : {std::size_t{100}, std::size_t{65'500}, std::size_t{65'600}, std::size_t{98'304},
                                   std::size_t{131'072}, std::size_t{200'000}, std::size_t{450'000},
                                   std::size_t{1'100'000}}) {
    std::vector<std::string> expected;
    std::string text = R"({"traceEvents": [)";
    for (std::size_t i = 0; text.size() < target; ++i) {
      std::string e = R"({"name": ")" + std::string(1 + (i * 7919) % 3001, static_cast<char>('a' + i % 26)) +
                      R"(", "ts": )" + std::to_string(i) + "}";
      if (!expected.empty()) text += ", ";
      text += e;
      expected.push_back(std::move(e));
    }
    text += R"(], "baseTimeNanoseconds": 5})";
    INFO("file of " << text.size() << " bytes");
    const auto c = stream_text(text);
    CHECK(c.events == expected);
    REQUIRE(c.members.size() == 1);
    CHECK(c.members[0].second == "5");
  }
}
