#include "costmodel/compact_ast.h"

#include <cmath>

namespace dpro::costmodel {

int CompactAst::store_count() const {
  int n = 0;
  for (const auto& node : nodes) n += node.kind == AstNodeKind::kStore;
  return n;
}

namespace {

class TreeBuilder {
 public:
  explicit TreeBuilder(CompactAst& ast) : ast_(ast) {}
  int add(AstNode node, int parent) {
    ast_.nodes.push_back(std::move(node));
    const int id = static_cast<int>(ast_.nodes.size()) - 1;
    if (parent >= 0) ast_.nodes[parent].children.push_back(id);
    return id;
  }
  int loop(std::int64_t extent, int parent, bool reduce = false) {
    AstNode n;
    n.kind = reduce ? AstNodeKind::kReduceLoop : AstNodeKind::kLoop;
    n.extent = extent;
    return add(n, parent);
  }
  // Nested loops over `extents` (outermost first); returns the innermost.
  int nest(std::initializer_list<std::int64_t> extents, int parent) {
    for (auto e : extents) parent = loop(e, parent);
    return parent;
  }
  void store(StoreKind kind, double flops, double read, double written, double elements,
             double reduce_extent, int dtype_bytes, int parent) {
    AstNode n;
    n.kind = AstNodeKind::kStore;
    n.store = kind;
    n.flops = flops;
    n.bytes_read = read;
    n.bytes_written = written;
    n.elements = elements;
    n.reduce_extent = reduce_extent;
    n.dtype_bytes = dtype_bytes;
    add(n, parent);
  }

 private:
  CompactAst& ast_;
};

StoreKind elementwise_kind(OpFamily f) {
  switch (f) {
    case OpFamily::kAdd: case OpFamily::kAddScalar: return StoreKind::kAdd;
    case OpFamily::kMul: case OpFamily::kMulScalar: return StoreKind::kMul;
    case OpFamily::kDiv: case OpFamily::kDivScalar: return StoreKind::kDiv;
    case OpFamily::kPow: case OpFamily::kPowScalar: return StoreKind::kPow;
    case OpFamily::kGelu: return StoreKind::kGelu;
    case OpFamily::kRelu: return StoreKind::kRelu;
    default: return StoreKind::kTanh;
  }
}

}  // namespace

std::optional<CompactAst> build_ast(const OpDesc& op) {
  if (!op.describable()) return std::nullopt;
  CompactAst ast;
  TreeBuilder t(ast);
  const auto& d = op.dims;
  const int e = dtype_bytes(op.dtype);
  const double written = op.bytes_written();
  const double read = op.bytes() - written;
  switch (op.family) {
    case OpFamily::kBmm:
    case OpFamily::kLinear: {
      int inner = t.nest({d[0], d[1], d[2]}, -1);
      inner = t.loop(d[3], inner, /*reduce=*/true);
      const StoreKind k = StoreKind::kMultiplyAdd;
      t.store(k, op.flops(), read, written, 1.0 * d[0] * d[1] * d[2], d[3], e, inner);
      break;
    }
    case OpFamily::kConv2d: {
      const std::int64_t out = (d[4] + 2 * d[6] - d[3]) / d[5] + 1;
      int inner = t.nest({d[0], d[2], out, out}, -1);
      inner = t.loop(d[1], inner, /*reduce=*/true);
      inner = t.loop(d[3], inner, /*reduce=*/true);
      inner = t.loop(d[3], inner, /*reduce=*/true);
      t.store(StoreKind::kConvMultiplyAdd, op.flops(), read, written, 1.0 * d[0] * d[2] * out * out,
              1.0 * d[1] * d[3] * d[3], e, inner);
      ast.nodes.back().window_stride = static_cast<int>(d[5]);
      break;
    }
    case OpFamily::kLayerNorm:
    case OpFamily::kSoftmax: {
      // rows loop, then three passes over the row: two reductions and the normalised write.
      const double n = 1.0 * d[0] * d[1];
      const int rows = t.loop(d[0], -1);
      const bool ln = op.family == OpFamily::kLayerNorm;
      int pass = t.loop(d[1], rows, true);
      t.store(ln ? StoreKind::kSumReduce : StoreKind::kMaxReduce, n, e * n, e * d[0], d[0], d[1], e, pass);
      pass = t.loop(d[1], rows, true);
      t.store(ln ? StoreKind::kSumReduce : StoreKind::kExpSumReduce, 3 * n, e * n, e * d[0], d[0], d[1], e, pass);
      pass = t.loop(d[1], rows);
      t.store(StoreKind::kNormalize, 3 * n, e * n + (ln ? 2.0 * e * d[1] : 0.0), e * n, n, 1, e, pass);
      break;
    }
    default: {
      const int inner = t.nest({d[0], d[1]}, -1);
      t.store(elementwise_kind(op.family), op.flops(), read, written, 1.0 * d[0] * d[1], 1, e, inner);
    }
  }
  return ast;
}

CompactAst fuse(const std::vector<CompactAst>& parts) {
  CompactAst out;
  out.nodes.push_back(AstNode{});  // kSeq root
  for (const auto& part : parts) {
    const int offset = static_cast<int>(out.nodes.size());
    for (AstNode n : part.nodes) {
      for (int& c : n.children) c += offset;
      out.nodes.push_back(std::move(n));
    }
    out.nodes[0].children.push_back(offset);
  }
  return out;
}

namespace {
float log2p(double x) { return static_cast<float>(std::log2(1.0 + std::max(0.0, x))); }

struct Serialiser {
  const CompactAst& ast;
  float* out;
  int tokens = 0;
  int position = 0;
  bool overflow = false;

  void visit(int id, int depth) {
    const AstNode& n = ast.nodes[id];
    if (tokens == kMaxAstTokens) { overflow = true; return; }
    float* row = out + tokens * kTokenFeatures;
    ++tokens;
    row[static_cast<int>(n.kind)] = 1.0f;                      // 0..3 kind one-hot
    if (n.kind == AstNodeKind::kLoop || n.kind == AstNodeKind::kReduceLoop)
      row[4] = log2p(n.extent) / 16.0f;
    row[5] = depth / 8.0f;
    if (n.kind == AstNodeKind::kStore) {
      const double bytes = n.bytes_read + n.bytes_written;
      row[6] = log2p(n.flops) / 40.0f;
      row[7] = log2p(n.bytes_read) / 40.0f;
      row[8] = log2p(n.bytes_written) / 40.0f;
      row[9] = log2p(n.elements) / 32.0f;
      row[10] = log2p(n.reduce_extent) / 20.0f;
      row[11] = static_cast<float>(std::log2((n.flops + 1) / (bytes + 1))) / 8.0f;
      row[12] = static_cast<float>(std::log2(n.dtype_bytes)) / 3.0f;
      row[13] = static_cast<float>(n.window_stride);
      row[kStoreKindOffset + static_cast<int>(n.store)] = 1.0f;
    } else if (n.kind != AstNodeKind::kSeq) {
      // Share of a tile grid the loop fills (tile quantisation) and vector alignment.
      int k = kLoopTilingOffset;
      for (double tile : {16.0, 64.0, 128.0}) {
        const double e = static_cast<double>(n.extent);
        row[k++] = static_cast<float>(e / (std::ceil(e / tile) * tile));
      }
      row[k++] = n.extent % 4 == 0 ? 1.0f : 0.0f;
      row[k++] = n.extent % 32 == 0 ? 1.0f : 0.0f;
    }
    for (int i = 0; i < kPositionalDims; i += 2) {
      const double freq = std::pow(100.0, -static_cast<double>(i) / kPositionalDims);
      row[kPositionalOffset + i] = static_cast<float>(std::sin(position * freq));
      row[kPositionalOffset + i + 1] = static_cast<float>(std::cos(position * freq));
    }
    ++position;
    for (int c : n.children) visit(c, depth + 1);
    ++position;  // end-of-children marker
  }
};
}  // namespace

std::vector<std::int64_t> dominant_store_space(const CompactAst& ast) {
  std::vector<std::int64_t> best, path;
  double best_flops = -1;
  auto visit = [&](auto&& self, int id) -> void {
    const AstNode& n = ast.nodes[id];
    if (n.kind == AstNodeKind::kStore && n.flops > best_flops) { best_flops = n.flops; best = path; }
    if (n.kind == AstNodeKind::kLoop) path.push_back(n.extent);
    for (int c : n.children) self(self, c);
    if (n.kind == AstNodeKind::kLoop) path.pop_back();
  };
  if (!ast.nodes.empty()) visit(visit, 0);
  return best;
}

std::optional<int> serialise(const CompactAst& ast, float* out) {
  if (ast.nodes.empty()) return std::nullopt;
  Serialiser s{ast, out};
  s.visit(0, 0);
  if (s.overflow) return std::nullopt;
  return s.tokens;
}

}  // namespace dpro::costmodel
