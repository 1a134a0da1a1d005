// The grid of a sweep (whatif/sweep.h).
#include <catch2/catch.hpp>

#include "core/error.h"
#include "whatif/sweep.h"

using namespace dpro;

TEST_CASE("sweep_grid: every combination, the first axis varying slowest") {
  const auto grid = whatif::sweep_grid({{"device", {"A", "B"}}, {"ranks", {"8", "16", "64"}}}, 64);
  REQUIRE(grid.size() == 6);
  CHECK(grid[0] == whatif::SweepPoint{{"device", "A"}, {"ranks", "8"}});
  CHECK(grid[2] == whatif::SweepPoint{{"device", "A"}, {"ranks", "64"}});
  CHECK(grid[3] == whatif::SweepPoint{{"device", "B"}, {"ranks", "8"}});
  CHECK(whatif::sweep_grid({}, 1).size() == 1);  // no axis: the one empty point
}

TEST_CASE("sweep_grid refuses an empty axis, an axis twice and too many points") {
  CHECK_THROWS_AS(whatif::sweep_grid({{"ranks", {}}}, 64), OptionError);
  CHECK_THROWS_WITH(whatif::sweep_grid({{"ranks", {"1"}}, {"ranks", {"2"}}}, 64), Catch::Contains("swept twice"));
  CHECK_THROWS_WITH(whatif::sweep_grid({{"a", {"1", "2", "3"}}, {"b", {"1", "2", "3"}}}, 8), Catch::Contains("more than 8 points"));
  CHECK(whatif::sweep_grid({{"a", {"1", "2", "3"}}, {"b", {"1", "2", "3"}}}, 9).size() == 9);
}
