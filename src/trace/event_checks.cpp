#include "trace/event_checks.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "core/error.h"
#include "core/time.h"

namespace dpro::trace {
namespace {

// Kineto's times are whole microseconds in older traces: ops of one stream that touch may
// overlap by up to one rounding step.
constexpr Nanos kStreamOverlapTolerance = 1000;

auto identity(const Event& e) {
  return std::tie(e.start, e.dur, e.name, e.resource, e.kind, e.correlation, e.external_id);
}

}  // namespace

void check_time_bounds(const TraceRank& rank) {
  if (rank.events.empty()) return;
  Nanos first = rank.events.front().start, last = first;
  for (std::size_t i = 0; i < rank.events.size(); ++i) {
    const Event& e = rank.events[i];
    // Checked term by term: e.start + e.dur is only formed once both are within the bound.
    if (e.start < -kMaxTraceNanos || e.start > kMaxTraceNanos || e.dur < 0 || e.dur > kMaxTraceNanos ||
        e.start > kMaxTraceNanos - e.dur)
      throw InputError(rank.file, "event " + std::to_string(i),
                       "time beyond the bound every trace is held to (start " + std::to_string(e.start) + " ns, duration " +
                           std::to_string(e.dur) + " ns; at most 3e18 ns, about 95 years, in magnitude)");
    first = std::min(first, e.start);
    last = std::max(last, e.end());
  }
  if (last - first > kMaxTraceSpanNanos)
    throw InputError(rank.file, "", "events spread over " + format_duration(last - first) +
                                        ", beyond the 52 days a trace may span (a corrupt time?)");
}

std::size_t drop_repeated_events(TraceRank& rank) {
  // Events are sorted by (start, longer first): repeats are among the events of one start time.
  // Compacted in place (kept events move down over dropped ones): no copy of the trace.
  std::vector<Event>& events = rank.events;
  std::size_t kept = 0;
  for (std::size_t begin = 0; begin < events.size();) {
    std::size_t end = begin + 1;
    while (end < events.size() && events[end].start == events[begin].start) ++end;
    const std::size_t group_start = kept;
    for (std::size_t i = begin; i < end; ++i) {
      const Event& e = events[i];
      const bool has_id = e.correlation.has_value() || e.external_id.has_value();
      const auto first = events.begin() + static_cast<std::ptrdiff_t>(group_start);
      const auto last = events.begin() + static_cast<std::ptrdiff_t>(kept);
      if (has_id && std::any_of(first, last, [&](const Event& k) { return identity(k) == identity(e); })) continue;
      if (kept != i) events[kept] = e;
      ++kept;
    }
    begin = end;
  }
  const std::size_t dropped = events.size() - kept;
  events.resize(kept);
  return dropped;
}

StreamOverlaps stream_overlaps(const TraceRank& rank, const StringTable& strings, Nanos tolerance) {
  StreamOverlaps found;
  std::map<ResourceId, const Event*> previous;  // the op of each stream that ends last so far
  for (const Event& e : rank.events) {
    if (!is_gpu_work(e.kind)) continue;
    const Event*& last = previous[e.resource];
    if (last && e.start + tolerance < last->end()) {
      const Nanos overlap = last->end() - e.start;
      if (found.count++ == 0)
        found.first = std::string(to_string(e.kind)) + " '" + std::string(strings.view(e.name)) + "' on " +
                      rank.resources[e.resource].name + " (" + format_duration(overlap) + " inside '" +
                      std::string(strings.view(last->name)) + "')";
      found.worst = std::max(found.worst, overlap);
    }
    if (!last || e.end() > last->end()) last = &e;
  }
  return found;
}

void check_events(TraceRank& rank, const StringTable& strings, Logger& log) {
  check_time_bounds(rank);
  if (const std::size_t repeats = drop_repeated_events(rank))
    log.warn(rank.file + ": " + std::to_string(repeats) +
             " event(s) recorded twice (same name, track, times and ids) were dropped: a repeat would be timed twice");
  if (const StreamOverlaps o = stream_overlaps(rank, strings, kStreamOverlapTolerance); o.count > 0)
    log.warn(rank.file + ": " + std::to_string(o.count) +
             " GPU op(s) start before the previous op of their stream ended (a stream runs its ops in order), by up to " +
             format_duration(o.worst) + "; first: " + o.first + ". The replay runs each stream's ops one after another");
}

}  // namespace dpro::trace
