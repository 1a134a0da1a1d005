#include "whatif/device_retime.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"
#include "costmodel/dataset.h"
#include "costmodel/op_desc_from_graph.h"
#include "costmodel/paths.h"
#include "costmodel/residual_correction.h"
#include "costmodel/roofline_share.h"
#include "costmodel/share_device_fit.h"
#include "hw/device_rates.h"

namespace dpro::whatif {

namespace cm = dpro::costmodel;

namespace {

bool is_gpu_op(graph::NodeKind k) {
  return k == graph::NodeKind::kKernel || k == graph::NodeKind::kCollective || k == graph::NodeKind::kMemcpy ||
         k == graph::NodeKind::kMemset;
}

bool is_host_copy(const trace::TraceSet& traces, const graph::Node& n) {
  if (n.kind != graph::NodeKind::kMemcpy) return false;
  const std::string_view name = traces.strings.view(n.name);
  return name.find("DtoD") == std::string_view::npos && name.find("PtoP") == std::string_view::npos;
}

// The profile's fit for a copy node: its direction from its name (CUPTI's "HtoD", "DtoH", "DtoD";
// peer copies have none), its bytes from the op table; nullopt when either is unknown.
std::optional<std::pair<hw::Measured<hw::CopyFit>, std::int64_t>> profiled_copy(const hw::DeviceRates& rates,
                                                                                const trace::TraceSet& traces,
                                                                                const graph::Dfg& dfg, graph::NodeId id) {
  const graph::Node& n = dfg.node(id);
  const graph::OpDesc* op = dfg.op(id);
  if (!rates.profiled() || n.kind != graph::NodeKind::kMemcpy || !op || !op->bytes || *op->bytes <= 0) return std::nullopt;
  const std::string_view name = traces.strings.view(n.name);
  std::optional<hw::CopyDirection> direction;
  if (name.find("HtoD") != std::string_view::npos) direction = hw::CopyDirection::kHostToDevice;
  else if (name.find("DtoH") != std::string_view::npos) direction = hw::CopyDirection::kDeviceToHost;
  else if (name.find("DtoD") != std::string_view::npos) direction = hw::CopyDirection::kDeviceToDevice;
  if (!direction) return std::nullopt;
  const auto fit = rates.copy(*direction);
  if (!fit) return std::nullopt;
  return std::pair{*fit, *op->bytes};
}

// --origin-device over a GPU the trace records: once per recorded name that the catalog maps to
// another entry (it may map the recorded name to a board the user knows it was not, e.g. an
// A100's memory size).
void find_origin_overrides(const cm::DeviceCatalog& catalog, const trace::TraceSet& traces,
                           const cm::DeviceSpec& forced, DeviceChange& change) {
  std::set<std::string> seen;
  for (const trace::TraceRank& r : traces.ranks)
    for (const auto& d : r.devices)
      if (const cm::DeviceSpec* recorded = catalog.find(d.name);
          recorded && recorded != &forced && seen.insert(d.name).second)
        change.origin_overrides.push_back({r.file, d.name, recorded->name});
}

// Ops whose GPU the catalog does not know cannot be re-timed; keeping their measured times would
// predict "no change" for a reason that has nothing to do with the job.
OptionError unknown_origin_error(const cm::DeviceCatalog& catalog, const trace::TraceSet& traces,
                                 const std::map<int, std::size_t>& ops_of_rank) {
  std::set<std::string> gpus;
  std::size_t ops = 0;
  for (const auto& [r, n] : ops_of_rank) {
    const trace::TraceRank* rank = traces.find_rank(r);
    gpus.insert(rank && !rank->devices.empty() ? "'" + rank->devices.front().name + "'" : "none recorded");
    ops += n;
  }
  std::string gpu_list, known;
  for (const std::string& g : gpus) gpu_list += (gpu_list.empty() ? "" : ", ") + g;
  for (const std::string& k : catalog.names()) known += (known.empty() ? "" : ", ") + k;
  const trace::TraceRank* first = traces.find_rank(ops_of_rank.begin()->first);
  return OptionError("origin_device", "",
                     "the device catalog does not know the GPU the trace ran on (GPU model: " + gpu_list + "; " +
                         std::to_string(ops) + " GPU ops on " + std::to_string(ops_of_rank.size()) +
                         " rank(s)), so nothing can be re-timed from it: name that GPU with this option (known: " +
                         known + ")",
                     first ? first->file : std::string());
}

// The origin's side of the share ratio fitted like the target's: each GPU of the rows of
// `path` (ops measured on the trace's GPU(s): DeviceRetime::origin_samples_path) on its rows.
// Rows of a GPU none of the re-timed ops ran on (`origins`) fit nothing: they are counted in
// `change.origin_unused`, and an InputError when no row is of such a GPU.
std::map<const cm::DeviceSpec*, cm::ShareTable> fit_origins(const cm::ShareTable& prior, const std::string& path,
                                                            const cm::DeviceCatalog& catalog,
                                                            const std::set<const cm::DeviceSpec*>& origins,
                                                            DeviceChange& change) {
  const std::vector<cm::Measurement> samples = cm::load_measurements(path, catalog);
  if (samples.empty()) throw InputError(path, "origin_samples", "no rows");
  std::map<const cm::DeviceSpec*, std::vector<const cm::Measurement*>> by_gpu;
  for (const cm::Measurement& m : samples) by_gpu[m.device].push_back(&m);
  std::map<const cm::DeviceSpec*, cm::ShareTable> out;
  for (const auto& [gpu, rows] : by_gpu) {
    if (!origins.contains(gpu)) {
      change.origin_unused[gpu->name] = rows.size();
      continue;
    }
    const cm::DeviceScalars scalars = cm::fit_device_scalars(prior, rows, *gpu);
    change.origin_fits[gpu->name] = {rows.size(), cm::describe(scalars)};
    out.emplace(gpu, cm::with_device_scalars(prior, scalars));
  }
  if (out.empty()) {
    std::vector<std::string> theirs, ran;
    for (const auto& [gpu, rows] : by_gpu) theirs.push_back(gpu->name);
    for (const cm::DeviceSpec* gpu : origins) ran.push_back(gpu->name);
    throw InputError(path, "origin_samples",
                     fmt::format("rows measured on {}, but the trace's GPU ops ran on {}: give ops measured on the "
                                 "GPU the trace ran on",
                                 fmt::join(theirs, ", "), ran.empty() ? std::string("no GPU") : fmt::format("{}", fmt::join(ran, ", "))));
  }
  return out;
}

}  // namespace

const cm::DeviceSpec* origin_of(const cm::DeviceCatalog& catalog, const trace::TraceSet& traces,
                                const graph::Node& n) {
  const trace::TraceRank* rank = traces.find_rank(n.rank);
  if (!rank || rank->devices.empty()) return nullptr;
  std::optional<std::int64_t> device;
  if (n.event.below(rank->events.size()))
    if (const auto* a = rank->attrs_of(rank->events[n.event.value])) device = a->device;
  for (const auto& d : rank->devices)
    if (!device || d.id == *device) return catalog.find(d.name);
  return catalog.find(rank->devices.front().name);
}

std::vector<std::pair<std::string, std::pair<std::size_t, Nanos>>> DeviceChange::sorted_undescribed() const {
  std::vector<std::pair<std::string, std::pair<std::size_t, Nanos>>> v(undescribed.begin(), undescribed.end());
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    return a.second.second != b.second.second ? a.second.second > b.second.second : a.first < b.first;
  });
  return v;
}

DeviceChange device_retime(Workload& workload, const DeviceRetime& options) {
  const trace::TraceSet& traces = *workload.traces;
  graph::Dfg& dfg = workload.graph.dfg;
  const auto catalog = cm::DeviceCatalog::load_directory(options.device_dir);
  const cm::DeviceSpec& target = catalog.get(options.device, "device");
  const hw::DeviceRates rates = hw::load_device_rates(options.device_profile, {options.device, {}}, catalog);
  DeviceChange change;
  change.target = target.name;
  const cm::DeviceSpec* forced =
      options.origin_device.empty() ? nullptr : &catalog.get(options.origin_device, "origin_device");
  if (forced) {
    change.forced_origin = forced->name;
    find_origin_overrides(catalog, traces, *forced, change);
  }
  const auto pricer_kind = cm::parse_pricer_kind(options.pricer);
  if (!pricer_kind) throw OptionError("pricer", options.pricer, std::string("is ") + cm::kPricerKindNames);
  change.pricer = *pricer_kind;
  const bool by_shares = *pricer_kind == cm::PricerKind::kRooflineShare;
  // The learned model (and LibTorch with it) only where it prices.
  std::optional<cm::LearnedModel> model;
  std::optional<cm::ShareTable> shares, target_shares;
  if (by_shares) {
    change.shares_path = options.shares_path.empty() ? cm::default_shares_path() : options.shares_path;
    shares = cm::load_share_table(change.shares_path);
    if (!options.samples_path.empty()) {
      // The few-shot fit of the target's scalars (share_device_fit.h, as `costmodel predict
      // --pricer roofline-share --device-samples`), applied to the target's side of the ratio;
      // the origin's side keeps the prior unless origin_samples_path fits it (below).
      const auto samples = cm::load_samples_of(options.samples_path, catalog, target);
      std::vector<const cm::Measurement*> fit_on;
      for (const cm::Measurement& m : samples) fit_on.push_back(&m);
      const cm::DeviceScalars scalars = cm::fit_device_scalars(*shares, fit_on, target);
      target_shares = cm::with_device_scalars(*shares, scalars);
      change.samples_used = samples.size();
      change.share_fit = cm::describe(scalars);
    }
  } else if (cm::LearnedModel::available()) {
    model = cm::LearnedModel::load(options.model_path);
  } else {
    change.learned_unavailable = cm::LearnedModel::unavailable_reason();
  }

  // What the pricer is asked, and which node each request re-times.
  std::vector<cm::PriceRequest> requests;
  std::vector<graph::NodeId> priced_nodes;
  std::vector<bool> lent_launcher;  // per request: described by a like step's CPU op
  std::map<int, std::size_t> unknown_ranks;  // ops per rank whose origin GPU the catalog does not know
  const cm::LikeStepLaunchers lent = cm::launchers_from_like_steps(traces, dfg);
  change.like_step_kernels = lent.kernels;
  change.like_step_lenders = lent.lenders;
  for (const graph::NodeId id : dfg.node_ids()) {
    const graph::Node& n = dfg.node(id);
    if (!is_gpu_op(n.kind)) continue;
    const cm::DeviceSpec* origin = forced ? forced : origin_of(catalog, traces, n);
    if (!origin) {
      ++unknown_ranks[n.rank];
      continue;
    }
    if (const auto copy = profiled_copy(rates, traces, dfg, id)) {
      DeviceChange::ProfiledCopies& c = change.copies_from_profile[copy->first.figure];
      const Nanos after = nanos_from_double(copy->first.value.ns(static_cast<double>(copy->second)));
      ++c.copies;
      c.before = saturating_add(c.before, n.duration);
      c.after = saturating_add(c.after, after);
      dfg.node(id).duration = after;
      continue;
    }
    if (n.kind == graph::NodeKind::kCollective || is_host_copy(traces, n)) {
      // Counted at the duration the replay gives them (a collective's transfer after its
      // last peer arrived, not its kernel time with the waiting), before and after alike.
      change.coverage.add(cm::PricedBy::kUnchanged, n.duration, n.duration);
      continue;
    }
    // The op whose launching CPU op describes a kernel: its own, else a like step's.
    const graph::OpDesc* own = dfg.op(id);
    const bool lent_launch = own && own->launcher.empty() && lent.launch[id].valid();
    const graph::OpDesc* launch = lent_launch ? &dfg.ops().op(lent.launch[id]) : own;
    cm::OpDesc op = n.kind == graph::NodeKind::kKernel && own ? cm::op_desc_of_kernel(dfg.ops(), *own, *launch)
                                                              : cm::OpDesc{};
    if (op.dtype_from_kernel) ++change.math[op.dtype].kernels;
    if (n.kind == graph::NodeKind::kKernel && !op.describable()) {
      ++change.undescribable_kernels;
      if (cm::resolve_family(op.name) != cm::OpFamily::kUnknown) ++change.without_shapes;
      if (!launch || launch->launcher.empty()) {
        ++change.without_cpu_op;
        if (!change.without_cpu_op_in_capture) {
          const trace::TraceRank* r = traces.find_rank(n.rank);
          change.without_cpu_op_in_capture = r && r->format == "native";
        }
      }
      auto& u = change.undescribed[op.name.empty() ? std::string("(unnamed)") : op.name];
      ++u.first;
      u.second += n.measured_duration;
    }
    requests.push_back({std::move(op), origin, to_millis(n.measured_duration), n.kind == graph::NodeKind::kKernel});
    priced_nodes.push_back(id);
    lent_launcher.push_back(lent_launch);
  }
  if (!unknown_ranks.empty()) throw unknown_origin_error(catalog, traces, unknown_ranks);
  cm::ResidualCorrection correction;
  if (!options.samples_path.empty() && !by_shares) {
    if (!model) throw OptionError("device_samples", "", "needs the learned cost model (LibTorch)", options.samples_path);
    correction = cm::correction_from_samples(*model, cm::load_samples_of(options.samples_path, catalog, target), target);
  }
  std::map<const cm::DeviceSpec*, cm::ShareTable> origin_shares;
  if (!options.origin_samples_path.empty()) {
    if (!by_shares) throw OptionError("origin_samples", "", "needs --pricer roofline-share", options.origin_samples_path);
    std::set<const cm::DeviceSpec*> origins;
    for (const cm::PriceRequest& r : requests) origins.insert(r.origin);
    origin_shares = fit_origins(*shares, options.origin_samples_path, catalog, origins, change);
  }
  cm::Pricer pricer = shares ? cm::Pricer(target, *shares, target_shares ? &*target_shares : nullptr, &origin_shares)
                             : cm::Pricer(target, model ? &*model : nullptr, &correction);
  const std::vector<cm::Price> prices = pricer.price(requests);
  for (std::size_t i = 0; i < prices.size(); ++i) {
    graph::Node& n = dfg.node(priced_nodes[i]);
    n.duration = prices[i].time();
    change.coverage.add(prices[i].by, n.measured_duration, n.duration);
    if (prices[i].by == cm::PricedBy::kSameChip) {
      change.undescribable_same_chip += !requests[i].op.describable();
    } else if (prices[i].by == cm::PricedBy::kLearned || prices[i].by == cm::PricedBy::kRooflineShare) {
      if (requests[i].op.like_op) ++change.like_ops;
      if (lent_launcher[i]) ++change.like_step_learned;
    }
  }
  if (pricer.used_learned()) {
    change.pricing = model->pricing_of(target);
    change.overheads_ms["target"] = pricer.target_overhead_ms();
    for (const auto& [origin, ms] : pricer.origin_overhead_ms()) change.overheads_ms["origin " + origin->name] = ms;
  }
  if (!by_shares) change.samples_used = correction.size();
  for (auto& [dtype, mode] : change.math) {
    const double peak = target.peak_flops(dtype);
    mode.target_peak_tflops = peak / 1e12;
    mode.native_on_target = peak > target.peak_flops(cm::DType::kFloat32);
  }
  return change;
}

}  // namespace dpro::whatif
