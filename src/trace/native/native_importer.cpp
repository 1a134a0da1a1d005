#include "trace/native/native_importer.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <map>
#include <unordered_map>

#include "core/error.h"
#include "core/strings.h"
#include "trace/iterations.h"
#include "trace/native/native_reader.h"
#include "trace/native/nccl_join.h"
#include "trace/native/nvtx_op_range.h"

namespace dpro::trace {
namespace {

// CUPTI names kernels by their mangled symbol; torch.profiler shows them demangled.
std::string demangle(std::string_view name) {
  if (!name.starts_with("_Z")) return std::string(name);
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> out(abi::__cxa_demangle(std::string(name).c_str(), nullptr, nullptr, &status),
                                                  &std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(name);
}

// cuptiGetCallbackName's "cudaLaunchKernel_v7000" -> "cudaLaunchKernel" (API versions such as
// cuMemcpyHtoD_v2 are part of the name and stay).
std::string_view without_cupti_version(std::string_view name) {
  const auto v = name.rfind("_v");
  if (v == std::string_view::npos || name.size() - v < 6) return name;
  for (std::size_t i = v + 2; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return name;
  return name.substr(0, v);
}

using native::NativeCapture;

const char* memcpy_kind_name(std::uint32_t kind) {
  static const char* kNames[] = {"Memcpy",      "Memcpy HtoD", "Memcpy DtoH", "Memcpy HtoA",
                                 "Memcpy AtoH", "Memcpy AtoA", "Memcpy AtoD", "Memcpy DtoA",
                                 "Memcpy DtoD", "Memcpy HtoH", "Memcpy PtoP"};
  return kind < std::size(kNames) ? kNames[kind] : "Memcpy";
}

const char* sync_kind_name(std::uint32_t type) {
  switch (type) {
    case 1: return "Event Sync";
    case 2: return "Stream Wait Event";
    case 3: return "Stream Sync";
    case 4: return "Context Sync";
    default: return "Unknown Sync";
  }
}

// Builds one TraceRank from a decoded capture. Kept as a class so each record family has
// its own short method; the resource table is local because TraceRank::intern_resource
// lives in dpro_trace, which this library must not depend on.
class RankBuilder {
 public:
  RankBuilder(const NativeCapture& capture, StringTable& strings, Logger& log)
      : c_(capture), strings_(strings), log_(log) {}

  TraceRank build();

 private:
  ResourceId resource(ResourceKind kind, std::int64_t pid, std::int64_t tid);
  Event& add(EventKind kind, Nanos start, Nanos dur, std::string_view name, ResourceId res);
  // Names as torch.profiler shows them: kernels demangled, API calls without CUPTI's version
  // suffix (each distinct name converted once).
  std::string_view kernel_name(std::uint32_t id);
  std::string_view api_name(std::uint32_t id);
  EventAttrs& attrs_of(Event& e);
  void header();
  void apis();
  void gpu_work();
  void syncs();
  void markers();
  void profiler_ranges();
  void nccl_api_calls();
  void apply_step_selection();
  void record_costs();

  const NativeCapture& c_;
  StringTable& strings_;
  std::unordered_map<std::uint32_t, std::string> kernel_names_, api_names_;
  Logger& log_;
  TraceRank r_;
  std::map<std::tuple<int, std::int64_t, std::int64_t>, ResourceId> resources_;
  std::unordered_map<std::uint32_t, std::uint64_t> external_of_;  // correlation -> external id
  std::unordered_map<std::uint32_t, std::uint32_t> device_of_context_;
};

ResourceId RankBuilder::resource(ResourceKind kind, std::int64_t pid, std::int64_t tid) {
  auto key = std::make_tuple(static_cast<int>(kind), pid, tid);
  if (auto it = resources_.find(key); it != resources_.end()) return it->second;
  auto id = static_cast<ResourceId>(r_.resources.size());
  std::string name = kind == ResourceKind::kGpuStream ? "stream " + std::to_string(tid)
                                                      : "thread " + std::to_string(tid);
  r_.resources.push_back({kind, pid, tid, std::move(name)});
  resources_.emplace(key, id);
  return id;
}

std::string_view RankBuilder::kernel_name(std::uint32_t id) {
  auto [it, fresh] = kernel_names_.try_emplace(id);
  if (fresh) it->second = demangle(c_.str(id));
  return it->second;
}

std::string_view RankBuilder::api_name(std::uint32_t id) {
  auto [it, fresh] = api_names_.try_emplace(id);
  if (fresh) it->second = std::string(without_cupti_version(c_.str(id)));
  return it->second;
}

Event& RankBuilder::add(EventKind kind, Nanos start, Nanos dur, std::string_view name,
                        ResourceId res) {
  Event e;
  e.kind = kind;
  e.start = start;
  e.dur = std::max<Nanos>(dur, 0);
  e.name = strings_.intern(name);
  e.resource = res;
  r_.events.push_back(e);
  return r_.events.back();
}

EventAttrs& RankBuilder::attrs_of(Event& e) {
  if (e.attrs == kNoAttrs) {
    e.attrs = static_cast<std::uint32_t>(r_.attrs.size());
    r_.attrs.emplace_back();
  }
  return r_.attrs[e.attrs];
}

void RankBuilder::header() {
  const auto& h = c_.header;
  r_.file = c_.path;
  r_.format = "native";
  r_.rank_known = h.rank >= 0;
  r_.rank = h.rank >= 0 ? static_cast<int>(h.rank) : 0;
  if (h.world_size > 0) r_.world_size = static_cast<int>(h.world_size);
  r_.host = h.host;
  for (const auto& d : c_.devices) {
    DeviceProperties p;
    p.id = static_cast<int>(d.id);
    p.name = d.name;
    if (d.total_global_mem) p.total_global_mem = static_cast<std::int64_t>(d.total_global_mem);
    p.compute_major = static_cast<int>(d.compute_major);
    p.compute_minor = static_cast<int>(d.compute_minor);
    p.num_sms = static_cast<int>(d.num_sms);
    r_.devices.push_back(std::move(p));
  }
  if (!c_.nccl_comms.empty()) r_.backend = "nccl";
  for (const auto& comm : c_.nccl_comms)
    r_.process_groups.push_back({std::to_string(comm.comm_hash), comm.name, {}});
  for (const auto& ext : c_.external_correlations) external_of_[ext.correlation] = ext.external_id;
}

void RankBuilder::apis() {
  for (const auto& a : c_.apis) {
    auto kind = a.kind == native::ApiKind::kDriver ? EventKind::kDriverCall : EventKind::kRuntimeCall;
    auto& e = add(kind, a.start, a.dur, api_name(a.name), resource(ResourceKind::kCpuThread, a.pid, a.tid));
    e.correlation = a.correlation;
    if (auto it = external_of_.find(a.correlation); it != external_of_.end())
      e.external_id = static_cast<std::int64_t>(it->second);
    attrs_of(e).cbid = a.cbid;
  }
}

void RankBuilder::gpu_work() {
  native::NcclJoin nccl(c_);
  std::vector<std::size_t> order(c_.kernels.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](auto a, auto b) { return c_.kernels[a].start < c_.kernels[b].start; });
  for (auto i : order) {
    const auto& k = c_.kernels[i];
    device_of_context_[k.context] = k.device;
    auto collective = nccl.claim(k);
    auto& e = add(collective ? EventKind::kCollective : EventKind::kKernel, k.start, k.dur,
                  kernel_name(k.name), resource(ResourceKind::kGpuStream, k.device, k.stream));
    e.correlation = k.correlation;
    if (auto it = external_of_.find(k.correlation); it != external_of_.end())
      e.external_id = static_cast<std::int64_t>(it->second);
    auto& at = attrs_of(e);
    at.device = k.device;
    at.stream = k.stream;
    at.grid = k.grid;
    at.block = k.block;
    at.collective = std::move(collective);
  }
  for (const auto& m : c_.copies) {
    device_of_context_.emplace(m.context, m.device);
    auto& e = add(m.memset ? EventKind::kMemset : EventKind::kMemcpy, m.start, m.dur,
                  m.memset ? "Memset" : memcpy_kind_name(m.copy_kind),
                  resource(ResourceKind::kGpuStream, m.device, m.stream));
    e.correlation = m.correlation;
    if (auto it = external_of_.find(m.correlation); it != external_of_.end())
      e.external_id = static_cast<std::int64_t>(it->second);
    auto& at = attrs_of(e);
    at.bytes = static_cast<std::int64_t>(m.bytes);
    at.device = m.device;
    at.stream = m.stream;
  }
}

void RankBuilder::syncs() {
  std::unordered_map<std::uint32_t, const native::CudaEventRecord*> record_of_event;
  for (const auto& ev : c_.cuda_events) record_of_event[ev.event_id] = &ev;
  for (const auto& s : c_.syncs) {
    auto dev = device_of_context_.count(s.context) ? device_of_context_[s.context] : 0u;
    std::int64_t stream = s.stream == native::kNoStream ? 0 : static_cast<std::int64_t>(s.stream);
    auto& e = add(EventKind::kSync, s.start, s.dur, sync_kind_name(s.type),
                  resource(ResourceKind::kGpuStream, dev, stream));
    e.correlation = s.correlation;
    SyncInfo info;
    info.sync_kind = sync_kind_name(s.type);
    if (s.stream != native::kNoStream) info.stream = stream;
    if (auto it = record_of_event.find(s.event_id); s.event_id && it != record_of_event.end()) {
      info.event_record_correlation = it->second->correlation;
      if (s.type == 2) info.wait_on_stream = it->second->stream;
    }
    attrs_of(e).sync = std::move(info);
  }
}

void RankBuilder::markers() {
  std::unordered_map<std::uint32_t, const native::StoredMarker*> open;
  int unmatched = 0;
  for (const auto& m : c_.markers) {
    if (m.flags & native::kMarkerInstant) {
      add(EventKind::kMarker, m.timestamp, 0, c_.str(m.name),
          resource(ResourceKind::kCpuThread, m.pid, m.tid));
    } else if (m.flags & native::kMarkerStart) {
      open[m.id] = &m;
    } else if (m.flags & native::kMarkerEnd) {
      auto it = open.find(m.id);
      if (it == open.end()) {
        ++unmatched;
        continue;
      }
      const auto* s = it->second;
      const ResourceId thread = resource(ResourceKind::kCpuThread, s->pid, s->tid);
      const Nanos dur = m.timestamp - s->timestamp;
      if (auto op = parse_nvtx_op_range(c_.str(s->name))) {  // emit_nvtx: the operator itself
        auto& e = add(op->is_operator ? EventKind::kCpuOp : EventKind::kUserAnnotation, s->timestamp, dur,
                      op->op, thread);
        if (!op->input_dims.empty() || op->seq) {
          auto& a = attrs_of(e);
          a.input_dims = std::move(op->input_dims);
          a.sequence_number = op->seq;
        }
      } else {
        add(EventKind::kUserAnnotation, s->timestamp, dur, c_.str(s->name), thread);
      }
      open.erase(it);
    }
  }
  unmatched += static_cast<int>(open.size());
  if (unmatched > 0)
    log_.warn(c_.path + ": " + std::to_string(unmatched) +
              " NVTX ranges without a start or an end were dropped");
}

// cudaProfilerStart/Stop spans become ProfilerStep#k annotations when the trace has no
// ProfilerStep NVTX ranges of its own.
void RankBuilder::profiler_ranges() {
  for (const auto& e : r_.events)
    if (e.kind == EventKind::kUserAnnotation && strings_.view(e.name).starts_with("ProfilerStep#"))
      return;
  std::vector<const native::StoredApi*> starts, stops;
  for (const auto& a : c_.apis) {
    if (a.cbid == native::kCbidCudaProfilerStart && a.kind == native::ApiKind::kRuntime) starts.push_back(&a);
    if (a.cbid == native::kCbidCudaProfilerStop && a.kind == native::ApiKind::kRuntime) stops.push_back(&a);
  }
  auto by_start = [](auto* x, auto* y) { return x->start < y->start; };
  std::sort(starts.begin(), starts.end(), by_start);
  std::sort(stops.begin(), stops.end(), by_start);
  std::size_t j = 0, step = 0;
  for (const auto* s : starts) {
    while (j < stops.size() && stops[j]->start < s->start) ++j;
    if (j == stops.size()) break;
    const auto* t = stops[j++];
    add(EventKind::kUserAnnotation, s->start, t->start + t->dur - s->start,
        "ProfilerStep#" + std::to_string(step++), resource(ResourceKind::kCpuThread, s->pid, s->tid));
  }
}

void RankBuilder::nccl_api_calls() {
  for (const auto& a : c_.nccl_apis) {
    auto& e = add(EventKind::kCpuOp, a.start, a.dur, "nccl:" + std::string(c_.str(a.func)),
                  resource(ResourceKind::kCpuThread, a.pid, a.tid));
    CollectiveInfo info;
    info.op = native::normalise_nccl_op(c_.str(a.func));
    info.group_name = std::to_string(a.comm_hash);
    info.in_nelems = static_cast<std::int64_t>(a.count);
    if (auto d = c_.str(a.datatype); !d.empty()) info.dtype = std::string(d);
    attrs_of(e).collective = std::move(info);
  }
}

// Metadata "step_name" renames the user's iteration ranges to ProfilerStep#k; "steps" = "A:B"
// keeps only the events inside steps A..B (inclusive).
void RankBuilder::apply_step_selection() {
  if (auto it = c_.metadata.find("step_name"); it != c_.metadata.end() && !it->second.empty()) {
    std::vector<Event*> steps;
    for (auto& e : r_.events)
      if (e.kind == EventKind::kUserAnnotation && strings_.view(e.name) == it->second)
        steps.push_back(&e);
    std::sort(steps.begin(), steps.end(), [](auto* a, auto* b) { return a->start < b->start; });
    for (std::size_t k = 0; k < steps.size(); ++k)
      steps[k]->name = strings_.intern("ProfilerStep#" + std::to_string(k));
  }
  auto it = c_.metadata.find("steps");
  if (it == c_.metadata.end()) return;
  const std::string_view steps = it->second;
  const auto colon = steps.find(':');
  const auto first = colon == std::string_view::npos ? std::nullopt : parse_integer(steps.substr(0, colon));
  const auto last = colon == std::string_view::npos ? std::nullopt : parse_integer(steps.substr(colon + 1));
  if (!first || !last) {  // dpro-profile writes A:B; anything else is a damaged header
    log_.warn(c_.path + ": steps '" + it->second + "' in the trace header is not A:B; keeping all events");
    return;
  }
  Nanos lo = INT64_MAX, hi = INT64_MIN;
  for (const auto& e : r_.events) {
    if (e.kind != EventKind::kUserAnnotation) continue;
    const auto n = profiler_step_number(strings_.view(e.name));
    if (n && *n >= *first && *n <= *last) lo = std::min(lo, e.start), hi = std::max(hi, e.end());
  }
  if (lo > hi) {
    log_.warn(c_.path + ": steps " + it->second + " not found in the trace; keeping all events");
    return;
  }
  std::erase_if(r_.events, [&](const Event& e) { return e.start < lo || e.end() > hi; });
}

// Metadata "record_cost": the calibration dpro-profile made at start. A class this dpro does not
// know (a later profiler's) is skipped with a warning; a damaged value leaves the rank without
// costs, with a warning: its durations are then kept as recorded.
void RankBuilder::record_costs() {
  const auto it = c_.metadata.find(native::kMetaRecordCost);
  if (it == c_.metadata.end()) return;
  std::vector<std::string> unknown;
  try {
    RecordCosts costs = parse_record_costs(it->second, native::kMetaRecordCost, &unknown);
    if (!costs.empty()) r_.record_costs = costs;
  } catch (const OptionError& e) {
    log_.warn(c_.path + ": " + e.what() + "; the profiler's cost is not taken out of this rank");
    return;
  }
  for (const auto& name : unknown)
    log_.warn(c_.path + ": record_cost: record class '" + name + "' unknown to this dpro, ignored");
}

TraceRank RankBuilder::build() {
  header();
  record_costs();
  apis();
  gpu_work();
  syncs();
  markers();
  nccl_api_calls();
  profiler_ranges();
  try {
    apply_step_selection();
  } catch (const std::exception&) {
    log_.warn(c_.path + ": malformed step selection metadata ignored");
  }
  if (c_.dropped_records > 0)
    log_.warn(c_.path + ": CUPTI dropped " + std::to_string(c_.dropped_records) +
              " activity records (buffers full); the timeline has gaps");
  std::stable_sort(r_.events.begin(), r_.events.end(), [](const Event& a, const Event& b) {
    return a.start != b.start ? a.start < b.start : a.dur > b.dur;
  });
  return std::move(r_);
}

class NativeImporter final : public Importer {
 public:
  std::string_view format() const override { return "native"; }
  bool sniff(std::string_view head) const override { return native::has_native_magic(head); }
  TraceRank read(const std::string& path, StringTable& strings, const ImportOptions&,
                 Logger& log) const override {
    return build_native_rank(native::read_native_capture(path, log), strings, log);
  }
};

}  // namespace

TraceRank build_native_rank(const native::NativeCapture& capture, StringTable& strings, Logger& log) {
  return RankBuilder(capture, strings, log).build();
}

std::unique_ptr<Importer> make_native_importer() {
  return std::make_unique<NativeImporter>();
}

}  // namespace dpro::trace
