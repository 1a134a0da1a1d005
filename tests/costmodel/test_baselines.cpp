#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <set>
#include <string>

#include "costmodel/blas_tuning.h"
#include "costmodel/config_memory.h"
#include "costmodel/dataset.h"
#include "costmodel/eval/evaluate.h"
#include "costmodel/kernel_time.h"
#include "costmodel/eval/kmeans.h"
#include "costmodel/residual_correction.h"
#include "costmodel/paths.h"
#include "costmodel/roofline.h"
#include "costmodel/scaling.h"
#include "costmodel_fixtures.h"
#include "test_paths.h"

using namespace dpro::costmodel;
using dpro::test::catalog;
using dpro::test::make_op;



TEST_CASE("roofline: memory-bound ops scale with bandwidth, compute-bound with peak") {
  const auto& t4 = catalog().get("T4");
  const auto& h100 = catalog().get("H100-SXM5-80GB");
  OpDesc add = make_op(OpFamily::kAdd, {4096, 4096});
  const double t4_ms = roofline_ms(add, t4) - kRooflineOverheadMs;
  const double h100_ms = roofline_ms(add, h100) - kRooflineOverheadMs;
  CHECK(t4_ms / h100_ms == Approx(3350.0 / 320.0).epsilon(1e-6));
  OpDesc gemm = make_op(OpFamily::kBmm, {64, 1024, 1024, 1024});
  CHECK(arithmetic_intensity(gemm) > ridge_point(h100, DType::kFloat32));
  OpDesc gemm16 = gemm;
  gemm16.dtype = DType::kFloat16;
  CHECK(roofline_ms(gemm16, h100) < roofline_ms(gemm, h100) / 5);
  CHECK_FALSE(RooflineModel().predict(OpDesc{}, t4).has_value());
}

TEST_CASE("cross-device scaling: gamma from arithmetic intensity, identity on the same GPU") {
  const auto& v100 = catalog().get("V100-PCIE-32GB");
  const auto& a100 = catalog().get("A100-PCIE-40GB");
  OpDesc add = make_op(OpFamily::kAdd, {4096, 4096});
  CHECK(scaling_gamma(add, a100) > 0.95);
  OpDesc gemm = make_op(OpFamily::kBmm, {64, 1024, 1024, 1024});
  CHECK(scaling_gamma(gemm, a100) < 0.3);
  CHECK(scale_ms(gemm, v100, 2.0, v100) == Approx(2.0));
  const double o = kFixedOverheadMs;
  CHECK(scale_ms(add, v100, 1.0, a100) == Approx(o + (1.0 - o) * std::pow(900.0 / 1555.0, scaling_gamma(add, a100)) *
                                                        std::pow(14.0 / 19.5, 1 - scaling_gamma(add, a100))));
  // Undescribable ops scale by the bandwidth ratio; the fixed overhead does not scale.
  CHECK(scale_ms(OpDesc{}, v100, 1.0, a100) == Approx(o + (1.0 - o) * 900.0 / 1555.0));
  CHECK(scale_ms(add, v100, 0.01, a100) == Approx(0.01));
  // ... unless their kernel's name says GEMM or convolution: then half bandwidth, half FLOP/s.
  OpDesc named;
  named.kernel_name = "volta_sgemm_128x64_nn";
  CHECK(scaling_gamma(named, a100) == kGemmKernelGamma);
  CHECK(scale_ms(named, v100, 1.0, a100) ==
        Approx(o + (1.0 - o) * std::sqrt(900.0 / 1555.0) * std::sqrt(14.0 / 19.5)));
  named.kernel_name = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int)";
  CHECK(scaling_gamma(named, a100) == 1.0);
}

TEST_CASE("kernel-time factors between GPUs of one chip stay within their resources' ratios; a GPU behind in all of them is not faster") {
  const auto& h100 = catalog().get("H100-SXM5-80GB");
  const auto& h200 = catalog().get("H200-SXM-141GB");
  const OpDesc gemm = make_op(OpFamily::kBmm, {64, 1024, 1024, 1024});
  const RatioRange up = physical_ratio_range(gemm, h100, h200);  // only bandwidth differs
  CHECK(up.low == Approx(3350.0 / 4800.0));
  CHECK(up.high == 1.0);
  CHECK(up.clamp(1.17) == 1.0);  // never slower on the H200
  CHECK(up.clamp(0.5) == Approx(3350.0 / 4800.0));
  CHECK(up.clamp(0.9) == 0.9);
  const RatioRange down = physical_ratio_range(gemm, h200, h100);
  CHECK(down.low == 1.0);
  CHECK(down.high == Approx(4800.0 / 3350.0));
  // Other chips (other kernels, caches): no bound, except that a GPU behind the origin in every
  // resource by more than kDominanceMargin does not run the kernel faster.
  const RatioRange faster = physical_ratio_range(gemm, catalog().get("A100-SXM4-80GB"), h100);
  CHECK(faster.clamp(0.01) == 0.01);
  CHECK(faster.clamp(100.0) == 100.0);
  const RatioRange behind = physical_ratio_range(gemm, h100, catalog().get("A100-SXM4-80GB"));
  CHECK(behind.clamp(0.01) == 1.0);  // 1,410 against 1,980 MHz and behind in all else
  CHECK(behind.clamp(100.0) == 100.0);
  const OpDesc tiny = make_op(OpFamily::kRelu, {4, 4});
  CHECK(physical_ratio_range(tiny, catalog().get("V100-SXM2-32GB"), catalog().get("P4")).clamp(0.81) == 1.0);
  // Within the margin (V100 PCIe's 1,380 MHz against the A100 PCIe's 1,410): measured both ways.
  CHECK(physical_ratio_range(gemm, catalog().get("A100-PCIE-40GB"), catalog().get("V100-PCIE-32GB")).clamp(0.7) ==
        0.7);
  // A GPU ahead in one resource (T4's clock over V100 SXM2's): no bound.
  CHECK(physical_ratio_range(tiny, catalog().get("V100-SXM2-32GB"), catalog().get("T4")).clamp(0.9) == 0.9);
  CHECK(physical_ratio_range(gemm, h100, h100).clamp(1.3) == 1.0);
}

TEST_CASE("between GPUs of one chip a kernel scales by what it moves, not by a model of either GPU") {
  const auto& h100 = catalog().get("H100-SXM5-80GB");
  const auto& h200 = catalog().get("H200-SXM-141GB");
  const double bw = 3350.0 / 4800.0;
  // A GEMM above the ridge point: the same SMs, clocks and peaks, so the same time.
  const OpDesc gemm = make_op(OpFamily::kBmm, {64, 1024, 1024, 1024});
  CHECK(same_chip_factor(gemm, h100, h200, 2.0) == Approx(1.0));
  // A 1.6 GB add whose bytes beyond a quarter of the L2 take all its time at the H100's datasheet
  // bandwidth: all DRAM, the bandwidth ratio; the other way round too.
  const OpDesc add = make_op(OpFamily::kAdd, {16384, 8192});
  const double dram = add.bytes() - kSameChipL2Share * 50e6;
  const double at_bandwidth_ms = dram / 3350e9 * 1e3;
  CHECK(same_chip_factor(add, h100, h200, at_bandwidth_ms) == Approx(bw));
  CHECK(same_chip_factor(add, h200, h100, dram / 4800e9 * 1e3) == Approx(1 / bw));
  // Twice that time: half of it is DRAM traffic, half is not (it keeps its time).
  CHECK(same_chip_factor(add, h100, h200, 2 * at_bandwidth_ms) == Approx(0.5 * bw + 0.5));
  // A working set within a quarter of the L2 (50 MB) moves nothing through DRAM: unchanged.
  const OpDesc small = make_op(OpFamily::kAdd, {512, 1024});  // 6.3 MB
  CHECK(same_chip_factor(small, h100, h200, 0.01) == Approx(1.0));
  // Undescribed kernels: a GEMM by its name keeps its time, any other is halfway.
  OpDesc unknown;
  unknown.kernel_name = "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize64x128x32";
  CHECK(same_chip_factor(unknown, h100, h200, 0.1) == Approx(1.0));
  unknown.kernel_name = "void at::native::batch_norm_backward_kernel<float, float, float, int>(...)";
  CHECK(same_chip_factor(unknown, h100, h200, 0.1) == Approx(0.5 * bw + 0.5));
  // A convolution's layout transform is none of its arithmetic: as an undescribed kernel, halfway.
  OpDesc transform = make_op(OpFamily::kConv2d, {32, 64, 64, 3, 56, 1, 1});
  REQUIRE(transform.describable());
  CHECK(same_chip_factor(transform, h100, h200, 0.1) == Approx(1.0));  // no kernel named: the op's
  transform.kernel_name = "void cudnn::engines_precompiled::nchwToNhwcKernel<float, float, float, false, true>(int)";
  CHECK(same_chip_factor(transform, h100, h200, 0.1) == Approx(0.5 * bw + 0.5));
  // A100 40 and 80 GB SXM: one chip, 1,555 and 2,039 GB/s.
  const double a100_dram = add.bytes() - kSameChipL2Share * 40e6;
  CHECK(same_chip_factor(add, catalog().get("A100-SXM4-40GB"), catalog().get("A100-SXM4-80GB"),
                         1e3 * a100_dram / 1555e9) == Approx(1555.0 / 2039.0));
  // V100 PCIe and SXM2: one chip at other clocks, so even a GEMM changes, by the peaks' ratio.
  const auto& pcie = catalog().get("V100-PCIE-32GB");
  const auto& sxm = catalog().get("V100-SXM2-32GB");
  REQUIRE(same_chip(pcie, sxm));
  CHECK(same_chip_factor(gemm, pcie, sxm, 10.0) ==
        Approx(pcie.peak_flops(DType::kFloat32) / sxm.peak_flops(DType::kFloat32)));
  // Other chips: no such rule.
  CHECK_FALSE(same_chip_factor(gemm, h100, catalog().get("A100-SXM4-80GB"), 2.0).has_value());
  CHECK_FALSE(same_chip_factor(gemm, h100, h200, 0.0).has_value());
}

TEST_CASE("a kernel's name says GEMM or convolution by its function name, not its template arguments") {
  for (const char* gemm : {"volta_sgemm_128x64_nn", "ampere_sgemm_32x32_sliced1x4_tn",
                           "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4>(Params)",
                           "sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw",
                           "void cudnn::detail::implicit_convolve_sgemm<float, float, 128, 5, 5>(int, int)",
                           "void fft2d_r2c_32x32<float, false, 5u, true>(float2*, float const*)",
                           "_ZN19cutlass_cudnn_train6KernelINS_4conv6kernel23ImplicitGemmConvolution",
                           "void gemmSN_TN_kernel<float, 128, 16, 2, 4, 8, 9, false>(cublasGemmSmallNParams)",
                           "void winograd_nonfused::winogradForwardData4x4<float, float>(Params)",
                           "sm80_xmma_wgrad_implicit_gemm_indexed_tf32f32", "Conv2dDgradKernel",
                           // cuDNN's own convolution kernels (22 % of the shared data's conv rows):
                           "cudnn_infer_volta_scudnn_128x64_relu_small_nn_v1",
                           "cudnn_ampere_scudnn_128x64_relu_xregs_large_nn_v1",
                           "turing_fp16_s1688cudnn_fp16_256x128_ldg8_relu_f2f_exp_small_nhwc_tn_v1",
                           "volta_hcudnn_128x64_relu", "triton_tem_fused_addmm_relu_0", "triton_mm_12",
                           // cuBLAS's Hopper GEMMs (traces/h100/gpt2-emit-nvtx-step)
                           "nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_TNT",
                           // PyTorch's own depthwise convolution, in an anonymous namespace
                           "void at::native::(anonymous namespace)::conv_depthwise2d_forward_kernel<1, float, "
                           "int>(at::GenericPackedTensorAccessor<float const, 4ul>, int)"})
    CHECK(is_gemm_or_conv_kernel(gemm));
  for (const char* other : {"void at::native::vectorized_elementwise_kernel<4, CUDAFunctor_add<float>>(int)",
                            "void gemv2T_kernel_val<int, int, float, float, float, 128, 16, 4, 4, false>(float)",
                            // "gemm" only in its template arguments:
                            "void split_embedding_codegen_forward_unweighted_kernel<float, GemmArgs>(float)",
                            "void at::native::reduce_kernel<512, 1>(at::native::ReduceOp<float>)", "", "void ",
                            // cuDNN's batch norm and layout kernels: "cudnn" as a namespace
                            "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 128, true, 1>(float)",
                            "void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true>(int)", "cudnn",
                            // as the H100 traces name them (traces/h100/resnet50-emit-nvtx-step), and an
                            // index helper of the shared data's conv rows
                            "void cudnn::engines_precompiled::nchwToNhwcKernel<float, float, float, false, true, "
                            "(cudnnKernelDataType_t)2>(cudnn::engines_precompiled::nchw2nhwc_params_t<float>, float "
                            "const*, float*)",
                            "void cudnn::engines_precompiled::nhwcToNchwKernel<__nv_bfloat16, __nv_bfloat16, float, "
                            "true, false, (cudnnKernelDataType_t)0>(int)",
                            "void cudnn::cnn::kern_precompute_indices<false>(int*, int, int, int)",
                            // TorchInductor's pointwise and reduction kernels, whatever they fused
                            "triton_poi_fused_convolution_relu_3", "triton_red_fused_native_layer_norm_0",
                            "triton_per_fused_addmm_sum_1",
                            // an anonymous namespace's elementwise kernel whose functor names a GEMM
                            "void (anonymous namespace)::launch_clamp_scalar<GemmEpilogue>(int)"})
    CHECK_FALSE(is_gemm_or_conv_kernel(other));
}

TEST_CASE("a GEMM or convolution kernel's name says the arithmetic it runs") {
  // Real names: the A100 traces of traces/hta (TF32 is PyTorch's default for cuDNN convolutions),
  // and cuBLAS/cuDNN/CUTLASS names of fp16, bf16 and fp8 kernels.
  const std::string mangled_tf32 =
      "_ZN19cutlass_cudnn_train6KernelINS_4conv6kernel23ImplicitGemmConvolutionINS1_11threadblock22ImplicitGemm"
      "MultistageINS_4gemm9GemmShapeILi128ELi128ELi32EEENS4_52Conv2dWgradOutputGradientTileAccessIterator"
      "OptimizedINS_11MatrixShapeILi128ELi32EEENS_10tfloat32_tENS_9transform29PitchLinearWarpRakedThreadMapIN";
  for (const std::string& tf32 :
       {std::string("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4>"
                    "(cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4::Params)"),
        std::string("sm80_xmma_wgrad_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16_"
                    "stage4_warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn_train"),
        std::string("void cutlass_cudnn_infer::Kernel<cutlass_tensorop_s1688fprop_optimized_tf32_128x128_32x4_nhwc_"
                    "align4>(cutlass_tensorop_s1688fprop_optimized_tf32_128x128_32x4_nhwc_align4::Params)"),
        mangled_tf32})
    CHECK(kernel_math_dtype(tf32) == DType::kTensorFloat32);
  for (const char* fp16 : {"volta_fp16_s884gemm_fp16_128x128_ldg8_f2f_nn",
                           "ampere_h16816gemm_256x128_ldg8_stages_32x3_nn",
                           "turing_fp16_s1688cudnn_fp16_256x128_ldg8_relu_f2f_exp_small_nhwc_tn_v1",
                           "sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize128x128x32_stage4",
                           "void cutlass::Kernel<cutlass_80_tensorop_f16_s16816gemm_relu_f16_128x128_32x4_nn>(P)"})
    CHECK(kernel_math_dtype(fp16) == DType::kFloat16);
  CHECK(kernel_math_dtype("sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32") == DType::kBFloat16);
  CHECK(kernel_math_dtype("sm90_xmma_gemm_e4m3e4m3_e4m3f32_f16_tn_n_tilesize128x128x64") == DType::kFloat8);
  // Plain fp32 (SIMT) GEMMs and convolutions, and kernels that are neither: no claim.
  for (const char* other : {"ampere_sgemm_128x64_nn", "volta_sgemm_128x32_nt",
                            "cudnn_infer_volta_scudnn_128x64_relu_small_nn_v1",
                            "void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>(Params)",
                            "void at::native::vectorized_elementwise_kernel<4, CUDAFunctor_add<c10::Half>>(int)",
                            ""})
    CHECK_FALSE(kernel_math_dtype(other).has_value());
  // An op takes it as its dtype: TF32 always (fp32 tensors, same bytes); fp16 only when no dtype was recorded.
  OpDesc op = make_op(OpFamily::kBmm, {8, 256, 256, 256});
  op.kernel_name = "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4>(Params)";
  const double bytes = op.bytes();
  op.take_kernel_math(true);
  CHECK(op.dtype == DType::kTensorFloat32);
  CHECK(op.dtype_from_kernel);
  CHECK(op.bytes() == bytes);
  op.dtype = DType::kFloat32;
  op.kernel_name = "ampere_h16816gemm_256x128_ldg8_stages_32x3_nn";
  op.take_kernel_math(true);
  CHECK(op.dtype == DType::kFloat32);
  CHECK_FALSE(op.dtype_from_kernel);
  op.take_kernel_math(false);
  CHECK(op.dtype == DType::kFloat16);
  CHECK(op.dtype_from_kernel);
  op.dtype = DType::kBFloat16;  // a recorded narrower dtype is never replaced
  op.kernel_name = "sm80_xmma_gemm_tf32f32_tf32f32_f32_nn_n";
  op.take_kernel_math(false);
  CHECK(op.dtype == DType::kBFloat16);
}

TEST_CASE("scaling from another measured GPU beats roofline on the subset") {
  const auto data = load_measurements(test_subset_dir(), catalog());
  const OriginIndex index(data);
  double roof = 0, scaled = 0;
  int n_roof = 0, n_scaled = 0;
  for (const auto& m : data) {
    const auto origins = index.origins(m, m.device->model_family());
    REQUIRE(origins.size() == 4);  // every subset op was measured on all five GPUs
    roof += std::abs(roofline_ms(m.op, *m.device) - m.latency_ms) / m.latency_ms;
    ++n_roof;
    for (const Measurement* o : origins) {
      REQUIRE(o->device->model_family() != m.device->model_family());
      scaled += std::abs(scale_ms(m.op, *o->device, o->latency_ms, *m.device) - m.latency_ms) / m.latency_ms;
      ++n_scaled;
    }
  }
  INFO("roofline MAPE " << 100 * roof / n_roof << "%, scaling MAPE " << 100 * scaled / n_scaled << "%");
  CHECK(scaled / n_scaled < roof / n_roof);
}

TEST_CASE("split is deterministic and near the requested fraction") {
  const auto data = load_measurements(test_subset_dir(), catalog());
  int test = 0;
  for (const auto& m : data) test += in_test_split(m, 0.2, 7);
  CHECK(test > 0.15 * data.size());
  CHECK(test < 0.25 * data.size());
  CHECK(split_training_rows(data, 0.2, 7).size() == data.size() - test);
  CHECK(split_training_rows(data, 0.2, 8).size() != data.size() - test);
}

TEST_CASE("k-means picks distinct samples covering every op family") {
  const auto data = load_measurements(test_subset_dir(), catalog());
  std::vector<std::vector<float>> points;
  for (const auto& m : data)
    if (m.device->model_family() == "T4") points.push_back(op_cluster_features(m.op));
  const auto picked = kmeans_select(points, 32, 1);
  CHECK(picked.size() == 32);
  CHECK(std::set<std::size_t>(picked.begin(), picked.end()).size() == 32);
  std::set<float> families;
  for (auto i : picked)
    for (int f = 0; f < kOpFamilyCount; ++f)
      if (points[i][4 + f] > 0) families.insert(f);
  CHECK(families.size() == 16);
  CHECK(kmeans_select(points, 32, 1) == picked);
}

TEST_CASE("residual correction: local per-family factors from a few samples of a GPU") {
  ResidualCorrection none;
  CHECK(none.factor(make_op(OpFamily::kAdd, {1024, 1024})) == 1.0);
  // The model is 2x too fast on small adds (a launch floor it missed) and right on large
  // ones; 1.25x too slow on every bmm.
  ResidualCorrection c;
  for (std::int64_t h : {64, 128, 256}) c.add(make_op(OpFamily::kAdd, {64, h}), 0.01, 0.02);
  for (std::int64_t h : {1 << 20, 1 << 21, 1 << 22}) c.add(make_op(OpFamily::kAdd, {64, h}), 1.0, 1.0);
  for (std::int64_t n : {256, 512, 1024}) c.add(make_op(OpFamily::kBmm, {8, n, n, n}), 1.25, 1.0);
  REQUIRE(c.size() == 9);
  // Near samples dominate; with three of them the estimate is still shrunk a little towards
  // the family's and all samples' means.
  const double small = c.factor(make_op(OpFamily::kAdd, {64, 192}));
  const double large = c.factor(make_op(OpFamily::kAdd, {64, 3 << 20}));
  const double bmm = c.factor(make_op(OpFamily::kBmm, {8, 384, 384, 384}));
  INFO("small add " << small << ", large add " << large << ", bmm " << bmm);
  CHECK(small > 1.6);
  CHECK(small < 2.0);
  CHECK(large > 0.95);
  CHECK(large < 1.2);
  CHECK(bmm > 0.8);
  CHECK(bmm < 0.9);
  // A family without samples gets the mean of all samples.
  const double all = std::exp((3 * std::log(2.0) + 3 * std::log(0.8)) / 9);
  CHECK(c.factor(make_op(OpFamily::kGelu, {64, 64})) == Approx(all).epsilon(1e-6));
  // Unusable samples are ignored.
  c.add(make_op(OpFamily::kAdd, {1, 1}), 0.0, 1.0);
  c.add(make_op(OpFamily::kAdd, {1, 1}), std::nan(""), 1.0);
  CHECK(c.size() == 9);
}

TEST_CASE("OpenBLAS's pre-AVX2 fallback kernels are replaced only where the CPU can do better") {
  CHECK(std::string(better_blas_core("Prescott", true, true)) == "SkylakeX");
  CHECK(std::string(better_blas_core("prescott", true, false)) == "Haswell");
  CHECK(std::string(better_blas_core("Sandybridge", true, false)) == "Haswell");
  CHECK(better_blas_core("Haswell", true, true) == nullptr);     // a good choice stays
  CHECK(better_blas_core("SkylakeX", true, true) == nullptr);
  CHECK(better_blas_core("Prescott", false, false) == nullptr);  // the CPU has no AVX2
  CHECK(better_blas_core(nullptr, true, true) == nullptr);
}

TEST_CASE("configuration memory: a configuration's residual on trained GPUs carries to another GPU") {
  // 60 conv configurations measured on four GPUs; the "model" predicts 1 ms for each, and
  // every configuration is slow or fast by its own factor on all four GPUs alike (plus a
  // little per-GPU noise). Adds have residuals that do not agree between GPUs.
  const char* gpus[] = {"T4", "V100-PCIE-32GB", "P100-PCIE-16GB", "P4"};
  std::vector<Measurement> rows;
  std::vector<double> predicted;
  std::map<std::string, double> true_factor;
  std::uint64_t state = 12345;
  auto uniform = [&]() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(state >> 11) / static_cast<double>(1ull << 53);
  };
  for (int c = 0; c < 60; ++c) {
    const OpDesc conv = make_op(OpFamily::kConv2d, {8, 16 + c, 32, 3, 56, 1, 1});
    const OpDesc add = make_op(OpFamily::kAdd, {64, 1000 + c});
    const double f = std::exp(uniform() - 0.5);
    true_factor[op_key(conv)] = f;
    for (const char* g : gpus) {
      rows.push_back({conv, &catalog().get(g), f * std::exp(0.05 * (uniform() - 0.5))});
      predicted.push_back(1.0);
      rows.push_back({add, &catalog().get(g), std::exp(0.4 * (uniform() - 0.5))});
      predicted.push_back(1.0);
    }
  }
  rows.push_back({make_op(OpFamily::kRelu, {4, 4}), &catalog().get("T4"), 1.0});
  predicted.push_back(std::nan(""));  // unusable prediction: skipped
  std::vector<const Measurement*> ptrs;
  for (const auto& m : rows) ptrs.push_back(&m);
  const ConfigMemory memory = ConfigMemory::build(ptrs, predicted);
  INFO("conv weight " << memory.weight(OpFamily::kConv2d) << ", shrinkage " << memory.shrinkage(OpFamily::kConv2d));
  // Each GPU's residual is predicted from the other three: weight x 3 / (3 + shrinkage) ~ 1.
  const double effective = memory.weight(OpFamily::kConv2d) * 3 / (3 + memory.shrinkage(OpFamily::kConv2d));
  CHECK(effective > 0.9);
  CHECK(effective < 1.1);
  CHECK(memory.weight(OpFamily::kAdd) == 0.0);  // residuals that do not carry over are not kept
  CHECK(memory.factor(make_op(OpFamily::kAdd, {64, 1000})) == 1.0);
  CHECK(memory.factor(make_op(OpFamily::kConv2d, {8, 15, 32, 3, 56, 1, 1})) == 1.0);  // not trained on
  // The factor of a trained configuration approaches its true one (with a little shrinkage).
  for (int c : {0, 17, 42}) {
    const OpDesc conv = make_op(OpFamily::kConv2d, {8, 16 + c, 32, 3, 56, 1, 1});
    const double f = true_factor[op_key(conv)];
    CHECK(std::abs(std::log(memory.factor(conv) / f)) < 0.15 * std::abs(std::log(f)) + 0.02);
  }
  // Round trip through the model file's blob; corrupted blobs are InputErrors naming the file.
  const std::string blob = memory.serialise();
  const ConfigMemory back = ConfigMemory::parse(blob, "m.dpcm");
  CHECK(back.size() == memory.size());
  const OpDesc probe = make_op(OpFamily::kConv2d, {8, 16 + 17, 32, 3, 56, 1, 1});
  CHECK(back.factor(probe) == memory.factor(probe));
  CHECK_THROWS_WITH(ConfigMemory::parse(blob.substr(0, blob.size() - 3), "m.dpcm"),
                    Catch::Contains("m.dpcm") && Catch::Contains("truncated"));
  CHECK_THROWS_WITH(ConfigMemory::parse("XXXX" + blob.substr(4), "m.dpcm"), Catch::Contains("bad magic"));
  CHECK_THROWS_WITH(ConfigMemory::parse(blob + "z", "m.dpcm"), Catch::Contains("trailing"));
}

TEST_CASE("kernel times: each GPU's measurement overhead, taken out of a what-if's ratio") {
  // Synthetic rows: latency = overhead + bytes / bandwidth on two GPUs, three families each.
  const std::map<std::string, double> overhead = {{"T4", 0.012}, {"V100-PCIE-32GB", 0.020}};
  std::vector<Measurement> rows;
  for (const auto& [gpu, c] : overhead)
    for (OpFamily f : {OpFamily::kAdd, OpFamily::kRelu, OpFamily::kMul})
      for (int i = 0; i < 30; ++i) {
        const OpDesc op = make_op(f, {1024 + 256 * i, 8192});
        rows.push_back({op, &catalog().get(gpu), c + op.bytes() / (catalog().get(gpu).memory_bandwidth_gbs * 1e6)});
      }
  // Too few large rows on P4 (7 per family), and small ones (below kOverheadMinBytes) on P100.
  for (int i = 0; i < 7; ++i) rows.push_back({make_op(OpFamily::kAdd, {4096 + i, 8192}), &catalog().get("P4"), 1.0});
  for (int i = 0; i < 40; ++i)
    rows.push_back({make_op(OpFamily::kAdd, {64 + i, 1024}), &catalog().get("P100-PCIE-16GB"), 0.03});
  // A conv row: not an elementwise family, never used.
  rows.push_back({make_op(OpFamily::kConv2d, {8, 16, 32, 3, 56, 1, 1}), &catalog().get("P4"), 5.0});
  const auto fitted = measurement_overheads_ms(all_rows(rows));
  REQUIRE(fitted.size() == 2);
  CHECK(fitted.at("T4") == Approx(0.012).margin(1e-9));
  CHECK(fitted.at("V100-PCIE-32GB") == Approx(0.020).margin(1e-9));
  CHECK(typical_overhead_ms(fitted) == Approx(0.016));
  CHECK(typical_overhead_ms({}) == 0.0);

  // The ratio: at or below the floor the latency ratio; at twice the floor or more, the ratio of
  // the kernel parts; kernel parts no smaller than a quarter of their latency.
  CHECK(kernel_time_ratio(0.024, 0.025, 0.015, 0.020, 0.025) == Approx(0.024 / 0.025));
  CHECK(kernel_time_ratio(0.120, 0.520, 0.015, 0.020, 0.025) == Approx(0.105 / 0.500));
  CHECK(kernel_time_ratio(0.120, 0.520, 0.0, 0.0, 0.025) == Approx(0.120 / 0.520));  // no overheads known
  CHECK(kernel_time_ratio(0.120, 0.520, 0.015, 0.020, 0.0) == Approx(0.120 / 0.520));  // no floor known
  const double halfway = kernel_time_ratio(0.0375, 0.030, 0.015, 0.015, 0.025);  // w = 0.5
  CHECK(halfway == Approx((0.0375 - 0.0075) / (0.030 - 0.0075)));
  CHECK(kernel_time_ratio(0.060, 0.060, 0.059, 0.0, 0.025) == Approx(0.25));  // clamped
  // A speed-up of the kernel part survives: 100 us of kernel behind a 20 us overhead, 4x faster.
  CHECK(kernel_time_ratio(0.045, 0.120, 0.020, 0.020, 0.025) == Approx(0.25));
  CHECK(kernel_time_ratio(0.045, 0.120, 0.020, 0.020, 0.025) < 0.045 / 0.120);  // the latency ratio made it 0.375

  // The shared data's subset: each of its five GPUs has an overhead of some microseconds, never
  // none (16-26 us here; 14-26 us on the full data, docs/costmodel.md).
  const auto data = load_measurements(test_subset_dir(), catalog());
  const auto real = measurement_overheads_ms(all_rows(data));
  CHECK(real.size() == 5);
  for (const auto& [gpu, ms] : real) {
    INFO(gpu << ": " << ms * 1e3 << " us");
    CHECK(ms > 0.010);
    CHECK(ms < 0.030);
  }
}
