#include "trace/native/chrome_export.h"

#include "trace/chrome_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

namespace dpro::trace {
namespace {

// Kineto floors its base time to a multiple of this (output_json.h ChromeTraceBaseTime).
constexpr Nanos kBaseGranularity = 90LL * 24 * 3600 * kNanosPerSecond;

std::string event_args(const TraceRank& rank, const Event& e) {
  std::vector<std::string> args;
  if (e.correlation) args.push_back(fmt::format("\"correlation\": {}", *e.correlation));
  if (e.external_id) args.push_back(fmt::format("\"External id\": {}", *e.external_id));
  if (const auto* a = rank.attrs_of(e)) {
    if (a->device) args.push_back(fmt::format("\"device\": {}", *a->device));
    if (a->stream) args.push_back(fmt::format("\"stream\": {}", *a->stream));
    if (a->cbid) args.push_back(fmt::format("\"cbid\": {}", *a->cbid));
    if (a->bytes) args.push_back(fmt::format("\"bytes\": {}", *a->bytes));
    if (a->grid) args.push_back(fmt::format("\"grid\": [{}, {}, {}]", (*a->grid)[0], (*a->grid)[1], (*a->grid)[2]));
    if (a->block) args.push_back(fmt::format("\"block\": [{}, {}, {}]", (*a->block)[0], (*a->block)[1], (*a->block)[2]));
    // Checked integer lists (parse_nvtx_op_range), so valid JSON as they stand.
    if (!a->input_dims.empty()) args.push_back("\"Input Dims\": " + a->input_dims);
    if (a->sequence_number) args.push_back(fmt::format("\"Sequence number\": {}", *a->sequence_number));
    if (const auto& c = a->collective) {
      args.push_back("\"Collective name\": " + chrome_string(c->op));
      if (c->group_name) args.push_back("\"Process Group Name\": " + chrome_string(*c->group_name));
      if (c->group_size) args.push_back(fmt::format("\"Group size\": {}", *c->group_size));
      if (c->in_nelems) args.push_back(fmt::format("\"In msg nelems\": {}", *c->in_nelems));
      if (c->dtype) args.push_back("\"dtype\": " + chrome_string(*c->dtype));
      if (c->sequence) args.push_back(fmt::format("\"Seq\": {}", *c->sequence));
      if (c->algorithm) args.push_back("\"algorithm\": " + chrome_string(*c->algorithm));
      if (c->protocol) args.push_back("\"protocol\": " + chrome_string(*c->protocol));
      if (c->channels) args.push_back(fmt::format("\"channels\": {}", *c->channels));
    }
    if (const auto& s = a->sync) {
      args.push_back("\"cuda_sync_kind\": " + chrome_string(s->sync_kind));
      if (s->wait_on_stream) args.push_back(fmt::format("\"wait_on_stream\": {}", *s->wait_on_stream));
      if (s->event_record_correlation)
        args.push_back(fmt::format("\"wait_on_cuda_event_record_corr_id\": {}", *s->event_record_correlation));
    }
  }
  return fmt::format("{{{}}}", fmt::join(args, ", "));
}

void write_metadata(const TraceRank& rank, ChromeEventList& events) {
  auto emit = [&](const std::string& json) { events.add(json); };
  std::unordered_set<std::int64_t> pids;
  for (const auto& r : rank.resources) {
    bool gpu = r.kind == ResourceKind::kGpuStream;
    if (pids.insert(r.pid).second)
      emit(fmt::format("{{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": {}, \"tid\": 0, "
                       "\"args\": {{\"name\": {}}}}}",
                       r.pid, chrome_string(gpu ? fmt::format("GPU {}", r.pid) : fmt::format("rank {} host {}", rank.rank, rank.host))));
    emit(fmt::format("{{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": {}, \"tid\": {}, "
                     "\"args\": {{\"name\": {}}}}}",
                     r.pid, r.tid, chrome_string(r.name)));
  }
}

}  // namespace

void write_chrome_json(const TraceRank& rank, const StringTable& strings, std::ostream& out) {
  Nanos first_time = rank.events.empty() ? 0 : rank.events.front().start;
  for (const auto& e : rank.events) first_time = std::min(first_time, e.start);
  Nanos base = first_time - ((first_time % kBaseGranularity) + kBaseGranularity) % kBaseGranularity;
  out << "{\n\"schemaVersion\": 1,\n\"deviceProperties\": [";
  for (std::size_t i = 0; i < rank.devices.size(); ++i) {
    const auto& d = rank.devices[i];
    out << (i ? ", " : "") << fmt::format("{{\"id\": {}, \"name\": {}, \"totalGlobalMem\": {}, "
                                          "\"computeMajor\": {}, \"computeMinor\": {}, \"numSms\": {}}}",
                                          d.id, chrome_string(d.name), d.total_global_mem.value_or(0),
                                          d.compute_major.value_or(0), d.compute_minor.value_or(0),
                                          d.num_sms.value_or(0));
  }
  out << fmt::format("],\n\"distributedInfo\": {{\"backend\": {}, \"rank\": {}, \"world_size\": {}}},\n",
                     chrome_string(rank.backend.empty() ? "nccl" : rank.backend), rank.rank,
                     rank.world_size.value_or(1));
  out << "\"traceEvents\": [";
  ChromeEventList events(out, "\n  ", ",\n  ");
  write_metadata(rank, events);
  std::unordered_set<std::int64_t> gpu_correlations;
  for (const auto& e : rank.events)
    if (is_gpu_work(e.kind) && e.correlation) gpu_correlations.insert(*e.correlation);
  for (const auto& e : rank.events) {
    const auto& r = rank.resources[e.resource];
    auto head = fmt::format("\"pid\": {}, \"tid\": {}, \"ts\": {}", r.pid, r.tid, chrome_micros(e.start - base));
    events.add(fmt::format("{{\"ph\": \"X\", \"cat\": \"{}\", \"name\": {}, {}, \"dur\": {}, \"args\": {}}}",
                           to_string(e.kind), chrome_string(strings.view(e.name)), head, chrome_micros(e.dur),
                           event_args(rank, e)));
    if (!e.correlation || !gpu_correlations.count(*e.correlation)) continue;
    bool launch = e.kind == EventKind::kRuntimeCall || e.kind == EventKind::kDriverCall;
    if (launch || is_gpu_work(e.kind))
      events.add(fmt::format("{{\"ph\": \"{}\", \"id\": {}, {}, \"cat\": \"ac2g\", \"name\": \"ac2g\"{}}}",
                             launch ? "s" : "f", *e.correlation, head, launch ? "" : ", \"bp\": \"e\""));
  }
  out << fmt::format("\n],\n\"traceName\": {},\n\"displayTimeUnit\": \"ms\",\n\"baseTimeNanoseconds\": {}\n}}\n",
                     chrome_string(rank.file), base);
}

}  // namespace dpro::trace
