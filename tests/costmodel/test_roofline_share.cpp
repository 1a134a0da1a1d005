#include <catch2/catch.hpp>

#include <cmath>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "costmodel/dataset.h"
#include "costmodel/eval/share_eval.h"
#include "costmodel/paths.h"
#include "costmodel/roofline_share.h"
#include "costmodel_fixtures.h"
#include "core/stats.h"
#include "test_paths.h"

using namespace dpro::costmodel;
using dpro::test::catalog;
using dpro::test::make_op;

namespace {

const std::vector<Measurement>& subset() {
  static const auto rows = load_measurements(test_subset_dir(), catalog());
  return rows;
}

std::vector<const Measurement*> pointers(const std::vector<Measurement>& rows) {
  std::vector<const Measurement*> out;
  for (const auto& m : rows) out.push_back(&m);
  return out;
}

const ShareTable& subset_table() {
  static const ShareTable t = fit_share_table(pointers(subset()));
  return t;
}

// `table`'s JSON (by default the subset's) with `from` replaced by `to` (once).
std::string edited(const ShareTable& table, const std::string& from, const std::string& to) {
  std::string json = share_table_to_json(table);
  const auto at = json.find(from);
  REQUIRE(at != std::string::npos);
  return json.replace(at, from.size(), to);
}
std::string edited(const std::string& from, const std::string& to) { return edited(subset_table(), from, to); }

// The bundled subset's rows (five GPUs, host-timed) and `more`.
std::vector<const Measurement*> subset_and(const std::vector<Measurement>& more) {
  std::vector<const Measurement*> out = pointers(subset());
  for (const Measurement& m : more) out.push_back(&m);
  return out;
}

// Our H100 run's rows of `ops` (data/costmodel/measured-2026-11-23/h100-rerun): each has the op's
// host-timed Latency and its kernels' GPU time (Kernel Time).
std::vector<Measurement> h100_rerun_rows(std::initializer_list<const char*> ops) {
  const std::string run = dpro::test::source_path("data/costmodel/measured-2026-11-23/h100-rerun/");
  std::vector<Measurement> out;
  for (const char* op : ops) {
    auto rows = load_measurements(run + op, catalog());
    out.insert(out.end(), rows.begin(), rows.end());
  }
  return out;
}

}  // namespace

TEST_CASE("roofline share: the fit on the bundled subset gives every family a curve and the machines' host figures") {
  const ShareTable& t = subset_table();
  CHECK(t.families.size() == 16);
  CHECK(t.gpu_host_overhead_ms.size() >= 4);
  CHECK(t.host_overhead_ms > 0.005);
  CHECK(t.host_overhead_ms < 0.05);
  CHECK(t.host_floor_ms >= t.host_overhead_ms * 0.5);
  for (const auto& [family, f] : t.families) {
    CHECK(f.kernel_floor_ms >= 0);
    for (const auto& [key, c] : f.by_intensity)
      for (double y : c.log10_share) CHECK(y <= 0);  // share at most 1
  }
  // Large elementwise ops reach a share of the bandwidth a GPU can sustain, not the datasheet's
  // full figure and not a tenth of it.
  const double share = t.share(OpFamily::kAdd, 1.0, relative_intensity(make_op(OpFamily::kAdd, {8192, 8192}),
                                                                       catalog().get("V100-PCIE-32GB")));
  CHECK(share > 0.4);
  CHECK(share < 1.0);
  // Leave-one-GPU-out on the subset: a fold per GPU model, each scored on its own rows.
  const auto logo = share_leave_one_gpu_out(pointers(subset()), ShareFitOptions{});
  CHECK(logo.size() == 5);
  for (const auto& [gpu, score] : logo) {
    CHECK(score.latency.count > 0);
    CHECK(score.latency.mape_percent() < 60);
  }
}

TEST_CASE("roofline share: predictions are never negative or NaN, and rise with an op's size within a family") {
  const ShareTable& t = subset_table();
  for (const char* gpu : {"T4", "H100-SXM5-80GB", "L4", "H200-SXM-141GB"}) {
    const DeviceSpec& d = catalog().get(gpu);
    for (OpFamily family : {OpFamily::kAdd, OpFamily::kRelu, OpFamily::kGelu, OpFamily::kLayerNorm,
                            OpFamily::kSoftmax, OpFamily::kPowScalar}) {
      double last = 0;
      for (std::int64_t rows = 1; rows <= (std::int64_t{1} << 24); rows *= 2) {
        const OpDesc op = make_op(family, {rows, 1024});
        const auto k = t.kernel_ms(op, d);
        const auto l = t.latency_ms(op, d);
        REQUIRE(k);
        REQUIRE(l);
        CHECK(std::isfinite(*k));
        CHECK(*k > 0);
        CHECK(*l >= *k);
        CHECK(*k >= last * (1 - 1e-9));
        last = *k;
      }
    }
    // A batched GEMM of more batches (the same intensity) never takes less.
    double last = 0;
    for (std::int64_t b = 1; b <= 4096; b *= 2) {
      const auto k = t.kernel_ms(make_op(OpFamily::kBmm, {b, 512, 512, 512}), d);
      REQUIRE(k);
      CHECK(*k >= last * (1 - 1e-9));
      last = *k;
    }
  }
  CHECK_FALSE(t.kernel_ms(OpDesc{}, catalog().get("T4")));
  CHECK(t.share(OpFamily::kAdd, std::nan(""), std::nan("")) > 0);
  CHECK(t.share(OpFamily::kAdd, 0.0) > 0);
  const RooflineShareModel kernel(t, false), latency(t, true);
  const OpDesc add = make_op(OpFamily::kAdd, {1024, 1024});
  CHECK(*latency.predict(add, catalog().get("T4")) > *kernel.predict(add, catalog().get("T4")));
}

TEST_CASE("roofline share: a table survives its JSON file, and the shipped one loads") {
  const ShareTable& t = subset_table();
  const ShareTable back = share_table_from_json(share_table_to_json(t), "t.json");
  const DeviceSpec& l4 = catalog().get("L4");
  for (const OpDesc& op : {make_op(OpFamily::kAdd, {4096, 4096}), make_op(OpFamily::kLinear, {8, 1024, 1024, 1024}),
                           make_op(OpFamily::kSoftmax, {64, 333})})
    CHECK(*back.latency_ms(op, l4) == Approx(*t.latency_ms(op, l4)).epsilon(1e-4));
  // Which GPUs' rows gave each family's curves: every GPU of the subset, each with at least one
  // family, and the record survives the file.
  CHECK(t.curve_gpus.size() >= 5);
  for (const auto& [gpu, families] : t.curve_gpus) CHECK_FALSE(families.empty());
  CHECK(back.curve_gpus == t.curve_gpus);
  const ShareTable shipped = load_share_table(default_shares_path());
  CHECK(shipped.families.size() == 16);
  CHECK(shipped.provenance.find("fit-shares") != std::string::npos);
  // NeuSight's A100 80GB has conv rows only: its rows gave the conv curves and nothing else.
  REQUIRE(shipped.curve_gpus.contains("A100-PCIE-80GB"));
  CHECK(shipped.curve_gpus.at("A100-PCIE-80GB") == std::set<OpFamily>{OpFamily::kConv2d});
  CHECK_FALSE(shipped.gpu_host_overhead_ms.contains("A100-PCIE-80GB"));
}

TEST_CASE("roofline share: GPU-timed rows (a Kernel Time) give the curves and kernel floors of their families") {
  // The bundled subset (five GPUs, host-timed) and our H100 run's add and bmm rows, which carry
  // the GPU time of their kernels (data/costmodel/measured-2026-11-23/h100-rerun).
  const std::vector<Measurement> timed_rows = h100_rerun_rows({"add", "bmm"});
  REQUIRE(timed_rows.size() > 1000);
  const std::vector<const Measurement*> data = subset_and(timed_rows);
  const ShareTable timed = fit_share_table(data);
  ShareFitOptions latency_only;
  latency_only.use_kernel_time = false;
  const ShareTable latency = fit_share_table(data, latency_only);
  CHECK(timed.gpu_timed == std::set<std::string>{"H100-SXM5-80GB"});
  CHECK(latency.gpu_timed.empty());

  // The kernel floor of add is the fastest add kernels' GPU time (a few us), not what host-timed
  // latencies leave above their machine's overhead (about 11 us).
  std::vector<double> add_kernels;
  for (const Measurement& m : timed_rows)
    if (m.op.family == OpFamily::kAdd) add_kernels.push_back(m.kernel_ms);
  CHECK(timed.families.at(OpFamily::kAdd).kernel_floor_ms == Approx(dpro::quantile(add_kernels, 0.05)));
  CHECK(timed.families.at(OpFamily::kAdd).kernel_floor_ms < 0.005);
  CHECK(latency.families.at(OpFamily::kAdd).kernel_floor_ms > 0.008);
  // A family without GPU-timed rows keeps the curves of the host-timed fit.
  const auto& relu_timed = timed.families.at(OpFamily::kRelu).by_intensity;
  const auto& relu_latency = latency.families.at(OpFamily::kRelu).by_intensity;
  REQUIRE(relu_timed.size() == relu_latency.size());
  for (const auto& [key, curve] : relu_timed) {
    CHECK(curve.first == relu_latency.at(key).first);
    CHECK(curve.log10_share == relu_latency.at(key).log10_share);
  }
  // On the rows they were fitted on, the GPU-timed fit prices the H100's kernels far better.
  std::vector<const Measurement*> h100;
  for (const Measurement& m : timed_rows) h100.push_back(&m);
  const double timed_mape = score_share_table(timed, h100).kernel.mape_percent();
  const double latency_mape = score_share_table(latency, h100).kernel.mape_percent();
  CHECK(timed_mape < 0.5 * latency_mape);
  CHECK(timed_mape < 40);

  // Without a Kernel Time anywhere, reading it changes nothing.
  ShareFitOptions subset_latency_only;
  subset_latency_only.use_kernel_time = false;
  CHECK(share_table_to_json(fit_share_table(pointers(subset()), subset_latency_only)) ==
        share_table_to_json(subset_table()));
  // Which GPUs were GPU-timed survives the table's file; a bad flag is an error naming it.
  CHECK(share_table_from_json(share_table_to_json(timed), "t.json").gpu_timed == timed.gpu_timed);
  CHECK_THROWS_WITH(share_table_from_json(edited(timed, "\"kernel_time\": true", "\"kernel_time\": \"yes\""), "t.json"),
                    Catch::Contains("t.json") && Catch::Contains("kernel_time") && Catch::Contains("true or false"));
}

TEST_CASE("roofline share: a family's host factor comes from rows with both a latency and a Kernel Time") {
  // Our H100 run's add, ln and linear rows (data/costmodel/measured-2026-11-23/h100-rerun): each
  // has the op's host-timed latency and its kernel's GPU time, so latency less kernel time is the
  // host's part of the op on that machine.
  const std::vector<Measurement> timed_rows = h100_rerun_rows({"add", "ln", "linear"});
  std::map<OpFamily, std::vector<double>> host;
  for (const Measurement& m : timed_rows) host[m.op.family].push_back(m.latency_ms - m.kernel_ms);
  REQUIRE(host[OpFamily::kLinear].size() > 1000);
  const auto factors = family_host_factors(pointers(timed_rows));
  // The elementwise ops set the machine's host; the others are measured against them.
  CHECK_FALSE(factors.contains(OpFamily::kAdd));
  REQUIRE(factors.contains(OpFamily::kLinear));
  REQUIRE(factors.contains(OpFamily::kLayerNorm));
  const double ref = dpro::median(host[OpFamily::kAdd]);
  CHECK(factors.at(OpFamily::kLinear) == Approx(dpro::median(host[OpFamily::kLinear]) / ref).epsilon(1e-3));
  CHECK(factors.at(OpFamily::kLayerNorm) == Approx(dpro::median(host[OpFamily::kLayerNorm]) / ref).epsilon(1e-3));
  CHECK(factors.at(OpFamily::kLinear) > 1.3);  // a linear op's host does more than an add's
  // Host-timed rows alone give no factor.
  CHECK(family_host_factors(pointers(subset())).empty());

  // In a fit: the family's host figures are the machine's times its factor, in the table and its file.
  const std::vector<const Measurement*> data = subset_and(timed_rows);
  const ShareTable t = fit_share_table(data);
  ShareFitOptions without;
  without.family_host = false;
  const ShareTable plain = fit_share_table(data, without);
  const double h = t.families.at(OpFamily::kLinear).host_factor;
  CHECK(h == factors.at(OpFamily::kLinear));
  CHECK(t.families.at(OpFamily::kAdd).host_factor == 1);
  CHECK(plain.families.at(OpFamily::kLinear).host_factor == 1);
  const DeviceSpec& l4 = catalog().get("L4");
  for (const OpDesc& op : {make_op(OpFamily::kLinear, {1, 8, 64, 64}), make_op(OpFamily::kLinear, {8, 4096, 4096, 4096})}) {
    const double k = *t.kernel_ms(op, l4);
    CHECK(*t.latency_ms(op, l4) == Approx(std::max(h * t.host_floor_ms, h * t.host_overhead_ms + k)));
  }
  const ShareTable back = share_table_from_json(share_table_to_json(t), "t.json");
  CHECK(back.families.at(OpFamily::kLinear).host_factor == h);
  CHECK(share_table_to_json(plain).find("host_factor") == std::string::npos);
  CHECK_THROWS_WITH(share_table_from_json(edited(t, "\"host_factor\": ", "\"host_factor\": 9, \"x\": "), "t.json"),
                    Catch::Contains("t.json") && Catch::Contains("host_factor") && Catch::Contains("must be a number"));
}

TEST_CASE("roofline share: beyond a GPU's largest ops its share still counts in the curve's median") {
  // Two GPUs of add rows, each at one share of its roofline at every size: the V100 at 0.8 up to
  // 1e8 elements, the T4 at 0.4 up to 1e9 (a slower card reaches larger roofline times).
  auto rows_of = [](const DeviceSpec& gpu, double share, double max_log10_n) {
    std::vector<Measurement> out;
    for (double x = 4; x <= max_log10_n + 1e-9; x += 0.02) {
      Measurement m;
      m.op = make_op(OpFamily::kAdd, {1, static_cast<std::int64_t>(std::pow(10.0, x))});
      m.device = &gpu;
      m.kernel_ms = share_roofline_ms(m.op, gpu) / share;
      m.latency_ms = m.kernel_ms + 0.015;
      out.push_back(m);
    }
    return out;
  };
  const DeviceSpec& v100 = catalog().get("V100-PCIE-32GB");
  const DeviceSpec& t4 = catalog().get("T4");
  std::vector<Measurement> rows = rows_of(v100, 0.8, 8);
  for (Measurement& m : rows_of(t4, 0.4, 9)) rows.push_back(m);
  const auto data = pointers(rows);
  const ShareTable held = fit_share_table(data);
  ShareFitOptions only_present;
  only_present.hold_large = false;
  const ShareTable present = fit_share_table(data, only_present);
  const double both = std::sqrt(0.8 * 0.4);  // the median of two GPUs' log shares
  const double mid = share_roofline_ms(make_op(OpFamily::kAdd, {1, 10000000}), t4);      // both GPUs ran it
  const double large = share_roofline_ms(make_op(OpFamily::kAdd, {1, 800000000}), t4);   // only the T4 reached it
  CHECK(held.share(OpFamily::kAdd, mid, -kIntensityLimit) == Approx(both).epsilon(0.02));
  CHECK(present.share(OpFamily::kAdd, mid, -kIntensityLimit) == Approx(both).epsilon(0.02));
  // Where only the T4 has rows, the V100 counts at its largest bucket's share with it.
  CHECK(held.share(OpFamily::kAdd, large, -kIntensityLimit) == Approx(both).epsilon(0.02));
  CHECK(present.share(OpFamily::kAdd, large, -kIntensityLimit) == Approx(0.4).epsilon(0.02));
}

TEST_CASE("roofline share: a bad table file is one error naming the file and the item") {
  using Catch::Contains;
  CHECK_THROWS_WITH(share_table_from_json("{", "s.json"), Contains("s.json") && Contains("not JSON"));
  CHECK_THROWS_WITH(share_table_from_json("[]", "s.json"), Contains("s.json") && Contains("JSON object"));
  // A number beyond a double's range (found by the share_table fuzzer): an InputError, not the parser's own.
  CHECK_THROWS_WITH(share_table_from_json("{\"host_floor_ms\": 1e999}", "s.json"),
                    Contains("s.json") && Contains("not JSON"));
  CHECK_THROWS_WITH(share_table_from_json(edited("\"host_floor_ms\"", "\"host_flor_ms\""), "s.json"),
                    Contains("s.json: host_floor_ms: missing"));
  CHECK_THROWS_WITH(share_table_from_json(edited("\"gelu\": {", "\"geluu\": {"), "s.json"),
                    Contains("s.json: families.geluu: unknown op family"));
  CHECK_THROWS_WITH(share_table_from_json(edited("\"share\": [", "\"share\": [1.5, "), "s.json"),
                    Contains("s.json") && Contains(".share[0]") && Contains("[1e-6, 1]"));
  // A share far below any kernel's (a denormal one would price an op at an infinite time).
  CHECK_THROWS_WITH(share_table_from_json(edited("\"share\": [", "\"share\": [5e-324, "), "s.json"),
                    Contains("s.json") && Contains(".share[0]") && Contains("[1e-6, 1]"));
  CHECK_THROWS_WITH(share_table_from_json(edited("\"share\": [", "\"share\": [0.0001, 1, "), "s.json"),
                    Contains("s.json") && Contains(".share[1]") && Contains("rises faster"));
  CHECK_THROWS_WITH(share_table_from_json(edited("\"kernel_floor_ms\": ", "\"kernel_floor_ms\": -1, \"x\": "), "s.json"),
                    Contains("s.json") && Contains("kernel_floor_ms") && Contains("must be a number"));
  CHECK_THROWS_WITH(share_table_from_json(edited("\"curves\": [", "\"curves\": \"no\", \"c\": ["), "s.json"),
                    Contains("s.json") && Contains(".curves: missing"));
  CHECK_THROWS_WITH(load_share_table("/nonexistent/shares.json"), Contains("/nonexistent/shares.json"));
  CHECK_THROWS_WITH(share_table_from_json(edited("\"curve_gpus\": {", "\"curve_gpus\": {\"X\": [\"gelu\", \"geluu\"], "), "s.json"),
                    Contains("s.json: curve_gpus.X: unknown op family \"geluu\""));
  CHECK_THROWS_WITH(share_table_from_json(edited("\"curve_gpus\": {", "\"curve_gpus\": {\"X\": 3, "), "s.json"),
                    Contains("s.json: curve_gpus.X: must be a list"));
  CHECK_THROWS_WITH(share_table_from_json(edited("\"curve_gpus\": {", "\"curve_gpus\": [], \"c\": {"), "s.json"),
                    Contains("s.json: curve_gpus: must be an object"));
}

TEST_CASE("device spec: sustained fp32 is the datapath a GEMM uses where the datasheet counts two") {
  const DeviceSpec& l4 = catalog().get("L4");
  REQUIRE(l4.sustained_fp32_tflops);
  CHECK(l4.sustained_fp32_flops() == Approx(l4.peak_flops(DType::kFloat32) / 2));
  const DeviceSpec& a100 = catalog().get("A100-PCIE-40GB");
  CHECK_FALSE(a100.sustained_fp32_tflops);
  CHECK(a100.sustained_fp32_flops() == a100.peak_flops(DType::kFloat32));
  const std::string spec = R"({"name": "X", "memory_gb": 1, "memory_bandwidth_gbs": 100, "sms": 1,
    "fp32_cores_per_sm": 64, "boost_clock_mhz": 1000, "l2_cache_mb": 1, "peak_tflops": {"fp32": 10},
    "sustained_fp32_tflops": 20})";
  CHECK_THROWS_WITH(parse_device_spec(spec, "x.json"), Catch::Contains("x.json: sustained_fp32_tflops: above"));
}

TEST_CASE("roofline share: GEMM tile and wave efficiency from the kernel name and the launch grid") {
  CHECK(kernel_name_tile("ampere_sgemm_128x64_nn") == std::pair<int, int>{128, 64});
  CHECK(kernel_name_tile("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x128x8_stage3_warpsize1x4x1_ffma") ==
        std::pair<int, int>{64, 128});
  CHECK(kernel_name_tile("void cutlass::Kernel2<cutlass_80_simt_sgemm_128x64_8x5_tn_align1>") ==
        std::pair<int, int>{128, 64});
  CHECK(kernel_name_tile("void magma_sgemmEx_kernel<float, float, float, false, false, 6, 3, 5, 3, 3>") ==
        std::pair<int, int>{0, 0});
  const DeviceSpec& a100 = catalog().get("A100-PCIE-40GB");  // 108 SMs
  REQUIRE(a100.sms == 108);
  GemmWaves tile, wave, both;
  tile.tile = true;
  wave.wave = true;
  both.tile = both.wave = true;
  OpDesc op = make_op(OpFamily::kBmm, {1, 129, 256, 512});
  op.kernel_name = "ampere_sgemm_128x128_nn";
  // 129 rows on 128-row tiles: 2 x 2 tiles, of which 129 x 256 elements are the op's.
  CHECK(gemm_efficiency(op, a100, tile) == Approx(129.0 * 256 / (4 * 128 * 128)));
  // No grid recorded: one block per output tile, 4 of 108 slots filled.
  CHECK(gemm_efficiency(op, a100, wave) == Approx(4.0 / 108));
  op.grid = std::array<int, 3>{2, 2, 27};  // split-K 27: 108 blocks, one full wave
  op.block = std::array<int, 3>{256, 1, 1};
  CHECK(gemm_efficiency(op, a100, wave) == Approx(1.0));
  op.grid = std::array<int, 3>{2, 2, 28};  // 112 blocks: two waves, the second nearly empty
  CHECK(gemm_efficiency(op, a100, wave) == Approx(112.0 / 216));
  CHECK(gemm_efficiency(op, a100, both) == Approx(112.0 / 216 * 129.0 * 256 / (4 * 128 * 128)));
  GemmWaves two = wave;
  two.blocks_per_sm = 2;
  CHECK(gemm_efficiency(op, a100, two) == Approx(112.0 / 216));  // 216 slots: one wave of 112
  // Unknown kernel: the likely tile, 64 on a side under 128.
  OpDesc bare = make_op(OpFamily::kLinear, {1, 100, 1000, 64});
  CHECK(gemm_efficiency(bare, a100, tile) == Approx(100.0 * 1000 / (2 * 8 * 64 * 128)));
  // ... 2 x 8 = 16 tiles, one block each: 16 of 108 slots; with likely split-K, one full wave.
  CHECK(gemm_efficiency(bare, a100, wave) == Approx(16.0 / 108));
  GemmWaves split = wave;
  split.likely_split_k = true;
  CHECK(gemm_efficiency(bare, a100, split) == Approx(1.0));
  CHECK(gemm_efficiency(op, a100, split) == Approx(112.0 / 216));  // a recorded grid is kept
  // Other families, and a form that is off: 1.
  CHECK(gemm_efficiency(make_op(OpFamily::kAdd, {4096, 4096}), a100, both) == 1.0);
  CHECK(gemm_efficiency(op, a100, GemmWaves{}) == 1.0);
  // The table divides only the compute bound: a compute-bound GEMM's roofline grows by 1/eff^exponent,
  // a memory-bound one (few rows, large K x N weight) keeps its bandwidth bound.
  ShareTable t = subset_table();
  t.gemm = both;
  t.gemm.exponent = 0.5;
  CHECK(t.roofline_ms(op, a100) ==
        Approx(share_roofline_ms(op, a100) / std::sqrt(gemm_efficiency(op, a100, both))).epsilon(1e-9));
  OpDesc thin = make_op(OpFamily::kLinear, {1, 1, 8192, 8192});
  thin.kernel_name = "ampere_sgemm_128x128_nn";
  CHECK(t.roofline_ms(thin, a100) == Approx(share_roofline_ms(thin, a100)));
}

TEST_CASE("roofline share: a table's GEMM form survives its JSON file, and a bad one is an error naming it") {
  using Catch::Contains;
  ShareTable t = subset_table();
  t.gemm.tile = t.gemm.wave = t.gemm.conv_wave = true;
  t.gemm.exponent = 0.5;
  t.gemm.blocks_per_sm = 2;
  t.gemm.likely_split_k = true;
  const std::string json = share_table_to_json(t);
  const ShareTable back = share_table_from_json(json, "g.json");
  CHECK(back.gemm.form() == "tile+wave+conv");
  CHECK(back.gemm.exponent == 0.5);
  CHECK(back.gemm.blocks_per_sm == 2);
  CHECK(back.gemm.likely_split_k);
  CHECK(share_table_from_json(share_table_to_json(subset_table()), "n.json").gemm.form() == "none");
  std::string bad = json;
  bad.replace(bad.find("\"exponent\": 0.5"), 15, "\"exponent\": -1");
  CHECK_THROWS_WITH(share_table_from_json(bad, "g.json"), Contains("g.json") && Contains("gemm_efficiency.exponent"));
  bad = json;
  bad.replace(bad.find("\"tile\": true"), 12, "\"tile\": 1");
  CHECK_THROWS_WITH(share_table_from_json(bad, "g.json"), Contains("g.json: gemm_efficiency.tile"));
}
