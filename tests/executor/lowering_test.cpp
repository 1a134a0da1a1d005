// GPU nodes as launches: what runs as a real kernel, what as a stand-in, and with what.
#include <catch2/catch.hpp>

#include "costmodel/op_desc_from_graph.h"
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

TEST_CASE("lowering: a GEMM fused with its epilogue runs as one kernel of the fused duration") {
  whatif::Workload w = test::load_workload("traces/h100/bert-ddp-emit-nvtx-step");
  const auto candidates = whatif::find_epilogue_candidates(w);
  REQUIRE(!candidates.empty());
  const whatif::OpFusionChange change = whatif::op_fusion(w, whatif::fuse_candidates(candidates));
  REQUIRE(change.epilogue_instances > 0);
  const graph::Dfg& dfg = w.graph.dfg;
  std::size_t epilogues = 0;
  for (graph::NodeId id : dfg.node_ids()) {
    const graph::OpDesc* op = dfg.op(id);
    if (dfg.node(id).kind != graph::NodeKind::kKernel || !op || op->parts.empty()) continue;
    if (!whatif::is_epilogue_gemm(dfg.ops().name(dfg.ops().op(op->parts.front()).name))) continue;
    ++epilogues;
    const executor::LoweredLaunch l = executor::lower_launch(dfg, id, {});
    REQUIRE(l.is_standin());
    REQUIRE(l.op_class == executor::OpClass::kFused);
    REQUIRE(std::get<executor::StandinKernel>(l.launch).duration == dfg.node(id).duration);
    REQUIRE(l.standin_reason.find("epilogue") != std::string::npos);
  }
  CHECK(epilogues == change.epilogue_instances);
}
