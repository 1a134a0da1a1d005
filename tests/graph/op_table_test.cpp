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
  for (std::uint32_t i = 0; i < dfg.ops().size(); ++i) {
    const graph::OpDesc& op = dfg.ops().op(graph::OpId{i});
    copy_bytes = copy_bytes || (op.kind == NodeKind::kMemcpy && op.bytes && *op.bytes > 0);
    collective = collective || (op.kind == NodeKind::kCollective && op.collective && !op.collective->op.empty());
  }
  CHECK(copy_bytes);
  CHECK(collective);
}

TEST_CASE("A shared op table gives every entry and name as before, and its copies grow apart") {
  graph::OpTable table;
  graph::OpDesc a;
  a.name = table.intern("kernel_a");
  a.inputs.push_back({{2, 3}, table.intern("float")});
  const graph::OpId ia = table.add(a);
  graph::OpDesc b;
  b.name = table.intern("kernel_b");
  const graph::OpId ib = table.add(b);
  const graph::OpTable before = table;
  table.share();
  REQUIRE(table.size() == before.size());
  REQUIRE(table.name_count() == before.name_count());
  for (std::uint32_t i = 0; i < table.size(); ++i) CHECK(table.op(graph::OpId{i}) == before.op(graph::OpId{i}));
  for (std::uint32_t i = 0; i < table.name_count(); ++i) CHECK(table.name({i}) == before.name({i}));
  CHECK(table.intern("") == graph::NameId{0});
  CHECK(table.intern("kernel_b") == b.name);  // found in the shared part, not added again
  CHECK(table.name_count() == before.name_count());

  // Two copies share the entries; what each adds is its own, with the ids an unshared table gives.
  graph::OpTable x = table, y = table;
  graph::OpDesc c;
  c.name = x.intern("fused");
  c.parts = {ia, ib};
  const graph::OpId ic = x.add(c);
  CHECK(ic == graph::OpId{2});
  CHECK(x.size() == 3);
  CHECK(y.size() == 2);
  CHECK(x.op(ic).parts == std::vector<graph::OpId>{ia, ib});
  CHECK(x.name(c.name) == "fused");
  CHECK(y.intern("other") == c.name);  // the same next id, a different name
  CHECK(y.name(c.name) == "other");
  CHECK(x.name(c.name) == "fused");

  // Sharing again folds the added entries in; the ids stay.
  x.share();
  CHECK(x.size() == 3);
  CHECK(x.op(ic) == c);
  CHECK(x.intern("fused") == c.name);
  CHECK(x.op(ia) == a);
}
