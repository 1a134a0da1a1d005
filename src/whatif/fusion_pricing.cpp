#include "whatif/fusion_pricing.h"

#include <algorithm>
#include <map>

#include "core/stats.h"
#include "costmodel/op_desc_from_graph.h"
#include "hw/device_spec.h"

namespace dpro::whatif {

namespace cm = dpro::costmodel;

namespace {

bool memory_bound_family(cm::OpFamily f) {
  return f != cm::OpFamily::kUnknown && f != cm::OpFamily::kBmm && f != cm::OpFamily::kLinear &&
         f != cm::OpFamily::kConv2d;
}

}  // namespace

hw::DeviceRates load_fusion_rates(const trace::TraceSet& traces, const FusionDevice& where) {
  if (where.device_profile.empty()) return {};
  const auto catalog =
      hw::DeviceCatalog::load_directory(where.device_dir.empty() ? hw::DeviceCatalog::default_directory() : where.device_dir);
  return hw::load_device_rates(where.device_profile, {where.device, traces.gpu_names()}, catalog);
}

FusionPricer::FusionPricer(const trace::TraceSet& traces, const graph::Dfg& dfg, bool intermediates_kept,
                           const hw::DeviceRates& profile)
    : dfg_(dfg), intermediates_kept_(intermediates_kept) {
  profile_bandwidth_ = profile.elementwise_bytes_per_ns();
  profile_launch_ = profile.launch_ns();
  descs_.assign(dfg.node_count(), 0);
  distinct_.emplace_back();
  device_of_.assign(dfg.node_count(), 0);
  const cm::LikeStepLaunchers lent = cm::launchers_from_like_steps(traces, dfg);
  std::map<std::pair<int, std::int64_t>, std::uint32_t> index;  // (rank, device) -> devices_
  std::vector<std::vector<double>> bandwidths, flop_rates;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> described;  // -> distinct_
  for (const graph::NodeId id : dfg.node_ids()) {
    const graph::Node& n = dfg.node(id);
    if (n.kind != graph::NodeKind::kKernel || !n.track.valid()) continue;
    const auto [it, added] =
        index.try_emplace({n.rank, dfg.track(n.track).pid}, static_cast<std::uint32_t>(devices_.size()));
    if (added) {
      devices_.push_back(DeviceRates{std::nullopt, std::nullopt, n.duration, 0});
      bandwidths.emplace_back();
      flop_rates.emplace_back();
    }
    const std::uint32_t d = it->second;
    device_of_[id] = d;
    devices_[d].shortest_kernel = std::min(devices_[d].shortest_kernel, n.duration);
    const graph::OpDesc* own = dfg.op(id);
    if (!own) continue;
    const bool lent_launch = own->launcher.empty() && lent.launch.contains(id) && lent.launch[id].valid();
    // Op table entries repeat (the builder shares one per distinct op): describe each pair once.
    const graph::OpId launch_id = lent_launch ? lent.launch[id] : dfg.op_of(id);
    auto [known, fresh] = described.try_emplace({dfg.op_of(id).value, launch_id.value},
                                                static_cast<std::uint32_t>(distinct_.size()));
    if (fresh) distinct_.push_back(cm::op_desc_of_kernel(dfg.ops(), *own, dfg.ops().op(launch_id)));
    descs_[id] = known->second;
    const cm::OpDesc& op = distinct_[known->second];
    if (!op.describable() || !memory_bound_family(op.family) || n.duration <= 0) continue;
    bandwidths[d].push_back(op.bytes() / static_cast<double>(n.duration));
    flop_rates[d].push_back(op.flops() / static_cast<double>(n.duration));
  }
  for (std::size_t d = 0; d < devices_.size(); ++d) {
    devices_[d].calibrated_from = bandwidths[d].size();
    if (profile_launch_) devices_[d].launch = nanos_from_double(profile_launch_->value);
    if (profile_bandwidth_) {
      devices_[d].bytes_per_ns = profile_bandwidth_->value;
      devices_[d].bandwidth_from_profile = true;
    }
    if (bandwidths[d].empty()) continue;
    if (!profile_bandwidth_) devices_[d].bytes_per_ns = median(bandwidths[d]);
    devices_[d].flops_per_ns = *std::max_element(flop_rates[d].begin(), flop_rates[d].end());
  }
}

void FusionPricer::figures_used(const FusedPrice& price, std::set<std::string>& into) const {
  if (price.bandwidth_from_profile && profile_bandwidth_) into.insert(profile_bandwidth_->figure);
  if (price.launch_from_profile && profile_launch_) into.insert(profile_launch_->figure);
}

const cm::OpDesc& FusionPricer::desc(graph::NodeId kernel) const { return distinct_[descs_[kernel]]; }

bool FusionPricer::memory_bound(graph::NodeId kernel) const {
  const cm::OpDesc& op = desc(kernel);
  return op.describable() && memory_bound_family(op.family);
}

const DeviceRates* FusionPricer::rates(graph::NodeId kernel) const {
  const graph::Node& n = dfg_.node(kernel);
  if (n.kind != graph::NodeKind::kKernel || !n.track.valid()) return nullptr;
  return &devices_[device_of_[kernel]];
}

FusedPrice FusionPricer::price(std::span<const graph::NodeId> parts) const {
  FusedPrice out;
  Nanos longest = 0;
  for (const graph::NodeId p : parts) {
    out.parts = saturating_add(out.parts, dfg_.node(p).duration);
    longest = std::max(longest, dfg_.node(p).duration);
  }
  const DeviceRates* device = parts.empty() ? nullptr : rates(parts.front());
  const bool described = device && device->bytes_per_ns && *device->bytes_per_ns > 0 &&
                         std::all_of(parts.begin(), parts.end(), [&](graph::NodeId p) { return memory_bound(p); });
  if (!described) {
    out.fallback = true;
    out.duration = longest + nanos_from_double(kFallbackRestShare * static_cast<double>(out.parts - longest));
    out.duration = std::min(out.duration, out.parts);
    return out;
  }
  const double reuse = intermediates_kept_ ? 1.0 : 2.0;
  double bytes = 0, flops = 0, largest = 0, saved = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const cm::OpDesc& op = desc(parts[i]);
    bytes += op.bytes();
    flops += op.flops();
    largest = std::max(largest, op.bytes());
    if (i == 0) continue;
    const cm::OpDesc& producer = desc(parts[i - 1]);
    saved += reuse * std::min(producer.bytes_written(), op.bytes() - op.bytes_written());
  }
  out.bytes = std::max(bytes - saved, largest);
  const double memory = out.bytes / *device->bytes_per_ns;
  const double compute = device->flops_per_ns && *device->flops_per_ns > 0 ? flops / *device->flops_per_ns : 0;
  const double exec = compute + memory - 0.95 * std::min(compute, memory);
  // With the profile's launch: the fused kernel's one launch, which is also its floor (fusion_pricing.h).
  const Nanos floor = device->launch > 0 ? device->launch : device->shortest_kernel;
  out.duration = std::clamp(saturating_add(nanos_from_double(exec), device->launch), std::min(floor, out.parts), out.parts);
  out.bandwidth_from_profile = device->bandwidth_from_profile;
  out.launch_from_profile = device->launch > 0;
  return out;
}

FusedPrice FusionPricer::price_epilogue(std::span<const graph::NodeId> parts) const {
  FusedPrice out;
  if (parts.empty()) return out;
  for (const graph::NodeId p : parts) out.parts = saturating_add(out.parts, dfg_.node(p).duration);
  const Nanos gemm = dfg_.node(parts.front()).duration;
  const DeviceRates* device = rates(parts.front());
  const bool described = device && device->bytes_per_ns && *device->bytes_per_ns > 0 &&
                         std::all_of(parts.begin() + 1, parts.end(), [&](graph::NodeId p) { return desc(p).describable(); });
  if (!described) {
    out.fallback = true;
    out.duration = gemm + nanos_from_double(kFallbackRestShare * static_cast<double>(out.parts - gemm));
    out.duration = std::clamp(out.duration, gemm, out.parts);
    return out;
  }
  const double reuse = intermediates_kept_ ? 1.0 : 2.0;
  double bytes = 0;
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const cm::OpDesc& op = desc(parts[i]);
    const double read = op.bytes() - op.bytes_written();
    // The GEMM's output when its description has it; else the step is taken to read a tensor of
    // its own output's size from it (an elementwise op on the GEMM's output).
    const cm::OpDesc& producer = desc(parts[i - 1]);
    const double written = i == 1 && !producer.describable() ? op.bytes_written() : producer.bytes_written();
    bytes += std::max(0.0, op.bytes() - reuse * std::min(written, read));
  }
  out.bytes = bytes;
  out.duration = std::clamp(gemm + nanos_from_double(bytes / *device->bytes_per_ns), gemm, std::max(gemm, out.parts));
  out.bandwidth_from_profile = device->bandwidth_from_profile;
  return out;
}

}  // namespace dpro::whatif
