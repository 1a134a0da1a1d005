#include "optimizer/space.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <span>

#include "core/error.h"
#include "costmodel/comm/comm_ops.h"
#include "hw/device_rates.h"
#include "replayer/slack.h"
#include "whatif/comm/compress.h"
#include "whatif/comm/retime.h"
#include "whatif/host_retime.h"
#include "whatif/op_fusion.h"
#include "whatif/precision.h"

namespace dpro::optimizer {
namespace {

// A training step keeps many forward intermediates for its backward pass, so a fused kernel still
// writes them: fusion is priced as saving their re-read only (the smaller saving; op_fusion.h).
constexpr bool kIntermediatesKept = true;

// Gradient bucket sizes searched (MiB): PyTorch DDP's default is 25, Horovod's fusion buffer 64;
// the ends bracket "one bucket per all-reduce" and "all gradients in one".
const std::vector<std::string> kBucketMb = {"off", "1", "5", "10", "25", "50", "100", "200"};

struct ValueRisk {
  const char* value;
  double risk;
};

// Accuracy-risk proxy per compression method (notes/optimizer.md): casts to 16 bits lose little;
// low-rank and sparsifying methods need error feedback (assumed) and still change convergence;
// sign compression most of all.
const std::vector<ValueRisk> kCompressionRisk = {
    {"none", 0.0},       {"fp16", 0.02},         {"bf16", 0.03},     {"powersgd:4", 0.2},
    {"topk:0.01", 0.3},  {"randomk:0.01", 0.35}, {"dgc:0.001", 0.3}, {"efsignsgd", 0.4},
};

// The risk of one method as a plan gives it: its method's, whatever its parameter.
double method_risk(const std::string& item) {
  const std::string method = item.substr(0, item.find(':'));
  for (const ValueRisk& v : kCompressionRisk)
    if (std::string(v.value).substr(0, std::string(v.value).find(':')) == method) return v.risk;
  return 1.0;
}

// Per precision: tf32 keeps fp32's range with a 10-bit mantissa; bf16 autocast keeps fp32 master
// weights; fp16 needs loss scaling; fp8 GEMMs need per-tensor scaling (Transformer Engine's
// recipe) and lose most mantissa. The order is the order the rewrites apply in.
const std::vector<ValueRisk> kPrecisionRisk = {
    {"as_recorded", 0.0}, {"tf32", 0.01}, {"bf16", 0.05}, {"fp16", 0.08}, {"fp8", 0.15},
};

double risk_in(const std::vector<ValueRisk>& table, const std::string& value) {
  for (const ValueRisk& v : table)
    if (value == v.value) return v.risk;
  return 1.0;
}

bool wanted(const SpaceOptions& options, Strategy s) {
  return options.strategies.empty() ||
         std::find(options.strategies.begin(), options.strategies.end(), s) != options.strategies.end();
}

std::size_t gradient_allreduces(const whatif::Workload& base) {
  const std::vector<comm::CommOp> ops = comm::find_comm_ops(base.graph.dfg, *base.traces);
  return static_cast<std::size_t>(std::count_if(ops.begin(), ops.end(), [](const comm::CommOp& op) {
    return op.op == comm::CollectiveOp::kAllReduce;
  }));
}

whatif::Precision precision_of(const std::string& dtype, std::vector<std::string> classes, const std::string& device_dir,
                               const std::string& device, const std::string& device_profile) {
  whatif::Precision p;
  p.device_profile = device_profile;
  p.device = device;
  p.dtype = dtype;
  p.classes = std::move(classes);
  p.device_dir = device_dir;
  return p;
}

// The dtypes that re-price some kernel of op class `cls` on this GPU (each tried on a copy), and
// why none can be priced at all ("": some could be tried).
std::vector<std::string> priced_dtypes(const whatif::Workload& base, const std::string& cls, const SpaceOptions& options,
                                       std::string& unpriced) {
  std::vector<std::string> out;
  for (const ValueRisk& r : kPrecisionRisk) {
    if (std::string(r.value) == "as_recorded" || !unpriced.empty()) continue;
    if (std::string(r.value) == "fp8" && cls != "gemm") continue;  // fp8 recipes (Transformer Engine) cover linear layers
    whatif::Workload trial = base;
    try {
      const whatif::PrecisionChange c =
          whatif::precision(trial, precision_of(r.value, {cls}, options.device_dir, options.device, options.device_profile));
      std::size_t lowered = 0;
      for (const auto& [k, totals] : c.lowered) lowered += totals.kernels;
      if (lowered == 0 || c.gpu_after >= c.gpu_before) continue;
    } catch (const OptionError&) {
      continue;  // the GPU has no arithmetic for it
    } catch (const InputError& e) {
      unpriced = e.what();
      continue;
    }
    out.push_back(r.value);
  }
  return out;
}

// The precision rewrite of a dtype per op class ("gemm", "conv"): one lowering per dtype, in
// kPrecisionRisk's order, for the classes at it (the first, then the others as its stages). The elementwise ops between GEMMs and
// convolutions follow the first 16-bit dtype (autocast's ops inherit their input's dtype; fp8
// GEMMs write 16 bits, tf32 changes no width), so GEMMs and convolutions both at one 16-bit dtype
// are the "all" rewrite autocast is.
std::optional<whatif::Precision> precision_rewrite(const std::map<std::string, std::string>& dtype_of_class,
                                                   const ResourcePaths& paths, const std::string& device) {
  std::vector<whatif::Precision> out;
  bool elementwise_taken = false;
  for (const ValueRisk& r : kPrecisionRisk) {
    std::vector<std::string> classes;
    for (const std::string& cls : kPrecisionClasses)  // each class, or its parts (per-layer precision)
      for (const auto& [subject, dtype] : dtype_of_class)
        if (dtype == r.value && (subject == cls || whatif::names_part_of(subject, cls))) classes.push_back(subject);
    if (classes.empty()) continue;
    const bool sixteen_bits = std::string(r.value) == "bf16" || std::string(r.value) == "fp16";
    if (sixteen_bits && !elementwise_taken) {
      elementwise_taken = true;
      classes = classes == kPrecisionClasses ? std::vector<std::string>{"all"} : classes;
      if (classes.front() != "all") classes.push_back("elementwise");
    }
    out.push_back(precision_of(r.value, std::move(classes), paths.device_dir, device, paths.device_profile));
  }
  if (out.empty()) return std::nullopt;
  // One rewrite: the first lowering, the others its stages (one precision prefix for the search).
  for (std::size_t i = 1; i < out.size(); ++i) out.front().then.push_back({out[i].dtype, out[i].classes});
  return out.front();
}

// The partition variables (space.h): one per boundary of a step's all-reduces that can merge.
void add_partition(const whatif::Workload& base, SearchSpace& space) {
  const comm::StepAllreduces steps = comm::step_allreduces(comm::find_comm_ops(base.graph.dfg, *base.traces), *base.traces);
  std::size_t added = 0;
  for (std::size_t p = 1; p < steps.most; ++p) {
    if (!steps.mergeable[p]) continue;
    Variable v;
    v.strategy = Strategy::kPartition;
    v.subject = std::to_string(p);
    v.values = {"split", "merge"};
    space.variables.push_back(std::move(v));
    ++added;
  }
  if (added > 0) space.strategies.push_back(Strategy::kPartition);
  else space.not_applicable.emplace_back(Strategy::kPartition, "no step has two all-reduces of one group to merge");
}

}  // namespace

std::vector<std::string> compression_values() {
  std::vector<std::string> out;
  for (const ValueRisk& r : kCompressionRisk) out.push_back(r.value);
  return out;
}

double compression_risk(const std::string& value) {
  double risk = 0;
  for (std::size_t begin = 0;;) {
    const auto comma = value.find(',', begin);
    risk = std::max(risk, method_risk(value.substr(begin, comma - begin)));
    if (comma == std::string::npos) return risk;
    begin = comma + 1;
  }
}

Nanos fusion_critical_saving(const whatif::FusionCandidate& candidate, const graph::Dfg& dfg,
                             const IdVector<graph::NodeId, Nanos>& slack) {
  DPRO_CHECK(slack.size() == dfg.node_count());
  // The per-occurrence figures are parallel to the occurrences (whatif's count_occurrence fills all three).
  DPRO_CHECK(candidate.occurrence_gpu_saving.size() == candidate.occurrences.size() &&
             candidate.occurrence_launches.size() == candidate.occurrences.size());
  const auto least_slack = [&slack](std::span<const graph::NodeId> nodes) {
    Nanos s = kMaxReplayNanos;
    for (const graph::NodeId v : nodes) s = std::min(s, slack[v]);
    return s;
  };
  Nanos total = 0;
  for (std::size_t i = 0; i < candidate.occurrences.size(); ++i) {
    total += std::max<Nanos>(0, candidate.occurrence_gpu_saving[i] - least_slack(candidate.occurrences[i]));
    if (!candidate.occurrence_launches[i].empty()) {
      Nanos cpu = 0;
      for (const graph::NodeId l : candidate.occurrence_launches[i]) cpu += dfg.node(l).duration;
      total += std::max<Nanos>(0, cpu - least_slack(candidate.occurrence_launches[i]));
    }
  }
  return total;
}

SearchSpace make_space(const whatif::Workload& base, const SpaceOptions& options) {
  // A device profile that does not apply to the GPU priced is refused here, by the one rule every
  // reader follows (hw/device_profile.h), and not left out with one strategy that reads it.
  if (!options.device_profile.empty())
    hw::load_device_rates(options.device_profile, {options.device, base.traces->gpu_names()},
                          hw::DeviceCatalog::load_directory(options.device_dir));
  SearchSpace space;
  auto add_strategy = [&](Strategy s) {
    if (std::find(space.strategies.begin(), space.strategies.end(), s) == space.strategies.end())
      space.strategies.push_back(s);
  };
  const bool partition = wanted(options, Strategy::kPartition);
  const bool comm_asked = partition || wanted(options, Strategy::kBuckets) || wanted(options, Strategy::kCompression);
  const std::size_t allreduces = comm_asked ? gradient_allreduces(base) : 0;
  for (Strategy s : {Strategy::kBuckets, Strategy::kCompression}) {
    const bool sizes_for_partition = s == Strategy::kBuckets && partition;
    if (!wanted(options, s) && !sizes_for_partition) continue;
    if (allreduces == 0) {
      if (wanted(options, s)) space.not_applicable.emplace_back(s, "the traces hold no all-reduce");
      continue;
    }
    Variable v;
    v.strategy = s;
    if (s == Strategy::kBuckets) {
      v.values = kBucketMb;
    } else {
      v.values = compression_values();
    }
    space.variables.push_back(std::move(v));
    add_strategy(s);
    if (sizes_for_partition) add_partition(base, space);
  }
  if (partition && allreduces == 0) space.not_applicable.emplace_back(Strategy::kPartition, "the traces hold no all-reduce");
  if (wanted(options, Strategy::kPrecision)) {
    // A decision per op class (GEMM/linear/bmm, convolution), each offered the dtypes whose
    // lowering re-prices some kernel of that class on this GPU.
    std::string unpriced;  // why no dtype can be priced at all (a GPU the catalog does not know)
    for (const std::string& cls : kPrecisionClasses) {
      Variable v;
      v.strategy = Strategy::kPrecision;
      v.subject = cls;
      v.values = {"as_recorded"};
      for (std::string& dtype : priced_dtypes(base, cls, options, unpriced)) v.values.push_back(std::move(dtype));
      if (v.values.size() > 1) space.variables.push_back(std::move(v));
    }
    if (std::any_of(space.variables.begin(), space.variables.end(), [](const Variable& v) { return v.strategy == Strategy::kPrecision; })) {
      add_strategy(Strategy::kPrecision);
    } else {
      space.not_applicable.emplace_back(Strategy::kPrecision,
                                        unpriced.empty() ? "no kernel would run at a narrower dtype" : unpriced);
    }
  }
  if (wanted(options, Strategy::kOpFusion)) {
    whatif::CandidateOptions co;
    co.intermediates_kept = kIntermediatesKept;
    co.device = {options.device_dir, options.device, options.device_profile};
    // An off/on variable for each of the first `most` candidates that save anything.
    const auto add_chains = [&space](const std::vector<whatif::FusionCandidate>& candidates, std::size_t most) {
      std::size_t added = 0;
      for (const whatif::FusionCandidate& c : candidates) {
        if (added == most) break;
        if (c.gpu_saving() <= 0 && c.launch_time_saved <= 0) continue;
        Variable v;
        v.strategy = Strategy::kOpFusion;
        v.chain = c.kernels;
        v.values = {"off", "on"};
        space.variables.push_back(std::move(v));
        ++added;
      }
      return added;
    };
    // The baseline's slack, for ranking the chains by what they could save where it counts.
    std::optional<IdVector<graph::NodeId, Nanos>> slack;
    if (options.rank_fusion_by_slack)
      slack = replayer::start_slack(base.graph.dfg, replayer::simulate(base.graph.dfg, replayer::Record::kTimes));
    const auto ranked = [&slack, &base](std::vector<whatif::FusionCandidate> candidates) {
      if (!slack) return candidates;
      std::vector<std::pair<Nanos, std::size_t>> keys;
      for (std::size_t i = 0; i < candidates.size(); ++i) keys.emplace_back(fusion_critical_saving(candidates[i], base.graph.dfg, *slack), i);
      // Largest critical saving first; whatif's order among equals.
      std::stable_sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
      std::vector<whatif::FusionCandidate> out;
      out.reserve(candidates.size());
      for (const auto& [key, i] : keys) out.push_back(std::move(candidates[i]));
      return out;
    };
    const std::size_t kept = add_chains(ranked(whatif::find_fusion_candidates(base, co)), options.max_fusion_chains);
    // GEMM epilogues (whatif/op_fusion.h): a chain headed by a GEMM, after the chains above (a
    // kernel a chain takes first is not fused again).
    const std::size_t epilogues = add_chains(ranked(whatif::find_epilogue_candidates(base, co)), options.max_epilogue_chains);
    if (kept + epilogues > 0) add_strategy(Strategy::kOpFusion);
    else space.not_applicable.emplace_back(Strategy::kOpFusion, "no legal chain of memory-bound kernels or GEMM epilogue to fuse");
  }
  if (space.variables.empty()) {
    std::string why;
    for (const auto& [s, reason] : space.not_applicable) why += fmt::format("{}{}: {}", why.empty() ? "" : "; ", to_string(s), reason);
    throw OptionError("strategies", "", "nothing to search on these traces (" + why + ")");
  }
  return space;
}

bool split_precision(SearchSpace& space, const whatif::OpPart& part) {
  DPRO_CHECK(!part.complement);
  const std::string cls = whatif::to_string(part.cls);
  for (std::size_t i = 0; i < space.variables.size(); ++i) {
    const Variable& v = space.variables[i];
    if (v.strategy != Strategy::kPrecision) continue;
    std::optional<whatif::OpPart> rest;
    if (v.subject == cls) {
      rest = whatif::OpPart{part.cls, true, {}, part.layers};
    } else if (v.subject.rfind(cls + (part.layers ? "#^" : "@^"), 0) == 0) {
      rest = whatif::parse_op_part(v.subject);
    } else {
      continue;
    }
    whatif::OpPart cell{part.cls, false, {}, part.layers};
    for (long p : part.positions)
      if (std::find(rest->positions.begin(), rest->positions.end(), p) == rest->positions.end()) cell.positions.push_back(p);
    if (cell.positions.empty()) return false;
    rest->positions.insert(rest->positions.end(), cell.positions.begin(), cell.positions.end());
    std::sort(rest->positions.begin(), rest->positions.end());
    Variable taken = v;
    taken.subject = cell.to_string();
    space.variables[i].subject = rest->to_string();
    space.variables.insert(space.variables.begin() + static_cast<std::ptrdiff_t>(i), std::move(taken));
    return true;
  }
  return false;
}

bool AssignmentLess::operator()(const Assignment& x, const Assignment& y) const {
  const std::size_t n = std::min(x.size(), y.size());
  for (std::size_t i = 0; i < n; ++i)
    if (x[i] != y[i]) return x[i] < y[i];
  return x.size() < y.size();
}

std::vector<std::vector<std::size_t>> decision_variables(const SearchSpace& space, const Assignment& a) {
  DPRO_CHECK(a.size() == space.variables.size());
  std::vector<std::vector<std::size_t>> out;
  std::optional<std::size_t> partition;  // index into out of the partition decision
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] == 0) continue;
    if (space.variables[i].strategy != Strategy::kPartition) {
      out.push_back({i});
      continue;
    }
    if (!partition) {
      partition = out.size();
      out.emplace_back();
    }
    out[*partition].push_back(i);
  }
  return out;
}

std::vector<Decision> decisions_of(const SearchSpace& space, const Assignment& a) {
  std::vector<Decision> out;
  for (const std::vector<std::size_t>& vars : decision_variables(space, a)) {
    const Variable& v = space.variables[vars.front()];
    Decision d;
    d.strategy = v.strategy;
    if (v.strategy == Strategy::kPartition) {
      // The boundaries kept: every partition variable left at "split".
      for (std::size_t i = 0; i < a.size(); ++i)
        if (space.variables[i].strategy == Strategy::kPartition && a[i] == 0)
          d.boundaries.push_back(std::stoul(space.variables[i].subject));
      d.value = fmt::format("{}", fmt::join(d.boundaries, ","));
    } else {
      d.subject = v.subject;
      if (v.strategy == Strategy::kOpFusion) d.chain = v.chain;
      else d.value = v.values[a[vars.front()]];
    }
    out.push_back(std::move(d));
  }
  return out;
}


double risk_of(const std::vector<Decision>& decisions) {
  double risk = 0;
  double precision = 0;  // the riskiest dtype of the plan's precision decisions (one per op class)
  for (const Decision& d : decisions) {
    if (d.strategy == Strategy::kCompression) risk += compression_risk(d.value);
    else if (d.strategy == Strategy::kPrecision) precision = std::max(precision, risk_in(kPrecisionRisk, d.value));
  }
  return risk + precision;
}

double risk_of(const SearchSpace& space, const Assignment& a) { return risk_of(decisions_of(space, a)); }

namespace {

// Whether the conditions ask for a communication re-timing of their own (cluster, settings other
// than host.*, ranks, sizes).
bool comm_conditions(const Conditions& c) {
  return !c.cluster.empty() || c.ranks.has_value() || !c.comm_sizes.empty() ||
         std::any_of(c.settings.begin(), c.settings.end(), [](const std::string& s) { return !whatif::is_host_setting(s); });
}

}  // namespace

std::vector<whatif::Rewrite> condition_rewrites(const Conditions& c, const ResourcePaths& paths) {
  std::vector<whatif::Rewrite> out;
  if (auto host = whatif::host_retime_from_settings(c.settings, nullptr)) out.emplace_back(*host);
  if (!c.device.empty()) {
    whatif::DeviceRetime d;
    d.device = c.device;
    d.origin_device = c.origin_device;
    d.model_path = paths.model_path;
    d.device_dir = paths.device_dir;
    d.device_profile = paths.device_profile;
    out.emplace_back(std::move(d));
  } else if (!c.origin_device.empty()) {
    throw OptionError("origin_device", c.origin_device, "does nothing without a device");
  }
  return out;
}

std::optional<whatif::OpPart> precision_part(const std::string& subject) {
  try {
    return whatif::parse_op_part(subject);
  } catch (const OptionError&) {
    throw OptionError("precision", subject,
                      "not a part of an op class (gemm@N,.. or conv@N,.. by op position, gemm#N,.. or conv#N,.. by layer; "
                      "@^ or #^ for the rest)");
  }
}

std::vector<whatif::Rewrite> decision_rewrites(const Conditions& c, const std::vector<Decision>& decisions,
                                               const ResourcePaths& paths) {
  std::vector<whatif::Rewrite> out;
  std::optional<double> bucket_mb;
  std::optional<comm::Compression> compression;
  std::optional<std::vector<std::size_t>> boundaries;
  whatif::OpFusion fusion;
  fusion.intermediates_kept = kIntermediatesKept;
  fusion.device = {paths.device_dir, c.device, paths.device_profile};
  for (const Decision& d : decisions) {
    switch (d.strategy) {
      case Strategy::kBuckets: {
        if (d.value == "off") break;
        double mb = 0;
        try {
          std::size_t used = 0;
          mb = std::stod(d.value, &used);
          if (used != d.value.size()) throw std::invalid_argument(d.value);
        } catch (const std::exception&) {
          throw OptionError("buckets", d.value, "not a bucket size in MiB (or \"off\")");
        }
        if (!(mb > 0) || mb > whatif::kMaxBucketMb)
          throw OptionError("buckets", d.value, fmt::format("a bucket size is above 0 and at most {} MiB", whatif::kMaxBucketMb));
        bucket_mb = mb;
        break;
      }
      case Strategy::kCompression:
        if (d.value == "none") break;
        compression = comm::parse_compression(d.value);
        compression->devices_dir = paths.device_dir;
        compression->device_profile = paths.device_profile;
        compression->device = c.device;
        break;
      case Strategy::kPrecision: {
        const std::optional<whatif::OpPart> part = precision_part(d.subject);
        if (!part && d.subject != "all" && std::find(kPrecisionClasses.begin(), kPrecisionClasses.end(), d.subject) == kPrecisionClasses.end())
          throw OptionError("precision", d.subject, "unknown op class (gemm, conv, or all for both)");
        if (part) {
          // The parts of one class are disjoint: no position named twice, none named by a part and
          // left to the class's rest by a complement.
          for (const Decision& e : decisions) {
            if (&e == &d || e.strategy != Strategy::kPrecision) continue;
            std::optional<whatif::OpPart> other;
            try {
              other = whatif::parse_op_part(e.subject);
            } catch (const OptionError&) {
              continue;  // reported at its own decision
            }
            if (!other || other->cls != part->cls) continue;
            if (other->layers != part->layers)
              throw OptionError("precision", d.subject,
                                std::string(part->layers ? "names layers (#), " : "names op positions (@), ") + e.subject +
                                    (other->layers ? " layers (#)" : " op positions (@)") +
                                    " of the same op class: a class's parts use one of the two");
            if (other->complement && part->complement) continue;
            const whatif::OpPart& named = part->complement ? *other : *part;
            const whatif::OpPart& against = part->complement ? *part : *other;
            for (long p : named.positions) {
              const bool in = std::find(against.positions.begin(), against.positions.end(), p) != against.positions.end();
              if (in != against.complement)
                throw OptionError("precision", d.subject, "overlaps " + e.subject + ": the parts of an op class are disjoint");
            }
          }
        }
        if (d.value != "as_recorded" && risk_in(kPrecisionRisk, d.value) >= 1.0)
          throw OptionError("precision", d.value, "unknown dtype (tf32, bf16, fp16 or fp8)");
        break;
      }
      case Strategy::kPartition:
        if (boundaries) throw OptionError("partition", d.value, "a plan has at most one partition decision");
        boundaries = d.boundaries;
        break;
      case Strategy::kOpFusion:
        if (d.chain.size() < 2) throw OptionError("op_fusion", describe(d), "a chain has at least 2 kernels");
        fusion.chains.push_back(d.chain);
        break;
    }
  }
  std::map<std::string, std::string> dtype_of_class = precision_of_class(decisions);  // "gemm"/"conv" -> dtype
  std::erase_if(dtype_of_class, [](const auto& kv) { return kv.second == "as_recorded"; });
  if (auto p = precision_rewrite(dtype_of_class, paths, c.device)) out.emplace_back(std::move(*p));
  if (!fusion.chains.empty()) out.emplace_back(std::move(fusion));
  if (comm_conditions(c) || bucket_mb || boundaries || compression) {
    whatif::CommRetime comm;
    comm.cluster = c.cluster;
    comm.origin_cluster = c.origin_cluster;
    comm.clusters_dir = paths.clusters_dir;
    for (const std::string& s : c.settings)
      if (!whatif::is_host_setting(s)) comm.settings.push_back(s);
    comm.comm_sizes = c.comm_sizes;
    comm.ranks = c.ranks;
    comm.bucket_mb = bucket_mb;
    comm.bucket_boundaries = boundaries;
    comm.compression = compression;
    out.emplace_back(std::move(comm));
  }
  return out;
}

}  // namespace dpro::optimizer
