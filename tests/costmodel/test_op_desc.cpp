#include <catch2/catch.hpp>

#include <set>

#include "costmodel/compact_ast.h"
#include "costmodel/csv.h"
#include "costmodel/dataset.h"
#include "costmodel/op_desc.h"
#include "costmodel/op_desc_from_trace.h"
#include "costmodel/paths.h"
#include "costmodel_fixtures.h"
#include "test_paths.h"

using namespace dpro::costmodel;
using dpro::test::catalog;
using dpro::test::make_op;


TEST_CASE("op families: flops and bytes follow the op's shapes") {
  OpDesc bmm = make_op(OpFamily::kBmm, {2, 3, 5, 7});
  CHECK(bmm.flops() == 2.0 * 2 * 3 * 5 * 7);
  CHECK(bmm.bytes() == 4.0 * (2 * 3 * 7 + 2 * 7 * 5 + 2 * 3 * 5));
  OpDesc conv = make_op(OpFamily::kConv2d, {1, 3, 8, 3, 32, 1, 1});  // 32x32 -> 32x32
  CHECK(conv.flops() == 2.0 * 8 * 32 * 32 * 3 * 9);
  OpDesc strided = make_op(OpFamily::kConv2d, {1, 3, 8, 3, 32, 2, 1});  // -> 16x16
  CHECK(strided.bytes_written() == 4.0 * 8 * 16 * 16);
  OpDesc add = make_op(OpFamily::kAdd, {4, 10});
  OpDesc addu = make_op(OpFamily::kAddScalar, {4, 10});
  CHECK(add.bytes() == 3 * 4.0 * 40);
  CHECK(addu.bytes() == 2 * 4.0 * 40);
  OpDesc half = bmm;
  half.dtype = DType::kFloat16;
  CHECK(half.bytes() == bmm.bytes() / 2);
  CHECK_FALSE(make_op(OpFamily::kBmm, {2, 3}).describable());
  CHECK_FALSE(make_op(OpFamily::kUnknown, {2, 3}).describable());
}

TEST_CASE("compact AST: loops over stores, several stores for multi-pass and fused ops") {
  auto bmm = build_ast(make_op(OpFamily::kBmm, {2, 3, 5, 7}));
  REQUIRE(bmm);
  CHECK(bmm->store_count() == 1);
  CHECK(bmm->nodes.size() == 5);  // B, M, N loops, K reduction, store
  CHECK(bmm->nodes[3].kind == AstNodeKind::kReduceLoop);
  auto softmax = build_ast(make_op(OpFamily::kSoftmax, {8, 128}));
  REQUIRE(softmax);
  CHECK(softmax->store_count() == 3);
  const auto fused = fuse({*bmm, *softmax});
  CHECK(fused.store_count() == 4);
  CHECK(fused.nodes[0].kind == AstNodeKind::kSeq);

  std::vector<float> a(kMaxAstTokens * kTokenFeatures), b(a.size());
  REQUIRE(serialise(*bmm, a.data()) == 5);
  REQUIRE(serialise(fused, b.data()) == static_cast<int>(fused.nodes.size()));
  // Pre-order: the store is the 5th token and carries flops; loops carry none.
  CHECK(a[4 * kTokenFeatures + 3] == 1.0f);
  CHECK(a[4 * kTokenFeatures + 6] > 0.0f);
  CHECK(a[0 * kTokenFeatures + 6] == 0.0f);
  // Positional encodings of different positions differ.
  const int pe = kPositionalOffset;
  CHECK(a[0 * kTokenFeatures + pe] != a[1 * kTokenFeatures + pe]);
  // Too many nodes: not serialisable (the caller falls back).
  const auto big = fuse({*softmax, *softmax, *softmax});
  std::vector<float> c(a.size());
  CHECK_FALSE(serialise(big, c.data()).has_value());
}

TEST_CASE("CSV: quoted fields with commas survive a round trip") {
  const std::string text = "a,b\n\"x, \"\"y\"\"\",2\n";
  const auto t = parse_csv(text, "t.csv");
  REQUIRE(t.rows.size() == 1);
  CHECK(t.rows[0][0] == "x, \"y\"");
  CHECK(format_csv_row(t.rows[0]) == "\"x, \"\"y\"\"\",2");
  CHECK_THROWS_WITH(parse_csv("a,b\n1\n", "bad.csv"), Catch::Contains("bad.csv"));
}

TEST_CASE("the test subset loads: 16 op families on 5 GPUs") {
  const auto catalog = DeviceCatalog::load_directory(dpro::test::source_path("configs/devices"));
  const auto data = load_measurements(test_subset_dir(), catalog);
  CHECK(data.size() == 16 * 40 * 5);
  std::set<std::string> gpus, families;
  for (const auto& m : data) {
    gpus.insert(m.device->model_family());
    families.insert(to_string(m.op.family));
    REQUIRE(m.op.describable());
  }
  CHECK(gpus == std::set<std::string>{"A100", "P100", "P4", "T4", "V100"});
  CHECK(families.size() == 16);
}

TEST_CASE("ops from a trace's CPU op name and Input Dims") {
  auto bmm = op_desc_from_cpu_op("aten::bmm", "[[32, 128, 64], [32, 64, 256]]", "[\"c10::Half\", \"c10::Half\"]");
  CHECK(bmm.family == OpFamily::kBmm);
  CHECK(bmm.dims == std::vector<std::int64_t>{32, 128, 256, 64});
  CHECK(bmm.dtype == DType::kFloat16);
  auto addmm = op_desc_from_cpu_op("aten::addmm", "[[1024], [64, 512], [512, 1024], [], []]", "");
  CHECK(addmm.dims == std::vector<std::int64_t>{1, 64, 1024, 512});
  auto linear = op_desc_from_cpu_op("aten::linear", "[[8, 16, 512], [1024, 512], [1024]]", "");
  CHECK(linear.dims == std::vector<std::int64_t>{1, 128, 1024, 512});
  auto scalar = op_desc_from_cpu_op("aten::mul", "[[8, 100], []]", "");
  CHECK(scalar.family == OpFamily::kMulScalar);
  auto ln = op_desc_from_cpu_op("aten::layer_norm", "[[4, 8, 768], [], [768], [768], [], []]", "");
  CHECK(ln.dims == std::vector<std::int64_t>{32, 768});
  auto conv = op_desc_from_cpu_op("aten::cudnn_convolution", "[[16, 64, 56, 56], [128, 64, 3, 3]]", "");
  CHECK(conv.family == OpFamily::kConv2d);
  CHECK(conv.dims == std::vector<std::int64_t>{16, 64, 128, 3, 56, 1, 1});
  // Cannot be described: no shapes, or an op without a tree.
  CHECK(op_desc_from_cpu_op("aten::bmm", "", "").family == OpFamily::kUnknown);
  CHECK(op_desc_from_cpu_op("aten::index_select", "[[10, 4], [], [3]]", "").family == OpFamily::kUnknown);
}
