#include <catch2/catch.hpp>

#include "graph/builder.h"
#include "trace_fixtures.h"

using namespace dpro;
using graph::NodeKind;

namespace {

std::vector<std::int64_t> shape(const graph::OpDesc& op, std::size_t i) { return op.inputs.at(i).shape; }
std::string_view dtype(const graph::Dfg& dfg, const graph::OpDesc& op, std::size_t i) {
  return dfg.ops().name(op.inputs.at(i).dtype);
}

}  // namespace

TEST_CASE("The op table holds each node's name, shapes and dtypes, parsed once from the trace") {
  test::CapturingLog log;
  const auto set = test::load({test::dlrm_files()[0]}, log.log);
  const auto built = graph::build_graph(set, {}, log.log);
  const graph::Dfg& dfg = built.dfg;
  // Every node is described, under its trace name; identical ops share one entry. Untraced work
  // is no op.
  for (const graph::NodeId id : dfg.node_ids()) {
    if (dfg.node(id).kind == NodeKind::kUntraced) {
      CHECK_FALSE(dfg.op_of(id).valid());
      continue;
    }
    REQUIRE(dfg.op_of(id).valid());
    CHECK(dfg.op(id)->kind == dfg.node(id).kind);
    if (dfg.node(id).kind != NodeKind::kBarrier) CHECK(dfg.op_name(id) == set.strings.view(dfg.node(id).name));
  }
  CHECK(dfg.ops().size() * 3 < dfg.node_count());

  // A leaf op with its inputs: aten::view of a [1, 1] float tensor to a size list.
  bool view = false;
  for (const graph::NodeId id : dfg.node_ids()) {
    if (!dfg.op(id)) continue;
    const graph::OpDesc& op = *dfg.op(id);
    if (op.kind != NodeKind::kCpuOp || dfg.op_name(id) != "aten::view" || op.inputs.size() != 2) continue;
    view = view || (shape(op, 0) == std::vector<std::int64_t>{1, 1} && shape(op, 1).empty() && dtype(dfg, op, 0) == "float" &&
                    dtype(dfg, op, 1).empty());
  }
  CHECK(view);
  // A kernel is described with its launching op's inputs, and its own launch geometry: the
  // bottom MLP's aten::mm, [16, 1] x [1, 256], both float.
  const graph::OpDesc* mm_kernel = nullptr;
  for (const graph::NodeId id : dfg.node_ids()) {
    const graph::OpDesc* op = dfg.op(id);
    if (op && op->kind == NodeKind::kKernel && dfg.ops().name(op->launcher) == "aten::mm" && op->inputs.size() == 2 &&
        shape(*op, 0) == std::vector<std::int64_t>{16, 1}) {
      mm_kernel = op;
    }
  }
  REQUIRE(mm_kernel);
  CHECK(shape(*mm_kernel, 1) == std::vector<std::int64_t>{1, 256});
  CHECK(dtype(dfg, *mm_kernel, 0) == "float");
  CHECK(dtype(dfg, *mm_kernel, 1) == "float");
  CHECK(mm_kernel->grid.has_value());
  CHECK(mm_kernel->block.has_value());

  // Copies carry their bytes; NCCL kernels their collective.
  bool copy_bytes = false, collective = false;
  for (const graph::OpDesc& op : dfg.ops().ops()) {
    copy_bytes = copy_bytes || (op.kind == NodeKind::kMemcpy && op.bytes && *op.bytes > 0);
    collective = collective || (op.kind == NodeKind::kCollective && op.collective && !op.collective->op.empty());
  }
  CHECK(copy_bytes);
  CHECK(collective);
}
