#include "trace/nccl_ranges.h"

#include <simdjson.h>

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "trace/kineto_importer.h"

namespace dpro::trace {
namespace od = simdjson::ondemand;

namespace {

// Bound of a message's elements (2^40), as of the bytes the collective model accepts.
constexpr std::int64_t kMaxElements = std::int64_t{1} << 40;

// One "Input Dims" entry: a tensor's extents (empty: a 0-d tensor or a scalar), or a list of
// them (a tensor list) or anything else, which says no single size.
struct DimsEntry {
  std::vector<std::int64_t> shape;
  bool plain = true;  // a flat list of extents
};

// Calls on_entry(value) for each entry of the JSON array `text`; false when it is not one.
template <typename OnEntry>
bool for_each_entry(std::string_view text, OnEntry&& on_entry) {
  simdjson::padded_string padded(text);
  od::parser parser;
  od::document doc;
  od::array entries;
  if (parser.iterate(padded).get(doc) != simdjson::SUCCESS || doc.get_array().get(entries) != simdjson::SUCCESS)
    return false;
  for (auto entry : entries) on_entry(entry);
  return true;
}

std::optional<std::vector<DimsEntry>> parse_dims(std::string_view text) {
  std::vector<DimsEntry> out;
  const bool array = for_each_entry(text, [&](auto entry) {
    DimsEntry d;
    od::array items;
    if (entry.get_array().get(items) != simdjson::SUCCESS) {
      d.plain = false;
    } else {
      for (auto item : items) {
        std::int64_t x = 0;
        if (item.get_int64().get(x) != simdjson::SUCCESS || x < 0) {
          d.plain = false;
          break;
        }
        d.shape.push_back(x);
      }
    }
    out.push_back(std::move(d));
  });
  return array ? std::optional(std::move(out)) : std::nullopt;
}

std::optional<std::vector<std::string>> parse_types(std::string_view text) {
  std::vector<std::string> out;
  const bool array = for_each_entry(text, [&](auto entry) {
    std::string_view s;
    out.emplace_back(entry.get_string().get(s) == simdjson::SUCCESS ? std::string(s) : std::string());
  });
  return array ? std::optional(std::move(out)) : std::nullopt;
}

// The launch calls (runtime or driver) of a rank by correlation id.
std::unordered_map<std::int64_t, std::size_t> launches_by_correlation(const TraceRank& rank) {
  std::unordered_map<std::int64_t, std::size_t> calls;
  for (std::size_t i = 0; i < rank.events.size(); ++i) {
    const Event& e = rank.events[i];
    if ((e.kind == EventKind::kRuntimeCall || e.kind == EventKind::kDriverCall) && e.correlation)
      calls.try_emplace(*e.correlation, i);
  }
  return calls;
}

}  // namespace

std::optional<RangeMessage> range_message(std::string_view input_dims, std::string_view input_types,
                                          const std::string& file, const std::string& item) {
  const auto dims = parse_dims(input_dims);
  const auto types = parse_types(input_types);
  if (!dims || !types) return std::nullopt;
  RangeMessage m;
  bool any = false;
  for (std::size_t i = 0; i < dims->size(); ++i) {
    const std::string type = i < types->size() ? (*types)[i] : std::string();
    const DimsEntry& d = (*dims)[i];
    if (element_bytes(type) == 0) {
      // A scalar or other argument; a tensor list (PyTorch types it "TensorList") hides its sizes.
      if (!d.plain || ascii_lower(type).find("list") != std::string::npos) return std::nullopt;
      continue;
    }
    if (!d.plain || (any && type != m.dtype)) return std::nullopt;
    std::int64_t n = 1;
    for (const std::int64_t x : d.shape) {
      if (x != 0 && n > kMaxElements / x)
        throw InputError(file, item, "'Input Dims' " + std::string(input_dims.substr(0, 80)) +
                                         ": more than 2^40 elements, not a message size");
      n *= x;
    }
    if (m.nelems > kMaxElements - n)
      throw InputError(file, item, "'Input Dims' " + std::string(input_dims.substr(0, 80)) +
                                       ": more than 2^40 elements, not a message size");
    m.nelems += n;
    m.dtype = type;
    any = true;
  }
  if (!any) return std::nullopt;
  return m;
}

NcclRangeStats apply_nccl_ranges(TraceRank& rank, const StringTable& strings) {
  NcclRangeStats stats;
  // Per CPU thread, its nccl:* ranges in start order (the events are sorted by start).
  std::unordered_map<ResourceId, std::vector<std::size_t>> ranges;
  for (std::size_t i = 0; i < rank.events.size(); ++i) {
    const Event& e = rank.events[i];
    if (e.kind == EventKind::kUserAnnotation && strings.view(e.name).starts_with("nccl:")) ranges[e.resource].push_back(i);
  }
  if (ranges.empty()) return stats;
  const auto calls = launches_by_correlation(rank);
  // Each collective kernel with the range that launched it.
  std::vector<std::pair<std::size_t, std::size_t>> launched;  // (kernel, range)
  std::unordered_map<std::size_t, std::size_t> kernels_of_range;
  for (std::size_t k = 0; k < rank.events.size(); ++k) {
    const Event& kernel = rank.events[k];
    if (kernel.kind != EventKind::kCollective || !kernel.correlation) continue;
    const auto call = calls.find(*kernel.correlation);
    if (call == calls.end()) continue;
    const Event& c = rank.events[call->second];
    const auto on_thread = ranges.find(c.resource);
    if (on_thread == ranges.end()) continue;
    const auto& list = on_thread->second;
    // nccl:* ranges do not nest: only the last one starting before the call can hold it.
    auto it = std::upper_bound(list.begin(), list.end(), c.start,
                               [&](Nanos t, std::size_t r) { return t < rank.events[r].start; });
    if (it == list.begin()) continue;
    const Event& range = rank.events[*--it];
    if (c.end() > range.end()) continue;
    launched.emplace_back(k, *it);
    ++kernels_of_range[*it];
  }
  std::unordered_map<std::size_t, std::size_t> seen_of_range;
  for (const auto& [k, r] : launched) {
    const std::size_t index = seen_of_range[r]++;
    const Event& range = rank.events[r];
    const std::string_view name = strings.view(range.name);
    const std::string op = collective_op_from_name(name.substr(5));
    const EventAttrs* range_attrs = rank.attrs_of(range);
    Event& kernel = rank.events[k];
    if (op.empty() || kernel.attrs == kNoAttrs || !rank.attrs[kernel.attrs].collective) continue;
    CollectiveInfo& info = *rank.attrs[kernel.attrs].collective;
    if (info.in_nelems) continue;  // the kernel's own metadata
    const bool grouped_alltoall = op == "alltoall" && (info.op.empty() || info.op == "sendrecv");
    if (info.op != op && !grouped_alltoall) continue;
    if (grouped_alltoall) ++stats.alltoalls;
    info.op = op;
    if (!range_attrs) continue;
    const auto message = range_message(range_attrs->input_dims, range_attrs->input_types, rank.file,
                                       "event '" + std::string(name) + "' at ts " + std::to_string(range.start));
    if (!message) continue;
    // Several kernels of one range moved its message together: each a share.
    const auto n = static_cast<std::int64_t>(kernels_of_range[r]);
    info.in_nelems = message->nelems / n + (static_cast<std::int64_t>(index) < message->nelems % n ? 1 : 0);
    info.dtype = message->dtype;
    ++stats.sized;
  }
  return stats;
}

}  // namespace dpro::trace
