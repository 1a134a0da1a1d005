// Text, CSV and JSON of the operators, overlap, idle, memory and phases tables (tables.h).
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/error.h"
#include "replayer/tables.h"
#include "replayer/tables_internal.h"

namespace dpro::replayer {

using nlohmann::json;

namespace {

std::string step_text(std::int64_t step) { return step < 0 ? std::string("all") : std::to_string(step); }
json step_json(std::int64_t step) { return step < 0 ? json(nullptr) : json(step); }
std::string opt_csv(const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : std::string(); }
json opt_json(const std::optional<std::int64_t>& v) { return v ? json(*v) : json(nullptr); }

std::string mib(const std::optional<std::int64_t>& bytes) {
  return bytes ? fmt::format("{:.1f} MiB", static_cast<double>(*bytes) / (1024.0 * 1024.0)) : std::string("-");
}

Nanos per(Nanos total, const Tables& t) { return total / static_cast<Nanos>(std::max<std::size_t>(1, t.iterations)); }
std::string dur(Nanos total, const Tables& t) { return format_duration(per(total, t)); }

std::string share(Nanos part, Nanos whole) {
  return whole > 0 ? fmt::format("{:.1f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole)) : std::string("-");
}

// Rows summed per key (rank, or rank and phase) in first-seen order.
template <typename Row, typename Key>
std::vector<Row> summed(const std::vector<Row>& rows, Key key, void (*add)(Row&, const Row&)) {
  std::vector<Row> out;
  std::map<decltype(key(rows.front())), std::size_t> index;
  for (const Row& r : rows) {
    auto [it, fresh] = index.try_emplace(key(r), out.size());
    if (fresh) {
      out.push_back(r);
      out.back().step = -1;
    } else {
      add(out[it->second], r);
    }
  }
  return out;
}

void add_overlap(OverlapRow& a, const OverlapRow& b) {
  a.span += b.span, a.compute += b.compute, a.communication += b.communication, a.overlapped += b.overlapped;
}
void add_idle(IdleRow& a, const IdleRow& b) {
  a.span += b.span, a.idle += b.idle, a.host_wait += b.host_wait, a.kernel_wait += b.kernel_wait;
  a.peer_wait += b.peer_wait, a.other += b.other;
}
void add_phase(PhaseRow& a, const PhaseRow& b) { a.ranges += b.ranges, a.cpu += b.cpu, a.gpu += b.gpu; }

std::string overlap_line(const OverlapRow& r, const Tables& t, bool mean) {
  const auto d = [&](Nanos v) { return mean ? dur(v, t) : format_duration(v); };
  return fmt::format("  {:>4}  {:>5}  {:>12}  {:>12}  {:>13}  {:>12}  {:>12}  {:>7}\n", r.rank, mean ? "mean" : step_text(r.step),
                     d(r.span), d(r.compute), d(r.communication), d(r.overlapped), d(r.exposed()),
                     r.communication > 0 ? fmt::format("{:.1f}%", 100.0 * r.hidden()) : std::string("-"));
}

std::string idle_line(const IdleRow& r, const Tables& t, bool mean) {
  const auto d = [&](Nanos v) { return mean ? dur(v, t) : format_duration(v); };
  return fmt::format("  {:>4}  {:>5}  {:>12}  {:>12} {:>6}  {:>12}  {:>12}  {:>12}  {:>12}\n", r.rank, mean ? "mean" : step_text(r.step),
                     d(r.span), d(r.idle), share(r.idle, r.span), d(r.host_wait), d(r.kernel_wait), d(r.peer_wait), d(r.other));
}

std::string phase_line(const PhaseRow& r, const Tables& t, bool mean) {
  const auto d = [&](Nanos v) { return mean ? dur(v, t) : format_duration(v); };
  return fmt::format("  {:>4}  {:>5}  {:>7}  {:>12}  {:>12}  {}\n", r.rank, mean ? "mean" : step_text(r.step), r.ranges, d(r.cpu),
                     d(r.gpu), r.phase.substr(0, 80));
}

}  // namespace

const std::vector<std::string>& table_names() {
  static const std::vector<std::string> names = {"gpu_ops", "collectives", "operators", "overlap", "idle", "memory", "phases"};
  return names;
}

std::string csv_field(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string render_operators(const Tables& t, std::size_t top) {
  std::string out = fmt::format(
      "CPU operators over {} iteration(s), by self time (measured, per iteration; gpu: the GPU time of the work each\n"
      "launched, directly (self) and with its children):\n"
      "  {:>4}  {:>8}  {:>12}  {:>12}  {:>12}  {:>12}  {}  [shapes]\n",
      t.iterations, "rank", "count", "self", "total", "gpu self", "gpu", "name");
  if (t.operators.empty()) out += "  none\n";
  for (std::size_t k = 0; k < std::min(top, t.operators.size()); ++k) {
    const OperatorRow& r = t.operators[k];
    out += fmt::format("  {:>4}  {:>8}  {:>12}  {:>12}  {:>12}  {:>12}  {}{}\n", r.rank, r.count, dur(r.self, t), dur(r.total, t),
                       dur(r.gpu_self, t), dur(r.gpu, t), r.name.substr(0, 80),
                       r.shapes.empty() ? std::string() : "  " + r.shapes.substr(0, 60));
  }
  if (t.operators.size() > top) out += fmt::format("  ... {} more (--top)\n", t.operators.size() - top);
  return out;
}

std::string render_overlap(const Tables& t, bool per_step) {
  std::string out = fmt::format(
      "communication vs computation on the GPU, {} iteration(s) (replayed; union over streams; exposed: communication\n"
      "with no compute beside it; hidden: the share of communication overlapped):\n"
      "  {:>4}  {:>5}  {:>12}  {:>12}  {:>13}  {:>12}  {:>12}  {:>7}\n",
      t.iterations, "rank", "step", "step time", "compute", "communication", "overlapped", "exposed", "hidden");
  if (t.overlap.empty()) return out + "  none\n";
  for (const OverlapRow& r : summed(t.overlap, [](const OverlapRow& r) { return r.rank; }, add_overlap)) {
    out += overlap_line(r, t, true);
    if (per_step && t.iterations > 1)  // one step: its line is the mean
      for (const OverlapRow& s : t.overlap)
        if (s.rank == r.rank) out += overlap_line(s, t, false);
  }
  return out;
}

std::string render_idle(const Tables& t, bool per_step) {
  std::string out = fmt::format(
      "GPU idle time by cause, {} iteration(s) (replayed; what ended each idle gap: host wait = its launch, kernel\n"
      "wait = the GPU work before it, peer wait = a peer's collective, other = syncs, the tail after the last op):\n"
      "  {:>4}  {:>5}  {:>12}  {:>19}  {:>12}  {:>12}  {:>12}  {:>12}\n",
      t.iterations, "rank", "step", "step time", "idle", "host wait", "kernel wait", "peer wait", "other");
  if (t.idle.empty()) return out + "  none\n";
  for (const IdleRow& r : summed(t.idle, [](const IdleRow& r) { return r.rank; }, add_idle)) {
    out += idle_line(r, t, true);
    if (per_step && t.iterations > 1)  // one step: its line is the mean
      for (const IdleRow& s : t.idle)
        if (s.rank == r.rank) out += idle_line(s, t, false);
  }
  return out;
}

std::string render_memory(const Tables& t) {
  std::string out = fmt::format("GPU memory per rank (Kineto [memory] events; a step's peak includes what it started with):\n"
                                "  {:>4}  {:>5}  {:>16}  {:>16}  {:>8}\n",
                                "rank", "step", "peak allocated", "peak reserved", "samples");
  for (const MemoryRow& r : t.memory) {
    if (!r.recorded) out += fmt::format("  {:>4}  {:>5}  not recorded (profile_memory=True records it)\n", r.rank, step_text(r.step));
    else out += fmt::format("  {:>4}  {:>5}  {:>16}  {:>16}  {:>8}\n", r.rank, step_text(r.step), mib(r.peak_allocated),
                            mib(r.peak_reserved), r.samples);
  }
  return out;
}

std::string render_phases(const Tables& t, bool per_step) {
  std::string out = fmt::format(
      "phases by annotation, {} iteration(s) (measured; cpu: the union of its ranges; gpu: the GPU time of the work\n"
      "launched from inside them):\n  {:>4}  {:>5}  {:>7}  {:>12}  {:>12}  {}\n",
      t.iterations, "rank", "step", "ranges", "cpu", "gpu", "phase");
  if (t.phases.empty()) return out + "  none (no forward/backward/optimizer annotations or autograd ops in the steps)\n";
  const auto key = [](const PhaseRow& r) { return std::make_pair(r.rank, r.phase); };
  for (const PhaseRow& r : summed(t.phases, key, add_phase)) {
    out += phase_line(r, t, true);
    if (per_step && t.iterations > 1)  // one step: its line is the mean
      for (const PhaseRow& s : t.phases)
        if (key(s) == key(r)) out += phase_line(s, t, false);
  }
  return out;
}

std::string operators_csv(const Tables& t) {
  std::string out = "rank,name,count,self_ns,total_ns,gpu_self_ns,gpu_ns,shapes\n";
  for (const OperatorRow& r : t.operators)
    out += fmt::format("{},{},{},{},{},{},{},{}\n", r.rank, csv_field(r.name), r.count, r.self, r.total, r.gpu_self, r.gpu,
                       csv_field(r.shapes));
  return out;
}

std::string overlap_csv(const Tables& t) {
  std::string out = "rank,step,step_ns,compute_ns,communication_ns,overlapped_ns,exposed_ns,hidden\n";
  for (const OverlapRow& r : t.overlap)
    out += fmt::format("{},{},{},{},{},{},{},{:.6f}\n", r.rank, r.step, r.span, r.compute, r.communication, r.overlapped,
                       r.exposed(), r.hidden());
  return out;
}

std::string idle_csv(const Tables& t) {
  std::string out = "rank,step,step_ns,idle_ns,host_wait_ns,kernel_wait_ns,peer_wait_ns,other_ns\n";
  for (const IdleRow& r : t.idle)
    out += fmt::format("{},{},{},{},{},{},{},{}\n", r.rank, r.step, r.span, r.idle, r.host_wait, r.kernel_wait, r.peer_wait, r.other);
  return out;
}

std::string memory_csv(const Tables& t) {
  std::string out = "rank,step,recorded,peak_allocated_bytes,peak_reserved_bytes,samples\n";
  for (const MemoryRow& r : t.memory)
    out += fmt::format("{},{},{},{},{},{}\n", r.rank, r.step, r.recorded ? 1 : 0, opt_csv(r.peak_allocated),
                       opt_csv(r.peak_reserved), r.samples);
  return out;
}

std::string phases_csv(const Tables& t) {
  std::string out = "rank,step,phase,ranges,cpu_ns,gpu_ns\n";
  for (const PhaseRow& r : t.phases)
    out += fmt::format("{},{},{},{},{},{}\n", r.rank, r.step, csv_field(r.phase), r.ranges, r.cpu, r.gpu);
  return out;
}

std::string render_table(const Tables& t, const std::string& name, std::size_t top, bool per_step) {
  if (name == "gpu_ops") return render_gpu_ops(t, top);
  if (name == "collectives") return render_collectives(t, top);
  if (name == "operators") return render_operators(t, top);
  if (name == "overlap") return render_overlap(t, per_step);
  if (name == "idle") return render_idle(t, per_step);
  if (name == "memory") return render_memory(t);
  DPRO_CHECK(name == "phases");
  return render_phases(t, per_step);
}

std::string table_csv(const Tables& t, const std::string& name) {
  if (name == "gpu_ops") return gpu_ops_csv(t);
  if (name == "collectives") return collectives_csv(t);
  if (name == "operators") return operators_csv(t);
  if (name == "overlap") return overlap_csv(t);
  if (name == "idle") return idle_csv(t);
  if (name == "memory") return memory_csv(t);
  DPRO_CHECK(name == "phases");
  return phases_csv(t);
}

void add_views_json(const Tables& t, json& out) {
  json ops = json::array(), overlap = json::array(), idle = json::array(), memory = json::array(), phases = json::array();
  for (const OperatorRow& r : t.operators)
    ops.push_back({{"rank", r.rank}, {"name", r.name}, {"count", r.count}, {"self_ns", r.self}, {"total_ns", r.total},
                   {"gpu_self_ns", r.gpu_self}, {"gpu_ns", r.gpu}, {"shapes", r.shapes}});
  for (const OverlapRow& r : t.overlap)
    overlap.push_back({{"rank", r.rank}, {"step", step_json(r.step)}, {"step_ns", r.span}, {"compute_ns", r.compute},
                       {"communication_ns", r.communication}, {"overlapped_ns", r.overlapped}, {"exposed_ns", r.exposed()},
                       {"hidden", r.hidden()}});
  for (const IdleRow& r : t.idle)
    idle.push_back({{"rank", r.rank}, {"step", step_json(r.step)}, {"step_ns", r.span}, {"idle_ns", r.idle},
                    {"host_wait_ns", r.host_wait}, {"kernel_wait_ns", r.kernel_wait}, {"peer_wait_ns", r.peer_wait},
                    {"other_ns", r.other}});
  for (const MemoryRow& r : t.memory)
    memory.push_back({{"rank", r.rank}, {"step", step_json(r.step)}, {"recorded", r.recorded},
                      {"peak_allocated_bytes", opt_json(r.peak_allocated)}, {"peak_reserved_bytes", opt_json(r.peak_reserved)},
                      {"samples", r.samples}});
  for (const PhaseRow& r : t.phases)
    phases.push_back({{"rank", r.rank}, {"step", step_json(r.step)}, {"phase", r.phase}, {"ranges", r.ranges},
                      {"cpu_ns", r.cpu}, {"gpu_ns", r.gpu}});
  out["operators"] = ops;
  out["overlap"] = overlap;
  out["idle"] = idle;
  out["memory"] = memory;
  out["phases"] = phases;
}

}  // namespace dpro::replayer
