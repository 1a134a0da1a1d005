// GPU nodes as launches: what runs as a real kernel, what as a stand-in, and with what.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <optional>

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
  CHECK_FALSE(executor::elementwise_op_of("", "GeluBackwardCUDAKernelImpl", false));
  CHECK_FALSE(executor::elementwise_op_of("aten::layer_norm", "", false));
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
  std::size_t epilogues = 0, gelus = 0, standins = 0;
  for (graph::NodeId id : dfg.node_ids()) {
    const graph::OpDesc* op = dfg.op(id);
    if (dfg.node(id).kind != graph::NodeKind::kKernel || !op || op->parts.empty()) continue;
    const graph::OpDesc& gemm = dfg.ops().op(op->parts.front());
    if (!whatif::is_epilogue_gemm(dfg.ops().name(gemm.name))) continue;
    ++epilogues;
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
  CHECK(epilogues == change.epilogue_instances);
  CHECK(gelus > 0);  // bert's MLP: the GEMM before its gelu
  CHECK(standins < epilogues);
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
