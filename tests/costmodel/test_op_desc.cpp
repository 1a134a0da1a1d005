#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <set>

#include "costmodel/compact_ast.h"
#include "costmodel/csv.h"
#include "costmodel/dataset.h"
#include "costmodel/features.h"
#include "costmodel/op_desc.h"
#include "costmodel/op_desc_from_graph.h"
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

TEST_CASE("CSV: a UTF-8 byte order mark is skipped, a column named twice is refused") {
  // Excel's "CSV UTF-8" starts with EF BB BF: the first column was read as "\xEF\xBB\xBFOPName".
  const auto t = parse_csv("\xEF\xBB\xBFOPName,B,H\nrelu,2,3\n", "bom.csv");
  CHECK(t.column("OPName") == 0);
  CHECK(t.header[0] == "OPName");
  // Only at the start of the file.
  CHECK(parse_csv("a,b\n\xEF\xBB\xBFx,1\n", "t.csv").rows[0][0] == "\xEF\xBB\xBFx");
  CHECK_THROWS_WITH(parse_csv("OPName,B,M,N,K,B\nbmm,1,2,3,4,5\n", "dup.csv"),
                    Catch::Contains("dup.csv: header, column 6: 'B' names column 2 too"));
}

TEST_CASE("CSV: a field starting with a byte order mark is written quoted and reads back the same") {
  // Found by tests/fuzz (fuzz_csv): a file starting with two marks has a first column named
  // "\xEF\xBB\xBF"; written back unquoted, the reader took it for the file's mark and dropped it.
  const auto t = parse_csv("\xEF\xBB\xBF\xEF\xBB\xBFOPName,B\nrelu,2\n", "two-marks.csv");
  REQUIRE(t.header[0] == "\xEF\xBB\xBFOPName");
  const std::string written = format_csv_row(t.header) + "\n" + format_csv_row(t.rows[0]) + "\n";
  CHECK(written.starts_with("\""));
  CHECK(parse_csv(written, "written.csv").header == t.header);
}

TEST_CASE("CSV: a directory given as a CSV file is refused by name") {
  // Was "read error" with no word of what was wrong.
  CHECK_THROWS_WITH(read_csv_file(test_subset_dir()),
                    Catch::Contains(test_subset_dir() + ": is a directory, expected a CSV file"));
}

TEST_CASE("a dtype cell the cost models cannot read is an error naming the row, not fp32") {
  const auto t = parse_csv("OPName,dtype,B,H\nrelu,fp16,2,3\nrelu,,2,3\nrelu,bogus,2,3\n", "dt.csv");
  const OpRowReader reader(t, "dt.csv");
  CHECK(reader.read(0).dtype == DType::kFloat16);
  CHECK(reader.read(1).dtype == DType::kFloat32);  // empty: the default, as without the column
  CHECK_THROWS_WITH(reader.read(2), Catch::Contains("dt.csv: row 4, column dtype: 'bogus' is not a dtype"));
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

namespace {
// A CPU op as a trace records it ("Input Dims", "Input type"), read as the graph's op table does.
OpDesc cpu_op(std::string_view name, std::string_view dims, std::string_view types) {
  dpro::graph::OpTable table;
  return op_desc_from_cpu_op(name, dpro::graph::parse_inputs(dims, types, table), table);
}
}  // namespace

TEST_CASE("an Input Dims shape no tensor can have is taken as unknown, its products never overflow") {
  dpro::graph::OpTable table;
  const auto inputs = dpro::graph::parse_inputs(
      "[[9223372036854775807, 9223372036854775807], [-4, 8], [65536, 65536, 65537], [1024, 1024]]", "", table);
  REQUIRE(inputs.size() == 4);
  CHECK(inputs[0].shape.empty());
  CHECK(inputs[1].shape.empty());
  CHECK(inputs[2].shape.empty());  // just over 2^48 elements
  CHECK(inputs[3].shape == std::vector<std::int64_t>{1024, 1024});
  // Priced without overflow (UBSan would say): the op is described from what is plausible.
  CHECK_NOTHROW(cpu_op("aten::mm", "[[9223372036854775807, 9223372036854775807], [9223372036854775807, 2]]", ""));
}

TEST_CASE("ops from a trace's CPU op name and Input Dims") {
  auto bmm = cpu_op("aten::bmm", "[[32, 128, 64], [32, 64, 256]]", "[\"c10::Half\", \"c10::Half\"]");
  CHECK(bmm.family == OpFamily::kBmm);
  CHECK(bmm.dims == std::vector<std::int64_t>{32, 128, 256, 64});
  CHECK(bmm.dtype == DType::kFloat16);
  auto addmm = cpu_op("aten::addmm", "[[1024], [64, 512], [512, 1024], [], []]", "");
  CHECK(addmm.dims == std::vector<std::int64_t>{1, 64, 1024, 512});
  auto linear = cpu_op("aten::linear", "[[8, 16, 512], [1024, 512], [1024]]", "");
  CHECK(linear.dims == std::vector<std::int64_t>{1, 128, 1024, 512});
  auto scalar = cpu_op("aten::mul", "[[8, 100], []]", "");
  CHECK(scalar.family == OpFamily::kMulScalar);
  auto ln = cpu_op("aten::layer_norm", "[[4, 8, 768], [], [768], [768], [], []]", "");
  CHECK(ln.dims == std::vector<std::int64_t>{32, 768});
  auto conv = cpu_op("aten::cudnn_convolution", "[[16, 64, 56, 56], [128, 64, 3, 3]]", "");
  CHECK(conv.family == OpFamily::kConv2d);
  CHECK(conv.dims == std::vector<std::int64_t>{16, 64, 128, 3, 56, 1, 1});
  // Cannot be described: no shapes, or an op without a tree.
  CHECK(cpu_op("aten::bmm", "", "").family == OpFamily::kUnknown);
  CHECK(cpu_op("aten::index_select", "[[10, 4], [], [3]]", "").family == OpFamily::kUnknown);
  // Elementwise ops without a family of their own are priced as a like family.
  CHECK_FALSE(bmm.like_op);
  auto sigmoid = cpu_op("aten::sigmoid", "[[64, 1024]]", "");
  CHECK(sigmoid.family == OpFamily::kTanh);
  CHECK(sigmoid.like_op);
  CHECK(sigmoid.dims == std::vector<std::int64_t>{64, 1024});
  auto clamp = cpu_op("aten::clamp_min_", "[[8, 16, 32], []]", "");
  CHECK(clamp.family == OpFamily::kRelu);
  CHECK(clamp.dims == std::vector<std::int64_t>{128, 32});
  CHECK(cpu_op("aten::copy_", "[[4096], [4096], []]", "").family == OpFamily::kRelu);
  auto back = cpu_op("aten::threshold_backward", "[[32, 512], [32, 512], []]", "");
  CHECK(back.family == OpFamily::kMul);
  CHECK(back.like_op);
  CHECK(cpu_op("aten::addcmul_", "[[1000], [1000], [1000], []]", "").family == OpFamily::kMul);
  const auto no_shapes = cpu_op("aten::sigmoid", "", "");
  CHECK(no_shapes.family == OpFamily::kUnknown);
  CHECK_FALSE(no_shapes.like_op);
  CHECK(like_family("aten::gelu") == OpFamily::kUnknown);  // has its own family
  CHECK(family_from_name("aten::sigmoid") == OpFamily::kUnknown);
}

TEST_CASE("kernel features: tile, algorithm and launch geometry of the recorded kernel") {
  const auto& t4 = catalog().get("T4");
  float f[kKernelFeatures];
  OpDesc op = make_op(OpFamily::kLinear, {1, 512, 512, 512});
  CHECK_FALSE(kernel_features(op, t4, f));  // no kernel recorded: all zero
  for (float x : f) CHECK(x == 0.0f);
  op.kernel_name = "volta_sgemm_32x128_tn";
  op.grid = std::array<int, 3>{5, 4, 1};
  op.block = std::array<int, 3>{256, 1, 1};
  REQUIRE(kernel_features(op, t4, f));
  CHECK(f[0] == Approx(std::log2(20.0)));   // blocks
  CHECK(f[1] == Approx(8.0));               // threads per block
  CHECK(f[3] == Approx(20.0 / 40.0));       // one partial wave over T4's 40 SMs
  CHECK(f[4] == Approx(5.0));               // tile 32 x 128
  CHECK(f[5] == Approx(7.0));
  CHECK(f[6] == 1.0f);                      // GEMM
  CHECK(f[8] == 0.0f);                      // not Winograd
  CHECK(f[14] == Approx(1.0));              // one kernel
  // A cuDNN Winograd convolution: the algorithm shows in the kernel list, not the main kernel.
  OpDesc conv = make_op(OpFamily::kConv2d, {8, 64, 64, 3, 56, 1, 1});
  conv.kernel_name = "volta_sgemm_64x64_nn";
  conv.kernel_list = ";void cudnn::winograd_nonfused::winogradforwarddata4x4<float, float>(p);"
                     "void cudnn::winograd_nonfused::winogradforwardfilter4x4<float, float>(p);"
                     "volta_sgemm_64x64_nn;void cudnn::winograd_nonfused::winogradforwardoutput4x4<float, float>(p)";
  REQUIRE(kernel_features(conv, t4, f));
  CHECK(f[4] == Approx(6.0));  // the 4x4 transforms are not taken for a GEMM tile
  CHECK(f[8] == 1.0f);
  CHECK(f[14] == Approx(std::log2(5.0)));  // four kernels
  // The shared-data loader keeps the kernel list.
  const auto data = load_measurements(test_subset_dir() + "/conv.csv.gz", catalog());
  REQUIRE_FALSE(data.empty());
  CHECK_FALSE(data[0].op.kernel_list.empty());
}

TEST_CASE("kernel types: by the launcher's family, then coarse launcher names, then the kernel's name") {
  const std::string gemm = "nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_TNT";
  const std::string elementwise = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>()";
  // The launcher's cost-model family wins over the kernel's name: a GEMM's split-K reduction and
  // a convolution's layout transform count with what launched them.
  CHECK(kernel_type("aten::addmm", "void splitKreduce_kernel<32, 16, int, float>()") == KernelType::kGemm);
  CHECK(kernel_type("aten::bmm", gemm) == KernelType::kGemm);
  CHECK(kernel_type("aten::cudnn_convolution", "void cudnn::engines_precompiled::nchwToNhwcKernel<float>()") ==
        KernelType::kConv);
  CHECK(kernel_type("aten::native_layer_norm", "anything") == KernelType::kNorm);
  CHECK(kernel_type("aten::_softmax", "anything") == KernelType::kSoftmax);
  CHECK(kernel_type("aten::add_", elementwise) == KernelType::kElementwise);
  CHECK(kernel_type("aten::copy_", elementwise) == KernelType::kElementwise);  // a like op (relu)
  CHECK(kernel_type("aten::threshold_backward", "x") == KernelType::kElementwise);
  // Launchers with no family of their own.
  CHECK(kernel_type("aten::native_layer_norm_backward", "x") == KernelType::kNorm);
  CHECK(kernel_type("aten::cudnn_batch_norm", "x") == KernelType::kNorm);
  CHECK(kernel_type("aten::_softmax_backward_data", "x") == KernelType::kSoftmax);
  CHECK(kernel_type("aten::convolution_backward", gemm) == KernelType::kConv);
  CHECK(kernel_type("aten::sum", elementwise) == KernelType::kReduction);
  CHECK(kernel_type("aten::linalg_vector_norm", "x") == KernelType::kReduction);  // a norm that reduces
  CHECK(kernel_type("aten::max_pool2d_with_indices", "x") == KernelType::kReduction);
  CHECK(kernel_type("aten::_scaled_dot_product_cudnn_attention_backward", "void cudnn::fusion::convert_dq_to_16bits<true>()") ==
        KernelType::kAttention);
  CHECK(kernel_type("aten::_foreach_add_", "x") == KernelType::kElementwise);
  CHECK(kernel_type("aten::_fused_adam_", "x") == KernelType::kElementwise);
  CHECK(kernel_type("aten::cat", "x") == KernelType::kCopy);
  // No launcher, or one that says nothing: the kernel's name.
  CHECK(kernel_type("", gemm) == KernelType::kGemm);
  CHECK(kernel_type("aten::matmul_custom", "ampere_sgemm_128x64_nn") == KernelType::kGemm);
  CHECK(kernel_type("", "sm80_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc") == KernelType::kConv);
  CHECK(kernel_type("", "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7") == KernelType::kAttention);
  CHECK(kernel_type("", "void splitKreduce_kernel<32, 16, int, float>()") == KernelType::kGemm);
  CHECK(kernel_type("", "void at::native::reduce_kernel<128, 4, at::native::ReduceOp<float>>()") == KernelType::kReduction);
  // The function's name decides, not its template arguments.
  CHECK(kernel_type("", "void at::native::vectorized_elementwise_kernel<4, at::native::norm_functor<float>>()") ==
        KernelType::kElementwise);
  CHECK(kernel_type("", "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float>()") ==
        KernelType::kNorm);
  CHECK(kernel_type("", "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>()") ==
        KernelType::kSoftmax);
  CHECK(kernel_type("", "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<X>()") ==
        KernelType::kElementwise);
  CHECK(kernel_type("", "void at::native::(anonymous namespace)::CatArrayBatchedCopy<float>()") == KernelType::kCopy);
  CHECK(kernel_type("aten::embedding_dense_backward", "void at::native::compute_grad_weight<float, long>()") ==
        KernelType::kOther);
  CHECK(kernel_type("", "") == KernelType::kOther);
  std::set<std::string> names;
  for (int t = 0; t < kKernelTypeCount; ++t) names.insert(to_string(static_cast<KernelType>(t)));
  CHECK(names.size() == static_cast<std::size_t>(kKernelTypeCount));
  CHECK(names.count("gemm") == 1);
}
