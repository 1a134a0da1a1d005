#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "core/error.h"
#include "core/json_fields.h"

using namespace dpro;

TEST_CASE("typed JSON fields: absent, wrong type and out of range each name the file and the item") {
  const auto obj = nlohmann::json::parse(R"({"bw": 25, "n": 8, "name": "x", "bad": "fast", "neg": -1, "half": 4.5})");
  const json_field::Range bandwidth{1e-3, 1e6, false, "GB/s"};
  CHECK(json_field::number(obj, "bw", bandwidth, "c.json", "link.bw") == 25);
  CHECK_FALSE(json_field::number(obj, "absent", bandwidth, "c.json", "link.absent"));
  CHECK(json_field::required_number(obj, "n", {1, 1024, true}, "c.json", "n") == 8);
  CHECK(json_field::optional_string(obj, "name", "c.json", "name") == "x");
  CHECK(json_field::optional_string(obj, "absent", "c.json", "absent").empty());
  REQUIRE_THROWS_WITH(json_field::number(obj, "bad", bandwidth, "c.json", "link.bad"),
                      Catch::Contains("c.json") && Catch::Contains("link.bad") &&
                          Catch::Contains("must be a number from 0.001 to 1e6 GB/s, got \"fast\""));
  REQUIRE_THROWS_WITH(json_field::number(obj, "neg", {0, 1, false, ""}, "c.json", "eff"),
                      Catch::Contains("must be a number from 0 to 1, got -1"));
  REQUIRE_THROWS_WITH(json_field::number(obj, "half", {1, 1024, true}, "c.json", "n"),
                      Catch::Contains("a whole number from 1 to 1024, got 4.5"));
  REQUIRE_THROWS_WITH(json_field::required_number(obj, "absent", {1, 1e5, true}, "c.json", "sms"),
                      Catch::Contains("sms") && Catch::Contains("missing: a whole number from 1 to 1e5"));
  REQUIRE_THROWS_WITH(json_field::optional_string(obj, "n", "c.json", "name"), Catch::Contains("must be a string, got 8"));
  CHECK_FALSE(json_field::in_range(bandwidth, std::nan("")));
  CHECK(json_field::describe({0.5, 2.5e-3, false, ""}) == "a number from 0.5 to 0.0025");
  CHECK(json_field::describe({0, 1e-7, false, ""}) == "a number from 0 to 1e-7");
}

TEST_CASE("JSON nested deeper than 256 levels is one InputError, at any depth of 10^5, without recursion") {
  // Every reader calls check_json_depth before it writes a value into a message: nlohmann's dump
  // recurses and overflowed the stack at 200,000 levels (a --shares file, found in review of the
  // fuzzers' finding 5, docs/fuzzing.md).
  auto nested = [](std::size_t levels) {
    return nlohmann::json::parse(std::string(levels, '[') + std::string(levels, ']'));
  };
  CHECK_NOTHROW(json_field::check_json_depth(nested(json_field::kMaxJsonDepth), "d.json"));
  CHECK_THROWS_WITH(json_field::check_json_depth(nested(json_field::kMaxJsonDepth + 1), "d.json"),
                    Catch::Contains("d.json") && Catch::Contains("deeper than 256 levels"));
  CHECK_THROWS_WITH(json_field::check_json_depth(nested(200000), "d.json"), Catch::Contains("deeper than 256"));
  // Objects count as arrays do; a wide, shallow value is fine.
  nlohmann::json deep_object = 1;
  for (int i = 0; i < 300; ++i) deep_object = nlohmann::json{{"k", deep_object}};
  CHECK_THROWS_WITH(json_field::check_json_depth(deep_object, "o.json"), Catch::Contains("o.json"));
  CHECK_NOTHROW(json_field::check_json_depth(nlohmann::json(std::vector<int>(100000, 1)), "w.json"));
}
