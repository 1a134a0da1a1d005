#include "graph/graph_file.h"

#include <cstring>
#include <fstream>

#include "core/byte_source.h"
#include "core/error.h"
#include "core/output_file.h"

namespace dpro::graph {
namespace {

constexpr char kMagic[8] = {'D', 'P', 'R', 'O', 'G', 'R', 'P', 'H'};

class Writer {
 public:
  template <typename T> void put(T value) {
    static_assert(std::is_integral_v<T>);
    for (std::size_t i = 0; i < sizeof(T); ++i) out_ += static_cast<char>((static_cast<std::uint64_t>(value) >> (8 * i)) & 0xff);
  }
  void put_count(std::size_t n) { put(static_cast<std::uint32_t>(n)); }
  void put_string(std::string_view s) {
    put_count(s.size());
    out_.append(s);
  }
  template <typename T> void put_optional(const std::optional<T>& v) {
    put<std::uint8_t>(v ? 1 : 0);
    if (v) put(*v);
  }
  void put_dims(const std::optional<std::array<int, 3>>& v) {
    put<std::uint8_t>(v ? 1 : 0);
    if (v) {
      for (int d : *v) put<std::int32_t>(d);
    }
  }
  std::string& bytes() { return out_; }

 private:
  std::string out_;
};

class Reader {
 public:
  Reader(std::string_view bytes, const std::string& file) : bytes_(bytes), file_(file) {}

  // What the next error names: "node 12", "edge 7", ...
  void at(std::string item) { item_ = std::move(item); }
  [[noreturn]] void fail(const std::string& message) const { throw InputError(file_, item_, message); }

  template <typename T> T get() {
    static_assert(std::is_integral_v<T>);
    if (bytes_.size() - pos_ < sizeof(T)) fail("the file ends early (truncated?)");
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes_[pos_ + i])) << (8 * i);
    pos_ += sizeof(T);
    return static_cast<T>(v);
  }
  // A count of records of at least `min_record` bytes each: refused when the rest of the file
  // cannot hold them (a corrupt count must not allocate gigabytes).
  std::size_t get_count(std::size_t min_record) {
    const auto n = get<std::uint32_t>();
    if (static_cast<std::uint64_t>(n) * min_record > bytes_.size() - pos_) {
      fail("count " + std::to_string(n) + " is larger than the rest of the file can hold (truncated or corrupt)");
    }
    return n;
  }
  std::string get_string() {
    const std::size_t n = get_count(1);
    std::string s(bytes_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  // A 0/1 byte: whether an optional field, or a section, follows.
  bool get_flag(const char* what) {
    const auto flag = get<std::uint8_t>();
    if (flag > 1) fail("bad " + std::string(what) + " flag " + std::to_string(flag));
    return flag == 1;
  }
  // An enumerator stored as a byte, at most `last`.
  template <typename E> E get_enum(E last, const char* what) {
    const auto v = get<std::uint8_t>();
    if (v > static_cast<std::uint8_t>(last)) fail("bad " + std::string(what) + " " + std::to_string(v));
    return static_cast<E>(v);
  }
  template <typename T> std::optional<T> get_optional() {
    if (!get_flag("optional")) return std::nullopt;
    return get<T>();
  }
  std::optional<std::array<int, 3>> get_dims() {
    if (!get_flag("optional")) return std::nullopt;
    std::array<int, 3> d{};
    for (int& x : d) x = get<std::int32_t>();
    return d;
  }
  std::string_view take(std::size_t n) {
    if (bytes_.size() - pos_ < n) fail("the file ends early (truncated?)");
    const auto s = bytes_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  bool done() const { return pos_ == bytes_.size(); }

 private:
  std::string_view bytes_;
  std::size_t pos_ = 0;
  const std::string& file_;
  std::string item_ = "header";
};

constexpr NodeKind kLastNodeKind = NodeKind::kUntraced;
// Version 1 files were written before NodeKind::kUntraced: their kinds end at kBarrier (their
// untraced time is the delay of the op after it, which replays the same).
constexpr NodeKind kLastNodeKindV1 = NodeKind::kBarrier;
constexpr std::uint32_t kOldestGraphFileVersion = 1;
constexpr EdgeKind kLastEdgeKind = EdgeKind::kLaunchQueue;

void put_op(Writer& w, const OpDesc& op) {
  w.put(op.name.value);
  w.put(static_cast<std::uint8_t>(op.kind));
  w.put(op.launcher.value);
  w.put_count(op.inputs.size());
  for (const TensorDesc& t : op.inputs) {
    w.put_count(t.shape.size());
    for (std::int64_t d : t.shape) w.put(d);
    w.put(t.dtype.value);
  }
  w.put_optional(op.bytes);
  w.put_optional(op.flops);
  w.put_dims(op.grid);
  w.put_dims(op.block);
  w.put<std::uint8_t>(op.collective ? 1 : 0);
  if (const auto& c = op.collective) {
    w.put(c->op.value);
    w.put(c->group.value);
    w.put_count(c->group_ranks.size());
    for (int r : c->group_ranks) w.put<std::int32_t>(r);
    w.put_optional(c->group_size);
    w.put_optional(c->in_nelems);
    w.put_optional(c->out_nelems);
    w.put(c->dtype.value);
    w.put(c->algorithm.value);
    w.put(c->protocol.value);
    w.put_optional(c->channels);
  }
  w.put_count(op.parts.size());
  for (OpId p : op.parts) w.put(p.value);
}

class GraphReader {
 public:
  GraphReader(std::string_view bytes, const std::string& file) : r_(bytes, file) {}

  Dfg read() {
    if (r_.take(sizeof(kMagic)) != std::string_view(kMagic, sizeof(kMagic))) r_.fail("not a dpro graph file (bad magic)");
    const auto version = r_.get<std::uint32_t>();
    if (version < kOldestGraphFileVersion || version > kGraphFileVersion) {
      r_.fail("version " + std::to_string(version) + " is not supported (this build reads versions " +
              std::to_string(kOldestGraphFileVersion) + " to " + std::to_string(kGraphFileVersion) + ")");
    }
    last_kind_ = version == 1 ? kLastNodeKindV1 : kLastNodeKind;
    dfg_.set_origin(r_.get<std::int64_t>());
    read_names();
    read_tracks();
    read_ops();
    read_nodes();
    read_edges();
    r_.at("end");
    if (!r_.done()) r_.fail("unexpected bytes after the last edge");
    dfg_.finalize();
    return std::move(dfg_);
  }

 private:
  NameId name(const char* field) {
    const NameId id{r_.get<std::uint32_t>()};
    if (id.value >= name_ids_.size()) r_.fail(std::string(field) + ": name " + std::to_string(id.value) + " is not in the name table");
    return name_ids_[id.value];
  }

  void read_names() {
    r_.at("names");
    const std::size_t n = r_.get_count(4);
    name_ids_.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      r_.at("name " + std::to_string(i));
      name_ids_.push_back(dfg_.ops().intern(r_.get_string()));
    }
  }

  void read_tracks() {
    r_.at("tracks");
    const std::size_t n = r_.get_count(25);
    for (std::size_t i = 0; i < n; ++i) {
      r_.at("track " + std::to_string(i));
      Track t;
      t.rank = r_.get<std::int32_t>();
      t.kind = r_.get_enum(trace::ResourceKind::kGpuStream, "kind");
      t.pid = r_.get<std::int64_t>();
      t.tid = r_.get<std::int64_t>();
      t.name = r_.get_string();
      dfg_.add_track(t);
    }
  }

  void read_ops() {
    r_.at("ops");
    const std::size_t n = r_.get_count(22);
    std::vector<OpDesc> ops(n);
    for (std::size_t i = 0; i < n; ++i) {
      r_.at("op " + std::to_string(i));
      OpDesc& op = ops[i];
      op.name = name("name");
      op.kind = r_.get_enum(last_kind_, "kind");
      op.launcher = name("launcher");
      op.inputs.resize(r_.get_count(8));
      for (TensorDesc& t : op.inputs) {
        t.shape.resize(r_.get_count(8));
        for (std::int64_t& d : t.shape) d = r_.get<std::int64_t>();
        t.dtype = name("input dtype");
      }
      op.bytes = r_.get_optional<std::int64_t>();
      op.flops = r_.get_optional<std::int64_t>();
      op.grid = r_.get_dims();
      op.block = r_.get_dims();
      if (r_.get_flag("collective")) {
        CollectiveDesc c;
        c.op = name("collective op");
        c.group = name("collective group");
        c.group_ranks.resize(r_.get_count(4));
        for (int& rank : c.group_ranks) rank = r_.get<std::int32_t>();
        c.group_size = r_.get_optional<std::int32_t>();
        c.in_nelems = r_.get_optional<std::int64_t>();
        c.out_nelems = r_.get_optional<std::int64_t>();
        c.dtype = name("collective dtype");
        c.algorithm = name("collective algorithm");
        c.protocol = name("collective protocol");
        c.channels = r_.get_optional<std::int32_t>();
        op.collective = std::move(c);
      }
      op.parts.resize(r_.get_count(4));
      for (OpId& p : op.parts) {
        p = OpId{r_.get<std::uint32_t>()};
        if (p.valid() && !p.below(n)) r_.fail("part op " + std::to_string(p.value) + " is not in the op table");
      }
    }
    for (OpDesc& op : ops) dfg_.ops().add(std::move(op));
  }

  void read_nodes() {
    r_.at("nodes");
    const std::size_t n = r_.get_count(58);
    for (std::size_t i = 0; i < n; ++i) {
      r_.at("node " + std::to_string(i));
      Node node;
      node.kind = r_.get_enum(last_kind_, "kind");
      node.rank = r_.get<std::int32_t>();
      node.track = TrackId{r_.get<std::uint32_t>()};
      if (node.track.valid() && !dfg_.tracks().contains(node.track)) r_.fail("track " + to_string(node.track) + " does not exist");
      node.name = StringId{r_.get<std::uint32_t>()};
      node.measured_start = r_.get<std::int64_t>();
      node.measured_duration = r_.get<std::int64_t>();
      node.duration = r_.get<std::int64_t>();
      if (node.duration < 0) r_.fail("negative duration " + std::to_string(node.duration));
      node.delay = r_.get<std::int64_t>();
      node.release = r_.get_optional<std::int64_t>();
      node.event = EventRef{r_.get<std::uint32_t>()};
      node.parent_op = EventRef{r_.get<std::uint32_t>()};
      const OpId op{r_.get<std::uint32_t>()};
      if (op.valid() && !op.below(dfg_.ops().size())) r_.fail("op " + std::to_string(op.value) + " is not in the op table");
      const NodeId id = dfg_.add_node(node);
      if (op.valid()) dfg_.set_op(id, op);
    }
  }

  void read_edges() {
    r_.at("edges");
    const std::size_t n = r_.get_count(19);
    for (std::size_t i = 0; i < n; ++i) {
      r_.at("edge " + std::to_string(i));
      Edge e;
      e.src = NodeId{r_.get<std::uint32_t>()};
      e.dst = NodeId{r_.get<std::uint32_t>()};
      if (!dfg_.nodes().contains(e.src)) r_.fail("src " + to_string(e.src) + " is not a node");
      if (!dfg_.nodes().contains(e.dst)) r_.fail("dst " + to_string(e.dst) + " is not a node");
      e.kind = r_.get_enum(kLastEdgeKind, "kind");
      for (Point* p : {&e.src_point, &e.dst_point}) *p = r_.get_enum(Point::kEnd, "point");
      e.gap = r_.get<std::int64_t>();
      dfg_.add_edge(e);
    }
  }

  Reader r_;
  Dfg dfg_;
  std::vector<NameId> name_ids_;  // file's name index -> this table's (equal unless the file repeats a name)
  NodeKind last_kind_ = kLastNodeKind;  // the last node kind the file's version knows
};

}  // namespace

std::string graph_to_bytes(const Dfg& dfg) {
  Writer w;
  w.bytes().append(kMagic, sizeof(kMagic));
  w.put(kGraphFileVersion);
  w.put<std::int64_t>(dfg.origin());
  const OpTable& ops = dfg.ops();
  w.put_count(ops.name_count());
  for (std::uint32_t i = 0; i < ops.name_count(); ++i) w.put_string(ops.name(NameId{i}));
  w.put_count(dfg.tracks().size());
  for (const Track& t : dfg.tracks()) {
    w.put<std::int32_t>(t.rank);
    w.put(static_cast<std::uint8_t>(t.kind));
    w.put<std::int64_t>(t.pid);
    w.put<std::int64_t>(t.tid);
    w.put_string(t.name);
  }
  w.put_count(ops.size());
  for (std::uint32_t i = 0; i < ops.size(); ++i) put_op(w, ops.op(OpId{i}));
  w.put_count(dfg.node_count());
  for (const NodeId id : dfg.node_ids()) {
    const Node& n = dfg.node(id);
    w.put(static_cast<std::uint8_t>(n.kind));
    w.put<std::int32_t>(n.rank);
    w.put(n.track.value);
    w.put(n.name.value);
    w.put<std::int64_t>(n.measured_start);
    w.put<std::int64_t>(n.measured_duration);
    w.put<std::int64_t>(n.duration);
    w.put<std::int64_t>(n.delay);
    w.put_optional<std::int64_t>(n.release);
    w.put(n.event.value);
    w.put(n.parent_op.value);
    w.put(dfg.op_of(id).value);
  }
  w.put_count(dfg.edge_count());
  for (const Edge& e : dfg.edges()) {
    w.put(e.src.value);
    w.put(e.dst.value);
    w.put(static_cast<std::uint8_t>(e.kind));
    w.put(static_cast<std::uint8_t>(e.src_point));
    w.put(static_cast<std::uint8_t>(e.dst_point));
    w.put<std::int64_t>(e.gap);
  }
  return std::move(w.bytes());
}

Dfg graph_from_bytes(std::string_view bytes, const std::string& file) { return GraphReader(bytes, file).read(); }

void save_graph(const Dfg& dfg, const std::string& path, bool replace) {
  const std::string bytes = graph_to_bytes(dfg);
  write_output(path, [&](std::ostream& out) { out.write(bytes.data(), static_cast<std::streamsize>(bytes.size())); },
               replace);
}

Dfg load_graph(const std::string& path) {
  reject_directory(path, "a dpro graph file");
  return graph_from_bytes(read_whole_file(path), path);
}

}  // namespace dpro::graph
