#include <catch2/catch.hpp>

#include <array>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

#include "core/error.h"
#include "costmodel/hw.h"
#include "costmodel/kernel_time.h"
#include "costmodel/learned_model.h"
#include "costmodel/op_desc.h"
#include "costmodel/op_desc_from_graph.h"
#include "costmodel/paths.h"
#include "costmodel/pricer.h"
#include "costmodel/roofline_share.h"
#include "costmodel/share_device_fit.h"
#include "graph/builder.h"
#include "profiler/native_trace_builder.h"
#include "profiler/temp_dir.h"
#include "trace/loader.h"
#include "test_paths.h"
#include "flag_whatif.h"

using namespace dpro;

namespace {

// One rank on a V100 with: a bmm kernel launched by aten::bmm with shapes, a kernel whose
// CPU op has no shapes, a DtoD copy, an HtoD copy and an NCCL kernel.
struct Fixture {
  trace::TraceSet traces;
  graph::BuiltGraph built;
  graph::Dfg& dfg = built.dfg;

  Fixture(const std::string& gpu_name) {
    trace::TraceRank rank;
    rank.rank = 0;
    rank.devices.push_back({0, gpu_name, {}, 7, 0, 80});
    auto add_event = [&](const char* name, trace::EventKind kind, Nanos dur, const char* dims) {
      trace::Event e;
      e.name = traces.strings.intern(name);
      e.kind = kind;
      e.dur = dur;
      trace::EventAttrs a;
      a.device = 0;
      if (dims) a.input_dims = dims;
      e.attrs = static_cast<std::uint32_t>(rank.attrs.size());
      rank.attrs.push_back(a);
      rank.events.push_back(e);
      return static_cast<std::uint32_t>(rank.events.size() - 1);
    };
    const auto bmm_op = add_event("aten::bmm", trace::EventKind::kCpuOp, 10000, "[[64, 512, 512], [64, 512, 512]]");
    const auto bmm_k = add_event("volta_sgemm_128x64_nn", trace::EventKind::kKernel, 2000000, nullptr);
    const auto odd_op = add_event("aten::index_select", trace::EventKind::kCpuOp, 5000, "[[10], [], [3]]");
    const auto odd_k = add_event("indexSelectKernel", trace::EventKind::kKernel, 100000, nullptr);
    const auto d2d = add_event("Memcpy DtoD (Device -> Device)", trace::EventKind::kMemcpy, 300000, nullptr);
    const auto h2d = add_event("Memcpy HtoD (Pageable -> Device)", trace::EventKind::kMemcpy, 400000, nullptr);
    const auto nccl = add_event("ncclKernel_AllReduce_RING_LL_Sum_float", trace::EventKind::kCollective, 500000, nullptr);
    traces.ranks.push_back(std::move(rank));
    auto node = [&](graph::NodeKind kind, std::uint32_t event, std::uint32_t parent) {
      graph::Node n;
      n.kind = kind;
      n.event = graph::EventRef{event};
      n.parent_op = graph::EventRef{parent};
      n.name = traces.ranks[0].events[event].name;
      n.measured_duration = n.duration = traces.ranks[0].events[event].dur;
      dfg.nodes().push_back(n);
    };
    node(graph::NodeKind::kKernel, bmm_k, bmm_op);
    node(graph::NodeKind::kKernel, odd_k, odd_op);
    node(graph::NodeKind::kMemcpy, d2d, graph::EventRef::kNoneValue);
    node(graph::NodeKind::kMemcpy, h2d, graph::EventRef::kNoneValue);
    node(graph::NodeKind::kCollective, nccl, graph::EventRef::kNoneValue);
    graph::describe_ops(traces, dfg);
  }
  // After a test edits the trace: the graph's op table describes the ops as it now records them.
  void redescribe() { graph::describe_ops(traces, dfg); }
};

std::unique_ptr<test::FlagWhatIf> parsed(std::vector<std::string> args) {
  return std::make_unique<test::FlagWhatIf>(std::move(args));
}

// Applies `--device H100-SXM5-80GB` to the fixture and returns the summary.
std::string summary_on_h100(Fixture& f) {
  auto w = parsed({"--device", "H100-SXM5-80GB"});
  Logger log(LogLevel::kQuiet);
  w->apply(f.built, f.traces, log);
  return w->summary();
}

// The synthetic dpro-profile captures below: one H100, a clock start, a bf16 GEMM kernel and the
// emit_nvtx range of the bmm that launches it.
constexpr std::uint64_t kCaptureT0 = 1'700'000'000'000'000'000ull + 1'000'000;
const std::string kSm90Gemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64";
const std::string kBmmRange = "aten::bmm, seq = 4, op_id = 30, sizes = [[64, 512, 512], [64, 512, 512]]";
void add_h100(test::NativeTraceBuilder& b) {
  b.add(native::DeviceRecord{0, "NVIDIA H100 80GB HBM3", 80ull << 30, 9, 0, 132});
}

// A dpro-profile capture's records of one kernel launch: cudaLaunchKernel on thread 10/11 over
// [call, call_end) with `correlation`, its kernel over [start, end) on stream 7 of device 0 and,
// given `op` (an emit_nvtx range name), that range from 1 us before the call to 1 us after,
// with NVTX id `range`.
void add_launch(test::NativeTraceBuilder& b, std::uint64_t call, std::uint64_t call_end, std::uint32_t correlation,
                std::uint64_t start, std::uint64_t end, const std::string& kernel, std::array<std::int32_t, 3> grid,
                std::array<std::int32_t, 3> block, const std::string& op = "", std::uint32_t range = 0) {
  using namespace dpro::native;
  if (!op.empty()) b.add(MarkerRecord{kMarkerStart, call - 1'000, range, 10, 11, op, ""});
  b.add(ApiRecord{ApiKind::kRuntime, 211, call, call_end, 10, 11, correlation, "cudaLaunchKernel_v7000"});
  if (!op.empty()) b.add(MarkerRecord{kMarkerEnd, call_end + 1'000, range, 10, 11, "", ""});
  b.add(KernelRecord{start, end, 0, 1, 7, correlation, kernel, grid, block, 0, 0});
}


// One step of the like-step captures, opened at host time `t`: its ProfilerStep range, a GEMM
// launched at t + 2 us (inside emit_nvtx's bmm range in step 0 only) and a custom kernel without
// an op; the caller adds what else the step holds and closes the range at its end.
struct StepKernels {
  std::uint64_t gemm_start, gemm_end;          // on the GPU
  std::uint64_t custom_call, custom_call_end;  // the custom kernel's launch call on the host
  std::uint64_t custom_start, custom_end;      // and its run on the GPU
};
void add_like_step(test::NativeTraceBuilder& b, std::uint32_t step, std::uint64_t t, const StepKernels& k) {
  using namespace dpro::native;
  const std::uint32_t c = step * 10;
  b.add(MarkerRecord{kMarkerStart, t, c + 1, 10, 11, "ProfilerStep#" + std::to_string(step), ""});
  add_launch(b, t + 2'000, t + 7'000, c + 1, k.gemm_start, k.gemm_end, kSm90Gemm, {132, 1, 1}, {256, 1, 1},
             step == 0 ? kBmmRange : "", c + 2);
  add_launch(b, k.custom_call, k.custom_call_end, c + 2, k.custom_start, k.custom_end, "my_custom_kernel", {1, 1, 1},
             {32, 1, 1});
}
// A kernel node's cost-model description, from the graph's op table; `launch`: the op whose
// launching CPU op describes it (kNoOp: the kernel's own).
costmodel::OpDesc kernel_desc(const graph::Dfg& dfg, graph::NodeId id, graph::OpId launch = graph::kNoOp) {
  const graph::OpDesc& own = *dfg.op(id);
  return costmodel::op_desc_of_kernel(dfg.ops(), own, launch.valid() ? dfg.ops().op(launch) : own);
}

}  // namespace

TEST_CASE("device what-if: re-times GPU ops on a faster GPU and reports coverage") {
  Fixture f("Tesla V100-PCIE-32GB");
  auto w = parsed({"--device", "H100-SXM5-80GB"});
  REQUIRE(w->enabled());
  Logger log(LogLevel::kQuiet);
  w->apply(f.built, f.traces, log);
  const auto& n = f.dfg.nodes().raw();
  CHECK(n[0].duration < n[0].measured_duration);  // bmm: faster on H100
  CHECK(n[1].duration < n[1].measured_duration);  // undescribable kernel: scaled by bandwidth
  CHECK(n[1].duration == Approx(20000 + 80000 * 900.0 / 3350.0).margin(2));
  CHECK(n[2].duration < n[2].measured_duration);   // DtoD copy scales
  CHECK(n[3].duration == n[3].measured_duration);  // HtoD copy unchanged
  CHECK(n[4].duration == n[4].measured_duration);  // collective unchanged
  const std::string s = w->summary();
  CHECK(s.find("H100-SXM5-80GB") != std::string::npos);
  CHECK(s.find("1 kernel could not be described") != std::string::npos);
  if (costmodel::LearnedModel::available())
    CHECK(s.find("Learned compact-AST model: 60.6% of measured GPU time (1 op, ") != std::string::npos);
  CHECK(s.find("Largest undescribed kernels (priced by scaling), by launching op: aten::index_select (1 kernel, "
               "100.000 us).") != std::string::npos);
  CHECK(s.find("no shapes") == std::string::npos);
  if (costmodel::LearnedModel::available())
    CHECK(s.find("--device H100-SXM5-80GB (not in the learned model's training data: priced by its unseen-GPU "
                 "network, less accurate than once ops measured on the GPU correct it") != std::string::npos);
  // The same figures as JSON (replay --json: whatif.changes.device).
  CHECK(std::string(w->key()) == "device");
  const nlohmann::json d = w->details();
  CHECK(d.at("target") == "H100-SXM5-80GB");
  CHECK(d.at("gpu_ops") == 5);
  CHECK(d.at("undescribable_kernels") == 1);
  CHECK(d.at("models").at("unchanged").at("ops") == 2);  // the HtoD copy and the collective
  CHECK(d.at("models").at("unchanged").at("predicted_ns") == d.at("models").at("unchanged").at("measured_ns"));
  CHECK(d.at("undescribed_by_op").at(0).at("op") == "aten::index_select");
  CHECK(d.at("undescribed_by_op").at(0).at("measured_ns") == 100000);
  double shares = 0;
  for (const char* m : {"learned", "scaling", "unchanged"})
    shares += d.at("models").at(m).at("share_of_measured").get<double>();
  CHECK(shares == Approx(1.0));
  if (costmodel::LearnedModel::available()) {
    CHECK(d.at("models").at("learned").at("share_of_measured") == Approx(0.606).margin(0.001));
    CHECK(d.at("learned_pricing").at("kind") == "unseen");
  }
}

TEST_CASE("device what-if: between GPUs of one chip kernels are priced by the same-chip rule and the summary says so") {
  // V100 PCIe -> V100 SXM2: one chip, the same 900 GB/s, clocks 1380 -> 1530 MHz, fp32 peak 14 -> 15.7 TFLOP/s.
  Fixture f("Tesla V100-PCIE-32GB");
  auto w = parsed({"--device", "V100-SXM2-32GB"});
  Logger log(LogLevel::kQuiet);
  w->apply(f.built, f.traces, log);
  const auto& n = f.dfg.nodes().raw();
  // bmm 64x512^3 fp32: 17.2 GFLOP over 201 MB, compute-bound on the V100: by the peak ratio.
  CHECK(n[0].duration == Approx(2000000 * 14.0 / 15.7).margin(2));
  // index_select, undescribed and no GEMM: halfway between the bandwidth (1) and clock ratios.
  CHECK(n[1].duration == Approx(100000 * (0.5 + 0.5 * 1380.0 / 1530.0)).margin(2));
  CHECK(n[2].duration == n[2].measured_duration);  // DtoD copy: same bandwidth
  CHECK(n[4].duration == n[4].measured_duration);  // collective unchanged
  const std::string s = w->summary();
  INFO(s);
  CHECK(s.find("Same chip as the origin (") != std::string::npos);
  CHECK(s.find("1 kernel could not be described (priced by the same-chip rule).") != std::string::npos);
  CHECK(s.find("Largest undescribed kernels (priced by the same-chip rule), by launching op: aten::index_select") !=
        std::string::npos);
  const nlohmann::json d = w->details();
  CHECK(d.at("models").at("same_chip").at("ops") == 2);
  CHECK(d.at("models").at("learned").at("ops") == 0);
  CHECK(d.at("undescribable_same_chip") == 1);
  double shares = 0;
  for (const char* m : {"learned", "scaling", "unchanged", "same_chip"})
    shares += d.at("models").at(m).at("share_of_measured").get<double>();
  CHECK(shares == Approx(1.0));
}

TEST_CASE("device what-if: a GPU with a trained GPU's datasheet figures is priced as that GPU") {
  if (!costmodel::LearnedModel::available()) return;
  // A100 SXM4 40 GB and A100 PCIe 40 GB: the same figures; the model was trained on the PCIe one.
  Fixture f("Tesla V100-PCIE-32GB");
  auto w = parsed({"--device", "A100-SXM4-40GB"});
  Logger log(LogLevel::kQuiet);
  w->apply(f.built, f.traces, log);
  const auto on_sxm = f.dfg.nodes().raw()[0].duration;
  CHECK(w->summary().find("--device A100-SXM4-40GB (priced as A100-PCIE-40GB: the same datasheet figures)") !=
        std::string::npos);
  Fixture g("Tesla V100-PCIE-32GB");
  auto p = parsed({"--device", "A100-PCIE-40GB"});
  p->apply(g.built, g.traces, log);
  CHECK(on_sxm == g.dfg.nodes().raw()[0].duration);
  CHECK(p->summary().find("priced as") == std::string::npos);
  CHECK(p->summary().find("unseen-GPU network") == std::string::npos);
  CHECK(w->details().at("learned_pricing") == nlohmann::json({{"kind", "twin"}, {"as", "A100-PCIE-40GB"}}));
  CHECK(p->details().at("learned_pricing").at("kind") == "trained");
}

TEST_CASE("device what-if: an elementwise op without a family of its own is priced as a like op") {
  Fixture f("Tesla V100-PCIE-32GB");
  f.traces.ranks[0].events[2].name = f.traces.strings.intern("aten::sigmoid");  // was index_select
  f.traces.ranks[0].attrs[2].input_dims = "[[4096, 1024]]";
  f.redescribe();
  const std::string s = summary_on_h100(f);
  INFO(s);
  CHECK(s.find("0 kernels could not be described") != std::string::npos);
  if (costmodel::LearnedModel::available()) {
    CHECK(s.find("(2 ops") != std::string::npos);
    CHECK(s.find("of which 1 elementwise ops priced as a like op") != std::string::npos);
    CHECK(f.dfg.nodes().raw()[1].duration < f.dfg.nodes().raw()[1].measured_duration);
  }
}

TEST_CASE("device what-if: names the ops it could not describe, and says when shapes were not recorded") {
  Fixture f("Tesla V100-PCIE-32GB");
  f.traces.ranks[0].attrs[0].input_dims.clear();  // aten::bmm without Input Dims
  f.redescribe();
  const std::string s = summary_on_h100(f);
  INFO(s);
  CHECK(s.find("2 kernels could not be described") != std::string::npos);
  CHECK(s.find("by launching op: aten::bmm (1 kernel, 2.000 ms), aten::index_select (1 kernel") != std::string::npos);
  CHECK(s.find("1 of them is an op the learned model prices but the trace has no shapes") != std::string::npos);
  CHECK(s.find("record_shapes=True") != std::string::npos);
}

TEST_CASE("device what-if: with an unknown GPU name lists the known ones") {
  Fixture f("Tesla V100-PCIE-32GB");
  auto w = parsed({"--device", "Voodoo5"});
  Logger log(LogLevel::kQuiet);
  REQUIRE_THROWS_WITH(w->apply(f.built, f.traces, log),
                      Catch::Contains("Voodoo5") && Catch::Contains("known devices") && Catch::Contains("L4"));
}

TEST_CASE("device what-if: on a trace from an unknown GPU is an error naming --origin-device, never a silent no-change") {
  Fixture f("Mystery GPU 9000");
  Logger log(LogLevel::kQuiet);
  auto w = parsed({"--device", "T4"});
  REQUIRE_THROWS_WITH(w->apply(f.built, f.traces, log),
                      Catch::Contains("--origin-device") && Catch::Contains("'Mystery GPU 9000'") &&
                          Catch::Contains("known: ") && Catch::Contains("V100-PCIE-32GB"));
  CHECK(f.dfg.nodes().raw()[0].duration == f.dfg.nodes().raw()[0].measured_duration);  // nothing half done
  auto forced = parsed({"--device", "T4", "--origin-device", "V100-PCIE-32GB"});
  forced->apply(f.built, f.traces, log);
  CHECK(f.dfg.nodes().raw()[0].duration > f.dfg.nodes().raw()[0].measured_duration);  // T4 is slower
  // Over a GPU the trace records and the catalog knows, --origin-device is taken with a warning.
  Fixture known("Tesla V100-PCIE-32GB");
  std::vector<std::string> overrides;
  Logger override_log(LogLevel::kWarning, [&](LogLevel, const std::string& m) {
    if (m.find("overrides the GPU the trace records") != std::string::npos) overrides.push_back(m);
  });
  parsed({"--device", "H100-SXM5-80GB", "--origin-device", "T4"})->apply(known.built, known.traces, override_log);
  REQUIRE(overrides.size() == 1);
  CHECK_THAT(overrides[0], Catch::Contains("'Tesla V100-PCIE-32GB'") && Catch::Contains("--origin-device T4"));
  overrides.clear();
  Fixture same("Tesla V100-PCIE-32GB");
  parsed({"--device", "H100-SXM5-80GB", "--origin-device", "V100-PCIE-32GB"})->apply(same.built, same.traces, override_log);
  CHECK(overrides.empty());
}

TEST_CASE("device what-if: is off unless given") {
  CHECK_FALSE(parsed({})->enabled());
}

TEST_CASE("device what-if: a trace kernel is re-timed by the ratio of kernel times, not of host-timed latencies") {
  if (!costmodel::LearnedModel::available()) return;
  // The fixture's bmm kernel, re-timed from V100 to A100 (both GPUs of the training data):
  // the model's latencies carry each machine's measurement overhead (19-20 us), which a
  // trace's kernel durations do not.
  const auto model = costmodel::LearnedModel::load(costmodel::default_model_path());
  const auto catalog = costmodel::DeviceCatalog::load_directory(costmodel::default_device_dir());
  const auto& v100 = catalog.get("V100-PCIE-32GB");
  const auto& a100 = catalog.get("A100-PCIE-40GB");
  costmodel::OpDesc bmm;
  bmm.family = costmodel::OpFamily::kBmm;
  bmm.dims = {64, 512, 512, 512};
  const double t = model.predict_ms({{&bmm, &a100, true}})[0], o = model.predict_ms({{&bmm, &v100, true}})[0];
  const double ct = model.measurement_overhead_ms(a100, true), co = model.measurement_overhead_ms(v100, true);
  INFO("A100 " << t << " ms, V100 " << o << " ms; overheads " << ct << ", " << co << " ms");
  CHECK(ct > 0.01);
  CHECK(co > 0.01);
  Fixture f("Tesla V100-PCIE-32GB");
  auto w = parsed({"--device", "A100-PCIE-40GB"});
  Logger log(LogLevel::kQuiet);
  w->apply(f.built, f.traces, log);
  const double measured = static_cast<double>(f.dfg.nodes().raw()[0].measured_duration);
  CHECK(f.dfg.nodes().raw()[0].duration == Approx(measured * (t - ct) / (o - co)).epsilon(1e-5));
  CHECK(f.dfg.nodes().raw()[0].duration < measured * t / o);  // the speed-up is not diluted by the overheads
  const nlohmann::json d = w->details();  // replay --json shows what was taken out
  CHECK(d.at("measurement_overhead_us").at("target").get<double>() == Approx(ct * 1e3));
  CHECK(d.at("measurement_overhead_us").at("origin V100-PCIE-32GB").get<double>() == Approx(co * 1e3));
}

TEST_CASE("device what-if: a GPU behind the origin in every resource does not run a small kernel faster") {
  if (!costmodel::LearnedModel::available()) return;
  // Near an op's floor the kernel-time ratio is the ratio of the two measuring machines' host
  // floors (P4's 26 us, V100's 32): a V100 SXM2 trace re-timed for a P4 ran its small ops faster.
  const auto model = costmodel::LearnedModel::load(costmodel::default_model_path());
  const auto catalog = costmodel::DeviceCatalog::load_directory(costmodel::default_device_dir());
  const auto& v100 = catalog.get("V100-SXM2-32GB");
  costmodel::OpDesc relu;
  relu.family = costmodel::OpFamily::kRelu;
  relu.dims = {64, 64};
  auto factors = [&](const costmodel::DeviceSpec& target) {
    const double t = model.predict_ms({{&relu, &target, true}})[0], o = model.predict_ms({{&relu, &v100, true}})[0];
    const double ct = model.measurement_overhead_ms(target, true), co = model.measurement_overhead_ms(v100, true);
    const double floor = model.unseen_floor_ms(relu.family);
    return std::make_pair(costmodel::kernel_time_ratio(t, o, ct, co, floor),
                          costmodel::learned_kernel_factor(relu, v100, target, t, o, ct, co, floor));
  };
  const auto p4 = factors(catalog.get("P4"));
  INFO("P4: kernel-time ratio " << p4.first << ", factor " << p4.second);
  CHECK(p4.first < 1.0);  // what the host floors say
  CHECK(p4.second == 1.0);
  const auto t4 = factors(catalog.get("T4"));  // T4's clock is above the V100's: not bounded
  CHECK(t4.second == t4.first);
}

TEST_CASE("device what-if: --device-samples corrects the learned model by ops measured on the target") {
  if (!costmodel::LearnedModel::available()) return;
  const auto model = costmodel::LearnedModel::load(costmodel::default_model_path());
  const auto catalog = costmodel::DeviceCatalog::load_directory(costmodel::default_device_dir());
  costmodel::OpDesc bmm;
  bmm.family = costmodel::OpFamily::kBmm;
  bmm.dims = {64, 512, 512, 512};
  const double predicted = model.predict_ms({{&bmm, &catalog.get("T4"), true}})[0];
  // The fixture's bmm measured on the T4 at twice what the model predicts for it.
  const std::string samples = test::binary_path("t4_samples.csv");
  std::ofstream(samples) << "OPName,Latency,Device,B,M,N,K\nbmm," << 2 * predicted << ",Tesla T4,64,512,512,512\n";
  Logger log(LogLevel::kQuiet);
  Fixture plain("Tesla V100-PCIE-32GB"), corrected("Tesla V100-PCIE-32GB");
  auto w0 = parsed({"--device", "T4"});
  w0->apply(plain.built, plain.traces, log);
  auto w1 = parsed({"--device", "T4", "--device-samples", samples});
  w1->apply(corrected.built, corrected.traces, log);
  // The correction scales the predicted latency on the target; the host overhead the
  // latencies carry is then taken out of both sides (kernel_time.h).
  const auto& v100 = catalog.get("V100-PCIE-32GB");
  const auto& t4 = catalog.get("T4");
  const double origin = model.predict_ms({{&bmm, &v100, true}})[0];
  const auto ratio = [&](double target) {
    return costmodel::kernel_time_ratio(target, origin, model.measurement_overhead_ms(t4, true),
                                        model.measurement_overhead_ms(v100, true),
                                        model.unseen_floor_ms(costmodel::OpFamily::kBmm));
  };
  const double measured = static_cast<double>(plain.dfg.nodes().raw()[0].measured_duration);
  CHECK(plain.dfg.nodes().raw()[0].duration == Approx(measured * ratio(predicted)).epsilon(1e-5));
  CHECK(corrected.dfg.nodes().raw()[0].duration == Approx(measured * ratio(2 * predicted)).epsilon(1e-5));
  CHECK(corrected.dfg.nodes().raw()[0].duration > 2.0 * plain.dfg.nodes().raw()[0].duration);
  CHECK(corrected.dfg.nodes().raw()[1].duration == plain.dfg.nodes().raw()[1].duration);  // scaled, not learned
  CHECK(w1->summary().find("corrected by 1 op measured on T4") != std::string::npos);
  // Samples of another GPU are refused.
  std::ofstream(samples) << "OPName,Latency,Device,B,M,N,K\nbmm,1.0,Tesla V100-PCIE-32GB,64,512,512,512\n";
  auto w2 = parsed({"--device", "T4", "--device-samples", samples});
  REQUIRE_THROWS_WITH(w2->apply(corrected.built, corrected.traces, log),
                      Catch::Contains(samples + ": row 2") && Catch::Contains("not on T4"));
}

TEST_CASE("device what-if: a TF32 tensor-core kernel is priced with TF32 peaks, fp32 where the target has none") {
  // The A100 traces' GEMMs run on TF32 tensor cores (cutlass_80_tensorop_s1688gemm: fp32 tensors,
  // TF32 arithmetic); T4 has no TF32, so PyTorch runs the same op as an fp32 GEMM there.
  const char* tf32 = "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4>(Params)";
  auto rename_bmm_kernel = [](Fixture& f, const char* name) {
    f.traces.ranks[0].events[1].name = f.traces.strings.intern(name);
    f.dfg.nodes().raw()[0].name = f.traces.ranks[0].events[1].name;
    f.redescribe();
  };
  const double o = 20000, measured = 2000000;  // the fixed part of the scaling rule, the bmm's 2 ms
  for (const char* target : {"T4", "H100-SXM5-80GB"}) {
    Fixture f("NVIDIA A100-PCIE-40GB");
    f.traces.ranks[0].attrs[0].input_dims.clear();  // no shapes: priced by the kernel's name
    rename_bmm_kernel(f, tf32);
    auto w = parsed({"--device", target});
    Logger log(LogLevel::kQuiet);
    w->apply(f.built, f.traces, log);
    const bool t4 = std::string(target) == "T4";
    // Half bandwidth, half FLOP/s (kGemmKernelGamma), the FLOP/s of the arithmetic that ran.
    const double bw = t4 ? 1555.0 / 320 : 1555.0 / 3350, peak = t4 ? 156.0 / 8.1 : 156.0 / 494.7;
    CHECK(f.dfg.nodes().raw()[0].duration == Approx(o + (measured - o) * std::sqrt(bw * peak)).margin(2));
    const nlohmann::json d = w->details();
    CHECK(d.at("kernel_math").at("tf32").at("kernels") == 1);
    CHECK(d.at("kernel_math").at("tf32").at("native_on_target") == !t4);
    CHECK(d.at("kernel_math").at("tf32").at("target_peak_tflops").get<double>() == Approx(t4 ? 8.1 : 494.7));
    const std::string s = w->summary();
    INFO(s);
    CHECK(s.find(t4 ? "arithmetic their names say: tf32 1 (T4: 8.1 TFLOP/s, its fp32 peak, no faster tf32 arithmetic)."
                    : "arithmetic their names say: tf32 1 (H100-SXM5-80GB: 494.7 TFLOP/s).") != std::string::npos);
  }
  {  // An fp16 GEMM kernel in a trace without types: fp16 peaks (A100 312, T4 65 TFLOP/s).
    Fixture f("NVIDIA A100-PCIE-40GB");
    f.traces.ranks[0].attrs[0].input_dims.clear();
    rename_bmm_kernel(f, "ampere_h16816gemm_256x128_ldg8_stages_32x3_nn");
    auto w = parsed({"--device", "T4"});
    Logger log(LogLevel::kQuiet);
    w->apply(f.built, f.traces, log);
    CHECK(f.dfg.nodes().raw()[0].duration == Approx(o + (measured - o) * std::sqrt(1555.0 / 320 * 312.0 / 65)).margin(2));
    CHECK(w->details().at("kernel_math").at("fp16").at("native_on_target") == true);
  }
  // With shapes the learned model prices it, with the TF32 peak in its features on A100 and fp32's on
  // T4: a larger slow-down than the same op run as an fp32 GEMM on both.
  if (!costmodel::LearnedModel::available()) return;
  Nanos on_t4[2] = {};
  for (int i = 0; i < 2; ++i) {
    Fixture f("NVIDIA A100-PCIE-40GB");
    if (i == 1) rename_bmm_kernel(f, tf32);
    auto w = parsed({"--device", "T4"});
    Logger log(LogLevel::kQuiet);
    w->apply(f.built, f.traces, log);
    CHECK(w->details().at("models").at("learned").at("ops") == 1);
    CHECK(w->details().at("kernel_math").size() == static_cast<std::size_t>(i));
    on_t4[i] = f.dfg.nodes().raw()[0].duration;
  }
  INFO("bmm 2 ms on A100 -> T4: as fp32 " << on_t4[0] << " ns, as tf32 " << on_t4[1] << " ns");
  CHECK(on_t4[1] > 2 * on_t4[0]);
}

TEST_CASE("device what-if: a dpro-profile capture under emit_nvtx gives the learned model its ops") {
  // A dpro-profile capture of a bf16 job on an H100 that ran inside
  // torch.autograd.profiler.emit_nvtx(record_shapes=True): each operator is an NVTX range whose
  // name carries its shapes (no types). One kernel ran outside any operator range.
  using namespace dpro::native;
  constexpr std::uint64_t t0 = kCaptureT0;
  test::TempDir dir("whatif_nvtx");
  test::NativeTraceBuilder b(test::header_for(0, "h", 1));
  add_h100(b);
  const std::string add_kernel =
      "void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::BFloat16>, "
      "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)";
  for (std::uint32_t step = 0; step < 2; ++step) {
    const std::uint64_t t = t0 + step * 10'000'000ull;
    const std::uint32_t c = step * 10;
    b.add(MarkerRecord{kMarkerStart, t, c + 1, 10, 11, "ProfilerStep#" + std::to_string(step), ""});
    add_launch(b, t + 2'000, t + 7'000, c + 1, t + 10'000, t + 1'010'000,
               kSm90Gemm, {132, 1, 1}, {256, 1, 1}, kBmmRange, c + 2);
    add_launch(b, t + 21'000, t + 26'000, c + 2, t + 1'020'000, t + 1'220'000, add_kernel, {65536, 1, 1},
               {128, 1, 1}, "aten::add, seq = 5, op_id = 31, sizes = [[64, 1024, 1024], [64, 1024, 1024], []]", c + 3);
    add_launch(b, t + 30'000, t + 35'000, c + 3, t + 1'230'000, t + 1'330'000, "my_custom_kernel", {1, 1, 1},
               {32, 1, 1});
    b.add(ApiRecord{ApiKind::kRuntime, 131, t + 40'000, t + 1'340'000, 10, 11, c + 4, "cudaDeviceSynchronize_v3020"});
    b.add(MarkerRecord{kMarkerEnd, t + 1'400'000, c + 1, 10, 11, "", ""});
  }
  b.write(dir.file("rank0.dpro"));

  Logger log(LogLevel::kQuiet);
  trace::TraceSet traces = trace::load_traces({dir.file("rank0.dpro")}, trace::LoadOptions{}, log);
  graph::BuiltGraph built = graph::build_graph(traces, graph::BuildOptions{}, log);
  std::vector<costmodel::OpDesc> ops;
  for (graph::NodeId id : built.dfg.node_ids())
    if (built.dfg.node(id).kind == graph::NodeKind::kKernel) ops.push_back(kernel_desc(built.dfg, id));
  REQUIRE(ops.size() == 6);
  CHECK(ops[0].family == costmodel::OpFamily::kBmm);
  CHECK(ops[0].dims == std::vector<std::int64_t>{64, 512, 512, 512});
  CHECK(ops[0].dtype == costmodel::DType::kBFloat16);  // the GEMM kernel's name
  CHECK(ops[1].family == costmodel::OpFamily::kAdd);
  CHECK(ops[1].dims == std::vector<std::int64_t>{65536, 1024});
  CHECK(ops[1].dtype == costmodel::DType::kBFloat16);  // the kernel's template argument
  CHECK_FALSE(ops[2].describable());

  auto w = parsed({"--device", "A100-SXM4-80GB"});
  w->apply(built, traces, log);
  const nlohmann::json d = w->details();
  CHECK(d.at("undescribable_kernels") == 2);
  CHECK(d.at("undescribable_without_cpu_op") == 2);
  if (costmodel::LearnedModel::available()) CHECK(d.at("models").at("learned").at("ops") == 4);
  const std::string s = w->summary();
  CHECK(s.find("2 kernels had no CPU op launched in the trace") != std::string::npos);
  CHECK(s.find("emit_nvtx(record_shapes=True)") != std::string::npos);
  // The same kernels in a torch.profiler trace: counted, without advice about dpro-profile.
  traces.ranks[0].format = "kineto";
  auto k = parsed({"--device", "A100-SXM4-80GB"});
  k->apply(built, traces, log);
  CHECK(k->details().at("undescribable_without_cpu_op") == 2);
  CHECK(k->summary().find("2 kernels had no CPU op launched in the trace, so nothing gives their op and shapes.") !=
        std::string::npos);
  CHECK(k->summary().find("emit_nvtx") == std::string::npos);
}

TEST_CASE("device what-if: steps without operator ranges are described by a like step's") {
  // A capture in which step 0 alone ran inside emit_nvtx: steps 1 and 2 launch the same kernels
  // in the same order and borrow its operators; step 3 launches one more kernel and does not.
  using namespace dpro::native;
  constexpr std::uint64_t t0 = kCaptureT0;
  test::TempDir dir("like_step");
  test::NativeTraceBuilder b(test::header_for(0, "h", 1));
  add_h100(b);
  for (std::uint32_t step = 0; step < 4; ++step) {
    const std::uint64_t t = t0 + step * 10'000'000ull;
    const std::uint32_t c = step * 10;
    add_like_step(b, step, t, {t + 10'000, t + 1'010'000, t + 30'000, t + 35'000, t + 1'030'000, t + 1'130'000});
    if (step == 3)
      add_launch(b, t + 36'000, t + 38'000, c + 3, t + 1'140'000, t + 1'150'000, "another_kernel", {1, 1, 1},
                 {32, 1, 1});
    b.add(ApiRecord{ApiKind::kRuntime, 131, t + 40'000, t + 1'340'000, 10, 11, c + 4, "cudaDeviceSynchronize_v3020"});
    b.add(MarkerRecord{kMarkerEnd, t + 1'400'000, c + 1, 10, 11, "", ""});
  }
  b.write(dir.file("rank0.dpro"));

  Logger log(LogLevel::kQuiet);
  const trace::TraceSet traces = trace::load_traces({dir.file("rank0.dpro")}, trace::LoadOptions{}, log);
  graph::BuiltGraph built = graph::build_graph(traces, graph::BuildOptions{}, log);
  const costmodel::LikeStepLaunchers lent = costmodel::launchers_from_like_steps(traces, built.dfg);
  CHECK(lent.kernels == 2);  // the GEMMs of steps 1 and 2 (the lender's custom kernel has no op)
  CHECK(lent.lenders == std::vector<std::string>{"ProfilerStep#0"});
  std::vector<costmodel::OpFamily> families;  // GEMMs in step order, described by what each got
  for (const graph::NodeId id : built.dfg.node_ids()) {
    const graph::Node& n = built.dfg.node(id);
    if (n.kind != graph::NodeKind::kKernel || traces.name(traces.ranks[0].events[n.event.value]) != kSm90Gemm) continue;
    const bool own = n.parent_op.valid();
    const costmodel::OpDesc op = kernel_desc(built.dfg, id, own ? graph::kNoOp : lent.launch[id]);
    families.push_back(op.family);
    if (op.family == costmodel::OpFamily::kBmm) CHECK(op.dims == std::vector<std::int64_t>{64, 512, 512, 512});
    CHECK(kernel_desc(built.dfg, id).family == (own ? costmodel::OpFamily::kBmm : costmodel::OpFamily::kUnknown));
  }
  using costmodel::OpFamily;
  CHECK(families == std::vector<OpFamily>{OpFamily::kBmm, OpFamily::kBmm, OpFamily::kBmm, OpFamily::kUnknown});

  auto w = parsed({"--device", "A100-SXM4-80GB"});
  w->apply(built, traces, log);
  const nlohmann::json d = w->details();
  CHECK(d.at("like_step").at("kernels") == 2);
  CHECK(d.at("like_step").at("lenders") == nlohmann::json::array({"ProfilerStep#0"}));
  CHECK(d.at("undescribable_without_cpu_op") == 6);  // 4 custom kernels, step 3's GEMM and extra kernel
  if (costmodel::LearnedModel::available()) {
    CHECK(d.at("models").at("learned").at("ops") == 3);
    CHECK(d.at("like_step").at("learned") == 2);
    CHECK(w->summary().find("2 kernels launched by no recorded CPU op were described by the operators of a like "
                            "step (ProfilerStep#0: the same kernels in the same order; under emit_nvtx its own host "
                            "time is not the job's, read another step), 2 of them priced by this model") !=
          std::string::npos);
  }
}

TEST_CASE("like steps: a job that does not wait for its GPU lends by the step that launched a kernel") {
  // Three steps, no synchronisation: each step's two kernels run while the host is already in
  // the next step (and the last ones after the host finished). Step 0 ran inside emit_nvtx.
  using namespace dpro::native;
  constexpr std::uint64_t t0 = kCaptureT0;
  test::TempDir dir("like_step_async");
  test::NativeTraceBuilder b(test::header_for(0, "h", 1));
  add_h100(b);
  for (std::uint32_t step = 0; step < 3; ++step) {
    const std::uint64_t t = t0 + step * 100'000ull;  // 100 us of host per step
    // The GPU runs 150 us per step: step k's kernels start 50k us after the host left it.
    const std::uint64_t g = t0 + 120'000ull + step * 150'000ull;
    add_like_step(b, step, t, {g, g + 100'000, t + 9'000, t + 12'000, g + 100'000, g + 150'000});
    b.add(MarkerRecord{kMarkerEnd, t + 90'000, step * 10 + 1, 10, 11, "", ""});
  }
  b.write(dir.file("rank0.dpro"));
  Logger log(LogLevel::kQuiet);
  const trace::TraceSet traces = trace::load_traces({dir.file("rank0.dpro")}, trace::LoadOptions{}, log);
  const graph::BuiltGraph built = graph::build_graph(traces, graph::BuildOptions{}, log);
  std::size_t kernels = 0;
  for (const auto& n : built.dfg.nodes()) kernels += n.kind == graph::NodeKind::kKernel;
  REQUIRE(kernels == 6);
  const costmodel::LikeStepLaunchers lent = costmodel::launchers_from_like_steps(traces, built.dfg);
  CHECK(lent.kernels == 2);  // steps 1 and 2's GEMMs
  CHECK(lent.lenders == std::vector<std::string>{"ProfilerStep#0"});
}

TEST_CASE("device what-if: an H100 capture with one emit_nvtx step prices every step's ops", "[h100]") {
  // traces/h100/gpt2-emit-nvtx-step: GPT-2 training steps 10..15 recorded by dpro-profile on an
  // H100, step 12 alone inside emit_nvtx (traces/SOURCES.md).
  Logger log(LogLevel::kQuiet);
  const trace::TraceSet traces =
      trace::load_traces({test::source_path("traces/h100/gpt2-emit-nvtx-step")}, trace::LoadOptions{}, log);
  REQUIRE(traces.ranks.size() == 1);
  REQUIRE(traces.ranks[0].iterations.size() == 6);
  graph::BuiltGraph built = graph::build_graph(traces, graph::BuildOptions{}, log);
  auto w = parsed({"--device", "A100-SXM4-80GB"});
  w->apply(built, traces, log);
  const nlohmann::json d = w->details();
  INFO(w->summary());
  CHECK(d.at("like_step").at("lenders") == nlohmann::json::array({"ProfilerStep#12"}));
  // Each of the five other steps launched the kernels of step 12, and borrowed its operators.
  const std::size_t lent = d.at("like_step").at("kernels");
  std::size_t kernels = 0, launched = 0;
  for (const auto& n : built.dfg.nodes())
    if (n.kind == graph::NodeKind::kKernel) {
      ++kernels;
      launched += n.parent_op.valid();
    }
  CHECK(lent == 5 * launched);
  CHECK(d.at("undescribable_without_cpu_op") == kernels - 6 * launched);
  CHECK(kernels - 6 * launched < kernels / 6);  // a few kernels in no operator range
  if (costmodel::LearnedModel::available()) {
    const std::size_t learned = d.at("models").at("learned").at("ops");
    const std::size_t learned_lent = d.at("like_step").at("learned");
    CHECK(learned_lent == 5 * (learned - learned_lent));
    CHECK(d.at("models").at("learned").at("share_of_measured").get<double>() > 0.6);
  }
}

TEST_CASE("kernel types: every GPU op of an emit_nvtx-step capture is typed, like steps as the nvtx step", "[h100]") {
  // traces/h100/gpt2-emit-nvtx-step: step 12 alone inside emit_nvtx; the five others borrow its
  // operators (launchers_from_like_steps), so each step's kernels get the same types.
  Logger log(LogLevel::kQuiet);
  const trace::TraceSet traces =
      trace::load_traces({test::source_path("traces/h100/gpt2-emit-nvtx-step")}, trace::LoadOptions{}, log);
  const graph::BuiltGraph built = graph::build_graph(traces, graph::BuildOptions{}, log);
  const auto types = costmodel::kernel_types(traces, built.dfg);
  std::map<costmodel::KernelType, std::size_t> count;
  std::map<std::string, std::set<costmodel::KernelType>> by_name;  // kernel name -> types given
  std::size_t gpu_ops = 0;
  for (const graph::NodeId id : built.dfg.node_ids()) {
    const graph::Node& n = built.dfg.node(id);
    if (!n.track.valid() || graph::is_cpu_op(n.kind) || !graph::is_op(n.kind)) {
      CHECK_FALSE(types[id].has_value());
      continue;
    }
    ++gpu_ops;
    REQUIRE(types[id].has_value());
    ++count[*types[id]];
    if (n.kind == graph::NodeKind::kKernel) by_name[std::string(traces.strings.view(n.name))].insert(*types[id]);
    if (n.kind == graph::NodeKind::kMemcpy || n.kind == graph::NodeKind::kMemset) CHECK(*types[id] == costmodel::KernelType::kCopy);
  }
  using costmodel::KernelType;
  // GPT-2 training: GEMMs, elementwise, norms, the loss's softmax, no convolution; the layer
  // norms of all six steps typed alike (those of the five steps outside emit_nvtx by the lent
  // launchers), and cuBLAS's GEMM kernels gemm in every step.
  CHECK(count[KernelType::kGemm] > 0);
  CHECK(count[KernelType::kElementwise] > count[KernelType::kGemm]);
  CHECK(count[KernelType::kNorm] % 6 == 0);
  CHECK(count[KernelType::kSoftmax] == 12);  // the loss's log-softmax, forward and backward
  CHECK(count[KernelType::kConv] == 0);
  CHECK(count[KernelType::kOther] < gpu_ops / 20);  // embedding backward, sort, loss: a few
  for (const auto& [name, given] : by_name)
    if (name.find("nvjet") != std::string::npos) CHECK(given == std::set<KernelType>{KernelType::kGemm});
}

TEST_CASE("device what-if: H100 captures predict the kernel time an H200 measured", "[h100]") {
  // Four jobs, steps 10..15, recorded on an H100 and on an H200 (traces/SOURCES.md). The H200 has
  // the H100's chip and 1.43x its memory bandwidth. Kernel choices differ a little between the
  // two (cuBLAS tiles), so the check is on the summed kernel time of the six steps.
  Logger log(LogLevel::kQuiet);
  auto kernel_time = [&](const std::string& dir, const char* device) {
    const trace::TraceSet traces = trace::load_traces({test::source_path(dir)}, trace::LoadOptions{}, log);
    graph::BuiltGraph built = graph::build_graph(traces, graph::BuildOptions{}, log);
    if (device) parsed({"--device", device})->apply(built, traces, log);
    Nanos measured = 0, replayed = 0;
    std::size_t slower = 0;
    for (const auto& n : built.dfg.nodes())
      if (n.kind == graph::NodeKind::kKernel) {
        measured += n.measured_duration;
        replayed += n.duration;
        slower += n.duration > n.measured_duration + 1;
      }
    return std::tuple(measured, replayed, slower);
  };
  // Measured (docs/gpu-validation.md, "Another GPU", by paired kernels): +1.0, -5.5, +1.6 and +1.2 %
  // with the same-chip rule (cm::same_chip_factor); -2.9, -11.4, -4.7 and +1.9 % before it; unchanged
  // times would be +16.0, +9.0, +17.2 and +12.4 % off.
  const std::pair<const char*, double> jobs[] = {
      {"gpt2", 0.03}, {"resnet50-bf16", 0.07}, {"resnet50", 0.06}, {"bert-ddp", 0.03}};
  double error_sum = 0, unchanged_sum = 0;
  for (const auto& [job, bound] : jobs) {
    const auto [on_h100, predicted, slower] =
        kernel_time(std::string("traces/h100/") + job + "-emit-nvtx-step", "H200-SXM-141GB");
    const Nanos on_h200 = std::get<0>(kernel_time(std::string("traces/h200/") + job + "-emit-nvtx-step", nullptr));
    const double error = static_cast<double>(predicted) / static_cast<double>(on_h200) - 1.0;
    const double unchanged = static_cast<double>(on_h100) / static_cast<double>(on_h200) - 1.0;
    INFO(job << ": H100 " << on_h100 << " ns, predicted H200 " << predicted << " ns, measured " << on_h200 << " ns");
    CHECK(std::abs(error) < bound);
    CHECK(slower == 0);  // more bandwidth, the same chip: no kernel predicted slower
    error_sum += std::abs(error);
    unchanged_sum += std::abs(unchanged);
  }
  // Far better than keeping the H100's times on the whole.
  CHECK(error_sum < unchanged_sum / 4);
}

// ---- --pricer roofline-share ------------------------------------------------------------------

TEST_CASE("device what-if: --pricer roofline-share re-times described kernels by the share table's kernel-time ratio") {
  const auto catalog = costmodel::DeviceCatalog::load_directory(costmodel::default_device_dir());
  const auto table = costmodel::load_share_table(costmodel::default_shares_path());
  Fixture f("Tesla V100-PCIE-32GB");
  const costmodel::OpDesc bmm = kernel_desc(f.dfg, graph::NodeId{0});
  REQUIRE(bmm.describable());
  const auto ratio = costmodel::share_kernel_ratio(table, bmm, catalog.get("V100-PCIE-32GB"), catalog.get("H100-SXM5-80GB"));
  REQUIRE(ratio);
  CHECK(*ratio < 1.0);  // the H100 has 3.7x the V100's bandwidth and 4.7x its fp32 peak
  auto w = parsed({"--device", "H100-SXM5-80GB", "--pricer", "roofline-share"});
  Logger log(LogLevel::kQuiet);
  w->apply(f.built, f.traces, log);
  const auto& n = f.dfg.nodes().raw();
  CHECK(n[0].duration == Approx(2000000 * *ratio).margin(2));
  const std::string s = w->summary();
  INFO(s);
  CHECK(s.find("Roofline-share model (kernel-time ratio, " + costmodel::default_shares_path() + "): ") != std::string::npos);
  CHECK(s.find("Learned compact-AST model") == std::string::npos);
  const nlohmann::json d = w->details();
  CHECK(d.at("pricer") == "roofline-share");
  CHECK(d.at("models").at("roofline_share").at("ops") == 1);
  CHECK(d.at("models").at("learned").at("ops") == 0);
  CHECK(d.at("models").at("scaling").at("ops") == 2);  // the undescribed kernel and the DtoD copy
  CHECK_FALSE(d.contains("learned_pricing"));          // the learned model was not asked
  CHECK(d.at("measurement_overhead_us").empty());

  // The default pricer's JSON has no roofline-share entry (its outputs are as before the option).
  Fixture g("Tesla V100-PCIE-32GB");
  auto learned = parsed({"--device", "H100-SXM5-80GB"});
  learned->apply(g.built, g.traces, log);
  CHECK_FALSE(learned->details().at("models").contains("roofline_share"));
  CHECK_FALSE(learned->details().contains("pricer"));
}

TEST_CASE("device what-if: the --pricer value is checked and needs --device") {
  Logger log(LogLevel::kQuiet);
  {
    Fixture f("Tesla V100-PCIE-32GB");
    auto w = parsed({"--device", "H100-SXM5-80GB", "--pricer", "roofline"});
    CHECK_THROWS_WITH(w->apply(f.built, f.traces, log),
                      Catch::Contains("--pricer roofline") && Catch::Contains("learned or roofline-share"));
  }
  {
    Fixture f("Tesla V100-PCIE-32GB");
    auto w = parsed({"--pricer", "roofline-share"});  // nothing to price without --device: said, not ignored
    CHECK_THROWS_WITH(w->enabled(), Catch::Contains("--pricer roofline-share") && Catch::Contains("give --device"));
  }
  {
    Fixture f("Tesla V100-PCIE-32GB");
    auto w = parsed({"--pricer", "roofline-share", "--device-samples", "/nonexistent/x.csv", "--device", "H100-SXM5-80GB"});
    CHECK_THROWS_WITH(w->apply(f.built, f.traces, log), Catch::Contains("/nonexistent/x.csv"));
  }
  {
    Fixture f("Tesla V100-PCIE-32GB");
    auto w = parsed({"--device", "H100-SXM5-80GB", "--pricer", "roofline-share", "--shares", "/nonexistent/shares.json"});
    CHECK_THROWS_WITH(w->apply(f.built, f.traces, log), Catch::Contains("/nonexistent/shares.json"));
  }
}

// The shipped share table, a V100 origin and an H100 target, and the V100 fixture's bmm: what the
// roofline-share sample tests start from.
struct SharePair {
  costmodel::DeviceCatalog catalog = costmodel::DeviceCatalog::load_directory(costmodel::default_device_dir());
  costmodel::ShareTable table = costmodel::load_share_table(costmodel::default_shares_path());
  const costmodel::DeviceSpec& v100 = catalog.get("V100-PCIE-32GB");
  const costmodel::DeviceSpec& h100 = catalog.get("H100-SXM5-80GB");
  Fixture probe{"Tesla V100-PCIE-32GB"};
  costmodel::OpDesc bmm = kernel_desc(probe.dfg, graph::NodeId{0});
};

TEST_CASE("device what-if: --pricer roofline-share --device-samples fits the target's side of the ratio") {
  const SharePair pair;
  const auto& [catalog, table, v100, h100, probe, bmm] = pair;
  REQUIRE(bmm.describable());
  const auto prior_ratio = costmodel::share_kernel_ratio(table, bmm, v100, h100);
  REQUIRE(prior_ratio);
  const double prior_latency = *table.latency_ms(bmm, h100), prior_kernel = *table.kernel_ms(bmm, h100);
  // The fixture's bmm measured on the H100 at `factor` x the prior's latency (three rows: the
  // GEMM group's fewest for a multiplier of its own).
  const std::string samples = test::binary_path("h100_share_samples.csv");
  auto run = [&](double factor) {
    {
      std::ofstream out(samples);
      out << "OPName,Latency,Device,B,M,N,K\n";
      for (int i = 0; i < 3; ++i) out << "bmm," << factor * prior_latency << ",H100-SXM5-80GB,64,512,512,512\n";
    }
    Fixture f("Tesla V100-PCIE-32GB");
    auto w = parsed({"--device", "H100-SXM5-80GB", "--pricer", "roofline-share", "--device-samples", samples});
    Logger log(LogLevel::kQuiet);
    w->apply(f.built, f.traces, log);
    return std::make_tuple(f.dfg.nodes().raw()[0].duration, f.dfg.nodes().raw()[1].duration, w->summary(), w->details());
  };
  const auto [slow_bmm, slow_odd, slow_summary, slow_details] = run(2.0);
  const auto [fast_bmm, fast_odd, fast_summary, fast_details] = run(0.5);
  Fixture plain("Tesla V100-PCIE-32GB");
  auto w0 = parsed({"--device", "H100-SXM5-80GB", "--pricer", "roofline-share"});
  Logger log(LogLevel::kQuiet);
  w0->apply(plain.built, plain.traces, log);
  const Nanos prior_bmm = plain.dfg.nodes().raw()[0].duration;
  CHECK(prior_bmm == Approx(2000000 * *prior_ratio).margin(2));
  INFO("bmm re-timed: prior " << prior_bmm << " ns, H100 measured 2x slower " << slow_bmm << " ns, 2x faster "
                              << fast_bmm << " ns; H100 prior kernel " << prior_kernel << " ms");
  // Measured slower on the target than the prior says: re-timed slower, and by about as much
  // (the host overhead the latency carries is not the kernel's: more than 2x the kernel).
  CHECK(slow_bmm > 1.8 * prior_bmm);
  CHECK(fast_bmm < 0.6 * prior_bmm);
  // The target's side is the fitted table's, the origin's the prior's (no --origin-samples).
  {
    std::vector<costmodel::Measurement> rows(3);
    std::vector<const costmodel::Measurement*> fit_on;
    for (auto& m : rows) {
      m.op = bmm;
      m.device = &h100;
      m.latency_ms = 2.0 * prior_latency;
      fit_on.push_back(&m);
    }
    const costmodel::ShareTable fitted =
        costmodel::with_device_scalars(table, costmodel::fit_device_scalars(table, fit_on, h100));
    const auto ratio = costmodel::share_kernel_ratio(table, fitted, bmm, v100, h100);
    REQUIRE(ratio);
    CHECK(slow_bmm == Approx(2000000 * *ratio).margin(2));
    CHECK(*costmodel::share_kernel_ratio(table, fitted, bmm, h100, h100) == 1.0);  // measured on the target
  }
  // Undescribed kernels keep their rule.
  CHECK(slow_odd == plain.dfg.nodes().raw()[1].duration);
  CHECK(fast_odd == plain.dfg.nodes().raw()[1].duration);
  INFO(slow_summary);
  CHECK(slow_summary.find("share scalars fitted on 3 ops measured on H100-SXM5-80GB") != std::string::npos);
  CHECK(w0->summary().find("share scalars") == std::string::npos);
  CHECK(slow_details.at("samples_used") == 3);
  CHECK_FALSE(slow_details.at("share_fit").empty());
  CHECK_FALSE(w0->details().contains("share_fit"));
  CHECK_FALSE(slow_details.contains("learned_pricing"));  // the learned model was not asked
  // Rows of another GPU: refused, naming the file and the row.
  std::ofstream(samples) << "OPName,Latency,Device,B,M,N,K\nbmm,1.0,Tesla V100-PCIE-32GB,64,512,512,512\n";
  Fixture other("Tesla V100-PCIE-32GB");
  auto w2 = parsed({"--device", "H100-SXM5-80GB", "--pricer", "roofline-share", "--device-samples", samples});
  CHECK_THROWS_WITH(w2->apply(other.built, other.traces, log),
                    Catch::Contains(samples + ": row 2") && Catch::Contains("not on H100-SXM5-80GB"));
}

TEST_CASE("device what-if: --origin-samples fits the origin's side of the roofline-share ratio") {
  const SharePair pair;
  const auto& [catalog, table, v100, h100, probe, bmm] = pair;
  REQUIRE(bmm.describable());
  // `factor` x the prior's latency of the fixture's bmm on `gpu`, three rows, to `path`; the fitted table.
  auto write = [&](const std::string& path, const costmodel::DeviceSpec& gpu, double factor) {
    std::ofstream out(path);
    out << "OPName,Latency,Device,B,M,N,K\n";
    std::vector<costmodel::Measurement> rows(3);
    std::vector<const costmodel::Measurement*> on;
    for (auto& m : rows) {
      m.op = bmm, m.device = &gpu, m.latency_ms = factor * *table.latency_ms(bmm, gpu);
      out << "bmm," << m.latency_ms << "," << gpu.name << ",64,512,512,512\n";
      on.push_back(&m);
    }
    return costmodel::with_device_scalars(table, costmodel::fit_device_scalars(table, on, gpu));
  };
  const std::string target_samples = test::binary_path("h100_share_samples_both.csv");
  const std::string origin_samples = test::binary_path("v100_share_samples_origin.csv");
  const costmodel::ShareTable target_table = write(target_samples, h100, 1.0);
  auto run = [&](std::vector<std::string> extra) {
    Fixture f("Tesla V100-PCIE-32GB");
    std::vector<std::string> args = {"--device", "H100-SXM5-80GB", "--pricer", "roofline-share", "--device-samples",
                                     target_samples};
    args.insert(args.end(), extra.begin(), extra.end());
    auto w = parsed(args);
    Logger log(LogLevel::kQuiet);
    w->apply(f.built, f.traces, log);
    return std::make_tuple(f.dfg.nodes().raw()[0].duration, w->summary(), w->details());
  };
  const auto [target_only, target_only_summary, target_only_details] = run({});
  CHECK(target_only == Approx(2000000 * *costmodel::share_kernel_ratio(table, target_table, bmm, v100, h100)).margin(2));
  CHECK_FALSE(target_only_details.contains("origin_share_fit"));
  for (const double factor : {2.0, 0.5}) {
    const costmodel::ShareTable origin_table = write(origin_samples, v100, factor);
    const auto [both, summary, details] = run({"--origin-samples", origin_samples});
    INFO("origin measured at " << factor << "x the prior: " << both << " ns, target side only " << target_only
                               << " ns; " << summary);
    // The origin's side is its fitted table's: measured slower there than the prior says, the
    // same kernel time is a faster GPU's share of it, so the target's time is less.
    CHECK(both == Approx(2000000 * *costmodel::share_kernel_ratio(origin_table, target_table, bmm, v100, h100)).margin(2));
    if (factor > 1) CHECK(both < 0.6 * target_only);
    else CHECK(both > 1.6 * target_only);
    CHECK(details.at("origin_share_fit").at("V100-PCIE-32GB").at("samples") == 3);
    CHECK_FALSE(details.at("origin_share_fit").at("V100-PCIE-32GB").at("share_fit").empty());
    CHECK(summary.find("the origin's side (V100-PCIE-32GB) by those fitted on 3 ops measured on it") != std::string::npos);
  }
  // Rows of a GPU the trace did not run on fit nothing: beside the origin's rows they are left
  // unused and said so; alone they are an error naming the file and both GPUs.
  {
    const std::string mixed = test::binary_path("mixed_share_samples_origin.csv");
    write(mixed, v100, 2.0);
    std::ofstream(mixed, std::ios::app) << "bmm,1.0,NVIDIA A10,64,512,512,512\n";
    const auto [mixed_time, mixed_summary, mixed_details] = run({"--origin-samples", mixed});
    const costmodel::ShareTable origin_table = write(origin_samples, v100, 2.0);
    CHECK(mixed_time == Approx(2000000 * *costmodel::share_kernel_ratio(origin_table, target_table, bmm, v100, h100)).margin(2));
    CHECK(mixed_details.at("origin_samples_unused").at("A10") == 1);
    CHECK_FALSE(mixed_details.at("origin_share_fit").contains("A10"));
    CHECK(mixed_summary.find("1 row of --origin-samples measured on A10 left unused") != std::string::npos);
    const std::string others = test::binary_path("other_share_samples_origin.csv");
    std::ofstream(others) << "OPName,Latency,Device,B,M,N,K\nbmm,1.0,NVIDIA A10,64,512,512,512\n";
    Fixture f("Tesla V100-PCIE-32GB");
    auto w = parsed({"--device", "H100-SXM5-80GB", "--pricer", "roofline-share", "--origin-samples", others});
    Logger log(LogLevel::kQuiet);
    CHECK_THROWS_WITH(w->apply(f.built, f.traces, log), Catch::Contains(others) && Catch::Contains("measured on A10") &&
                                                            Catch::Contains("ran on V100-PCIE-32GB"));
  }
  // Only with the roofline-share pricer.
  Fixture f("Tesla V100-PCIE-32GB");
  auto w = parsed({"--device", "H100-SXM5-80GB", "--origin-samples", origin_samples});
  Logger log(LogLevel::kQuiet);
  CHECK_THROWS_WITH(w->apply(f.built, f.traces, log), Catch::Contains("roofline-share"));
}

TEST_CASE("roofline-share pricer: faster with more bandwidth (memory-bound) or peak (compute-bound) and identity on the same GPU") {
  const auto catalog = costmodel::DeviceCatalog::load_directory(costmodel::default_device_dir());
  const auto table = costmodel::load_share_table(costmodel::default_shares_path());
  const costmodel::DeviceSpec& v100 = catalog.get("V100-PCIE-32GB");
  costmodel::DeviceSpec more_bandwidth = v100, more_peak = v100;
  more_bandwidth.name = "V100-2X-BANDWIDTH";
  more_bandwidth.memory_bandwidth_gbs *= 2;
  more_peak.name = "V100-2X-PEAK";
  for (auto& [dtype, tflops] : more_peak.peak_tflops) tflops *= 2;
  costmodel::OpDesc add;  // 2^28 fp32 elements: three 1 GiB streams, deeply memory-bound
  add.family = costmodel::OpFamily::kAdd;
  add.dims = {16384, 16384};
  costmodel::OpDesc bmm;  // 8 x 2048^3 fp32: 341 FLOP per byte, compute-bound on both
  bmm.family = costmodel::OpFamily::kBmm;
  bmm.dims = {8, 2048, 2048, 2048};
  REQUIRE(add.describable());
  REQUIRE(bmm.describable());
  auto price = [&](const costmodel::DeviceSpec& target, const costmodel::OpDesc& op, double ms) {
    costmodel::Pricer pricer(target, table);
    return pricer.price({{op, &v100, ms, true}}).at(0);
  };
  for (const auto* op : {&add, &bmm}) {
    const costmodel::Price same = price(v100, *op, 3.0);
    CHECK(same.by == costmodel::PricedBy::kRooflineShare);
    CHECK(same.ms == 3.0);
  }
  const costmodel::Price add_bw = price(more_bandwidth, add, 3.0), add_peak = price(more_peak, add, 3.0);
  INFO("add: 2x bandwidth " << add_bw.ms << " ms, 2x peak " << add_peak.ms << " ms (from 3 ms)");
  CHECK(add_bw.by == costmodel::PricedBy::kRooflineShare);
  CHECK(add_bw.ms < 3.0 * 0.75);
  CHECK(add_peak.ms == Approx(3.0));  // its bound is bandwidth alone
  const costmodel::Price bmm_peak = price(more_peak, bmm, 30.0), bmm_bw = price(more_bandwidth, bmm, 30.0);
  INFO("bmm: 2x peak " << bmm_peak.ms << " ms, 2x bandwidth " << bmm_bw.ms << " ms (from 30 ms)");
  CHECK(bmm_peak.ms < 30.0 * 0.75);
  CHECK(bmm_bw.ms > bmm_peak.ms);
  // A copy (kernel == false) is not the share table's: scaled as before.
  costmodel::Pricer pricer(more_bandwidth, table);
  CHECK(pricer.price({{costmodel::OpDesc{}, &v100, 1.0, false}}).at(0).by == costmodel::PricedBy::kScaling);
}
