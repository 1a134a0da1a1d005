#include "trace/iterations.h"

#include <algorithm>
#include <map>
#include <vector>

namespace dpro::trace {

int iteration_index_at(const TraceRank& rank, Nanos start) {
  const auto& its = rank.iterations;
  const auto next =
      std::upper_bound(its.begin(), its.end(), start, [](Nanos t, const Iteration& it) { return t < it.start; });
  return static_cast<int>(next - its.begin()) - 1;
}

bool glob_match(std::string_view pattern, std::string_view name) {
  // Greedy with one backtrack point (the last '*'): at most pattern x name steps, never exponential.
  std::size_t p = 0, n = 0, star = std::string_view::npos, resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
    } else if (p < pattern.size() && pattern[p] == name[n]) {
      ++p;
      ++n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

IterationRepairs detect_iterations(TraceRank& rank, const StringTable& strings, std::string_view marker) {
  IterationRepairs repairs;
  rank.iterations.clear();
  if (!marker.empty()) {
    // The k-th occurrence of the marker on the rank is iteration k; an occurrence that starts
    // inside the previous one (the marker nested in itself, or on another thread meanwhile) is
    // part of it.
    // Events are in (start, longer first) order after import, so an outer occurrence comes first.
    Nanos reach = INT64_MIN;
    for (std::uint32_t i = 0; i < rank.events.size(); ++i) {
      const Event& e = rank.events[i];
      if (e.kind != EventKind::kUserAnnotation && e.kind != EventKind::kCpuOp) continue;
      if (e.start < reach || !glob_match(marker, strings.view(e.name))) continue;
      reach = e.end();
      const std::int64_t number = static_cast<std::int64_t>(rank.iterations.size()) + 1;
      rank.iterations.push_back(
          Iteration{std::string(strings.view(e.name)) + " #" + std::to_string(number), number, e.start, e.end(), i});
    }
    return repairs;
  }
  std::map<std::int64_t, Iteration> by_number;
  for (std::uint32_t i = 0; i < rank.events.size(); ++i) {
    const Event& e = rank.events[i];
    if (e.kind != EventKind::kUserAnnotation && e.kind != EventKind::kCpuOp) continue;
    const std::string_view name = strings.view(e.name);
    const auto number = profiler_step_number(name);
    if (!number) continue;
    auto [it, inserted] = by_number.try_emplace(*number);
    if (!inserted) {
      ++repairs.duplicates;
      if (repairs.first_duplicate.empty()) repairs.first_duplicate = std::string(name);
    }
    if (inserted || e.dur > it->second.end - it->second.start) {
      it->second = Iteration{std::string(name), *number, e.start, e.end(), i};
    }
  }
  std::vector<Iteration> steps;
  for (auto& [number, iteration] : by_number) steps.push_back(std::move(iteration));
  std::stable_sort(steps.begin(), steps.end(),  // ties in step-number order
                   [](const Iteration& a, const Iteration& b) { return a.start < b.start; });
  // Steps are consecutive: one that starts before the previous ended cuts the previous one short
  // there (a step counted in two windows would be timed twice); one left with no time is dropped.
  for (std::size_t k = 0; k < steps.size(); ++k) {
    if (!rank.iterations.empty() && steps[k].start < rank.iterations.back().end) {
      Iteration& previous = rank.iterations.back();
      ++repairs.overlaps;
      if (repairs.first_overlap.empty()) repairs.first_overlap = previous.name + " and " + steps[k].name;
      previous.end = steps[k].start;
      if (previous.end <= previous.start) {
        rank.iterations.pop_back();
        ++repairs.dropped;
      }
    }
    rank.iterations.push_back(std::move(steps[k]));
  }
  return repairs;
}

}  // namespace dpro::trace
