// The device profile in the what-ifs' pricing (hw/device_rates.h): the lookup's choices, precision
// and compression priced from a profile's measured figures, and the one rule of whether a profile
// applies to the GPU being priced (hw/device_profile.h, require_profile_applies), which every
// reader follows with the same text.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <set>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "costmodel/share_profile.h"
#include "costmodel/paths.h"
#include "hw/cluster.h"
#include "hw/device_rates.h"
#include "whatif/comm/compress.h"
#include "whatif/device_retime.h"
#include "whatif/fusion_pricing.h"
#include "whatif/op_fusion.h"
#include "whatif/precision.h"
#include "workload_fixtures.h"

using namespace dpro;

namespace {

constexpr const char* kH100 = "H100-SXM5-80GB";

hw::GemmSample gemm(std::int64_t m, hw::DType dtype, hw::GemmMath math, double tflops) {
  hw::GemmSample g;
  g.m = g.n = g.k = m;
  g.dtype = dtype;
  g.math = math;
  g.tflops = tflops;
  g.ns = static_cast<Nanos>(2.0 * m * m * m / (tflops * 1e3));
  return g;
}

hw::KernelCurve curve(const std::string& kernel, double param, double latency, double slope) {
  hw::KernelCurve c;
  c.kernel = kernel;
  c.param = param;
  c.latency_ns = latency;
  c.ns_per_element = slope;
  return c;
}

// An H100 profile whose fp32 GEMMs (plain and TF32) run at 1 TFLOP/s and bf16 ones at `bf16_tflops`;
// casts cost a flat 3 us (no slope: no elementwise bandwidth, which keeps the datasheet's).
hw::DeviceProfile h100_profile(double bf16_tflops) {
  hw::DeviceProfile p;
  p.device = kH100;
  p.date = "2026-11-26T18:00:00Z";
  p.repetitions = 3;
  p.launch = {2'000, 2'500, 200};
  p.gemms = {gemm(1024, hw::DType::kFloat32, hw::GemmMath::kDefault, 1),
             gemm(1024, hw::DType::kFloat32, hw::GemmMath::kTF32, 1),
             gemm(1024, hw::DType::kBFloat16, hw::GemmMath::kDefault, bf16_tflops)};
  p.kernels = {curve(hw::kCastToBf16Kernel, 0, 3'000, 0), curve("topk", 0.01, 40'000, 0.5),
               curve("topk", 0.1, 90'000, 0.9), curve("powersgd", 4, 100'000, 0.25)};
  return p;
}

std::string write_profile(const std::string& dir, const std::string& name, const hw::DeviceProfile& p) {
  const std::string path = dir + "/" + name;
  hw::write_device_profile(path, p, true);
  return path;
}

whatif::Precision bf16(const std::string& profile) {
  whatif::Precision p;
  p.dtype = "bf16";
  p.device_dir = costmodel::default_device_dir();
  p.device_profile = profile;
  return p;
}

}  // namespace

TEST_CASE("device rates: the GEMM sample nearest in FLOPs per call, the curve nearest in its parameter") {
  hw::DeviceProfile p = h100_profile(2);
  p.gemms.push_back(gemm(8192, hw::DType::kBFloat16, hw::GemmMath::kDefault, 600));
  const hw::DeviceRates rates(std::make_shared<const hw::DeviceProfile>(p));
  const double small = 2.0 * 1024 * 1024 * 1024, big = 2.0 * 8192 * 8192 * 8192;
  CHECK(rates.gemm_flops(hw::DType::kBFloat16, small / 3)->value == Approx(2e12));
  CHECK(rates.gemm_flops(hw::DType::kBFloat16, big * 3)->value == Approx(600e12));
  CHECK(rates.gemm_flops(hw::DType::kBFloat16, std::nullopt)->value == Approx(600e12));  // the largest
  CHECK(rates.gemm_flops(hw::DType::kTensorFloat32, small)->figure == "gemm fp32/tf32");
  CHECK_FALSE(rates.gemm_flops(hw::DType::kFloat16, small));  // not measured: the caller's prior
  CHECK_FALSE(rates.gemm_flops(hw::DType::kFloat8, small));
  CHECK(rates.kernel("topk", 0.02)->value.latency_ns == 40'000);
  CHECK(rates.kernel("topk", 0.2)->figure == "topk:0.1");
  CHECK_FALSE(rates.kernel("signpack"));
  CHECK_FALSE(rates.elementwise_bytes_per_ns());  // the cast's fit has no slope
  p.kernels[0].ns_per_element = 0.002;            // 6 bytes per 2 ps: 3000 GB/s
  CHECK(hw::DeviceRates(std::make_shared<const hw::DeviceProfile>(p)).elementwise_bytes_per_ns()->value == Approx(3000));
  CHECK(rates.launch_ns()->value == 2'000);
  CHECK_FALSE(hw::DeviceRates().gemm_flops(hw::DType::kFloat32, small));
}

TEST_CASE("device rates: a profile of another GPU, or of a GPU the catalog does not know, is refused") {
  const std::string dir = test::fresh_dir("device_rates");
  const auto catalog = hw::DeviceCatalog::load_directory(costmodel::default_device_dir());
  hw::DeviceProfile p = h100_profile(2);
  p.device = "NVIDIA H100 80GB HBM3";  // the CUDA name is an alias of the catalog's H100
  CHECK(hw::load_device_rates(write_profile(dir, "alias.json", p), {kH100, {}}, catalog).profiled());
  CHECK_FALSE(hw::load_device_rates("", {kH100, {}}, catalog).profiled());
  for (const char* other : {"A100-SXM4-80GB", "fake"}) {
    p.device = other;
    const std::string file = write_profile(dir, std::string(other) + ".json", p);
    try {
      hw::load_device_rates(file, {kH100, {}}, catalog);
      FAIL("no error for a profile of " << other);
    } catch (const InputError& e) {
      const std::string what = e.what();
      CHECK(what.find(file) != std::string::npos);
      CHECK(what.find("device") != std::string::npos);
      CHECK(what.find(other) != std::string::npos);
      CHECK(what.find(kH100) != std::string::npos);
    }
  }
}

TEST_CASE("device profile rule: the catalog entry after aliases, --device before the trace's GPUs") {
  const auto catalog = hw::DeviceCatalog::load_directory(costmodel::default_device_dir());
  hw::DeviceProfile p;
  const auto applies = [&](const std::string& profiled, const hw::PricedGpu& priced) {
    p.device = profiled;
    return !hw::profile_mismatch(p, priced, catalog);
  };
  // The same entry by its name, an alias, another spelling (case, spaces, '-' and '_' ignored).
  CHECK(applies(kH100, {kH100, {}}));
  CHECK(applies("NVIDIA H100 80GB HBM3", {kH100, {}}));
  CHECK(applies(kH100, {"H100", {}}));
  CHECK(applies("h100_sxm5 80gb", {"nvidia h100 80gb hbm3", {}}));
  CHECK(applies(kH100, {"", {"NVIDIA H100 80GB HBM3"}}));
  CHECK(applies(kH100, {"", {"NVIDIA H100 80GB HBM3", "H100-SXM", "NVIDIA H100 80GB HBM3"}}));
  // Another entry, however close: the PCIe H100, the H200.
  CHECK_FALSE(applies(kH100, {"H100-PCIE-80GB", {}}));
  CHECK_FALSE(applies(kH100, {"H200-SXM-141GB", {}}));
  // --device is the GPU priced: the trace's own GPUs are not read then.
  CHECK(applies("H200", {"H200-SXM-141GB", {"NVIDIA H100 80GB HBM3"}}));
  CHECK_FALSE(applies(kH100, {"H200-SXM-141GB", {"NVIDIA H100 80GB HBM3"}}));
  // Without --device, every GPU the trace recorded: one other, or one the catalog does not know, is enough.
  CHECK_FALSE(applies(kH100, {"", {"NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"}}));
  CHECK_FALSE(applies(kH100, {"", {"NVIDIA H100 80GB HBM3", "Mystery GPU 9000"}}));
  CHECK_FALSE(applies(kH100, {"", {}}));  // the trace records none
  // A profile of a GPU the catalog does not know, or naming none, applies to nothing (not even a
  // trace GPU of the same unknown name: the catalog is what says two names are one GPU).
  CHECK_FALSE(applies("Mystery GPU 9000", {"", {"Mystery GPU 9000"}}));
  CHECK_FALSE(applies("", {kH100, {}}));
  CHECK_FALSE(applies("", {"", {""}}));
  // An unknown --device is the option's error, as everywhere --device is read.
  p.device = kH100;
  CHECK_THROWS_AS(hw::profile_mismatch(p, {"Mystery GPU 9000", {}}, catalog), OptionError);
}

TEST_CASE("device profile rule: one line saying what was profiled, what is priced and where that comes from") {
  const auto catalog = hw::DeviceCatalog::load_directory(costmodel::default_device_dir());
  hw::DeviceProfile p;
  p.device = "NVIDIA A100-SXM4-80GB";
  const std::string tail = ": calibrate that GPU, or leave out --device-profile";
  CHECK(hw::profile_mismatch(p, {"H100", {}}, catalog) ==
        "profiled on A100-SXM4-80GB, but the work is priced on H100-SXM5-80GB (--device)" + tail);
  CHECK(hw::profile_mismatch(p, {"", {"NVIDIA H100 80GB HBM3"}}, catalog) ==
        "profiled on A100-SXM4-80GB, but the work is priced on H100-SXM5-80GB (the trace's GPU)" + tail);
  CHECK(hw::profile_mismatch(p, {"", {"Mystery GPU 9000"}}, catalog) ==
        "profiled on A100-SXM4-80GB, but the work is priced on 'Mystery GPU 9000', a GPU the catalog does not "
        "know (the trace's GPU)" + tail);
  CHECK(hw::profile_mismatch(p, {"", {}}, catalog) ==
        "profiled on A100-SXM4-80GB, but the work is priced on no named GPU (the trace records none: name it with "
        "--device)" + tail);
  p.device = "Mystery GPU 9000";
  CHECK(hw::profile_mismatch(p, {"H100", {}}, catalog) ==
        "profiled on 'Mystery GPU 9000', a GPU the catalog does not know, but the work is priced on H100-SXM5-80GB "
        "(--device)" + tail);
  p.device = "";
  CHECK(hw::profile_mismatch(p, {"H100", {}}, catalog) ==
        "profiled on no named GPU, but the work is priced on H100-SXM5-80GB (--device)" + tail);
  // require_profile_applies: the entry when it applies, else InputError(file, "device", the line).
  p.device = "NVIDIA H100 80GB HBM3";
  CHECK(hw::require_profile_applies("p.json", p, {"", {"H100"}}, catalog).name == kH100);
  p.device = "A100-SXM4-80GB";
  try {
    hw::require_profile_applies("p.json", p, {"H100", {}}, catalog);
    FAIL("a profile of another GPU applied");
  } catch (const InputError& e) {
    CHECK(e.file() == "p.json");
    CHECK(e.item() == "device");
    CHECK(std::string(e.what()) == "p.json: device: " + *hw::profile_mismatch(p, {"H100", {}}, catalog));
  }
}

namespace {

// The message every reader must throw for `file` (a profile of `profiled`) priced on `priced`:
// InputError(file, "device", the rule's line).
std::string refusal(const std::string& file, const std::string& profiled, const hw::PricedGpu& priced) {
  const auto catalog = hw::DeviceCatalog::load_directory(costmodel::default_device_dir());
  hw::DeviceProfile p;
  p.device = profiled;
  const auto why = hw::profile_mismatch(p, priced, catalog);
  REQUIRE(why);
  return file + ": device: " + *why;
}

template <typename F>
std::string thrown_by(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

// The bundled trace at `path` with an A100 added to its first rank's recorded devices (no kernel
// runs on it): a trace that recorded two GPU models.
whatif::Workload with_second_gpu(const std::string& path) {
  Logger quiet(LogLevel::kQuiet);
  auto traces = std::make_shared<trace::TraceSet>(test::load({test::source_path(path)}, quiet));
  trace::DeviceProperties a100;
  a100.id = 99;
  a100.name = "NVIDIA A100-SXM4-80GB";
  traces->ranks.front().devices.push_back(a100);
  graph::BuiltGraph built = graph::build_graph(*traces, graph::BuildOptions{}, quiet);
  return {std::move(traces), std::move(built)};
}

}  // namespace

TEST_CASE("device profile rule at each reader: a profile of another GPU is refused with the rule's line") {
  const std::string dir = test::fresh_dir("profile_rule_readers");
  hw::DeviceProfile p = h100_profile(2);
  p.device = "A100-SXM4-80GB";
  const std::string a100 = write_profile(dir, "a100.json", p);
  const std::string devices = costmodel::default_device_dir();
  const whatif::Workload w = test::load_workload("traces/h100/resnet50-emit-nvtx-step");
  const hw::PricedGpu trace_gpu{"", w.traces->gpu_names()};
  REQUIRE_FALSE(trace_gpu.trace_gpus.empty());
  const std::string expected = refusal(a100, p.device, trace_gpu);
  CHECK_THAT(expected, Catch::Contains("priced on H100-SXM5-80GB (the trace's GPU)"));
  SECTION("precision") {
    whatif::Workload x = w;
    CHECK(thrown_by([&] { whatif::precision(x, bf16(a100)); }) == expected);
  }
  SECTION("the compression rate meter") {
    CHECK(thrown_by([&] { comm::measure_gpu_rates(w.graph.dfg, *w.traces, devices, a100); }) == expected);
  }
  SECTION("op fusion's load_fusion_rates") {
    CHECK(thrown_by([&] { whatif::load_fusion_rates(*w.traces, {devices, "", a100}); }) == expected);
  }
  SECTION("device re-timing (--device: the target is the GPU priced)") {
    whatif::Workload x = w;
    whatif::DeviceRetime retime = test::device("H200-SXM-141GB");
    retime.device_profile = a100;
    CHECK(thrown_by([&] { whatif::device_retime(x, retime); }) == refusal(a100, p.device, {"H200-SXM-141GB", {}}));
  }
  SECTION("costmodel's --device-profile (load_share_profile)") {
    const auto catalog = hw::DeviceCatalog::load_directory(devices);
    CHECK(thrown_by([&] { costmodel::load_share_profile(a100, catalog.get(kH100), catalog); }) ==
          refusal(a100, p.device, {kH100, {}}));
  }
}

TEST_CASE("device profile rule at each reader: a trace that recorded a second GPU model refuses a profile of one") {
  // Before the rule was shared, precision (the GPUs its kernels ran on) and the compression meter
  // (the first GPU the catalog knows) took the H100 profile here, and op fusion refused it.
  const std::string dir = test::fresh_dir("profile_rule_two_gpus");
  const std::string h100 = write_profile(dir, "h100.json", h100_profile(2));
  const std::string devices = costmodel::default_device_dir();
  const whatif::Workload w = with_second_gpu("traces/h100/resnet50-emit-nvtx-step");
  const std::string expected = refusal(h100, kH100, {"", w.traces->gpu_names()});
  CHECK_THAT(expected, Catch::Contains("priced on A100-SXM4-80GB (the trace's GPU)"));
  whatif::Workload x = w;
  CHECK(thrown_by([&] { whatif::precision(x, bf16(h100)); }) == expected);
  CHECK(thrown_by([&] { comm::measure_gpu_rates(w.graph.dfg, *w.traces, devices, h100); }) == expected);
  CHECK(thrown_by([&] { whatif::load_fusion_rates(*w.traces, {devices, "", h100}); }) == expected);
  // Named with --device, the H100 is the GPU priced, at every reader.
  whatif::Precision named = bf16(h100);
  named.device = kH100;
  whatif::Workload y = w;
  CHECK_FALSE(whatif::precision(y, named).from_profile.empty());
  CHECK(comm::measure_gpu_rates(w.graph.dfg, *w.traces, devices, h100, kH100).measured.profiled());
  CHECK(whatif::load_fusion_rates(*w.traces, {devices, kH100, h100}).profiled());
}

TEST_CASE("precision from a profile: doubling bf16 GEMM throughput halves the re-priced GEMMs' time above the floor") {
  const std::string dir = test::fresh_dir("precision_profile");
  const whatif::Workload base = test::load_workload("traces/h100/resnet50-emit-nvtx-step");
  whatif::Workload same = base, doubled = base;
  // Same FLOP rate at fp32/TF32 and bf16: a GEMM priced from its op's FLOPs keeps its time (it is
  // compute-bound at 1 TFLOP/s); one without shapes gets 0.5 x 1 + 0.5 x (2 / 4 bytes) = 0.75, and
  // 0.5 x 0.5 + 0.25 = 0.5 at twice the bf16 rate. The capture (emit_nvtx) records shapes.
  const whatif::PrecisionChange a = whatif::precision(same, bf16(write_profile(dir, "a.json", h100_profile(1))));
  const whatif::PrecisionChange b = whatif::precision(doubled, bf16(write_profile(dir, "b.json", h100_profile(2))));
  CHECK(a.from_profile ==
        std::set<std::string>{"cast_fp32_bf16", "gemm bf16/default", "gemm fp32/default", "gemm fp32/tf32"});
  const Nanos f = a.latency_floor;
  REQUIRE(f > 0);
  std::size_t halved = 0, two_thirds = 0, other = 0;
  for (const graph::NodeId id : base.graph.dfg.node_ids()) {
    const Nanos t0 = base.graph.dfg.node(id).duration, ta = same.graph.dfg.node(id).duration,
                tb = doubled.graph.dfg.node(id).duration;
    if (ta == tb) continue;  // kernels the GEMM rate does not price
    INFO(base.graph.dfg.op_name(id) << ": " << t0 << " -> " << ta << " / " << tb << " ns");
    const double r = static_cast<double>(tb - f) / static_cast<double>(ta - f);
    if (std::abs(ta - t0) <= 1 && std::abs(static_cast<double>(tb - f) - 0.5 * (t0 - f)) <= 1) ++halved;
    else if (std::abs(r - 0.5 / 0.75) < 0.01) ++two_thirds;
    else ++other;
  }
  const auto described = [](const whatif::PrecisionChange& c) {
    return c.lowered.at(whatif::OpClass::kGemm).described + c.lowered.at(whatif::OpClass::kConv).described;
  };
  CHECK(other == 0);
  CHECK(halved > 0);
  CHECK(halved == described(b));
  INFO(two_thirds << " GEMM kernels without shapes (this capture describes every GEMM kernel's op)");
  // Casts: the profile's flat 3 us each (those without shapes: the floor).
  CHECK(b.casts > 0);
  CHECK(b.cast_time == 3'000 * static_cast<Nanos>(b.casts - b.casts_unsized) + f * static_cast<Nanos>(b.casts_unsized));
  CHECK(b.gpu_after < a.gpu_after);
}

TEST_CASE("compression from a profile: the compression kernel is the profile's curve, decompression keeps its rule") {
  comm::GpuRates rates;
  rates.bandwidth_gbs = 1000;
  rates.fp32_tflops = 50;
  const auto clusters = comm::ClusterCatalog::load_directory(test::source_path("configs/clusters"));
  const comm::CollectiveModel model(clusters.get("dgx-h100"));
  comm::BucketShape bucket{.bytes = 4 << 20, .element_bytes = 4, .group = 4, .transfer = 100'000};
  const double n = 1 << 20;
  const comm::CompressionSpec topk{comm::CompressionMethod::kTopK, 0.02, 4};
  const comm::CompressionSpec psgd{comm::CompressionMethod::kPowerSgd, 0.01, 4};
  const comm::CompressionSpec sign{comm::CompressionMethod::kEfSignSgd, 0.01, 4};
  const comm::MethodCost prior = comm::price_method(topk, bucket, model, rates);
  rates.measured = hw::DeviceRates(std::make_shared<const hw::DeviceProfile>(h100_profile(2)));
  const comm::MethodCost measured = comm::price_method(topk, bucket, model, rates);
  CHECK(measured.compress == nanos_from_double(40'000 + 0.5 * n));  // topk:0.01, the nearest density
  CHECK(measured.decompress == prior.decompress);
  CHECK(measured.transfer == prior.transfer);
  CHECK(comm::price_method(psgd, bucket, model, rates).compress == nanos_from_double(100'000 + 0.25 * n));
  CHECK(comm::profiled_compression(psgd, 4, rates)->figure == "powersgd:4");
  CHECK_FALSE(comm::profiled_compression(sign, 4, rates));  // no signpack curve: the rule prices it
}

TEST_CASE("device re-timing with a profile of the target: copies take its fit, latency + bytes / bandwidth") {
  const std::string dir = test::fresh_dir("device_retime_profile");
  hw::DeviceProfile p = h100_profile(2);
  p.device = "H200-SXM-141GB";
  p.copies = {{hw::CopyDirection::kHostToDevice, 1'000, 10, {}},
              {hw::CopyDirection::kDeviceToHost, 1'500, 20, {}},
              {hw::CopyDirection::kDeviceToDevice, 500, 1'000, {}}};
  whatif::Workload w = test::load_workload("traces/h100/resnet50-emit-nvtx-step");
  whatif::DeviceRetime retime = test::device("H200-SXM-141GB");
  retime.device_profile = write_profile(dir, "h200.json", p);
  const whatif::DeviceChange change = whatif::device_retime(w, retime);
  const graph::Dfg& dfg = w.graph.dfg;
  std::map<std::string, std::size_t> checked;
  for (const graph::NodeId id : dfg.node_ids()) {
    const graph::Node& n = dfg.node(id);
    const graph::OpDesc* op = dfg.op(id);
    if (n.kind != graph::NodeKind::kMemcpy || !op || !op->bytes) continue;
    const std::string_view name = w.traces->strings.view(n.name);
    for (const auto& c : p.copies) {
      const char* word = c.kind == hw::CopyDirection::kHostToDevice   ? "HtoD"
                         : c.kind == hw::CopyDirection::kDeviceToHost ? "DtoH"
                                                                      : "DtoD";
      if (name.find(word) == std::string_view::npos) continue;
      INFO(name << ", " << *op->bytes << " bytes");
      CHECK(n.duration == nanos_from_double(c.latency_ns + static_cast<double>(*op->bytes) / c.bandwidth_gbps));
      ++checked[std::string("copy ") + hw::to_string(c.kind)];
    }
  }
  REQUIRE_FALSE(checked.empty());
  for (const auto& [figure, count] : checked) CHECK(change.copies_from_profile.at(figure).copies == count);
  // A profile of the trace's own GPU is not the target's.
  p.device = kH100;
  retime.device_profile = write_profile(dir, "h100.json", p);
  whatif::Workload again = test::load_workload("traces/h100/resnet50-emit-nvtx-step");
  CHECK_THROWS_AS(whatif::device_retime(again, retime), InputError);
}

namespace {

// h100_profile with a cast slope of `ns_per_element` (elementwise bandwidth 6 / it bytes/ns) and
// an empty kernel of `launch_ns` (0: no launch measured).
hw::DeviceProfile fusion_profile(double ns_per_element, double launch_ns) {
  hw::DeviceProfile p = h100_profile(1);
  for (hw::KernelCurve& c : p.kernels)
    if (c.kernel == hw::kCastToBf16Kernel) c.ns_per_element = ns_per_element;
  p.launch = {launch_ns, 2'500, launch_ns > 0 ? 200 : 0};
  return p;
}

hw::DeviceRates rates_of(const hw::DeviceProfile& p) { return hw::DeviceRates(std::make_shared<const hw::DeviceProfile>(p)); }

// Every legal chain's occurrences on the workload (find_fusion_candidates: memory-bound runs).
std::vector<std::vector<graph::NodeId>> fusion_occurrences(const whatif::Workload& w) {
  std::vector<std::vector<graph::NodeId>> out;
  for (const whatif::FusionCandidate& c : whatif::find_fusion_candidates(w))
    out.insert(out.end(), c.occurrences.begin(), c.occurrences.end());
  return out;
}

constexpr const char* kFusionTrace = "traces/h100/gpt2-emit-nvtx-step";  // shapes recorded: the model prices

}  // namespace

TEST_CASE("fusion from a profile: doubling the elementwise bandwidth makes memory-bound fused chains cheaper") {
  const whatif::Workload w = test::load_workload(kFusionTrace);
  const whatif::FusionPricer prior(*w.traces, w.graph.dfg);
  const whatif::FusionPricer single(*w.traces, w.graph.dfg, false, rates_of(fusion_profile(0.006, 0)));  // 1000 B/ns
  const whatif::FusionPricer doubled(*w.traces, w.graph.dfg, false, rates_of(fusion_profile(0.003, 0)));  // 2000 B/ns
  std::size_t cheaper = 0, exact = 0, dearer = 0;
  for (const auto& parts : fusion_occurrences(w)) {
    const whatif::FusedPrice a = single.price(parts), b = doubled.price(parts), p = prior.price(parts);
    REQUIRE(a.fallback == b.fallback);
    if (a.fallback) {
      CHECK(a.duration == p.duration);  // the fallback rule has no bandwidth in it
      CHECK_FALSE(a.bandwidth_from_profile);
      continue;
    }
    CHECK(a.bandwidth_from_profile);
    CHECK_FALSE(a.launch_from_profile);  // launches = 0: no launch measured
    CHECK(b.bytes == a.bytes);
    if (b.duration > a.duration) ++dearer;
    // The memory-bound ones (memory above compute, not clamped): the model's time at 2000 B/ns.
    const whatif::DeviceRates* r = doubled.rates(parts.front());
    REQUIRE(r);
    CHECK(*r->bytes_per_ns == 2'000.0);
    double flops = 0;
    for (const graph::NodeId id : parts) flops += doubled.desc(id).flops();
    const double memory = b.bytes / 2'000.0, compute = r->flops_per_ns ? flops / *r->flops_per_ns : 0;
    if (memory <= compute || a.duration >= a.parts || b.duration <= r->shortest_kernel) continue;
    CHECK(b.duration == nanos_from_double(memory + 0.05 * compute));
    ++exact;
    if (b.duration < a.duration) ++cheaper;
  }
  CHECK(dearer == 0);
  CHECK(exact > 10);
  CHECK(cheaper == exact);
  std::set<std::string> used;
  doubled.figures_used(doubled.price(fusion_occurrences(w).front()), used);
  CHECK(used == std::set<std::string>{"elementwise bandwidth (cast_fp32_bf16)"});

  // The what-if end to end: the profile named by OpFusion::device, its figures in the change.
  const std::string dir = test::fresh_dir("fusion_profile");
  whatif::OpFusion fuse = whatif::fuse_candidates(whatif::find_fusion_candidates(w));
  whatif::Workload x1 = w, x2 = w, without = w;
  const whatif::OpFusionChange none = whatif::op_fusion(without, fuse);
  fuse.device.device_profile = write_profile(dir, "bw.json", fusion_profile(0.006, 0));
  const whatif::OpFusionChange at_single = whatif::op_fusion(x1, fuse);
  fuse.device.device_profile = write_profile(dir, "bw2.json", fusion_profile(0.003, 0));
  const whatif::OpFusionChange at_double = whatif::op_fusion(x2, fuse);
  CHECK(none.from_profile.empty());
  CHECK(at_double.from_profile == std::set<std::string>{"elementwise bandwidth (cast_fp32_bf16)"});
  CHECK(at_double.instances == none.instances);
  CHECK(at_double.gpu_before == none.gpu_before);
  CHECK(at_double.gpu_after < at_single.gpu_after);
}

TEST_CASE("fusion from a profile: the fused kernel pays one launch at the profile's cost") {
  const whatif::Workload w = test::load_workload(kFusionTrace);
  const whatif::FusionPricer cheap(*w.traces, w.graph.dfg, false, rates_of(fusion_profile(0.002, 2'000)));
  const whatif::FusionPricer dear(*w.traces, w.graph.dfg, false, rates_of(fusion_profile(0.002, 4'000)));
  std::size_t unclamped = 0;
  for (const auto& parts : fusion_occurrences(w)) {
    const whatif::FusedPrice a = cheap.price(parts), b = dear.price(parts);
    if (a.fallback) continue;
    CHECK(a.launch_from_profile);
    CHECK(a.duration >= std::min<Nanos>(2'000, a.parts));  // the launch is the floor
    CHECK(b.duration >= a.duration);
    if (b.duration >= b.parts) continue;  // clamped at the parts' own time: fusion saves nothing
    CHECK(b.duration - a.duration == 2'000);
    ++unclamped;
  }
  CHECK(unclamped > 10);
  std::set<std::string> used;
  for (const auto& parts : fusion_occurrences(w)) cheap.figures_used(cheap.price(parts), used);
  CHECK(used == std::set<std::string>{"elementwise bandwidth (cast_fp32_bf16)", "launch"});
}

TEST_CASE("fusion from a profile: one that measures neither figure prices as none, one of another GPU is refused") {
  const whatif::Workload w = test::load_workload(kFusionTrace);
  const whatif::FusionPricer prior(*w.traces, w.graph.dfg);
  const whatif::FusionPricer flat(*w.traces, w.graph.dfg, false, rates_of(fusion_profile(0, 0)));  // no slope, no launch
  std::size_t compared = 0;
  for (const auto& parts : fusion_occurrences(w)) {
    const whatif::FusedPrice a = prior.price(parts), b = flat.price(parts);
    CHECK(a.duration == b.duration);
    CHECK(a.fallback == b.fallback);
    CHECK(a.bytes == b.bytes);
    CHECK_FALSE(b.bandwidth_from_profile);
    ++compared;
  }
  CHECK(compared > 100);
  const std::string dir = test::fresh_dir("fusion_profile_refused");
  hw::DeviceProfile a100 = fusion_profile(0.002, 2'000);
  a100.device = "A100-SXM4-80GB";
  whatif::OpFusion fuse = whatif::fuse_candidates(whatif::find_fusion_candidates(w));
  fuse.device.device_profile = write_profile(dir, "a100.json", a100);
  whatif::Workload edited = w;
  CHECK_THROWS_AS(whatif::op_fusion(edited, fuse), InputError);
  // Named as the --device target, the A100 profile prices (the trace's kernels taken as timed there).
  fuse.device.device = "A100-SXM4-80GB";
  CHECK_FALSE(whatif::op_fusion(edited, fuse).from_profile.empty());
}
