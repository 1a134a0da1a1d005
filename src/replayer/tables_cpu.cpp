// The tables read from the trace as measured: operators, phases, memory (tables.h).
#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <unordered_map>

#include "replayer/tables.h"
#include "replayer/tables_internal.h"

namespace dpro::replayer {

namespace {

using trace::Event;
using trace::EventKind;
constexpr std::uint32_t kNone = 0xffffffffu;

bool is_op(EventKind k) { return k == EventKind::kCpuOp || k == EventKind::kUserAnnotation; }
bool is_call(EventKind k) { return k == EventKind::kRuntimeCall || k == EventKind::kDriverCall; }

// The CPU-side nesting of one rank: for each operator, annotation and runtime or driver call, the
// one directly around it on its thread (kNone for none and for other events), and the GPU time
// each call launched.
struct Nesting {
  std::vector<std::uint32_t> parent;
  std::vector<Nanos> children;  // time of the direct children
  std::vector<Nanos> launched;  // calls: measured GPU time of the work with their correlation
};

Nesting nest(const trace::TraceRank& rank) {
  const std::vector<Event>& ev = rank.events;
  Nesting n{std::vector<std::uint32_t>(ev.size(), kNone), std::vector<Nanos>(ev.size(), 0), std::vector<Nanos>(ev.size(), 0)};
  std::unordered_map<std::int64_t, Nanos> gpu_by_correlation;
  for (const Event& e : ev)
    if (trace::is_gpu_work(e.kind) && e.correlation) gpu_by_correlation[*e.correlation] += e.dur;
  std::unordered_map<trace::ResourceId, std::vector<std::uint32_t>> stacks;
  // Events are sorted by start, longer first: what is still open and ends no earlier encloses.
  for (std::uint32_t i = 0; i < ev.size(); ++i) {
    const Event& e = ev[i];
    if (!is_op(e.kind) && !is_call(e.kind)) continue;
    std::vector<std::uint32_t>& open = stacks[e.resource];
    while (!open.empty() && ev[open.back()].end() < e.end()) open.pop_back();
    if (!open.empty()) {
      n.parent[i] = open.back();
      n.children[open.back()] += e.dur;
    }
    open.push_back(i);
    if (is_call(e.kind) && e.correlation) {
      // A GPU op counts once, for the first call with its correlation.
      if (auto it = gpu_by_correlation.find(*e.correlation); it != gpu_by_correlation.end()) {
        n.launched[i] = it->second;
        gpu_by_correlation.erase(it);
      }
    }
  }
  return n;
}

std::set<std::uint32_t> markers(const trace::TraceRank& rank) {
  std::set<std::uint32_t> m;
  for (const trace::Iteration& it : rank.iterations) m.insert(it.event);
  return m;
}

struct OpSums {
  OperatorRow row;
  std::map<std::string, std::size_t> shapes;
};

void add_rank_operators(const trace::TraceRank& rank, const std::vector<StepWindow>& windows,
                        std::map<std::pair<int, std::string>, OpSums>& sums, const trace::TraceSet& traces) {
  const Nesting n = nest(rank);
  std::vector<Nanos> gpu_self(rank.events.size(), 0), gpu(rank.events.size(), 0);
  for (std::uint32_t i = 0; i < rank.events.size(); ++i) {
    if (n.launched[i] == 0 || n.parent[i] == kNone) continue;
    if (is_op(rank.events[n.parent[i]].kind)) gpu_self[n.parent[i]] += n.launched[i];
    for (std::uint32_t a = n.parent[i]; a != kNone; a = n.parent[a])
      if (is_op(rank.events[a].kind)) gpu[a] += n.launched[i];
  }
  const std::set<std::uint32_t> marker = markers(rank);
  for (std::uint32_t i = 0; i < rank.events.size(); ++i) {
    const Event& e = rank.events[i];
    if (!is_op(e.kind) || marker.count(i) || !window_of(windows, e.start)) continue;
    OpSums& s = sums[{rank.rank, std::string(traces.name(e))}];
    OperatorRow& r = s.row;
    ++r.count;
    r.total += e.dur;
    r.self += std::max<Nanos>(0, e.dur - n.children[i]);
    r.gpu_self += gpu_self[i];
    r.gpu += gpu[i];
    if (const trace::EventAttrs* a = rank.attrs_of(e); a && !a->input_dims.empty()) ++s.shapes[a->input_dims];
  }
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The phase CPU event `i` marks, "" for none.
std::string phase_of(const trace::TraceSet& traces, const trace::TraceRank& rank, const Nesting& n, std::uint32_t i,
                     const std::set<std::uint32_t>& marker) {
  const Event& e = rank.events[i];
  const std::string_view name = traces.name(e);
  if (e.kind == EventKind::kCpuOp) return name.rfind("autograd::engine::evaluate_function", 0) == 0 ? "backward" : "";
  if (e.kind != EventKind::kUserAnnotation || marker.count(i)) return "";
  const std::string l = lower(name);
  if (l.find("backward") != std::string::npos) return "backward";
  if (l.find("forward") != std::string::npos) return "forward";
  if (l.find("optimizer") != std::string::npos) return "optimizer";
  return n.parent[i] != kNone && marker.count(n.parent[i]) ? std::string(name) : "";
}

}  // namespace

std::vector<OperatorRow> operator_rows(const trace::TraceSet& traces, const Report& report) {
  const auto windows = measured_windows(report);
  std::map<std::pair<int, std::string>, OpSums> sums;
  for (const trace::TraceRank& rank : traces.ranks)
    if (auto w = windows.find(rank.rank); w != windows.end()) add_rank_operators(rank, w->second, sums, traces);
  std::vector<OperatorRow> rows;
  for (auto& [key, s] : sums) {
    s.row.rank = key.first;
    s.row.name = key.second;
    const auto most = std::max_element(s.shapes.begin(), s.shapes.end(),
                                       [](const auto& a, const auto& b) { return a.second < b.second; });
    if (most != s.shapes.end()) s.row.shapes = most->first;
    rows.push_back(std::move(s.row));
  }
  std::stable_sort(rows.begin(), rows.end(), [](const OperatorRow& a, const OperatorRow& b) { return a.self > b.self; });
  return rows;
}

std::vector<PhaseRow> phase_rows(const trace::TraceSet& traces, const Report& report) {
  const auto windows = measured_windows(report);
  std::vector<PhaseRow> rows;
  for (const trace::TraceRank& rank : traces.ranks) {
    const auto w = windows.find(rank.rank);
    if (w == windows.end()) continue;
    const Nesting n = nest(rank);
    const std::set<std::uint32_t> marker = markers(rank);
    // (step, phase) -> its ranges clipped to the step, in the order phases first appear.
    std::map<std::pair<std::int64_t, std::string>, std::vector<Interval>> ranges;
    std::vector<std::pair<std::int64_t, std::string>> order;
    for (std::uint32_t i = 0; i < rank.events.size(); ++i) {
      const Event& e = rank.events[i];
      const StepWindow* step = window_of(w->second, e.start);
      if (!step) continue;
      std::string phase = phase_of(traces, rank, n, i, marker);
      if (phase.empty()) continue;
      auto& list = ranges[{step->step, phase}];
      if (list.empty()) order.emplace_back(step->step, phase);
      list.push_back({e.start, std::min(e.end(), step->end)});
    }
    std::vector<std::pair<Nanos, Nanos>> launches;  // (call start, GPU time launched)
    for (std::uint32_t i = 0; i < rank.events.size(); ++i)
      if (n.launched[i] > 0) launches.emplace_back(rank.events[i].start, n.launched[i]);
    for (const auto& key : order) {
      const std::vector<Interval> merged = merge(ranges[key]);
      PhaseRow r{rank.rank, key.first, key.second, ranges[key].size(), length(merged), 0};
      for (const auto& [at, time] : launches)
        if (covers(merged, at)) r.gpu += time;
      rows.push_back(std::move(r));
    }
  }
  return rows;
}

std::vector<MemoryRow> memory_rows(const trace::TraceSet& traces, const Report& report) {
  const auto windows = measured_windows(report);
  std::vector<MemoryRow> rows;
  for (const trace::TraceRank& rank : traces.ranks) {
    MemoryRow whole{rank.rank, -1, !rank.gpu_memory.empty() || rank.peak_gpu_memory_bytes.has_value(), {}, {}, rank.gpu_memory.size()};
    for (const trace::MemorySample& m : rank.gpu_memory) {
      whole.peak_allocated = std::max(whole.peak_allocated.value_or(0), m.allocated);
      if (m.reserved) whole.peak_reserved = std::max(whole.peak_reserved.value_or(0), *m.reserved);
    }
    if (!whole.peak_reserved && rank.peak_gpu_memory_bytes && rank.gpu_memory.empty()) whole.peak_reserved = rank.peak_gpu_memory_bytes;
    rows.push_back(whole);
    const auto w = windows.find(rank.rank);
    if (w == windows.end() || rank.gpu_memory.empty()) continue;
    for (const StepWindow& step : w->second) {
      // What the allocator held entering the step counts: the last sample before it.
      MemoryRow r{rank.rank, step.step, true, {}, {}, 0};
      const trace::MemorySample* before = nullptr;
      for (const trace::MemorySample& m : rank.gpu_memory) {
        if (m.at < step.begin && (!before || m.at >= before->at)) before = &m;
        if (m.at < step.begin || m.at >= step.end) continue;
        ++r.samples;
        r.peak_allocated = std::max(r.peak_allocated.value_or(0), m.allocated);
        if (m.reserved) r.peak_reserved = std::max(r.peak_reserved.value_or(0), *m.reserved);
      }
      if (before) {
        r.peak_allocated = std::max(r.peak_allocated.value_or(0), before->allocated);
        if (before->reserved) r.peak_reserved = std::max(r.peak_reserved.value_or(0), *before->reserved);
      }
      if (r.peak_allocated) rows.push_back(r);
    }
  }
  return rows;
}

}  // namespace dpro::replayer
