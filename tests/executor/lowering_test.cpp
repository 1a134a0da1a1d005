// GPU nodes as launches: what runs as a real kernel, what as a stand-in, and with what.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <string>
#include <tuple>

#include "costmodel/op_desc_from_graph.h"
#include "executor/fake_device.h"
#include "graph/editor.h"
#include "executor/launch_lowering.h"
#include "executor_fixtures.h"
#include "whatif/op_fusion.h"

using namespace dpro;
using executor::ElementwiseOp;

TEST_CASE("lowering: framework elementwise ops and PyTorch's functor kernels name their step") {
  CHECK(executor::elementwise_op_of("aten::add", "", false) == ElementwiseOp::kAdd);
  CHECK(executor::elementwise_op_of("aten::add_", "", true) == ElementwiseOp::kAddScalar);
  CHECK(executor::elementwise_op_of("aten::mul", "", true) == ElementwiseOp::kScale);
  CHECK(executor::elementwise_op_of("aten::gelu", "", false) == ElementwiseOp::kGelu);
  CHECK(executor::elementwise_op_of("", "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>", false) ==
        ElementwiseOp::kAdd);
  CHECK(executor::elementwise_op_of("", "void at::native::elementwise_kernel<AUnaryFunctor<float, float, float, MulFunctor<float>>>", false) ==
        ElementwiseOp::kScale);
  // Ops that take indices, backward kernels and named ops without a step are not elementwise steps.
  CHECK_FALSE(executor::elementwise_op_of("aten::embedding", "", false));
  CHECK_FALSE(executor::elementwise_op_of("", "void at::native::indexSelectLargeIndex<float>", false));
  CHECK(executor::elementwise_op_of("", "GeluBackwardCUDAKernelImpl", false) == ElementwiseOp::kGeluBackward);
  CHECK_FALSE(executor::elementwise_op_of("", "void cunn_SoftMaxBackward<MulFunctor<float>>", false));
  CHECK_FALSE(executor::elementwise_op_of("aten::layer_norm", "", false));
}

TEST_CASE("lowering: backward ops, pow, clamp_min and fill_ name their steps, dropout none") {
  CHECK(executor::elementwise_op_of("aten::threshold_backward", "", false) == ElementwiseOp::kReluBackward);
  CHECK(executor::elementwise_op_of("aten::gelu_backward", "", false) == ElementwiseOp::kGeluBackward);
  CHECK(executor::elementwise_op_of("aten::sigmoid_backward", "", false) == ElementwiseOp::kSigmoidBackward);
  CHECK(executor::elementwise_op_of("aten::tanh_backward", "", false) == ElementwiseOp::kTanhBackward);
  CHECK(executor::elementwise_op_of("aten::silu_backward", "", false) == ElementwiseOp::kSiluBackward);
  CHECK(executor::elementwise_op_of("aten::pow", "", true) == ElementwiseOp::kPowScalar);
  CHECK_FALSE(executor::elementwise_op_of("aten::pow", "", false));  // a tensor exponent
  CHECK(executor::elementwise_op_of("aten::clamp_min_", "", true) == ElementwiseOp::kClampMin);
  CHECK(executor::elementwise_op_of("aten::clamp_min", "", false) == ElementwiseOp::kMax);
  CHECK(executor::elementwise_op_of("aten::fill_", "", true) == ElementwiseOp::kFill);
  // PyTorch's functor kernels without a launching op.
  CHECK(executor::elementwise_op_of("", "void at::native::vectorized_elementwise_kernel<4, at::native::tanh_backward_kernel_cuda(at::TensorIteratorBase&)::{lambda()#1}>", false) ==
        ElementwiseOp::kTanhBackward);
  CHECK(executor::elementwise_op_of("", "void at::native::vectorized_elementwise_kernel<4, at::native::sigmoid_backward_kernel_cuda(at::TensorIteratorBase&)>", false) ==
        ElementwiseOp::kSigmoidBackward);
  CHECK(executor::elementwise_op_of("", "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>", false) ==
        ElementwiseOp::kFill);
  // Dropout draws random numbers (forward) or reads a bool mask (backward): no step.
  CHECK_FALSE(executor::elementwise_op_of("aten::native_dropout", "", false));
  CHECK_FALSE(executor::elementwise_op_of("aten::native_dropout_backward", "", false));
  CHECK_FALSE(executor::elementwise_op_of("aten::sum", "", false));
  // Every backward op reads its second operand (the forward's input or output).
  for (ElementwiseOp op : {ElementwiseOp::kReluBackward, ElementwiseOp::kGeluBackward, ElementwiseOp::kSigmoidBackward,
                           ElementwiseOp::kTanhBackward, ElementwiseOp::kSiluBackward})
    CHECK(executor::elementwise_op_is_binary(op));
  CHECK_FALSE(executor::elementwise_op_is_binary(ElementwiseOp::kPowScalar));
  CHECK_FALSE(executor::elementwise_op_is_binary(ElementwiseOp::kFill));
}

TEST_CASE("lowering: a stand-in is asked for the node's replay duration and recorded grid and block") {
  const whatif::Workload w = test::load_workload("traces/hta/alexnet-a100-single.json.gz");
  const graph::Dfg& dfg = w.graph.dfg;
  std::size_t standins = 0;
  for (graph::NodeId id : dfg.node_ids()) {
    if (dfg.node(id).kind != graph::NodeKind::kKernel || !dfg.op(id)) continue;
    const executor::LoweredLaunch l = executor::lower_launch(dfg, id, {});
    if (!l.is_standin()) continue;
    ++standins;
    const auto& k = std::get<executor::StandinKernel>(l.launch);
    REQUIRE(k.duration == dfg.node(id).duration);
    REQUIRE_FALSE(l.standin_reason.empty());
    if (const auto& grid = dfg.op(id)->grid)
      for (int i = 0; i < 3; ++i) REQUIRE(k.grid[i] == static_cast<std::uint32_t>(std::max(1, (*grid)[i])));
    if (const auto& block = dfg.op(id)->block)
      for (int i = 0; i < 3; ++i) REQUIRE(k.block[i] == static_cast<std::uint32_t>(std::max(1, (*block)[i])));
  }
  CHECK(standins > 10);
}

TEST_CASE("lowering: GEMM kernels whose launching op recorded shapes run as GEMMs at that shape") {
  const whatif::Workload w = test::load_workload("traces/h100/gpt2-emit-nvtx-step");
  const graph::Dfg& dfg = w.graph.dfg;
  std::size_t gemms = 0;
  for (graph::NodeId id : dfg.node_ids()) {
    if (dfg.node(id).kind != graph::NodeKind::kKernel || !dfg.op(id)) continue;
    const executor::LoweredLaunch l = executor::lower_launch(dfg, id, {});
    const auto* g = std::get_if<executor::GemmCall>(&l.launch);
    if (!g) continue;
    ++gemms;
    const costmodel::OpDesc d = costmodel::op_desc_of_kernel(dfg.ops(), *dfg.op(id), *dfg.op(id));
    REQUIRE(l.op_class == executor::OpClass::kGemm);
    REQUIRE(std::vector<std::int64_t>{g->batch, g->m, g->n, g->k} == d.dims);
    REQUIRE(g->c.bytes == static_cast<std::uint64_t>(g->batch * g->m * g->n) * executor::dtype_bytes(g->dtype));
    if (costmodel::kernel_math_dtype(std::string(dfg.op_name(id))) == hw::DType::kBFloat16)
      REQUIRE(g->dtype == executor::DType::kBF16);  // the kernel's arithmetic, not the recorded fp32 inputs
  }
  CHECK(gemms > 10);
}

TEST_CASE("lowering: NCCL kernels become collectives of the recorded size that stand in for their replayed time") {
  const whatif::Workload w = test::load_workload("traces/hta/a100-ws2-rank0-nccl.json.gz");
  const graph::Dfg& dfg = w.graph.dfg;
  std::size_t sized = 0, collectives = 0;
  for (graph::NodeId id : dfg.node_ids()) {
    if (dfg.node(id).kind != graph::NodeKind::kCollective) continue;
    ++collectives;
    const executor::LoweredLaunch l = executor::lower_launch(dfg, id, {});
    const auto& c = std::get<executor::CollectiveCall>(l.launch);
    REQUIRE(c.standin_duration == dfg.node(id).duration);
    REQUIRE_FALSE(c.op.empty());
    sized += c.bytes > 0;
  }
  CHECK(collectives > 0);
  CHECK(sized > 0);
}

TEST_CASE("lowering: a GEMM fused with its epilogue runs as one cuBLASLt GEMM with that epilogue at the GEMM's shape") {
  whatif::Workload w = test::load_workload("traces/h100/bert-ddp-emit-nvtx-step");
  const auto candidates = whatif::find_epilogue_candidates(w);
  REQUIRE(!candidates.empty());
  const whatif::OpFusionChange change = whatif::op_fusion(w, whatif::fuse_candidates(candidates));
  REQUIRE(change.epilogue_instances > 0);
  const graph::Dfg& dfg = w.graph.dfg;
  const costmodel::LikeStepLaunchers like = costmodel::launchers_from_like_steps(*w.traces, dfg);
  executor::LaunchOptions lending;
  lending.like_steps = &like;
  std::size_t epilogues = 0, gelus = 0, standins = 0, standins_lent = 0;
  for (graph::NodeId id : dfg.node_ids()) {
    const graph::OpDesc* op = dfg.op(id);
    if (dfg.node(id).kind != graph::NodeKind::kKernel || !op || op->parts.empty()) continue;
    const graph::OpDesc& gemm = dfg.ops().op(op->parts.front());
    if (!whatif::is_epilogue_gemm(dfg.ops().name(gemm.name))) continue;
    ++epilogues;
    // With step 12's shapes lent to the other five steps' parts (trace: step 12 alone has shapes).
    const executor::LoweredLaunch with_like = executor::lower_launch(dfg, id, lending);
    REQUIRE(with_like.op_class == executor::OpClass::kFused);
    standins_lent += with_like.is_standin();
    const executor::LoweredLaunch l = executor::lower_launch(dfg, id, {});
    REQUIRE(l.op_class == executor::OpClass::kFused);
    const auto* g = std::get_if<executor::GemmCall>(&l.launch);
    if (!g) {  // kept as a stand-in only where the GEMM's op records no shapes
      REQUIRE(l.standin_reason.find("records no shapes") != std::string::npos);
      ++standins;
      continue;
    }
    REQUIRE(g->epilogue != executor::GemmEpilogue::kNone);
    // The recorded row-major C[M,N] = A[M,K] W[K,N] as cuBLASLt's column-major N x M product.
    const costmodel::OpDesc d = costmodel::op_desc_of_kernel(dfg.ops(), gemm, gemm);
    REQUIRE(std::vector<std::int64_t>{g->batch, g->n, g->m, g->k} == d.dims);
    const std::uint64_t width = executor::dtype_bytes(g->dtype);
    REQUIRE(g->c.bytes == static_cast<std::uint64_t>(g->batch * g->m * g->n) * width);
    const bool bias = executor::epilogue_reads_bias(g->epilogue) || executor::epilogue_writes_bias(g->epilogue);
    REQUIRE(g->bias.bytes == (bias ? static_cast<std::uint64_t>(g->batch * g->m) * width : 0));
    REQUIRE(g->aux.bytes == executor::gemm_aux_bytes(g->epilogue, g->m, g->n, g->batch, g->dtype));
    if (g->epilogue == executor::GemmEpilogue::kGelu || g->epilogue == executor::GemmEpilogue::kBiasGelu) ++gelus;
  }
  INFO("epilogues " << epilogues << ", stand-ins " << standins << ", with a like step's shapes " << standins_lent);
  CHECK(epilogues == change.epilogue_instances);
  CHECK(gelus > 0);  // bert's MLP: the GEMM before its gelu
  CHECK(standins < epilogues);
  CHECK(standins == epilogues * 5 / 6);  // the five steps without shapes
  CHECK(standins_lent == 0);
}

TEST_CASE("lowering: a GEMM fused with a kernel that is no cuBLASLt epilogue stays a stand-in") {
  whatif::Workload w = test::load_workload("traces/h100/bert-ddp-emit-nvtx-step");
  graph::Dfg& dfg = w.graph.dfg;
  // A GEMM and the kernel after it on its stream that is no epilogue step (a residual add, a norm).
  std::map<std::uint32_t, std::vector<graph::NodeId>> streams;
  for (graph::NodeId id : dfg.node_ids())
    if (dfg.node(id).kind == graph::NodeKind::kKernel && dfg.node(id).track.valid())
      streams[dfg.node(id).track.value].push_back(id);
  std::optional<std::array<graph::NodeId, 2>> pair;
  for (auto& [track, ids] : streams) {
    std::sort(ids.begin(), ids.end(), [&](graph::NodeId a, graph::NodeId b) {
      return std::pair(dfg.node(a).measured_start, a) < std::pair(dfg.node(b).measured_start, b);
    });
    for (std::size_t i = 0; i + 1 < ids.size() && !pair; ++i) {
      const graph::OpDesc* next = dfg.op(ids[i + 1]);
      if (!dfg.op(ids[i]) || !next || !whatif::is_epilogue_gemm(dfg.op_name(ids[i]))) continue;
      const costmodel::OpDesc d = costmodel::op_desc_of_kernel(dfg.ops(), *next, *next);
      if (whatif::epilogue_op_of(dfg.ops().name(next->launcher), dfg.op_name(ids[i + 1]), &d) == whatif::EpilogueOp::kNone &&
          !whatif::is_epilogue_gemm(dfg.op_name(ids[i + 1])))
        pair = std::array{ids[i], ids[i + 1]};
    }
  }
  REQUIRE(pair);
  graph::NodeId fused;
  {
    graph::Editor editor(w.graph);
    const graph::NodeId f = editor.fuse(*pair);
    fused = editor.commit().node[f];
  }
  REQUIRE(dfg.finalized());
  const executor::LoweredLaunch l = executor::lower_launch(dfg, fused, {});
  REQUIRE(l.is_standin());
  CHECK(l.op_class == executor::OpClass::kFused);
  CHECK(std::get<executor::StandinKernel>(l.launch).duration == dfg.node(fused).duration);
  CHECK(l.standin_reason.find("no cuBLASLt epilogue") != std::string::npos);
}

TEST_CASE("lowering: a GEMM epilogue's bias and aux buffers are operands the memory plan places and the fake device records") {
  executor::GemmCall g;
  g.m = 1024, g.n = 512, g.k = 256;
  g.dtype = executor::DType::kBF16;
  g.epilogue = executor::GemmEpilogue::kDReluBGrad;
  g.a = {0, 0, 1024 * 256 * 2}, g.b = {0, 0, 256 * 512 * 2}, g.c = {0, 0, 1024 * 512 * 2};
  g.bias = {0, 0, 1024 * 2};
  // The drelu mask: a bit a value, columns of a multiple of 128 bits.
  CHECK(executor::gemm_aux_ld(g.epilogue, 1000) == 1024);
  CHECK(executor::gemm_aux_bytes(g.epilogue, 1000, 512, 1, g.dtype) == 1024 / 8 * 512);
  CHECK(executor::gemm_aux_ld(executor::GemmEpilogue::kDGelu, 1001) == 1008);
  CHECK(executor::gemm_aux_bytes(executor::GemmEpilogue::kDGelu, 1001, 3, 2, g.dtype) == 1008 * 3 * 2 * 2);
  CHECK(executor::gemm_aux_bytes(executor::GemmEpilogue::kBiasGelu, 1001, 3, 2, g.dtype) == 0);
  g.aux = {0, 0, executor::gemm_aux_bytes(g.epilogue, g.m, g.n, g.batch, g.dtype)};
  executor::Launch launch = g;
  std::vector<executor::SlotRole> roles;
  for (const executor::Slot& s : executor::slots_of(launch)) roles.push_back(s.role);
  using R = executor::SlotRole;
  CHECK(roles == std::vector<R>{R::kInput, R::kInput, R::kOutput, R::kOutput, R::kInput});  // the bias gradient is written

  executor::FakeDevice device;
  const executor::StreamHandle stream = device.create_stream();
  auto& call = std::get<executor::GemmCall>(launch);
  for (const executor::Slot& s : executor::slots_of(launch)) s.span->buffer = device.allocate(s.span->bytes);
  device.launch(stream, launch);
  CHECK(device.violations().empty());
  const auto calls = device.calls();
  REQUIRE(calls.back().kind == executor::FakeDevice::CallKind::kLaunch);
  const auto& recorded = std::get<executor::GemmCall>(*calls.back().launch);
  CHECK(recorded.epilogue == executor::GemmEpilogue::kDReluBGrad);
  CHECK(std::string(executor::to_string(recorded.epilogue)) == "drelu_bgrad");
  CHECK(recorded.aux.bytes == call.aux.bytes);
  // An aux span past its buffer is a violation, as for the GEMM's own operands.
  call.aux.offset = 64;
  device.launch(stream, launch);
  CHECK(device.violations().size() == 1);
}

namespace {

// The recorded iteration (its index in the rank's) that launched a GPU node: by its launch call's
// start, as costmodel::launchers_from_like_steps groups kernels; -1 before the first one.
int iteration_of(const whatif::Workload& w, graph::NodeId id) {
  const graph::Dfg& dfg = w.graph.dfg;
  Nanos issued = dfg.node(id).measured_start;
  dfg.for_each_in_edge(id, [&](graph::EdgeId e) {
    if (dfg.edge(e).kind == graph::EdgeKind::kLaunch) issued = dfg.node(dfg.edge(e).src).measured_start;
  });
  const auto& its = w.traces->ranks.front().iterations;
  int index = -1;
  for (std::size_t i = 0; i < its.size(); ++i)
    if (its[i].start <= issued) index = static_cast<int>(i);
  return index;
}

// The kernels of one stream in iteration `index`, in start order.
std::vector<graph::NodeId> kernels_of_step(const whatif::Workload& w, std::uint32_t track, int index) {
  const graph::Dfg& dfg = w.graph.dfg;
  std::vector<graph::NodeId> out;
  for (graph::NodeId id : dfg.node_ids())
    if (dfg.node(id).kind == graph::NodeKind::kKernel && dfg.node(id).track.value == track && dfg.op(id) &&
        iteration_of(w, id) == index)
      out.push_back(id);
  std::sort(out.begin(), out.end(), [&](graph::NodeId a, graph::NodeId b) {
    return std::pair(dfg.node(a).measured_start, a) < std::pair(dfg.node(b).measured_start, b);
  });
  return out;
}

// The index of ProfilerStep#`number` in the rank's iterations.
int step_index(const whatif::Workload& w, std::int64_t number) {
  const auto& its = w.traces->ranks.front().iterations;
  for (std::size_t i = 0; i < its.size(); ++i)
    if (its[i].number == number) return static_cast<int>(i);
  return -1;
}

}  // namespace

TEST_CASE("lowering: a fused chain whose parts record no sizes in its step runs as a chain at the like step's sizes") {
  // traces/h100/bert-ddp-emit-nvtx-step: steps 10..15, step 12 alone inside emit_nvtx (the only
  // one whose kernels have launching ops with shapes). Two elementwise kernels that follow one
  // another on a stream in step 12, and the same two in step 13.
  whatif::Workload w = test::load_workload("traces/h100/bert-ddp-emit-nvtx-step");
  const int shaped = step_index(w, 12), other = step_index(w, 13);
  REQUIRE(shaped >= 0);
  REQUIRE(other >= 0);
  const graph::Dfg& dfg = w.graph.dfg;
  std::optional<std::array<graph::NodeId, 2>> in_shaped, in_other;
  std::uint32_t track = 0;
  for (graph::NodeId id : dfg.node_ids()) {  // the streams, from a kernel of step 12 each
    if (in_shaped || dfg.node(id).kind != graph::NodeKind::kKernel || !dfg.node(id).track.valid()) continue;
    track = dfg.node(id).track.value;
    const auto a = kernels_of_step(w, track, shaped), b = kernels_of_step(w, track, other);
    if (a.size() != b.size()) continue;
    for (std::size_t i = 0; i + 1 < a.size() && !in_shaped; ++i) {
      const auto x = executor::lower_launch(dfg, a[i], {}), y = executor::lower_launch(dfg, a[i + 1], {});
      if (x.op_class == executor::OpClass::kElementwise && y.op_class == executor::OpClass::kElementwise &&
          !x.is_standin() && !y.is_standin() && dfg.op(b[i])->launcher.empty() && dfg.op(b[i + 1])->launcher.empty()) {
        REQUIRE(dfg.op(a[i])->name == dfg.op(b[i])->name);
        REQUIRE(dfg.op(a[i + 1])->name == dfg.op(b[i + 1])->name);
        in_shaped = std::array{a[i], a[i + 1]};
        in_other = std::array{b[i], b[i + 1]};
      }
    }
  }
  REQUIRE(in_shaped);
  // What the pair in step 12 runs as, unfused: its recorded sizes.
  const auto first = std::get<executor::ElementwiseChain>(executor::lower_launch(dfg, (*in_shaped)[0], {}).launch);
  const auto second = std::get<executor::ElementwiseChain>(executor::lower_launch(dfg, (*in_shaped)[1], {}).launch);

  SECTION("fused in step 12 and in step 13: step 13's fused node takes step 12's sizes") {
    graph::NodeId fused_shaped, fused_other;
    {
      graph::Editor editor(w.graph);
      const graph::NodeId f = editor.fuse(*in_shaped), g = editor.fuse(*in_other);
      const graph::Renumbering r = editor.commit();
      fused_shaped = r.node[f];
      fused_other = r.node[g];
    }
    const costmodel::LikeStepLaunchers like = costmodel::launchers_from_like_steps(*w.traces, dfg);
    CHECK(like.fused[fused_other] == dfg.op_of(fused_shaped));
    CHECK_FALSE(like.fused[fused_shaped].valid());  // step 12 lends, it borrows nothing
    CHECK(like.fused_nodes >= 1);
    executor::LaunchOptions options;
    options.like_steps = &like;
    // Without the like step: a stand-in, for want of sizes.
    const executor::LoweredLaunch alone = executor::lower_launch(dfg, fused_other, {});
    REQUIRE(alone.is_standin());
    CHECK(alone.standin_reason.find("fused chain with a part") == 0);
    CHECK(alone.standin_reason.find("(none lent by a like step)") != std::string::npos);
    // With it: the chain step 12's fused node runs, two steps at the pair's recorded sizes.
    const executor::LoweredLaunch lent = executor::lower_launch(dfg, fused_other, options);
    REQUIRE(lent.op_class == executor::OpClass::kFused);
    const auto* chain = std::get_if<executor::ElementwiseChain>(&lent.launch);
    REQUIRE(chain);
    const auto own = std::get<executor::ElementwiseChain>(executor::lower_launch(dfg, fused_shaped, options).launch);
    CHECK(chain->elements == own.elements);
    CHECK(chain->elements == std::max(first.elements, second.elements));
    CHECK(chain->dtype == first.dtype);
    REQUIRE(chain->steps.size() == 2);
    CHECK(chain->steps[0].op == first.steps[0].op);
    CHECK(chain->steps[1].op == second.steps[0].op);
    CHECK(chain->inputs.size() == own.inputs.size());
  }

  SECTION("fused in step 13 only: no like step has that fused node, so it stays a stand-in and says why") {
    graph::NodeId fused_other;
    {
      graph::Editor editor(w.graph);
      const graph::NodeId g = editor.fuse(*in_other);
      fused_other = editor.commit().node[g];
    }
    executor::LaunchOptions options;
    const costmodel::LikeStepLaunchers like = costmodel::launchers_from_like_steps(*w.traces, dfg);
    options.like_steps = &like;
    CHECK_FALSE(like.fused[fused_other].valid());  // step 13's stream no longer matches step 12's
    const executor::LoweredLaunch l = executor::lower_launch(dfg, fused_other, options);
    REQUIRE(l.is_standin());
    CHECK(l.op_class == executor::OpClass::kFused);
    CHECK(std::get<executor::StandinKernel>(l.launch).duration == dfg.node(fused_other).duration);
    // The pair's kernels have no launching op in step 13, and no like step lends one.
    CHECK(l.standin_reason.find("fused chain with a part") == 0);
    CHECK(l.standin_reason.find("(none lent by a like step)") != std::string::npos);
  }
}

TEST_CASE("lowering: op fusion's fused nodes of every step lower as their like step's, with its shapes") {
  // All of op fusion's chains and GEMM epilogues fused in bert's six steps: each fused node of a
  // step without shapes lowers as the like step's (12) fused node does, to the same kind of launch
  // at the same size, or to a stand-in for the same reason.
  whatif::Workload w = test::load_workload("traces/h100/bert-ddp-emit-nvtx-step");
  std::vector<whatif::FusionCandidate> candidates = whatif::find_fusion_candidates(w);
  const auto epilogues = whatif::find_epilogue_candidates(w);
  candidates.insert(candidates.end(), epilogues.begin(), epilogues.end());
  const whatif::OpFusionChange change = whatif::op_fusion(w, whatif::fuse_candidates(candidates));
  REQUIRE(change.instances > 0);
  const graph::Dfg& dfg = w.graph.dfg;
  const costmodel::LikeStepLaunchers like = costmodel::launchers_from_like_steps(*w.traces, dfg);
  executor::LaunchOptions options;
  options.like_steps = &like;
  std::map<graph::OpId, graph::NodeId> node_of_op;  // fused ops are one node's each
  for (graph::NodeId id : dfg.node_ids())
    if (dfg.op(id) && !dfg.op(id)->parts.empty()) node_of_op[dfg.op_of(id)] = id;
  std::size_t fused = 0, lent = 0, real_alone = 0, real_lent = 0, gemms_lent = 0;
  for (const auto& [op, id] : node_of_op) {
    ++fused;
    const executor::LoweredLaunch alone = executor::lower_launch(dfg, id, {});
    const executor::LoweredLaunch with = executor::lower_launch(dfg, id, options);
    real_alone += !alone.is_standin();
    real_lent += !with.is_standin();
    // The ops that keep a chain a stand-in are named, and none of them has a step.
    CHECK(with.blocking_ops.empty() == (with.standin_reason != "fused chain with a part no ElementwiseOp stands for"));
    for (const std::string& b : with.blocking_ops) {
      INFO(b);
      CHECK_FALSE(b.empty());
      CHECK_FALSE(executor::elementwise_op_of(b, "", false));
      CHECK_FALSE(executor::elementwise_op_of(b, "", true));
    }
    const graph::OpId like_op = like.fused[id];
    if (!like_op.valid()) {
      CHECK(with.launch.index() == alone.launch.index());  // nothing lent: as before
      continue;
    }
    ++lent;
    const executor::LoweredLaunch lender = executor::lower_launch(dfg, node_of_op.at(like_op), options);
    INFO(dfg.op_name(id));
    CHECK(with.launch.index() == lender.launch.index());
    CHECK(with.standin_reason == lender.standin_reason);
    if (const auto* g = std::get_if<executor::GemmCall>(&with.launch)) {
      ++gemms_lent;
      const auto& h = std::get<executor::GemmCall>(lender.launch);
      CHECK(std::tuple(g->batch, g->m, g->n, g->k, g->epilogue, g->dtype) == std::tuple(h.batch, h.m, h.n, h.k, h.epilogue, h.dtype));
    }
    if (const auto* c = std::get_if<executor::ElementwiseChain>(&with.launch)) {
      const auto& d = std::get<executor::ElementwiseChain>(lender.launch);
      CHECK(std::tuple(c->elements, c->dtype, c->steps.size()) == std::tuple(d.elements, d.dtype, d.steps.size()));
    }
  }
  INFO("fused " << fused << ", lent " << lent << ", real alone " << real_alone << ", real with lending " << real_lent
                << ", epilogue GEMMs lent " << gemms_lent);
  CHECK(lent == fused * 5 / 6);  // all but step 12's
  CHECK(real_lent == 6 * real_alone);  // each of the five other steps runs what step 12 runs
  CHECK(gemms_lent > 0);
}

TEST_CASE("lowering: a kernel an attention op launched is an attention stand-in, whatever its name says") {
  // bert's cuDNN attention backward launches cudnn::fusion::convert_dq_to_16bits ("conv" in its
  // name): not a GEMM or convolution without shapes, an attention kernel.
  const whatif::Workload w = test::load_workload("traces/h100/bert-ddp-emit-nvtx-step");
  const graph::Dfg& dfg = w.graph.dfg;
  std::size_t attention = 0, converts = 0;
  for (graph::NodeId id : dfg.node_ids()) {
    const graph::OpDesc* op = dfg.op(id);
    if (dfg.node(id).kind != graph::NodeKind::kKernel || !op) continue;
    if (dfg.ops().name(op->launcher).find("attention") == std::string_view::npos) continue;
    ++attention;
    const executor::LoweredLaunch l = executor::lower_launch(dfg, id, {});
    CHECK(l.is_standin());
    CHECK(l.op_class == executor::OpClass::kOther);
    CHECK(l.standin_reason == "attention kernel: no kernel in kernels/");
    converts += dfg.op_name(id).find("convert_dq_to_16bits") != std::string_view::npos;
  }
  CHECK(converts == 12);  // one per layer, in the step with launching ops
  CHECK(attention > converts);
}

TEST_CASE("lowering: a GEMM kernel a convolution's backward launched is a convolution stand-in") {
  // ResNet-50 bf16 on an H100: cuDNN runs 1x1 convolutions' backward as nvjet / CUTLASS GEMMs,
  // launched by aten::convolution_backward (shapes recorded in step 12): convolutions, not GEMMs.
  const whatif::Workload w = test::load_workload("traces/h100/resnet50-bf16-emit-nvtx-step");
  const graph::Dfg& dfg = w.graph.dfg;
  std::size_t gemm_named = 0;
  for (graph::NodeId id : dfg.node_ids()) {
    const graph::OpDesc* op = dfg.op(id);
    if (dfg.node(id).kind != graph::NodeKind::kKernel || !op || dfg.ops().name(op->launcher) != "aten::convolution_backward")
      continue;
    if (!costmodel::is_gemm_or_conv_kernel(std::string(dfg.op_name(id)))) continue;
    gemm_named += dfg.op_name(id).find("nvjet") != std::string_view::npos;
    const executor::LoweredLaunch l = executor::lower_launch(dfg, id, {});
    CHECK(l.op_class == executor::OpClass::kConv);
    CHECK(l.standin_reason == "convolution: no kernel in kernels/");
  }
  CHECK(gemm_named > 0);
}
