#include "executor/memory_plan.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace dpro::executor {

std::uint64_t aligned_bytes(std::uint64_t bytes) {
  return (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
}

std::uint64_t live_peak(const std::vector<TensorLife>& tensors) {
  // Sweep: +bytes at `first`, -bytes after `last`.
  std::vector<std::pair<std::uint64_t, std::int64_t>> deltas;
  deltas.reserve(tensors.size() * 2);
  for (const TensorLife& t : tensors) {
    const auto b = static_cast<std::int64_t>(aligned_bytes(t.bytes));
    deltas.emplace_back(2ull * t.first, b);
    deltas.emplace_back(2ull * t.last + 1, -b);
  }
  std::sort(deltas.begin(), deltas.end());
  std::int64_t live = 0, peak = 0;
  for (std::size_t i = 0; i < deltas.size();) {
    const std::uint64_t at = deltas[i].first;
    for (; i < deltas.size() && deltas[i].first == at; ++i) live += deltas[i].second;
    peak = std::max(peak, live);
  }
  return static_cast<std::uint64_t>(peak);
}

namespace {

bool overlap_in_time(const TensorLife& a, const TensorLife& b) { return a.first <= b.last && b.first <= a.last; }

struct Placed {
  std::uint64_t offset, end;
};

// The best-fitting offset for `bytes` among `busy` (byte ranges of tensors live with it).
std::uint64_t best_fit(std::vector<Placed>& busy, std::uint64_t bytes) {
  std::sort(busy.begin(), busy.end(), [](const Placed& a, const Placed& b) { return a.offset < b.offset; });
  std::uint64_t best = std::numeric_limits<std::uint64_t>::max(), best_gap = best;
  std::uint64_t cursor = 0;
  for (const Placed& p : busy) {
    if (p.offset > cursor && p.offset - cursor >= bytes && p.offset - cursor < best_gap) {
      best = cursor;
      best_gap = p.offset - cursor;
    }
    cursor = std::max(cursor, p.end);
  }
  return best != std::numeric_limits<std::uint64_t>::max() ? best : cursor;
}

}  // namespace

MemoryPlan plan_memory(const std::vector<TensorLife>& tensors) {
  MemoryPlan plan;
  plan.offsets.assign(tensors.size(), 0);
  std::vector<std::size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return tensors[a].bytes > tensors[b].bytes; });
  std::vector<std::size_t> placed;
  std::vector<Placed> busy;
  for (std::size_t t : order) {
    const std::uint64_t bytes = aligned_bytes(tensors[t].bytes);
    busy.clear();
    for (std::size_t p : placed)
      if (overlap_in_time(tensors[t], tensors[p])) busy.push_back({plan.offsets[p], plan.offsets[p] + aligned_bytes(tensors[p].bytes)});
    plan.offsets[t] = best_fit(busy, bytes);
    plan.arena_bytes = std::max(plan.arena_bytes, plan.offsets[t] + bytes);
    placed.push_back(t);
  }
  plan.live_peak_bytes = live_peak(tensors);
  return plan;
}

}  // namespace dpro::executor
