#pragma once
// The graph's op table: what a cost model or an executor needs to know about a node's op,
// without the trace it came from. The table holds each distinct op description once (a
// training step repeats the same few hundred ops thousands of times); the Dfg maps each node
// to one entry (Dfg::op_of). Names live in the table's own string pool, so a graph names its
// ops after the trace is gone (a saved graph, a fused op that no trace event describes).
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/id.h"

namespace dpro::graph {

// Index into OpTable; a strong id (core/id.h) like the graph's node, edge and track ids. Its
// none (the default) means "no description".
using OpId = Id<struct OpTag>;
inline constexpr OpId kNoOp = OpId::none();

// A string of the op table's own pool; 0 is the empty string. Distinct from the trace's
// StringId: a trace id is not a valid NameId. Not an Id<>: it has no "none", and its default
// is the empty string, a valid entry.
struct NameId {
  std::uint32_t value = 0;
  bool empty() const { return value == 0; }
  friend bool operator==(NameId a, NameId b) = default;
};

// One input of an op as the framework recorded it ("Input Dims" / "Input type").
struct TensorDesc {
  std::vector<std::int64_t> shape;  // empty for scalars, non-tensors and tensor lists
  NameId dtype;                     // as recorded: "float", "c10::Half", "Scalar", "" ...
  friend bool operator==(const TensorDesc&, const TensorDesc&) = default;
};

// The part of trace::CollectiveInfo that describes the op, not one instance of it (the
// per-group sequence number stays with the graph's barrier edges).
struct CollectiveDesc {
  NameId op;         // normalised: "allreduce", "sendrecv", ...
  NameId group;      // process group name or communicator id
  std::vector<int> group_ranks;
  std::optional<int> group_size;
  std::optional<std::int64_t> in_nelems;
  std::optional<std::int64_t> out_nelems;
  NameId dtype;
  NameId algorithm;
  NameId protocol;
  std::optional<int> channels;
  friend bool operator==(const CollectiveDesc&, const CollectiveDesc&) = default;
};

// The extents of each input in a framework's "Input Dims" text (a JSON list, one entry per
// input: a list of extents for a tensor, [] for a scalar or non-tensor, a list of lists for a
// tensor list): each entry's integer items (none for a tensor list or a non-list entry); no
// entries for text that is not a JSON list. The op table and the cost models read shapes by it.
std::vector<std::vector<std::int64_t>> parse_input_dims(std::string_view text);

enum class NodeKind : std::uint8_t;  // dfg.h

// What one op is.
struct OpDesc {
  NameId name;                      // the op's own name: kernel, runtime call, aten op
  NodeKind kind{};
  NameId launcher;                  // GPU ops: the framework op that launched them, if known
  std::vector<TensorDesc> inputs;   // CPU ops: their own; GPU ops: their launcher's
  std::optional<std::int64_t> bytes;  // copies and memsets: bytes moved or set
  std::optional<std::int64_t> flops;  // where the trace gives them (no importer does yet)
  std::optional<std::array<int, 3>> grid;
  std::optional<std::array<int, 3>> block;
  std::optional<CollectiveDesc> collective;
  std::vector<OpId> parts;          // a fused op: the ops it replaced, in order; else empty
  friend bool operator==(const OpDesc&, const OpDesc&) = default;
};

// Owns the op descriptions and their names. Copyable (what-ifs copy graphs). Ids stay valid
// for the table's lifetime: entries are only ever appended.
//
// Entries are never changed once added, so a table can hand its entries to an immutable part
// that its copies share (share()): a copy then copies a pointer and the entries added since,
// not every description and name. A caller that copies one graph many times (the optimizer's
// incremental evaluation, optimizer/incremental.h) shares its table once. Every accessor gives
// the same result either way.
class OpTable {
 public:
  OpTable();

  // Appends `desc` as a new entry (no deduplication: the builder deduplicates on the raw
  // trace text before parsing, which is cheaper than comparing parsed descriptions).
  OpId add(OpDesc desc);
  const OpDesc& op(OpId id) const {
    return id.value < shared_ops_ ? shared_->ops[id.value] : ops_[id.value - shared_ops_];
  }
  std::size_t size() const { return shared_ops_ + ops_.size(); }

  NameId intern(std::string_view text);
  std::string_view name(NameId id) const {
    return id.value < shared_names_ ? std::string_view(shared_->names[id.value]) : names_[id.value - shared_names_];
  }
  std::size_t name_count() const { return shared_names_ + names_.size(); }

  // Moves every entry and name into the part that copies of this table share (copying them,
  // where a shared part exists already). Changes no id, entry or name.
  void share();

 private:
  struct Shared {
    std::vector<OpDesc> ops;
    std::vector<std::string> names;
    std::unordered_map<std::string, std::uint32_t> name_index;
  };
  std::shared_ptr<const Shared> shared_;  // ops [0, shared_ops_) and names [0, shared_names_); null: none
  std::uint32_t shared_ops_ = 0, shared_names_ = 0;
  std::vector<OpDesc> ops_;  // from shared_ops_ on
  std::vector<std::string> names_;  // from shared_names_ on ([0] = "" when nothing is shared)
  std::unordered_map<std::string, std::uint32_t> name_index_;  // the names of names_, by full id
};

std::vector<TensorDesc> parse_inputs(std::string_view dims_text, std::string_view types_text, OpTable& table);

}  // namespace dpro::graph
