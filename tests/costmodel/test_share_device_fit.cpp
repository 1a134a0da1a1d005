#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "costmodel/dataset.h"
#include "costmodel/eval/share_eval.h"
#include "costmodel/paths.h"
#include "costmodel/roofline_share.h"
#include "costmodel/share_device_fit.h"
#include "costmodel/share_profile.h"
#include "hw/device_profile.h"
#include "costmodel_fixtures.h"

using namespace dpro::costmodel;
using dpro::test::catalog;

namespace {

const std::vector<Measurement>& subset() {
  static const auto rows = load_measurements(test_subset_dir(), catalog());
  return rows;
}

const ShareTable& prior() {
  static const ShareTable t = [] {
    std::vector<const Measurement*> p;
    for (const auto& m : subset()) p.push_back(&m);
    return fit_share_table(p);
  }();
  return t;
}

// The subset's ops as if measured on `device` by the model itself with `scalars` (one row per
// configuration: the subset measures each on five GPUs).
std::vector<Measurement> synthetic(const DeviceSpec& device, const DeviceScalars& scalars) {
  const ShareTable truth = with_device_scalars(prior(), scalars);
  std::vector<Measurement> out;
  std::set<std::string> seen;
  for (const auto& m : subset()) {
    std::string key = to_string(m.op.family);
    for (auto d : m.op.dims) key += "," + std::to_string(d);
    if (!seen.insert(key).second) continue;
    Measurement s = m;
    s.device = &device;
    s.latency_ms = *truth.latency_ms(m.op, device);
    out.push_back(s);
  }
  return out;
}

// Scalars with one multiplier per group (`slope` decades per decade of roofline time around
// 10^2 us, over every time).
DeviceScalars scalars(double overhead_ms, double floor_ms, const std::map<ShareGroup, double>& m,
                      std::map<ShareGroup, double> slope = {}) {
  DeviceScalars s;
  s.host_overhead_ms = overhead_ms, s.host_floor_ms = floor_ms;
  for (const auto& [g, v] : m) {
    FittedShare u{to_string(g), {}, 0, {std::log10(v), slope[g], 2.0, -100, 100}};
    for (const auto& [family, f] : prior().families)
      if (share_group(family) == g) u.families.push_back(family);
    s.shares.push_back(u);
  }
  return s;
}

// The multiplier the fit gives `family`'s rows at roofline time 10^x us.
double multiplier_of(const DeviceScalars& s, OpFamily family, double x) {
  const ShareTable t = with_device_scalars(prior(), s);
  return t.share_multiplier.at(family).at(std::pow(10.0, x) * 1e-3);
}

std::vector<const Measurement*> pointers(const std::vector<Measurement>& rows, const std::vector<std::size_t>& at) {
  std::vector<const Measurement*> out;
  for (std::size_t i : at) out.push_back(&rows[i]);
  return out;
}

std::vector<OpDesc> ops_of(const std::vector<Measurement>& rows) {
  std::vector<OpDesc> ops;
  for (const auto& m : rows) ops.push_back(m.op);
  return ops;
}

}  // namespace

TEST_CASE("costmodel share few-shot: the fit recovers the scalars that made synthetic rows, from 50 of them") {
  const DeviceSpec& h100 = catalog().get("H100-SXM5-80GB");
  const std::map<ShareGroup, double> m = {{ShareGroup::kGemm, 1.8}, {ShareGroup::kConv, 0.6}, {ShareGroup::kNorm, 1.3},
                                          {ShareGroup::kElementwise, 1.15}};
  // The host floor above overhead + kernel floor: it binds for the smallest ops.
  const DeviceScalars known = scalars(0.012, 0.030, m);
  const auto rows = synthetic(h100, known);
  REQUIRE(rows.size() > 200);
  const auto picked = pick_share_samples(ops_of(rows), h100, 50, 7);
  REQUIRE(picked.size() == 50);
  const DeviceScalars fit = fit_device_scalars(prior(), pointers(rows, picked), h100);
  CHECK(fit.host_fitted);
  CHECK(fit.notes.empty());
  CHECK(fit.host_overhead_ms == Approx(0.012).margin(0.0005));
  CHECK(fit.host_floor_ms == Approx(0.030).margin(0.0005));
  REQUIRE(fit.shares.size() >= 4);
  for (const auto& u : fit.shares) {
    CHECK(std::pow(10.0, u.multiplier.log10_at_centre) == Approx(m.at(share_group(u.families[0]))).epsilon(0.02));
    CHECK(std::abs(u.multiplier.slope) < 0.03);
  }
  // And so every row, drawn or not, is priced as the scalars priced it.
  const ShareTable fitted = with_device_scalars(prior(), fit);
  for (const auto& m : rows) CHECK(*fitted.latency_ms(m.op, h100) == Approx(m.latency_ms).epsilon(0.02));
  // The L4, its GEMMs' share falling with their size: the slope is found too.
  const DeviceSpec& l4 = catalog().get("L4");
  const auto l4_rows = synthetic(l4, scalars(0.015, 0.02, {{ShareGroup::kGemm, 0.5}, {ShareGroup::kElementwise, 1.0}},
                                             {{ShareGroup::kGemm, -0.3}}));
  const DeviceScalars l4_fit = fit_device_scalars(prior(), pointers(l4_rows, pick_share_samples(ops_of(l4_rows), l4, 50, 2)), l4);
  for (OpFamily f : {OpFamily::kBmm, OpFamily::kLinear}) {
    const ShareMultiplier m = with_device_scalars(prior(), l4_fit).share_multiplier.at(f);
    CHECK(m.hi - m.lo > 1.0);  // the samples span a decade and more of roofline time
    CHECK(m.slope == Approx(-0.3).margin(0.03));
    for (double x : {m.lo, m.centre, m.hi})
      CHECK(multiplier_of(l4_fit, f, x) == Approx(0.5 * std::pow(10.0, -0.3 * (x - 2))).epsilon(0.03));
  }
}

TEST_CASE("costmodel share few-shot: a group with too few samples keeps the prior's share and says so") {
  const DeviceSpec& h100 = catalog().get("H100-SXM5-80GB");
  const DeviceScalars known =
      scalars(0.015, 0.020, {{ShareGroup::kGemm, 2.0}, {ShareGroup::kConv, 2.0}, {ShareGroup::kElementwise, 0.8}});
  const auto rows = synthetic(h100, known);
  std::vector<std::size_t> at;
  std::size_t conv = 0, elementwise = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const ShareGroup g = share_group(rows[i].op.family);
    if (g == ShareGroup::kConv && conv < 2) ++conv, at.push_back(i);
    // Two elementwise samples fast enough to read the host (under 4 prior host floors).
    if (g == ShareGroup::kElementwise && elementwise < 2 &&
        rows[i].latency_ms < DeviceFitOptions{}.host_rows_below_floors * prior().host_floor_ms)
      ++elementwise, at.push_back(i);
  }
  REQUIRE(conv == 2);
  REQUIRE(elementwise == 2);
  const DeviceScalars fit = fit_device_scalars(prior(), pointers(rows, at), h100);
  CHECK(fit.shares.empty());
  CHECK_FALSE(fit.host_fitted);
  CHECK(fit.host_overhead_ms == prior().host_overhead_ms);
  REQUIRE(fit.notes.size() == 3);
  CHECK_THAT(fit.notes[0], Catch::Contains("conv: 2 samples, fewer than the 3 a multiplier needs: the prior share"));
  CHECK_THAT(fit.notes[2], Catch::Contains("host: 2 elementwise samples"));
  // The conv rows are priced as the prior prices them.
  const ShareTable fitted = with_device_scalars(prior(), fit);
  for (const auto& m : rows)
    if (m.op.family == OpFamily::kConv2d) CHECK(*fitted.latency_ms(m.op, h100) == *prior().latency_ms(m.op, h100));
}

TEST_CASE("costmodel share few-shot: samples of another GPU are an error and the draw covers every group and repeats") {
  const DeviceSpec& h100 = catalog().get("H100-SXM5-80GB");
  std::vector<const Measurement*> t4_rows;
  for (const auto& m : subset()) t4_rows.push_back(&m);
  CHECK_THROWS_AS(fit_device_scalars(prior(), t4_rows, h100), dpro::InputError);
  CHECK_THROWS_AS(fit_device_scalars(prior(), {}, h100), dpro::InputError);
  const auto ops = ops_of(subset());
  const auto a = pick_share_samples(ops, h100, 20, 5), b = pick_share_samples(ops, h100, 20, 5);
  CHECK(a == b);
  CHECK(a != pick_share_samples(ops, h100, 20, 6));
  std::map<ShareGroup, int> per_group;
  for (std::size_t i : a) ++per_group[share_group(ops[i].family)];
  CHECK(per_group == std::map<ShareGroup, int>{{ShareGroup::kGemm, 5}, {ShareGroup::kConv, 5}, {ShareGroup::kNorm, 5},
                                               {ShareGroup::kElementwise, 5}});
  CHECK(pick_share_samples(ops, h100, ops.size() + 10, 1).size() == ops.size());
}

TEST_CASE("costmodel share few-shot: the evaluation scores only the rows it did not draw") {
  const DeviceSpec& h100 = catalog().get("H100-SXM5-80GB");
  const DeviceScalars known = scalars(0.013, 0.016, {{ShareGroup::kGemm, 1.4}, {ShareGroup::kConv, 0.7},
                                                     {ShareGroup::kNorm, 1.1}, {ShareGroup::kElementwise, 1.2}});
  const auto rows = synthetic(h100, known);
  std::vector<const Measurement*> all;
  for (const auto& m : rows) all.push_back(&m);
  const auto runs = share_few_shot(prior(), all, h100, 40, {1, 2});
  REQUIRE(runs.size() == 2);
  for (const auto& run : runs) {
    CHECK(run.samples == 40);
    CHECK(run.score.latency.count + run.score.not_priced == rows.size() - 40);
    CHECK(run.score.latency.mape_percent() < 2.0);  // the model's own rows: the scalars are found
  }
  CHECK(score_share_table(prior(), all).latency.mape_percent() > 10.0);  // and the prior's are not them
}

TEST_CASE("costmodel share few-shot: a Kernel Time fits the multipliers, the latency beside it the host") {
  // Rows of an H100 whose GEMMs run at half the prior's share (kernels 2x slower than the prior
  // says), timed on a machine whose host makes every latency 1.6x what overhead + kernel give:
  // the Kernel Time is the model's kernel, the Latency is host-inflated.
  const DeviceSpec& h100 = catalog().get("H100-SXM5-80GB");
  const DeviceScalars known = scalars(0.012, 0.030, {{ShareGroup::kGemm, 0.5}, {ShareGroup::kConv, 1.0},
                                                     {ShareGroup::kNorm, 1.0}, {ShareGroup::kElementwise, 1.0}});
  const ShareTable truth = with_device_scalars(prior(), known);
  auto rows = synthetic(h100, known);
  for (auto& m : rows) m.kernel_ms = *truth.kernel_ms(m.op, h100), m.latency_ms *= 1.6;
  const auto picked = pick_share_samples(ops_of(rows), h100, 50, 3);
  const DeviceScalars with_kernel = fit_device_scalars(prior(), pointers(rows, picked), h100);
  const ShareTable fitted = with_device_scalars(prior(), with_kernel);
  // The GEMMs' multiplier follows the kernel time (0.5), not the latency's 1.6x more.
  for (OpFamily f : {OpFamily::kBmm, OpFamily::kLinear}) {
    const ShareMultiplier& m = fitted.share_multiplier.at(f);
    for (double x : {m.lo, m.centre, m.hi}) CHECK(m.at(std::pow(10.0, x) * 1e-3) == Approx(0.5).epsilon(0.03));
  }
  // So every GEMM's predicted kernel time is its Kernel Time where the share prices it (above
  // the floors), and the latencies still fit the host: it reads more than the kernels left.
  std::size_t gemms = 0;
  for (const auto& m : rows)
    if (share_group(m.op.family) == ShareGroup::kGemm && m.kernel_ms > 2 * prior().families.at(m.op.family).kernel_floor_ms) {
      ++gemms;
      CHECK(*fitted.kernel_ms(m.op, h100) == Approx(m.kernel_ms).epsilon(0.03));
    }
  CHECK(gemms > 20);
  CHECK(with_kernel.host_fitted);
  CHECK(with_kernel.kernel_floor_fitted);
  CHECK(with_kernel.host_overhead_ms > 0.012);
  // The same samples without their Kernel Time fit on the latencies as before: the GEMMs' large
  // kernels take the host's 1.6x in (multiplier about 0.5 / 1.6).
  auto latency_only = rows;
  for (auto& m : latency_only) m.kernel_ms = 0;
  const DeviceScalars without = fit_device_scalars(prior(), pointers(latency_only, picked), h100);
  const ShareTable without_table = with_device_scalars(prior(), without);  // kept: `large` points into it
  const ShareMultiplier& large = without_table.share_multiplier.at(OpFamily::kLinear);
  CHECK(large.at(std::pow(10.0, large.hi) * 1e-3) < 0.4);
  CHECK(without.kernel_floor_fitted);  // the host was fitted, and the floors' scale with it
  CHECK(describe(without).front().find("kernel times") == std::string::npos);
  // A mix: rows with a Kernel Time read it, rows without read their latency (here the
  // elementwise samples lose theirs; the GEMMs keep following their kernel time).
  auto mixed = rows;
  for (auto& m : mixed)
    if (share_group(m.op.family) == ShareGroup::kElementwise) m.kernel_ms = 0;
  const ShareTable mixed_table = with_device_scalars(prior(), fit_device_scalars(prior(), pointers(mixed, picked), h100));
  const ShareMultiplier& mixed_gemm = mixed_table.share_multiplier.at(OpFamily::kLinear);
  CHECK(mixed_gemm.at(std::pow(10.0, mixed_gemm.centre) * 1e-3) == Approx(0.5).epsilon(0.03));
}

TEST_CASE("costmodel share few-shot: a GEMM kernel class's own multiplier, pooled when its samples are few") {
  CHECK(gemm_kernel_class("void cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>("
                          "cutlass_80_simt_sgemm_128x32_8x5_nn_align1::Params)") == "cutlass_80_simt_sgemm_128x32_8x5_nn");
  const std::string xmma = "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_";
  CHECK(gemm_kernel_class(xmma + "aligna4_alignc4_execute_kernel__5x_cublas") ==
        gemm_kernel_class(xmma + "aligna1_alignc2_execute_kernel__5x_cublas"));
  CHECK(gemm_kernel_class("ampere_sgemm_128x64_tn") == "ampere_sgemm_128x64_tn");

  // Synthetic H100 rows: the GEMMs alternate between two kernels, one (its two alignments one
  // class) at the group's share, the other 2x slower.
  const DeviceSpec& h100 = catalog().get("H100-SXM5-80GB");
  ShareTable truth = with_device_scalars(
      prior(), scalars(0.012, 0.016, {{ShareGroup::kGemm, 1.5}, {ShareGroup::kConv, 1.0}, {ShareGroup::kNorm, 1.0},
                                      {ShareGroup::kElementwise, 1.0}}));
  const std::string slow = "ampere_sgemm_128x64_tn";
  truth.kernel_class_log10[slow] = std::log10(0.5);
  auto rows = synthetic(h100, DeviceScalars{});
  std::size_t gemm = 0;
  for (auto& m : rows)
    if (share_group(m.op.family) == ShareGroup::kGemm) {
      const std::size_t i = gemm++;
      m.op.kernel_name = i % 2 ? slow : xmma + (i % 4 ? "aligna4_alignc4_execute_kernel__5x_cublas" : "aligna1_alignc1_execute_kernel__5x_cublas");
    }
  for (auto& m : rows) m.latency_ms = *truth.latency_ms(m.op, h100);
  std::vector<const Measurement*> all;
  for (const auto& m : rows) all.push_back(&m);
  auto gemm_mape = [&](const DeviceScalars& s) {
    const auto by_group = latency_by_group(score_share_table(with_device_scalars(prior(), s), all));
    return by_group.at(ShareGroup::kGemm).mape_percent();
  };
  const auto samples = pointers(rows, pick_share_samples(ops_of(rows), h100, 50, 3));

  // Off (the default): one multiplier for both kernels misprices one of them.
  const DeviceScalars pooled = fit_device_scalars(prior(), samples, h100);
  CHECK(pooled.kernel_classes.empty());
  CHECK(gemm_mape(pooled) > 15.0);

  // On: the slow class's multiplier over the fast one's is 1/2, and every GEMM is priced.
  DeviceFitOptions on;
  on.min_kernel_class_rows = 3;
  const DeviceScalars own = fit_device_scalars(prior(), samples, h100, on);
  REQUIRE(own.kernel_classes.size() == 2);
  std::map<std::string, FittedKernelClass> by_class;
  for (const auto& k : own.kernel_classes) {
    by_class[k.kernel_class] = k;
    CHECK(k.log10 == Approx(k.log10_fitted).margin(1e-12));
  }
  REQUIRE(by_class.count(slow));
  const std::string fast = gemm_kernel_class(xmma + "aligna4_alignc4_execute_kernel__5x_cublas");
  REQUIRE(by_class.count(fast));
  CHECK(std::pow(10.0, by_class[slow].log10 - by_class[fast].log10) == Approx(0.5).epsilon(0.03));
  CHECK(gemm_mape(own) < 2.0);
  CHECK_THAT(describe(own)[describe(own).size() - 1], Catch::Contains("GEMM kernel"));

  // Shrinkage: the fitted level x rows / (rows + shrink rows).
  on.kernel_class_shrink_rows = 4;
  for (const auto& k : fit_device_scalars(prior(), samples, h100, on).kernel_classes)
    CHECK(k.log10 == Approx(k.log10_fitted * k.rows / (k.rows + 4.0)).margin(1e-12));

  // Pooled into the family when a class has fewer samples than min_kernel_class_rows.
  on.min_kernel_class_rows = by_class[slow].rows + 1;
  on.kernel_class_shrink_rows = 0;
  const DeviceScalars few = fit_device_scalars(prior(), samples, h100, on);
  for (const auto& k : few.kernel_classes) CHECK(k.rows >= on.min_kernel_class_rows);
  CHECK(std::none_of(few.kernel_classes.begin(), few.kernel_classes.end(),
                     [&](const FittedKernelClass& k) { return k.kernel_class == slow; }));
}

namespace {

// A profile of `device` whose fp32 GEMMs run `speedup` x faster than `table` prices their
// kernels (calibrate's default shapes), with an empty kernel of `launch_ns`.
dpro::hw::DeviceProfile gemm_profile(const ShareTable& table, const DeviceSpec& device, double speedup,
                                     double launch_ns) {
  dpro::hw::DeviceProfile p;
  p.device = device.name;
  p.launch.gpu_ns_per_launch = launch_ns;
  p.launch.launches = 200;
  const std::int64_t shapes[][4] = {{1024, 1024, 1024, 1}, {4096, 4096, 4096, 1}, {2304, 8192, 768, 1},
                                    {768, 8192, 3072, 1},  {4096, 8192, 4096, 1}, {1024, 1024, 64, 96}};
  for (const auto& s : shapes) {
    OpDesc op;
    op.family = s[3] > 1 ? OpFamily::kBmm : OpFamily::kLinear;
    op.dims = {s[3], s[0], s[1], s[2]};
    dpro::hw::GemmSample g;
    g.m = s[0], g.n = s[1], g.k = s[2], g.batch = s[3];
    g.ns = static_cast<dpro::Nanos>(*table.kernel_ms(op, device) * 1e6 / speedup);
    p.gemms.push_back(g);
  }
  dpro::hw::GemmSample bf16 = p.gemms.front();  // another arithmetic: left out
  bf16.dtype = DType::kBFloat16;
  bf16.ns /= 10;
  p.gemms.push_back(bf16);
  return p;
}

}  // namespace

TEST_CASE("costmodel share few-shot: a device profile's GEMMs at 2x the prior's throughput halve the predicted GEMM time") {
  const DeviceSpec& h100 = catalog().get("H100-SXM5-80GB");
  const ProfileSamples p = share_samples_from_profile(gemm_profile(prior(), h100, 2.0, 2100), h100);
  REQUIRE(p.samples.size() == 6);  // the bf16 GEMM left out
  CHECK(p.samples.back().op.family == OpFamily::kBmm);
  CHECK(p.samples.front().latency_ms == 0);
  CHECK(p.min_kernel_floor_ms == Approx(0.0021));
  CHECK_THAT(p.notes.front(), Catch::Contains("1 of other arithmetic left out"));
  std::vector<const Measurement*> fit_on;
  append_samples(fit_on, p);
  DeviceFitOptions options;
  options.min_kernel_floor_ms = p.min_kernel_floor_ms;
  const DeviceScalars s = fit_device_scalars(prior(), fit_on, h100, options);
  CHECK_FALSE(s.host_fitted);  // kernel-timed samples say nothing of the host
  const ShareTable adapted = with_device_scalars(prior(), s);
  // GEMMs the profile did not time, from 1 to 68 GFLOP: about half the prior's kernel time.
  for (const auto& dims : std::vector<std::vector<std::int64_t>>{{1, 2048, 2048, 2048}, {8, 1024, 4096, 1024}}) {
    OpDesc op;
    op.family = OpFamily::kLinear;
    op.dims = dims;
    CHECK(*adapted.kernel_ms(op, h100) / *prior().kernel_ms(op, h100) == Approx(0.5).epsilon(0.08));
  }
  // Elementwise ops keep the prior's share (no cast curve here); the host stays the prior's.
  OpDesc add;
  add.family = OpFamily::kAdd;
  add.dims = {4096, 4096};
  CHECK(*adapted.kernel_ms(add, h100) == Approx(*prior().kernel_ms(add, h100)));
  CHECK(adapted.host_overhead_ms == prior().host_overhead_ms);
  // Measured samples and a profile together: one fit on both.
  const auto measured = synthetic(h100, scalars(0.008, 0.012, {{ShareGroup::kElementwise, 2.0}}));
  std::vector<const Measurement*> both = fit_on;
  for (const auto& m : measured)
    if (share_group(m.op.family) == ShareGroup::kElementwise) both.push_back(&m);
  const DeviceScalars b = fit_device_scalars(prior(), both, h100, options);
  CHECK(b.host_fitted);
  const ShareTable t = with_device_scalars(prior(), b);
  OpDesc gemm;
  gemm.family = OpFamily::kLinear;
  gemm.dims = {1, 2048, 2048, 2048};
  CHECK(*t.kernel_ms(gemm, h100) / *prior().kernel_ms(gemm, h100) == Approx(0.5).epsilon(0.08));
  for (const auto& [family, f] : t.families) CHECK(f.kernel_floor_ms >= 0.0021 - 1e-12);  // the empty kernel's bound
}

TEST_CASE("costmodel share few-shot: a device profile's cast curve gives elementwise samples from its large points") {
  const DeviceSpec& h100 = catalog().get("H100-SXM5-80GB");
  dpro::hw::DeviceProfile p;
  p.device = h100.name;
  dpro::hw::KernelCurve cast;
  cast.kernel = dpro::hw::kCastToBf16Kernel;
  cast.latency_ns = 2500, cast.ns_per_element = 0.002;  // 3 TB/s at 6 bytes per element
  for (std::int64_t n : {1 << 16, 1 << 20, 1 << 22, 1 << 24})
    cast.samples.push_back({n, static_cast<dpro::Nanos>(2500 + 0.002 * static_cast<double>(n))});
  p.kernels.push_back(cast);
  cast.kernel = "topk";  // not a cast: not read
  p.kernels.push_back(cast);
  cast.kernel = dpro::hw::kCastToFp16Kernel;
  p.kernels.push_back(cast);
  const ProfileSamples s = share_samples_from_profile(p, h100);
  // Per cast, 2^22 and 2^24 elements: 2^20 stream in 2.1 us, under half their 4.6 us.
  REQUIRE(s.samples.size() == 4);
  CHECK_THAT(s.notes.back(), Catch::Contains("4 large points") && Catch::Contains("4 smaller left out"));
  for (const auto& m : s.samples) {
    CHECK(m.op.family == OpFamily::kRelu);
    CHECK(m.op.bytes() == Approx(6.0 * static_cast<double>(m.op.dims[1]) * 4 / 3));
  }
  CHECK(s.samples.back().kernel_ms == Approx((2500 + 0.002 * (1 << 24)) * 1e-6).epsilon(1e-4));
  CHECK(s.min_kernel_floor_ms == 0);  // no launch measured
}
