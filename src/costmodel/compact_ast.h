#pragma once
// The compact AST of an op (after CDMPP): a small tensor-program tree. Interior nodes are
// loops (with their extents) or a sequence; leaves are stores carrying the features of the
// computation they perform (flops, bytes read and written, output elements, reduction
// extent, dtype, kind of arithmetic). A fused op is a tree with several stores.
//
// serialise() writes the tree in pre-order as fixed-width token rows with a sinusoidal
// positional encoding of each node's pre-order position (end-of-children markers counted as
// positions, as CDMPP does), ready for the learned encoder.
#include <cstdint>
#include <optional>
#include <vector>

#include "costmodel/op_desc.h"

namespace dpro::costmodel {

enum class AstNodeKind : std::uint8_t { kSeq, kLoop, kReduceLoop, kStore };

enum class StoreKind : std::uint8_t {
  kMultiplyAdd, kConvMultiplyAdd, kAdd, kMul, kDiv, kPow, kMaxReduce, kExpSumReduce,
  kSumReduce, kNormalize, kGelu, kRelu, kTanh,
};
constexpr int kStoreKindCount = 13;

struct AstNode {
  AstNodeKind kind = AstNodeKind::kSeq;
  std::int64_t extent = 1;  // loops
  std::vector<int> children;  // indices into CompactAst::nodes
  // Stores only:
  StoreKind store = StoreKind::kAdd;
  double flops = 0, bytes_read = 0, bytes_written = 0, elements = 0, reduce_extent = 1;
  int dtype_bytes = 4;
  int window_stride = 0;  // sliding-window (convolution) stride; 0 for other stores
};

struct CompactAst {
  std::vector<AstNode> nodes;  // nodes[0] is the root
  int store_count() const;
};

// nullopt when the op is not describable.
std::optional<CompactAst> build_ast(const OpDesc& op);
// One tree whose root sequence holds each part's tree: the fused kernel of the parts.
CompactAst fuse(const std::vector<CompactAst>& parts);

constexpr int kMaxAstTokens = 16;
constexpr int kPositionalDims = 8;
// Token layout: [0,14) node kind, extent, depth and store features; [14,19) loop tiling
// features; then the store-kind one-hot; then the positional encoding.
constexpr int kLoopTilingOffset = 14;
constexpr int kStoreKindOffset = 19;
constexpr int kPositionalOffset = kStoreKindOffset + kStoreKindCount;
constexpr int kTokenFeatures = kPositionalOffset + kPositionalDims;  // 40

// Parallel (non-reduction) loop extents enclosing the store with the most flops, outermost
// first: the output iteration space that a kernel tiles.
std::vector<std::int64_t> dominant_store_space(const CompactAst& ast);

// Writes up to kMaxAstTokens rows of kTokenFeatures floats to `out` (the caller zeroes it)
// and returns the token count; nullopt when the tree has more nodes than kMaxAstTokens.
std::optional<int> serialise(const CompactAst& ast, float* out);

}  // namespace dpro::costmodel
