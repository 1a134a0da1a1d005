// Fills the graph's op table from the trace: one pass over the nodes, each distinct
// description parsed and stored once. The trace's raw "Input Dims" / "Input type" texts are
// the deduplication key before parsing, so a job's thousands of identical op instances cost
// one hash lookup each.
#include <unordered_map>

#include "graph/builder_internal.h"

namespace dpro::graph {
namespace {

// No entry: an index into one of OpDescriber's tables, or a name not yet interned.
constexpr std::uint32_t kNoIndex = 0xffffffffu;

// Everything that distinguishes one description from another, in ids.
struct OpKey {
  NodeKind kind{};
  std::uint32_t name = 0;
  std::uint32_t launcher = 0;
  std::uint32_t inputs = kNoIndex;      // index into OpDescriber::inputs_
  std::uint32_t collective = kNoIndex;  // index into OpDescriber::collectives_
  std::optional<std::int64_t> bytes;
  std::optional<std::array<int, 3>> grid;
  std::optional<std::array<int, 3>> block;
  friend bool operator==(const OpKey&, const OpKey&) = default;
};

struct OpKeyHash {
  std::size_t operator()(const OpKey& k) const noexcept {
    std::uint64_t h = 0x9e3779b97f4a7c15ull;
    auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 0x100000001b3ull; h ^= h >> 29; };
    mix(static_cast<std::uint64_t>(k.kind));
    mix(k.name);
    mix(k.launcher);
    mix(k.inputs);
    mix(k.collective);
    mix(k.bytes ? static_cast<std::uint64_t>(*k.bytes) : 0x5bd1e995u);
    for (const auto* dims : {&k.grid, &k.block}) {
      if (*dims) {
        for (int d : **dims) mix(static_cast<std::uint64_t>(d));
      }
    }
    return static_cast<std::size_t>(h);
  }
};

class OpDescriber {
 public:
  OpDescriber(const trace::TraceSet& traces, Dfg& dfg)
      : traces_(traces), dfg_(dfg), names_(traces.strings.size(), kNoIndex) {}

  void describe_all() {
    const trace::TraceRank* rank = nullptr;  // the last node's (nodes come rank by rank)
    std::vector<NodeId> barriers;
    for (const NodeId id : dfg_.node_ids()) {
      const Node& n = dfg_.node(id);
      if (n.kind == NodeKind::kBarrier) {
        barriers.push_back(id);
        continue;
      }
      if (n.kind == NodeKind::kUntraced) continue;  // no op
      if (!rank || rank->rank != n.rank) rank = traces_.find_rank(n.rank);
      if (rank) dfg_.set_op(id, describe(*rank, n));
    }
    if (!barriers.empty()) describe_barriers();
  }

 private:
  OpId describe(const trace::TraceRank& rank, const Node& n) {
    OpKey key;
    key.kind = n.kind;
    key.name = name_of(n.name).value;
    const trace::Event* event = event_of(rank, n.event);
    const trace::EventAttrs* own = event ? rank.attrs_of(*event) : nullptr;
    const trace::EventAttrs* inputs_from = own;
    if (on_gpu(n.kind)) {
      inputs_from = nullptr;
      if (const trace::Event* launcher = event_of(rank, n.parent_op)) {
        key.launcher = name_of(launcher->name).value;
        inputs_from = rank.attrs_of(*launcher);
      }
    }
    if (inputs_from && (!inputs_from->input_dims.empty() || !inputs_from->input_types.empty())) {
      key.inputs = inputs_of(*inputs_from);
    }
    if (own) {
      key.bytes = own->bytes;
      key.grid = own->grid;
      key.block = own->block;
    }
    const trace::CollectiveInfo* info = n.kind == NodeKind::kCollective ? collective_info(rank, n)
                                        : own && own->collective      ? &*own->collective
                                                                      : nullptr;
    if (info) key.collective = collective_of(*info);
    auto [it, inserted] = ops_.try_emplace(key, kNoOp);
    if (inserted) it->second = dfg_.ops().add(make_desc(key));
    return it->second;
  }

  OpDesc make_desc(const OpKey& key) const {
    OpDesc d;
    d.kind = key.kind;
    d.name = NameId{key.name};
    d.launcher = NameId{key.launcher};
    if (key.inputs != kNoIndex) d.inputs = inputs_[key.inputs];
    if (key.collective != kNoIndex) d.collective = collectives_[key.collective];
    d.bytes = key.bytes;
    d.grid = key.grid;
    d.block = key.block;
    return d;
  }

  // A barrier is described as the collective it joins: its first participant's op.
  void describe_barriers() {
    std::unordered_map<OpId, OpId> barrier_op_of;  // participant op -> barrier op
    for (const Edge& e : dfg_.edges()) {
      if (e.kind != EdgeKind::kCollective || dfg_.node(e.dst).kind != NodeKind::kBarrier) continue;
      if (dfg_.op_of(e.dst).valid() || !dfg_.op_of(e.src).valid()) continue;
      const OpId participant = dfg_.op_of(e.src);
      auto [it, inserted] = barrier_op_of.try_emplace(participant, kNoOp);
      if (inserted) {
        OpDesc d = dfg_.ops().op(participant);
        d.kind = NodeKind::kBarrier;
        d.bytes.reset();
        d.grid.reset();
        d.block.reset();
        it->second = dfg_.ops().add(std::move(d));
      }
      dfg_.set_op(e.dst, it->second);
    }
  }

  NameId name_of(StringId id) {
    std::uint32_t& cached = names_[id.value];
    if (cached == kNoIndex) cached = dfg_.ops().intern(traces_.strings.view(id)).value;
    return NameId{cached};
  }

  NameId intern(const std::optional<std::string>& text) {
    return text ? dfg_.ops().intern(*text) : NameId{};
  }

  std::uint32_t collective_of(const trace::CollectiveInfo& info) {
    CollectiveDesc c;
    c.op = dfg_.ops().intern(info.op);
    c.group = intern(info.group_name);
    c.group_ranks = info.group_ranks;
    c.group_size = info.group_size;
    c.in_nelems = info.in_nelems;
    c.out_nelems = info.out_nelems;
    c.dtype = intern(info.dtype);
    c.algorithm = intern(info.algorithm);
    c.protocol = intern(info.protocol);
    c.channels = info.channels;
    // Few distinct collectives per job: a linear search is enough.
    for (std::uint32_t i = 0; i < collectives_.size(); ++i) {
      if (collectives_[i] == c) return i;
    }
    collectives_.push_back(std::move(c));
    return static_cast<std::uint32_t>(collectives_.size() - 1);
  }

  std::uint32_t inputs_of(const trace::EventAttrs& a) {
    text_key_.assign(a.input_dims);
    text_key_ += '\x1f';
    text_key_ += a.input_types;
    auto it = inputs_index_.find(text_key_);
    if (it != inputs_index_.end()) return it->second;
    inputs_.push_back(parse_inputs(a.input_dims, a.input_types, dfg_.ops()));
    const auto index = static_cast<std::uint32_t>(inputs_.size() - 1);
    inputs_index_.emplace(text_key_, index);
    return index;
  }

  const trace::TraceSet& traces_;
  Dfg& dfg_;
  std::vector<std::uint32_t> names_;  // trace StringId -> NameId value, kNoIndex until interned
  std::vector<std::vector<TensorDesc>> inputs_;
  std::unordered_map<std::string, std::uint32_t> inputs_index_;  // dims '\x1f' types -> inputs_
  std::string text_key_;
  std::vector<CollectiveDesc> collectives_;
  std::unordered_map<OpKey, OpId, OpKeyHash> ops_;
};

}  // namespace

void describe_ops(const trace::TraceSet& traces, Dfg& dfg) { OpDescriber(traces, dfg).describe_all(); }

}  // namespace dpro::graph
