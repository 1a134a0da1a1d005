#include <catch2/catch.hpp>

#include "core/strings.h"
#include "core/time.h"

TEST_CASE("StringTable interns each distinct string once") {
  dpro::StringTable table;
  const auto a = table.intern("aten::addmm");
  const auto b = table.intern("cudaLaunchKernel");
  CHECK(table.intern("aten::addmm") == a);
  CHECK(a != b);
  CHECK(table.view(a) == "aten::addmm");
  CHECK(table.view(dpro::StringId{}) == "");
  // Views stay valid as the table grows.
  const std::string_view view = table.view(a);
  for (int i = 0; i < 10000; ++i) table.intern("op" + std::to_string(i));
  CHECK(view == "aten::addmm");
}

TEST_CASE("format_duration picks a readable unit") {
  CHECK(dpro::format_duration(999) == "999 ns");
  CHECK(dpro::format_duration(14455000) == "14.455 ms");
  CHECK(dpro::format_duration(2500) == "2.500 us");
  CHECK(dpro::format_duration(13336315805) == "13.336 s");
}

TEST_CASE("time arithmetic at the int64 limits: no overflow, no out-of-range conversion") {
  // Issue 37: format_duration(INT64_MIN) negated an int64 that has no positive counterpart.
  CHECK(dpro::format_duration(INT64_MIN) == "-9223372036.855 s");
  CHECK(dpro::format_duration(INT64_MAX) == "9223372036.855 s");
  CHECK(dpro::saturating_add(INT64_MAX - 5, 10) == INT64_MAX);
  CHECK(dpro::saturating_add(INT64_MIN + 5, -10) == INT64_MIN);
  CHECK(dpro::saturating_add(-7, 10) == 3);
  // A what-if's scaled time: rounded as llround rounds, held at twice the replay bound.
  CHECK(dpro::nanos_from_double(2.5) == 3);
  CHECK(dpro::nanos_from_double(-2.5) == -3);
  CHECK(dpro::nanos_from_double(1e300) == 2 * dpro::kMaxReplayNanos);
  CHECK(dpro::nanos_from_double(-1.0 / 0.0) == -2 * dpro::kMaxReplayNanos);
  CHECK(dpro::nanos_from_double(0.0 / 0.0) == 0);
}

TEST_CASE("parse_decimal reads a decimal number and nothing else") {
  double v = 0;
  CHECK(dpro::parse_decimal("0.25", v));
  CHECK(v == 0.25);
  CHECK(dpro::parse_decimal(" 1e-3\t", v));
  CHECK(v == 0.001);
  CHECK(dpro::parse_decimal("-7", v));
  CHECK(v == -7);
  for (const char* bad : {"", "  ", "0x10", "0.1abc", "0.1 ms", "+1", "1e400", "1e", ".", "-", "1,5"}) {
    INFO(bad);
    CHECK_FALSE(dpro::parse_decimal(bad, v));
  }
}
