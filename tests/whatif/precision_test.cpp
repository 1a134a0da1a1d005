// Precision lowering on the same GPU (whatif::precision): bf16 autocast from fp32 captures.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "core/error.h"
#include "costmodel/op_desc.h"
#include "costmodel/paths.h"
#include "replayer/replay.h"
#include "whatif/evaluate.h"
#include "workload_fixtures.h"

using namespace dpro;
using test::load_workload;

namespace {

whatif::Precision autocast(const std::string& dtype = "bf16") {
  whatif::Precision p;
  p.dtype = dtype;
  p.device_dir = costmodel::default_device_dir();
  return p;
}

Nanos median(std::vector<Nanos> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Step {
  Nanos measured = 0, predicted = 0, gpu_busy = 0;
};

// The captures' warm-up: ProfilerStep#0..9 (cuDNN's algorithm search, allocations), left out as
// traces/h100/expected.json leaves them out.
constexpr std::int64_t kFirstStep = 10;

// Median over the report's steps from kFirstStep (rank 0): measured and predicted step, predicted
// GPU busy time.
Step median_step(const replayer::Report& r) {
  std::vector<Nanos> measured, predicted, busy;
  for (const auto& it : r.iterations) {
    if (it.ranks.empty() || it.number < kFirstStep) continue;
    measured.push_back(it.ranks[0].measured_ns);
    predicted.push_back(it.ranks[0].predicted_ns);
    busy.push_back(it.ranks[0].gpu_busy.total());
  }
  return {median(measured), median(predicted), median(busy)};
}

Nanos kernel_time(const graph::Dfg& dfg) {
  Nanos t = 0;
  for (const graph::Node& n : dfg.nodes())
    if (n.kind == graph::NodeKind::kKernel) t += n.duration;
  return t;
}

// The base's GEMM/convolution kernels are never slower after the rewrite (node ids of the base
// keep their meaning: casts are appended).
void require_gemms_not_slower(const whatif::Workload& base, const whatif::Workload& lowered) {
  const graph::Dfg& b = base.graph.dfg;
  const graph::Dfg& l = lowered.graph.dfg;
  std::size_t gemms = 0;
  for (const graph::NodeId id : b.node_ids()) {
    if (b.node(id).kind != graph::NodeKind::kKernel) continue;
    if (!costmodel::is_gemm_or_conv_kernel(std::string(b.op_name(id)))) continue;
    ++gemms;
    REQUIRE(l.node(id).duration <= b.node(id).duration);
  }
  CHECK(gemms > 0);
}

}  // namespace

TEST_CASE("precision: bf16 autocast of an fp32 ResNet-50 lowers its GEMMs and convolutions and replays") {
  const whatif::Workload base = load_workload("traces/h100/resnet50");
  whatif::Workload w = base;
  const whatif::PrecisionChange c = whatif::precision(w, autocast());
  CHECK(c.device == "H100-SXM5-80GB");
  CHECK(c.lowered.at(whatif::OpClass::kConv).kernels > 0);
  CHECK(c.lowered.at(whatif::OpClass::kConv).after < c.lowered.at(whatif::OpClass::kConv).before);
  CHECK(c.lowered.at(whatif::OpClass::kElementwise).after < c.lowered.at(whatif::OpClass::kElementwise).before);
  CHECK(c.casts > 0);
  CHECK(c.gpu_after < c.gpu_before);
  CHECK(kernel_time(w.graph.dfg) < kernel_time(base.graph.dfg));
  require_gemms_not_slower(base, w);

  replayer::Simulator simulator;
  const whatif::Evaluation e = whatif::evaluate(base, {autocast()}, simulator, whatif::EvaluateOptions{});
  REQUIRE(e.changes.size() == 1);
  CHECK(std::holds_alternative<whatif::PrecisionChange>(e.changes[0]));
  const whatif::Evaluation plain = whatif::evaluate(base, {}, simulator, whatif::EvaluateOptions{});
  CHECK(median_step(e.report).predicted < median_step(plain.report).predicted);
}

TEST_CASE("precision: TF32 lowers only the fp32 SIMT GEMMs, with no casts and no elementwise change") {
  const whatif::Workload base = load_workload("traces/h100/resnet50");
  whatif::Workload w = base;
  const whatif::PrecisionChange c = whatif::precision(w, autocast("tf32"));
  CHECK(c.casts == 0);
  CHECK(!c.lowered.contains(whatif::OpClass::kElementwise));
  std::size_t lowered = 0;
  for (const auto& [cls, t] : c.lowered) {
    lowered += t.kernels;
    CHECK(t.after < t.before);
  }
  CHECK(lowered > 0);
  require_gemms_not_slower(base, w);
  // ResNet-50's convolutions already ran on TF32 tensor cores (cuDNN's default): they stay.
  for (const graph::NodeId id : base.graph.dfg.node_ids()) {
    const std::string name(base.graph.dfg.op_name(id));
    if (costmodel::kernel_math_dtype(name) == costmodel::DType::kTensorFloat32)
      REQUIRE(w.graph.dfg.node(id).duration == base.graph.dfg.node(id).duration);
  }
}

TEST_CASE("precision: GPT-2, a bf16 autocast job, is left alone at bf16 and runs its GEMMs faster at fp8") {
  const whatif::Workload base = load_workload("traces/h100/gpt2");
  whatif::Workload same = base;
  const whatif::PrecisionChange at_bf16 = whatif::precision(same, autocast());
  CHECK(at_bf16.already_at_dtype > 0);
  CHECK(at_bf16.casts == 0);
  CHECK(at_bf16.gpu_after == at_bf16.gpu_before);

  whatif::Workload w = base;
  const whatif::PrecisionChange c = whatif::precision(w, autocast("fp8"));
  require_gemms_not_slower(base, w);
  CHECK(c.lowered.at(whatif::OpClass::kGemm).kernels > 0);
  CHECK(!c.lowered.contains(whatif::OpClass::kElementwise));  // activations stay 16-bit
  CHECK(c.gpu_after < c.gpu_before);
  CHECK(kernel_time(w.graph.dfg) < kernel_time(base.graph.dfg));
  replayer::Simulator simulator;
  const whatif::Evaluation e = whatif::evaluate(base, {autocast("fp8")}, simulator, whatif::EvaluateOptions{});
  const whatif::Evaluation plain = whatif::evaluate(base, {}, simulator, whatif::EvaluateOptions{});
  CHECK(median_step(e.report).predicted <= median_step(plain.report).predicted);
}

namespace {

// One step of a Kineto trace with autograd's sequence numbers (torch.profiler records them): two
// linear layers (addmm, numbers 11 and 13) with a relu between them, then their backward ops, last
// layer first (two mm each, under AddmmBackward0 with the forward's number), and a 1 us fill
// (the latency floor that a lowering keeps).
const char* kLayersTrace = R"({"deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "numSms": 132}],
 "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 1000, "dur": 2000},
  {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 1010, "dur": 80, "args": {"Sequence number": 10}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1, "tid": 1, "ts": 1020, "dur": 60,
   "args": {"Input Dims": [[512], [64, 256], [256, 512]], "Input type": ["float", "float", "float"], "Sequence number": 11}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1030, "dur": 5, "args": {"correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_tn", "pid": 0, "tid": 7, "ts": 1040, "dur": 100, "args": {"correlation": 1, "device": 0, "stream": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 1092, "dur": 6,
   "args": {"Input Dims": [[64, 512]], "Input type": ["float"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1093, "dur": 2, "args": {"correlation": 7}},
  {"ph": "X", "cat": "kernel", "name": "relu_kernel", "pid": 0, "tid": 7, "ts": 1142, "dur": 8, "args": {"correlation": 7, "device": 0, "stream": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 1100, "dur": 80, "args": {"Sequence number": 12}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1, "tid": 1, "ts": 1110, "dur": 60,
   "args": {"Input Dims": [[512], [64, 512], [512, 512]], "Input type": ["float", "float", "float"], "Sequence number": 13}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1120, "dur": 5, "args": {"correlation": 2}},
  {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_tn", "pid": 0, "tid": 7, "ts": 1150, "dur": 100, "args": {"correlation": 2, "device": 0, "stream": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: AddmmBackward0", "pid": 1, "tid": 1, "ts": 1300, "dur": 200},
  {"ph": "X", "cat": "cpu_op", "name": "AddmmBackward0", "pid": 1, "tid": 1, "ts": 1305, "dur": 190, "args": {"Sequence number": 13}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1310, "dur": 60,
   "args": {"Input Dims": [[64, 512], [512, 512]], "Input type": ["float", "float"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1320, "dur": 5, "args": {"correlation": 3}},
  {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": 1330, "dur": 100, "args": {"correlation": 3, "device": 0, "stream": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1400, "dur": 60,
   "args": {"Input Dims": [[512, 64], [64, 512]], "Input type": ["float", "float"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1410, "dur": 5, "args": {"correlation": 4}},
  {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nt", "pid": 0, "tid": 7, "ts": 1440, "dur": 100, "args": {"correlation": 4, "device": 0, "stream": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: AddmmBackward0", "pid": 1, "tid": 1, "ts": 1600, "dur": 200},
  {"ph": "X", "cat": "cpu_op", "name": "AddmmBackward0", "pid": 1, "tid": 1, "ts": 1605, "dur": 190, "args": {"Sequence number": 11}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1610, "dur": 60,
   "args": {"Input Dims": [[64, 512], [512, 256]], "Input type": ["float", "float"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1620, "dur": 5, "args": {"correlation": 5}},
  {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": 1630, "dur": 100, "args": {"correlation": 5, "device": 0, "stream": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1700, "dur": 60,
   "args": {"Input Dims": [[256, 64], [64, 512]], "Input type": ["float", "float"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1710, "dur": 5, "args": {"correlation": 6}},
  {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nt", "pid": 0, "tid": 7, "ts": 1740, "dur": 100, "args": {"correlation": 6, "device": 0, "stream": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::fill_", "pid": 1, "tid": 1, "ts": 1845, "dur": 4, "args": {"Input Dims": [[1]], "Input type": ["float"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1846, "dur": 2, "args": {"correlation": 8}},
  {"ph": "X", "cat": "kernel", "name": "fill_kernel", "pid": 0, "tid": 7, "ts": 1850, "dur": 1, "args": {"correlation": 8, "device": 0, "stream": 7}}
]})";

// The start times (us after the trace's first event's, 1000) of the kernels a lowering changed.
std::set<Nanos> lowered_kernels(const whatif::Workload& before, const whatif::Workload& after) {
  std::set<Nanos> out;
  for (const graph::NodeId id : before.graph.dfg.node_ids()) {
    const graph::Node& n = before.graph.dfg.node(id);
    if (n.kind == graph::NodeKind::kKernel && after.graph.dfg.node(id).duration != n.duration)
      out.insert(n.measured_start / 1000 - 1000);
  }
  return out;
}

std::set<Nanos> lowered_by(const whatif::Workload& base, const std::vector<std::string>& classes) {
  whatif::Workload w = base;
  whatif::Precision p = autocast();
  p.classes = classes;
  whatif::precision(w, p);
  return lowered_kernels(base, w);
}

}  // namespace

TEST_CASE("precision: a layer part lowers a forward op and the backward ops autograd pairs with it") {
  const whatif::Workload base = test::workload_of_text("precision_layers", kLayersTrace);
  // The kernels start at 40 (layer 0's forward), 150 (layer 1's), 330 and 440 (layer 1's
  // backward), 630 and 740 (layer 0's).
  CHECK(lowered_by(base, {"gemm"}) == std::set<Nanos>{40, 150, 330, 440, 630, 740});
  CHECK(lowered_by(base, {"gemm#0"}) == std::set<Nanos>{40, 630, 740});
  CHECK(lowered_by(base, {"gemm#-1"}) == std::set<Nanos>{150, 330, 440});
  CHECK(lowered_by(base, {"gemm#^0"}) == std::set<Nanos>{150, 330, 440});
  // Op positions count the backward mm's one by one: the last op is layer 0's second mm only.
  CHECK(lowered_by(base, {"gemm@0,-1"}) == std::set<Nanos>{40, 740});
  CHECK(lowered_by(base, {"conv#0"}).empty());
  // The relu (at 142) between the layers: narrowed with the elementwise ops after a lowered layer,
  // not after a layer kept at its width.
  CHECK(lowered_by(base, {"gemm", "elementwise"}).contains(142));
  CHECK(lowered_by(base, {"gemm#^0", "elementwise"}).count(142) == 0);
  CHECK(lowered_by(base, {"gemm#^-1", "elementwise"}).contains(142));
  CHECK(whatif::kernels_without_layer(base, costmodel::default_device_dir(), "")[whatif::OpClass::kGemm] == 0);
}

TEST_CASE("precision: layers of a capture whose one step ran inside emit_nvtx, lent to its other steps") {
  // GPT-2 on an H100: one step with CPU ops (and sequence numbers), five that borrow its launchers.
  const whatif::Workload base = load_workload("traces/h100/gpt2-emit-nvtx-step");
  auto lowered = [&](const std::string& classes) {
    whatif::Workload w = base;
    whatif::Precision p = autocast("fp8");
    p.classes = {classes};
    const whatif::PrecisionChange c = whatif::precision(w, p);
    CHECK(c.without_layers == 0);
    return c.lowered.contains(whatif::OpClass::kGemm) ? c.lowered.at(whatif::OpClass::kGemm).kernels : 0;
  };
  const std::size_t steps = base.traces->ranks[0].iterations.size();
  REQUIRE(steps == 6);
  // The last layer (lm_head): its forward mm and its two backward mm's in every step.
  CHECK(lowered("gemm#-1") == 3 * steps);
  CHECK(lowered("gemm#0") == 3 * steps);  // the first attention projection (addmm), likewise
  CHECK(lowered("gemm#-1") + lowered("gemm#^-1") == lowered("gemm"));
  // Without sequence numbers (the capture outside emit_nvtx), no kernel has a layer.
  const whatif::Workload plain = load_workload("traces/h100/resnet50");
  CHECK(whatif::kernels_without_layer(plain, costmodel::default_device_dir(), "")[whatif::OpClass::kConv] > 0);
  whatif::Workload w = plain;
  whatif::Precision p = autocast();
  p.classes = {"conv#0"};
  const whatif::PrecisionChange c = whatif::precision(w, p);
  CHECK(c.without_layers > 0);
  CHECK(!c.lowered.contains(whatif::OpClass::kConv));
}

TEST_CASE("precision: in a capture without CPU ops, a split-K reduction is part of the op before it") {
  // ResNet-50 on an H100, recorded without emit_nvtx: no kernel has a launching op. The step's
  // last convolution is its first layer's weight gradient, cuDNN's ImplicitGemmConvolution with a
  // ReduceSplitK after it: conv@-1 is both, not the reduction alone.
  const whatif::Workload base = load_workload("traces/h100/resnet50");
  const graph::Dfg& g = base.graph.dfg;
  std::map<std::uint32_t, std::vector<graph::NodeId>> by_track;  // kernels per stream, in start order
  for (const graph::NodeId v : g.node_ids())
    if (g.node(v).kind == graph::NodeKind::kKernel) by_track[g.node(v).track.value].push_back(v);
  for (auto& [track, kernels] : by_track)
    std::stable_sort(kernels.begin(), kernels.end(),
                     [&](graph::NodeId a, graph::NodeId b) { return g.node(a).measured_start < g.node(b).measured_start; });
  auto lowered_pairs = [&](const std::string& classes) {
    whatif::Workload w = base;
    whatif::Precision p = autocast();
    p.classes = {classes};
    whatif::precision(w, p);
    // Reductions the lowering re-timed, and of them those whose convolution kernel it re-timed too.
    std::pair<std::size_t, std::size_t> n{0, 0};
    for (const auto& [track, kernels] : by_track)
      for (std::size_t i = 1; i < kernels.size(); ++i)
        if (g.op_name(kernels[i]).find("ReduceSplitK") != std::string_view::npos &&
            w.graph.dfg.node(kernels[i]).duration != g.node(kernels[i]).duration) {
          ++n.first;
          n.second += w.graph.dfg.node(kernels[i - 1]).duration != g.node(kernels[i - 1]).duration;
        }
    return n;
  };
  const auto [reductions, with_their_conv] = lowered_pairs("conv@-1");
  CHECK(reductions >= base.traces->ranks[0].iterations.size() - 1);
  CHECK(with_their_conv == reductions);
  // The rest of the class leaves them both alone.
  CHECK(lowered_pairs("conv@^-1").first + reductions == lowered_pairs("conv").first);
}

TEST_CASE("precision: a trace already at bf16 lowered to bf16 changes almost nothing") {
  const whatif::Workload base = load_workload("traces/h100/resnet50-bf16");
  whatif::Workload w = base;
  const whatif::PrecisionChange c = whatif::precision(w, autocast());
  CHECK(c.already_at_dtype > 0);
  // One TF32 convolution a step stays in the bf16 job: it and its casts are lowered.
  CHECK(c.casts < c.already_at_dtype / 20);
  CHECK(static_cast<double>(c.gpu_after) >= 0.99 * static_cast<double>(c.gpu_before));
}

TEST_CASE("precision: bad dtypes and classes are option errors") {
  const whatif::Workload base = load_workload("traces/h100/resnet50-emit-nvtx-step");
  whatif::Workload w = base;
  CHECK_THROWS_AS(whatif::precision(w, autocast("int4")), OptionError);
  CHECK_THROWS_AS(whatif::precision(w, autocast("fp64")), OptionError);
  whatif::Precision p = autocast();
  p.classes = {"gemm", "attention"};
  CHECK_THROWS_AS(whatif::precision(w, p), OptionError);
  // An H100 has fp8 arithmetic: accepted.
  CHECK_NOTHROW(whatif::precision(w, autocast("fp8")));
}

TEST_CASE("precision: fp8 on a GPU without it is an option error; an unknown GPU an input error") {
  whatif::Workload a100 = load_workload("traces/hta/alexnet-a100-single.json.gz");
  CHECK_THROWS_AS(whatif::precision(a100, autocast("fp8")), OptionError);

  // A catalog that knows only the A100: the H100 trace's GPU is unknown to it.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "dpro_precision_a100_only";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(test::source_path("configs/devices/A100-SXM4-80GB.json"), dir / "A100-SXM4-80GB.json",
                             std::filesystem::copy_options::overwrite_existing);
  whatif::Workload h100 = load_workload("traces/h100/resnet50-emit-nvtx-step");
  whatif::Precision p = autocast();
  p.device_dir = dir.string();
  try {
    whatif::precision(h100, p);
    FAIL("no error");
  } catch (const OptionError&) {
    FAIL("an unknown GPU is not an option error");
  } catch (const InputError&) {
  }
  std::filesystem::remove_all(dir);
}

namespace {

struct PairFigures {
  Step fp32, bf16, predicted;
};

PairFigures predict_pair(const std::string& fp32_trace, const std::string& bf16_trace) {
  replayer::Simulator simulator;
  const whatif::Workload fp32 = load_workload(fp32_trace);
  const whatif::Workload bf16 = load_workload(bf16_trace);
  const whatif::Evaluation base = whatif::evaluate(fp32, {}, simulator, whatif::EvaluateOptions{});
  const whatif::Evaluation measured = whatif::evaluate(bf16, {}, simulator, whatif::EvaluateOptions{});
  const whatif::Evaluation lowered = whatif::evaluate(fp32, {autocast()}, simulator, whatif::EvaluateOptions{});
  return {median_step(base.report), median_step(measured.report), median_step(lowered.report)};
}

}  // namespace

// The issue's must-show: from the fp32 ResNet-50 capture, bf16 autocast predicts the step of the
// bf16 job recorded on the same H100 (median step 40.37 ms) within 10 %: with the rules as
// designed, -6.9 % (37.59 ms); held here to 8 %. The step is bound by the host (its GPU busy time
// is 30.5 ms of it), and the predicted GPU busy time is 35 % short of the capture's, mostly batch
// norm (docs/precision.md): this holds the step, not the GPU time.
TEST_CASE("precision: bf16 autocast from the fp32 ResNet-50 predicts the bf16 capture's step") {
  const PairFigures f = predict_pair("traces/h100/resnet50", "traces/h100/resnet50-bf16");
  const double error = static_cast<double>(f.predicted.predicted) / static_cast<double>(f.bf16.measured) - 1;
  CHECK(std::abs(error) < 0.08);
  CHECK(f.predicted.predicted < f.fp32.measured);
  CHECK(f.predicted.gpu_busy < f.fp32.gpu_busy);
}

// The figures of docs/precision.md: run by hand (`whatif_precision_tests "[.figures]"`).
TEST_CASE("precision: figures of fp32 -> bf16 pairs", "[.figures]") {
  for (const auto& [a, b] : std::vector<std::pair<std::string, std::string>>{
           {"traces/h100/resnet50", "traces/h100/resnet50-bf16"},
           {"traces/h100/resnet50-emit-nvtx-step", "traces/h100/resnet50-bf16-emit-nvtx-step"},
           {"traces/h200/resnet50-emit-nvtx-step", "traces/h200/resnet50-bf16-emit-nvtx-step"}}) {
    const PairFigures f = predict_pair(a, b);
    std::cout << a << " -> " << b << ": fp32 step " << to_millis(f.fp32.measured) << " ms (replayed "
              << to_millis(f.fp32.predicted) << "), bf16 step " << to_millis(f.bf16.measured) << " ms (replayed "
              << to_millis(f.bf16.predicted) << "), predicted " << to_millis(f.predicted.predicted) << " ms, error "
              << 100.0 * (static_cast<double>(f.predicted.predicted) / static_cast<double>(f.bf16.measured) - 1)
              << " %; GPU busy fp32 " << to_millis(f.fp32.gpu_busy) << " ms, bf16 " << to_millis(f.bf16.gpu_busy)
              << " ms, predicted " << to_millis(f.predicted.gpu_busy) << " ms\n";
  }
}

namespace {

// Kernel families of the error attribution in docs/precision.md, by kernel name.
std::string family_of(std::string_view name) {
  const std::string n(name);
  if (n == "autocast cast" || n.find("copy_kernel") != std::string::npos) return "casts and copies";
  if (costmodel::is_gemm_or_conv_kernel(n)) return "GEMM and convolution";
  if (n.find("nchwToNhwc") != std::string::npos || n.find("nhwcToNchw") != std::string::npos ||
      n.find("NhwcToNchw") != std::string::npos || n.find("ToFoldedNhwc") != std::string::npos)
    return "layout transforms";
  if (n.find("bn_") != std::string::npos || n.find("batch_norm") != std::string::npos) return "batch norm";
  if (n.find("multi_tensor_apply") != std::string::npos) return "optimizer";
  return "other elementwise";
}

std::map<std::string, double> ms_per_step_by_family(const whatif::Workload& w) {
  std::map<std::string, double> out;
  const graph::Dfg& dfg = w.graph.dfg;
  for (const graph::NodeId id : dfg.node_ids())
    if (dfg.node(id).kind == graph::NodeKind::kKernel) out[family_of(dfg.op_name(id))] += to_millis(dfg.node(id).duration);
  const std::size_t steps = std::max<std::size_t>(1, w.traces->ranks.at(0).iterations.size());
  for (auto& [f, ms] : out) ms /= static_cast<double>(steps);
  return out;
}

}  // namespace

// Where the predicted GPU time differs from the bf16 capture's, per kernel family (ms per step,
// all kernels of the trace over its steps): run by hand (`whatif_precision_tests "[.attribution]"`).
TEST_CASE("precision: error attribution by kernel family", "[.attribution]") {
  for (const auto& [a, b] : std::vector<std::pair<std::string, std::string>>{
           {"traces/h100/resnet50", "traces/h100/resnet50-bf16"},
           {"traces/h100/resnet50-emit-nvtx-step", "traces/h100/resnet50-bf16-emit-nvtx-step"},
           {"traces/h200/resnet50-emit-nvtx-step", "traces/h200/resnet50-bf16-emit-nvtx-step"}}) {
    const whatif::Workload fp32 = load_workload(a);
    whatif::Workload lowered = fp32;
    const whatif::PrecisionChange c = whatif::precision(lowered, autocast());
    const auto before = ms_per_step_by_family(fp32), after = ms_per_step_by_family(lowered),
               measured = ms_per_step_by_family(load_workload(b));
    std::cout << a << " (casts " << c.casts << ", unsized " << c.casts_unsized << ", bandwidth " << c.cast_bandwidth_gbs
              << " GB/s" << (c.cast_bandwidth_measured ? " measured" : " datasheet") << ", floor " << c.latency_floor
              << " ns)\n";
    for (const auto& [cls, t] : c.lowered)
      std::cout << "  class " << whatif::to_string(cls) << ": " << t.kernels << " kernels (" << t.described
                << " described) " << to_millis(t.before) << " -> " << to_millis(t.after) << " ms\n";
    std::set<std::string> families;
    for (const auto* m : {&before, &after, &measured})
      for (const auto& [f, ms] : *m) families.insert(f);
    for (const std::string& f : families) {
      auto get = [&](const std::map<std::string, double>& m) { return m.contains(f) ? m.at(f) : 0.0; };
      std::cout << "  " << f << ": fp32 " << get(before) << ", predicted " << get(after) << ", bf16 measured "
                << get(measured) << " ms/step\n";
    }
  }
}

namespace {

// Every node's timing fields and every edge equal, and the same op per node.
void require_same_graph(const graph::Dfg& a, const graph::Dfg& b) {
  REQUIRE(a.node_count() == b.node_count());
  REQUIRE(a.edge_count() == b.edge_count());
  for (const graph::NodeId id : a.node_ids()) {
    const graph::Node &x = a.node(id), &y = b.node(id);
    REQUIRE(x.kind == y.kind);
    REQUIRE(x.duration == y.duration);
    REQUIRE(x.delay == y.delay);
    REQUIRE(x.release == y.release);
    REQUIRE(x.track == y.track);
    REQUIRE(a.op_name(id) == b.op_name(id));
  }
  for (const graph::EdgeId id : a.edge_ids()) {
    const graph::Edge &x = a.edge(id), &y = b.edge(id);
    REQUIRE((x.src == y.src && x.dst == y.dst && x.kind == y.kind && x.gap == y.gap && x.src_point == y.src_point &&
             x.dst_point == y.dst_point));
  }
}

void require_same_change(const whatif::PrecisionChange& a, const whatif::PrecisionChange& b) {
  CHECK(a.device == b.device);
  CHECK(a.casts == b.casts);
  CHECK(a.casts_unsized == b.casts_unsized);
  CHECK(a.cast_time == b.cast_time);
  CHECK(a.cast_bandwidth_gbs == b.cast_bandwidth_gbs);
  CHECK(a.latency_floor == b.latency_floor);
  CHECK(a.already_at_dtype == b.already_at_dtype);
  CHECK(a.kept_fp32 == b.kept_fp32);
  CHECK(a.outside_span == b.outside_span);
  CHECK(a.gpu_before == b.gpu_before);
  CHECK(a.gpu_after == b.gpu_after);
  CHECK(a.from_profile == b.from_profile);
  REQUIRE(a.lowered.size() == b.lowered.size());
  for (const auto& [cls, t] : a.lowered) {
    CHECK(t.kernels == b.lowered.at(cls).kernels);
    CHECK(t.described == b.lowered.at(cls).described);
    CHECK(t.before == b.lowered.at(cls).before);
    CHECK(t.after == b.lowered.at(cls).after);
  }
}

}  // namespace

// whatif::PrecisionCache (the optimizer's, made once per job): every lowering of a copy of the job
// with the cache equals the lowering without it, in the graph and in the change's figures, in any
// order and however often the cache is used (each lowering edits its own copy of the kernels).
TEST_CASE("precision: a cache made on the job gives every lowering of a copy the graph it makes alone") {
  const whatif::Workload base = load_workload("traces/h100/resnet50");
  whatif::Precision p = autocast();
  const auto cache = std::make_shared<const whatif::PrecisionCache>(base, p.device_dir, p.device, p.device_profile);
  std::vector<whatif::Precision> options;
  for (const char* dtype : {"tf32", "bf16", "fp16", "bf16"}) options.push_back(autocast(dtype));
  options[2].classes = {"conv", "elementwise"};
  whatif::Precision staged = autocast("bf16");
  staged.classes = {"conv"};
  staged.then.push_back({"fp8", {"gemm"}});  // a second lowering, of the first one's graph
  options.push_back(staged);
  for (const whatif::Precision& alone : options) {
    INFO(alone.dtype);
    whatif::Workload own = base, cached = base;
    const whatif::PrecisionChange want = whatif::precision(own, alone);
    whatif::Precision with = alone;
    with.cache = cache;
    REQUIRE(cache->serves(cached, with));
    const whatif::PrecisionChange got = whatif::precision(cached, with);
    require_same_change(got, want);
    require_same_graph(cached.graph.dfg, own.graph.dfg);
    CHECK(kernel_time(cached.graph.dfg) < kernel_time(base.graph.dfg));
  }
  // It serves only the options and the graph it was made for.
  whatif::Precision other = autocast();
  other.cache = cache;
  other.device = "A100-SXM4-80GB";
  CHECK(!cache->serves(base, other));
  whatif::Workload grown = base;
  grown.graph.dfg.add_node(graph::Node{});
  CHECK(!cache->serves(grown, autocast()));
  // An unknown GPU is the error the lowering gives, from the cache's constructor too.
  whatif::Precision unknown = autocast();
  unknown.device = "no-such-gpu";
  CHECK_THROWS(whatif::PrecisionCache(base, unknown.device_dir, unknown.device, ""));
}
