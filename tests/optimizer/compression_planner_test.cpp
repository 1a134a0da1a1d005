// The per-bucket compression planner: "none" where the network is fast, compression where it is
// slow, its model against the replay, and that what it plans is never kept when it loses.
#include <catch2/catch.hpp>

#include <algorithm>

#include "core/error.h"
#include "optimizer/compression_planner.h"
#include "optimizer/memory.h"
#include "trace_fixtures.h"
#include "optimizer/optimizer_fixtures.h"
#include "optimizer/search.h"
#include "whatif/workload_fixtures.h"

using namespace dpro;
using namespace dpro::optimizer;

namespace {

// Rank 0 of a 2-rank A100 job with DDP all-reduces (torch.profiler, HTA's test data): 5 buckets a step.
const char* kAllReduceTrace = "traces/hta/a100-ws2-rank0-nccl.json.gz";

// A job under `settings` (--set), conditioned as the optimize command does it.
struct Job {
  whatif::Workload base;
  Conditions conditions;
  whatif::Workload conditioned;
  Job(const char* trace, std::vector<std::string> settings) : base(test::load_workload(trace)) {
    conditions.settings = std::move(settings);
    replayer::Simulator simulator;
    conditioned = whatif::evaluate(base, condition_rewrites(conditions, test::resource_paths()), simulator, {}).workload;
  }
  Nanos replayed(const std::string& value) const {
    std::vector<Decision> d;
    if (value != "none") d.push_back({Strategy::kCompression, "", value, {}});
    return replay_step(conditioned, conditions, d, test::resource_paths());
  }
};

const std::vector<std::string> kSlow = {"network.inter_node_gbps=0.5", "network.intra_node_gbps=0.5"};

using test::workload_of_text;

}  // namespace

TEST_CASE("the compression planner leaves every bucket uncompressed where the network is fast") {
  for (const char* trace : {kAllReduceTrace, "traces/dlrm-8xV100"}) {
    const Job job(trace, {});
    const PlannerModel model = build_model(job.conditioned, job.conditions, {}, test::resource_paths(), {});
    REQUIRE(model.positions >= 3);
    const CompressionPlan plan = choose(model, {});
    CHECK(std::all_of(plan.choice.begin(), plan.choice.end(), [](std::size_t m) { return m == 0; }));
    CHECK(plan.best_single == "none");
    // With no compression the model is the baseline replay.
    CHECK(plan.none.median_ns == job.replayed("none"));
  }
}

TEST_CASE("the compression planner compresses where the network is slow, and its plan replays faster") {
  const Job job(kAllReduceTrace, kSlow);
  const PlannerModel model = build_model(job.conditioned, job.conditions, {}, test::resource_paths(), {});
  const CompressionPlan plan = choose(model, {});
  CHECK(std::any_of(plan.choice.begin(), plan.choice.end(), [](std::size_t m) { return m != 0; }));
  CHECK(plan.planned.median_ns < plan.none.median_ns);
  CHECK(plan.planned.median_ns <= plan.best_single_score.median_ns);
  const Nanos none = job.replayed("none");
  CHECK(plan.none.median_ns == none);
  CHECK(job.replayed(plan.value) < none);
  // The same on the 8-rank DLRM job over 10 Gb/s Ethernet, one GPU per node.
  const Job dlrm("traces/dlrm-8xV100", {"cluster.gpus_per_node=1", "network.inter_node_gbps=1.25"});
  const CompressionPlan p8 = choose(build_model(dlrm.conditioned, dlrm.conditions, {}, test::resource_paths(), {}), {});
  CHECK(dlrm.replayed(p8.value) < dlrm.replayed("none"));
}

TEST_CASE("the planned per-bucket plan, replayed, is no slower than any single method, and the search keeps the faster") {
  const Job job(kAllReduceTrace, kSlow);
  SpaceOptions o;
  o.strategies = {Strategy::kCompression};
  SearchSpace space = make_space(job.conditioned, o);
  const std::size_t singles = space.variables.at(0).values.size();
  std::string why;
  const auto plan = add_planned_compression(space, job.conditioned, job.conditions, test::resource_paths(), {}, &why);
  REQUIRE(plan);
  REQUIRE(space.variables[0].values.size() == singles + 1);
  CHECK(space.variables[0].values.back() == plan->value);
  Evaluator ev(job.conditioned, space, job.conditions, test::resource_paths(), 2);
  const SearchResult all = exhaustive(ev, space, Limits{});
  const Nanos planned = ev.score({{static_cast<std::uint8_t>(singles)}})[0].step_ns;
  for (std::uint8_t v = 0; v < singles; ++v) CHECK(planned <= ev.score({{v}})[0].step_ns);
  // Whatever the planner proposes, the search chooses by replay: its best is the fastest value.
  SearchOptions s;
  s.max_evaluations = 20;
  Evaluator ev2(job.conditioned, space, job.conditions, test::resource_paths(), 2);
  CHECK(search(ev2, space, s).best.score.step_ns == all.best.score.step_ns);
}

TEST_CASE("the planner keeps within a risk and a memory limit") {
  const Job job(kAllReduceTrace, kSlow);
  const PlannerModel model = build_model(job.conditioned, job.conditions, {}, test::resource_paths(), {});
  PlannerOptions careful;
  careful.max_risk = 0.05;
  const CompressionPlan safe = choose(model, careful);
  CHECK(safe.planned.risk <= 0.05);
  CHECK(compression_risk(safe.value) <= 0.05);
  CHECK(safe.planned.median_ns < safe.none.median_ns);  // fp16 / bf16 still help
  PlannerOptions lean;
  lean.max_extra_memory_bytes = 0;
  const CompressionPlan no_residual = choose(model, lean);
  CHECK(no_residual.planned.extra_memory_bytes == 0);
  for (std::size_t m : no_residual.choice) CHECK(!comm::has_error_feedback(model.specs[m].method));
  CHECK(choose(model, {}).planned.extra_memory_bytes > 0);
}

TEST_CASE("a per-bucket compression value: its risk is its riskiest method's, and a plan names it in brief") {
  CHECK(compression_risk("none,fp16,none") == compression_risk("fp16"));
  CHECK(compression_risk("fp16,topk:0.01") == compression_risk("topk:0.5"));
  CHECK(compression_risk("none,zip") == 1.0);
  CHECK(describe({Strategy::kCompression, "", "none,powersgd:4,none", {}}) ==
        "compression per bucket (3 buckets: 2 none, 1 powersgd:4)");
  // decision_rewrites hands the list to the compression rewrite, a method per bucket.
  const auto rewrites = decision_rewrites({}, {{Strategy::kCompression, "", "none,fp16", {}}}, test::resource_paths());
  REQUIRE(rewrites.size() == 1);
  const auto& comm = std::get<whatif::CommRetime>(rewrites[0]);
  REQUIRE(comm.compression);
  CHECK(comm.compression->per_bucket.size() == 2);
  CHECK(comm.compression->per_bucket[1].method == comm::CompressionMethod::kFp16);
}

TEST_CASE("a job without a gradient all-reduce has nothing for the planner, and says so") {
  const Job job("traces/hta/simple-add-kineto.json.gz", {});
  CHECK_THROWS_AS(build_model(job.conditioned, job.conditions, {}, test::resource_paths(), {}), OptionError);
  SpaceOptions o;
  SearchSpace space = make_space(job.conditioned, o);
  std::string why;
  CHECK(!add_planned_compression(space, job.conditioned, job.conditions, test::resource_paths(), {}, &why));
  CHECK_THAT(why, Catch::Contains("no compression decision"));
}

TEST_CASE("a job's memory per rank is estimated from its gradients, and a budget below it is refused") {
  const Job job(kAllReduceTrace, {});
  const auto memory = estimate_memory_per_rank(job.conditioned);
  REQUIRE(memory);
  // ResNet-sized gradients: tens of MiB in fp32, 4 times that kept.
  CHECK(memory->gradient_bytes > 10 * 1024 * 1024);
  CHECK(memory->bytes == kTrainingStateFactor * memory->gradient_bytes);
  const double job_gib = static_cast<double>(memory->bytes) / kBytesPerGiB;
  CHECK(headroom_under_budget(job_gib + 1, memory) > static_cast<std::int64_t>(0.99 * kBytesPerGiB));
  CHECK_THROWS_WITH(headroom_under_budget(job_gib / 2, memory), Catch::Contains("below the job's own memory per rank"));
  CHECK_THROWS_WITH(headroom_under_budget(80, std::nullopt), Catch::Contains("cannot tell the job's own memory"));
  CHECK(!estimate_memory_per_rank(test::load_workload("traces/hta/simple-add-kineto.json.gz")));
}

TEST_CASE("a job's memory per rank is the peak its memory events record, where the trace has them") {
  // A Kineto trace with profile_memory's "[memory]" instant events: the GPU's (Device Type 1) peak
  // reserved is 3 GiB; the CPU's (Device Type 0) larger figure is not the GPU's.
  const whatif::Workload job = workload_of_text("memory_events", R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 0, "dur": 10, "args": {}},
    {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 2,
     "args": {"Total Reserved": 2147483648, "Total Allocated": 1073741824, "Device Type": 1, "Device Id": 0, "Bytes": 512}},
    {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 4,
     "args": {"Total Reserved": 3221225472, "Total Allocated": 2147483648, "Device Type": 1, "Device Id": 0, "Bytes": 512}},
    {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 6,
     "args": {"Total Reserved": 0, "Total Allocated": 99999999999, "Device Type": 0, "Device Id": -1, "Bytes": 512}}
  ]})");
  REQUIRE(job.traces->ranks.at(0).peak_gpu_memory_bytes == std::int64_t{3} << 30);
  const auto memory = estimate_memory_per_rank(job);
  REQUIRE(memory);
  CHECK(memory->bytes == std::int64_t{3} << 30);
  CHECK_THAT(memory->source, Catch::Contains("memory events"));
  CHECK_THROWS_WITH(headroom_under_budget(2, memory), Catch::Contains("at least 3.000 GiB"));
  CHECK(headroom_under_budget(4, memory) == std::int64_t{1} << 30);
}

namespace {

// One step of a Kineto trace with shapes: forward ops that launch kernels (an fp32 addmm, a bf16
// relu, an embedding bag), a view that launches none, then the backward pass (autograd's evaluate_function)
// with an mm of its own.
const char* kShapesTrace = R"({"traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 1000, "dur": 1000},
  {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1, "tid": 1, "ts": 1100, "dur": 50,
   "args": {"Input Dims": [[512], [64, 256], [256, 512]], "Input type": ["float", "float", "float"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1110, "dur": 5, "args": {"correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "sgemm_kernel", "pid": 0, "tid": 7, "ts": 1120, "dur": 30, "args": {"correlation": 1, "device": 0, "stream": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 1200, "dur": 30,
   "args": {"Input Dims": [[64, 512]], "Input type": ["c10::BFloat16"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1205, "dur": 5, "args": {"correlation": 2}},
  {"ph": "X", "cat": "kernel", "name": "relu_kernel", "pid": 0, "tid": 7, "ts": 1215, "dur": 10, "args": {"correlation": 2, "device": 0, "stream": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::view", "pid": 1, "tid": 1, "ts": 1250, "dur": 5,
   "args": {"Input Dims": [[64, 512], []], "Input type": ["float", "ScalarList"]}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::embedding_bag", "pid": 1, "tid": 1, "ts": 1300, "dur": 30,
   "args": {"Input Dims": [[1000, 64], [128], [16]], "Input type": ["float", "long int", "long int"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1305, "dur": 5, "args": {"correlation": 4}},
  {"ph": "X", "cat": "kernel", "name": "embedding_bag_kernel", "pid": 0, "tid": 7, "ts": 1315, "dur": 10, "args": {"correlation": 4, "device": 0, "stream": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: AddmmBackward0", "pid": 1, "tid": 1, "ts": 1400, "dur": 100},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1410, "dur": 50,
   "args": {"Input Dims": [[64, 512], [512, 256]], "Input type": ["float", "float"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1420, "dur": 5, "args": {"correlation": 3}},
  {"ph": "X", "cat": "kernel", "name": "sgemm_kernel", "pid": 0, "tid": 7, "ts": 1430, "dur": 30, "args": {"correlation": 3, "device": 0, "stream": 7}}
]})";

}  // namespace

TEST_CASE("the activation estimate counts the first tensor input of each forward op that launches a kernel") {
  const whatif::Workload job = workload_of_text("activation_shapes", kShapesTrace);
  const auto act = estimate_activation_bytes(job);
  REQUIRE(act);
  // addmm's first input of 2 dimensions [64, 256] at 4 bytes (not its bias), and relu's [64, 512]
  // at 2; not the view (no kernel), not the embedding's table, not the backward mm.
  CHECK(act->bytes == 64 * 256 * 4 + 64 * 512 * 2);
  CHECK(act->ops == 2);
  CHECK(act->steps == 1);
  // No all-reduce: no gradient estimate to add it to.
  CHECK(!estimate_memory_per_rank(job));
  // A trace without shapes has no activation estimate, and the gradient estimate says so.
  const Job a100(kAllReduceTrace, {});
  CHECK(!estimate_activation_bytes(a100.conditioned));
  CHECK_THAT(estimate_memory_per_rank(a100.conditioned)->source, Catch::Contains("activations not counted"));
}

TEST_CASE("on the 8-rank DLRM job (shapes recorded) the memory estimate adds activations to 4 x the gradients") {
  const Job dlrm("traces/dlrm-8xV100", {});
  const auto act = estimate_activation_bytes(dlrm.conditioned);
  REQUIRE(act);
  CHECK(act->bytes > 0);
  CHECK(act->ops > 10);
  const auto memory = estimate_memory_per_rank(dlrm.conditioned);
  REQUIRE(memory);
  CHECK(memory->activation_bytes == act->bytes);
  CHECK(memory->bytes == kTrainingStateFactor * memory->gradient_bytes + act->bytes);
  CHECK_THAT(memory->source, Catch::Contains("MiB of activations, estimated as the bytes of the activation input"));
}

namespace {

// One step of a Kineto trace with shapes, for what precision plans change in the activation
// estimate: an fp32 add before any GEMM, an fp32 convolution (input, weight, bias), an fp32 addmm
// (bias, input, weight), an fp32 relu (no precision class; autocast runs it in its input's dtype), a
// bmm already at bf16 and an fp32 log_softmax (on autocast's float32 list), then the backward pass.
const char* kPrecisionShapesTrace = R"({"traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 1000, "dur": 1000},
  {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 1020, "dur": 20,
   "args": {"Input Dims": [[8, 64, 32, 32], [8, 64, 32, 32], []], "Input type": ["float", "float", "Scalar"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1025, "dur": 5, "args": {"correlation": 6}},
  {"ph": "X", "cat": "kernel", "name": "add_kernel", "pid": 0, "tid": 7, "ts": 1030, "dur": 10, "args": {"correlation": 6, "device": 0, "stream": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::cudnn_convolution", "pid": 1, "tid": 1, "ts": 1050, "dur": 40,
   "args": {"Input Dims": [[8, 64, 32, 32], [64, 64, 3, 3], [64]], "Input type": ["float", "float", "float"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1055, "dur": 5, "args": {"correlation": 5}},
  {"ph": "X", "cat": "kernel", "name": "implicit_convolve_sgemm", "pid": 0, "tid": 7, "ts": 1060, "dur": 30, "args": {"correlation": 5, "device": 0, "stream": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1, "tid": 1, "ts": 1100, "dur": 50,
   "args": {"Input Dims": [[512], [64, 256], [256, 512]], "Input type": ["float", "float", "float"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1110, "dur": 5, "args": {"correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "sgemm_kernel", "pid": 0, "tid": 7, "ts": 1120, "dur": 30, "args": {"correlation": 1, "device": 0, "stream": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 1200, "dur": 30,
   "args": {"Input Dims": [[64, 512]], "Input type": ["float"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1205, "dur": 5, "args": {"correlation": 2}},
  {"ph": "X", "cat": "kernel", "name": "relu_kernel", "pid": 0, "tid": 7, "ts": 1215, "dur": 10, "args": {"correlation": 2, "device": 0, "stream": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::bmm", "pid": 1, "tid": 1, "ts": 1250, "dur": 30,
   "args": {"Input Dims": [[4, 16, 32], [4, 32, 16]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1255, "dur": 5, "args": {"correlation": 4}},
  {"ph": "X", "cat": "kernel", "name": "bf16_gemm_kernel", "pid": 0, "tid": 7, "ts": 1265, "dur": 10, "args": {"correlation": 4, "device": 0, "stream": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::_log_softmax", "pid": 1, "tid": 1, "ts": 1285, "dur": 20,
   "args": {"Input Dims": [[64, 512], [], []], "Input type": ["float", "Scalar", "Scalar"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1288, "dur": 2, "args": {"correlation": 7}},
  {"ph": "X", "cat": "kernel", "name": "softmax_kernel", "pid": 0, "tid": 7, "ts": 1292, "dur": 5, "args": {"correlation": 7, "device": 0, "stream": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: BmmBackward0", "pid": 1, "tid": 1, "ts": 1400, "dur": 100},
  {"ph": "X", "cat": "cpu_op", "name": "aten::bmm", "pid": 1, "tid": 1, "ts": 1410, "dur": 50,
   "args": {"Input Dims": [[4, 16, 16], [4, 16, 32]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1420, "dur": 5, "args": {"correlation": 3}},
  {"ph": "X", "cat": "kernel", "name": "bf16_gemm_kernel", "pid": 0, "tid": 7, "ts": 1430, "dur": 30, "args": {"correlation": 3, "device": 0, "stream": 7}}
]})";

Decision precision(const std::string& cls, const std::string& dtype) { return {Strategy::kPrecision, cls, dtype, {}}; }

}  // namespace

TEST_CASE("a precision plan's activation memory: saved inputs of its op classes at the narrower width, plus weight casts") {
  const whatif::Workload job = workload_of_text("activation_precision", kPrecisionShapesTrace);
  const auto act = estimate_activation_bytes(job);
  REQUIRE(act);
  // The sizes, written out: each op's activation input and, for GEMMs and convolutions, the other
  // operand of 2 or more dimensions (the weight; the bmm's second activation).
  const std::int64_t conv_in = 8 * 64 * 32 * 32, conv_w = 64 * 64 * 3 * 3;
  const std::int64_t mm_in = 64 * 256, mm_w = 256 * 512;
  const std::int64_t relu_in = 64 * 512, bmm_a = 4 * 16 * 32, bmm_b = 4 * 32 * 16;
  const std::int64_t add_in = conv_in, log_softmax_in = 64 * 512;
  CHECK(act->bytes == add_in * 4 + conv_in * 4 + mm_in * 4 + relu_in * 4 + bmm_a * 2 + log_softmax_in * 4);
  CHECK(act->ops == 6);
  // As recorded, tf32 (fp32 storage): unchanged.
  CHECK(precision_memory(*act, "as_recorded", "as_recorded").delta() == 0);
  CHECK(precision_memory(*act, "tf32", "tf32").delta() == 0);
  CHECK(precision_memory(*act, std::vector<Decision>{}).delta() == 0);
  // bf16 everywhere: the fp32 conv and addmm inputs kept at 2 bytes instead of 4, their weights
  // cast to 2 bytes; the relu after them gets their 16-bit output (2 bytes); the add before the
  // first lowered op, the log_softmax (autocast runs it in fp32) and the bmm (already bf16) unchanged.
  const PrecisionMemory everywhere = precision_memory(*act, {precision("all", "bf16")});
  CHECK(everywhere.saved == (conv_in + mm_in + relu_in) * (4 - 2));
  CHECK(everywhere.casts == (conv_w + mm_w) * 2);
  CHECK(everywhere.delta() == (conv_w + mm_w) * 2 - (conv_in + mm_in + relu_in) * 2);
  CHECK(everywhere.delta() < 0);
  CHECK(precision_memory(*act, "bf16", "bf16").delta() == everywhere.delta());
  CHECK(precision_memory(*act, "fp16", "fp16").delta() == everywhere.delta());
  // One class: convolutions free memory (a large activation, a small weight); the GEMM costs more
  // in its weight's cast than it frees. Either narrows the relu after it.
  const PrecisionMemory conv = precision_memory(*act, {precision("conv", "bf16")});
  CHECK(conv.delta() == conv_w * 2 - (conv_in + relu_in) * 2);
  CHECK(precision_memory(*act, {precision("all", "bf16"), precision("gemm", "as_recorded")}).delta() == conv.delta());
  CHECK(precision_memory(*act, {precision("gemm", "bf16")}).delta() == mm_w * 2 - (mm_in + relu_in) * 2);
  CHECK(precision_memory(*act, {precision("gemm", "bf16")}).delta() > 0);
  // fp8 GEMMs: 1-byte casts, the bf16 bmm narrowed too; the relu gets their 16-bit output.
  const PrecisionMemory fp8 = precision_memory(*act, {precision("gemm", "fp8")});
  CHECK(fp8.saved == mm_in * 3 + bmm_a * 1 + relu_in * 2);
  CHECK(fp8.casts == mm_w * 1 + bmm_b * 1);
}

TEST_CASE("which forward ops autocast runs in their input's dtype") {
  for (const char* name : {"aten::cudnn_batch_norm", "aten::relu_", "aten::add", "aten::max_pool2d_with_indices",
                           "aten::gelu", "aten::dropout", "aten::mean", "aten::cat"})
    CHECK(runs_in_input_dtype(name));
  for (const char* name : {"aten::_log_softmax", "aten::native_layer_norm", "aten::nll_loss_forward", "aten::softmax",
                           "aten::sum", "aten::addmm", "aten::cudnn_convolution", "aten::bmm", "aten::addcmul_",
                           "aten::pow", "aten::exp", "aten::group_norm"})
    CHECK_FALSE(runs_in_input_dtype(name));
}

TEST_CASE("a memory limit that only a precision plan meets selects it (H100 ResNet-50 with shapes)") {
  // One step captured under emit_nvtx records shapes: its activation estimate credits precision plans.
  const whatif::Workload job = test::load_workload("traces/h100/resnet50-emit-nvtx-step");
  SpaceOptions o;
  o.strategies = {Strategy::kPrecision};
  o.device_dir = test::resource_paths().device_dir;
  const SearchSpace space = make_space(job, o);
  REQUIRE(space.variables.size() == 2);
  Evaluator evaluator(job, space, {}, test::resource_paths(), 2);
  REQUIRE(evaluator.activations());
  const std::int64_t conv_bf16 = precision_memory(*evaluator.activations(), "as_recorded", "bf16").delta();
  const std::int64_t gemm_bf16 = precision_memory(*evaluator.activations(), "bf16", "as_recorded").delta();
  REQUIRE(conv_bf16 < -(std::int64_t{1} << 30));  // over 1 GiB of convolution inputs at half the width
  CHECK(gemm_bf16 > 0);                          // the fc layer's weight cast outweighs its input
  SearchOptions options;
  options.max_evaluations = 12;
  options.limits.max_extra_memory_bytes = -(std::int64_t{1} << 30);  // 1 GiB below the job's own memory
  const SearchResult r = search(evaluator, space, options);
  CHECK(r.baseline.score.extra_memory_bytes == 0);
  CHECK(!options.limits.admits(r.baseline.score));
  REQUIRE(options.limits.admits(r.best.score));
  const std::vector<Decision> chosen = decisions_of(space, r.best.assignment);
  const auto conv = std::find_if(chosen.begin(), chosen.end(), [](const Decision& d) { return d.subject == "conv"; });
  REQUIRE(conv != chosen.end());
  CHECK((conv->value == "bf16" || conv->value == "fp16"));
  CHECK(r.best.score.extra_memory_bytes == precision_memory(*evaluator.activations(), chosen).delta());
  // Below what any plan frees, none is within the limit and the baseline stays (the CLI refuses
  // it: exit 2).
  options.limits.max_extra_memory_bytes = -(std::int64_t{100} << 30);
  const SearchResult none = search(evaluator, space, options);
  CHECK(!options.limits.admits(none.best.score));
  CHECK(none.best.assignment == none.baseline.assignment);
}

TEST_CASE("without recorded shapes precision plans' memory is unchanged (H100 ResNet-50 without emit_nvtx)") {
  const whatif::Workload job = test::load_workload("traces/h100/resnet50");
  SpaceOptions o;
  o.strategies = {Strategy::kPrecision};
  o.device_dir = test::resource_paths().device_dir;
  const SearchSpace space = make_space(job, o);
  Evaluator evaluator(job, space, {}, test::resource_paths(), 2);
  CHECK(!evaluator.activations());
  SearchOptions options;
  options.max_evaluations = 6;
  const SearchResult r = search(evaluator, space, options);
  for (const auto& [a, s] : evaluator.scored()) CHECK(s.extra_memory_bytes == 0);
  CHECK(r.best.assignment != r.baseline.assignment);
}
