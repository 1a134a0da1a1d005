#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cmd_costmodel.h"
#include "core/byte_source.h"
#include "core/error.h"
#include "costmodel/csv.h"
#include "costmodel/learned_model.h"
#include "test_paths.h"

namespace {
int run_cli(std::vector<std::string> args) {
  CLI::App app{"test"};
  auto cmd = dpro::cli::make_costmodel_command();
  cmd->add_to(app);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  app.parse(reversed);
  return cmd->run();
}
}  // namespace

TEST_CASE("costmodel predict with an unknown device lists the known ones") {
  const std::string csv = dpro::test::binary_path("predict_in.csv");
  std::ofstream(csv) << "OPName,B,M,N,K\nbmm,2,64,64,64\n";
  REQUIRE_THROWS_WITH(run_cli({"costmodel", "predict", "--device", "RTX-9999", csv}),
                      Catch::Contains("RTX-9999") && Catch::Contains("known devices") &&
                          Catch::Contains("A100-SXM4-80GB"));
}

TEST_CASE("costmodel predict adds predicted_ms and leaves undescribable rows empty") {
  const std::string in = dpro::test::binary_path("predict_in2.csv");
  const std::string out = dpro::test::binary_path("predict_out2.csv");
  std::ofstream(in) << "OPName,Latency,B,M,N,K\nbmm,0.1,2,64,64,64\nlinear,,1,512,1024,1024\nfoo,1,1,1,1,1\n";
  REQUIRE(run_cli({"costmodel", "predict", "--device", "H100-SXM5-80GB", in, "-o", out}) == 0);
  const auto t = dpro::costmodel::parse_csv(dpro::read_whole_file(out), out);
  REQUIRE(t.header.back() == "predicted_ms");
  REQUIRE(t.rows.size() == 3);
  const double small = std::stod(t.rows[0].back()), big = std::stod(t.rows[1].back());
  CHECK(small > 0);
  CHECK(big > small);
  CHECK(t.rows[2].back().empty());
  CHECK(t.rows[0][1] == "0.1");  // other columns kept
}

TEST_CASE("costmodel eval on the subset prints tables for every op family") {
  const std::string md = dpro::test::binary_path("eval_subset.md");
  REQUIRE(run_cli({"costmodel", "eval", "--data", dpro::test::source_path("data/costmodel/subset"),
                   "--no-leave-one-out", "--markdown", md}) == 0);
  const std::string text = dpro::read_whole_file(md);
  for (const char* family : {"| bmm |", "| conv |", "| softmax |", "| T4 |", "roofline"})
    CHECK(text.find(family) != std::string::npos);
}

TEST_CASE("costmodel predict to stdout leaves the model file alone") {
  const std::string model = dpro::test::source_path("data/costmodel/model.dpcm");
  const std::string before = dpro::read_whole_file(model);
  const std::string in = dpro::test::binary_path("predict_in3.csv");
  std::ofstream(in) << "OPName,B,H\nrelu,64,4096\n";
  std::ostringstream captured;
  auto* old = std::cout.rdbuf(captured.rdbuf());
  const int rc = run_cli({"costmodel", "predict", "--device", "T4", in});
  std::cout.rdbuf(old);
  REQUIRE(rc == 0);
  CHECK(captured.str().find("predicted_ms") != std::string::npos);
  CHECK(dpro::read_whole_file(model) == before);
}
