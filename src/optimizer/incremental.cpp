#include "optimizer/incremental.h"

#include <algorithm>

#include "core/error.h"

namespace dpro::optimizer {
namespace {

// How many of `rewrites` lead with `Kind`, from `from` on.
template <typename Kind>
std::size_t leading(const std::vector<whatif::Rewrite>& rewrites, std::size_t from) {
  std::size_t i = from;
  while (i < rewrites.size() && std::holds_alternative<Kind>(rewrites[i])) ++i;
  return i;
}

}  // namespace

PrefixEvaluator::PrefixEvaluator(const whatif::Workload& conditioned, const SearchSpace& space, Conditions conditions,
                                 ResourcePaths paths, std::size_t max_cached)
    : conditioned_(conditioned),
      space_(space),
      conditions_(std::move(conditions)),
      paths_(std::move(paths)),
      max_cached_(std::clamp<std::size_t>(kCachedNodes / (2 * std::max<std::size_t>(1, conditioned.graph.dfg.node_count())), 1,
                                          std::max<std::size_t>(1, max_cached))) {
  graph::Dfg dfg = conditioned.graph.dfg;  // check_acyclic needs a finalized graph
  if (!dfg.finalized()) dfg.finalize();
  graph::check_acyclic(dfg, *conditioned.traces);
  auto base = std::make_shared<whatif::Workload>(conditioned);
  base->graph.dfg.ops().share();
  base_ = std::move(base);
}

// Level 0 keeps the precision variables, level 1 also the op-fusion ones: the decisions that
// make the rewrites of that prefix (decision_rewrites).
Assignment PrefixEvaluator::project(const Assignment& a, std::size_t level) const {
  Assignment key(a.size(), 0);
  for (std::size_t i = 0; i < a.size(); ++i) {
    const Strategy s = space_.variables[i].strategy;
    if (s == Strategy::kPrecision || (level == 1 && s == Strategy::kOpFusion)) key[i] = a[i];
  }
  return key;
}

PrefixStats PrefixEvaluator::stats() const {
  const std::lock_guard lock(mutex_);
  return stats_;
}

std::shared_ptr<const whatif::Workload> PrefixEvaluator::find(std::size_t level, const Assignment& key,
                                                              std::vector<whatif::Change>& changes) {
  const std::lock_guard lock(mutex_);
  const auto it = levels_[level].find(key);
  if (it == levels_[level].end()) return nullptr;
  it->second.used = ++clock_;
  changes = it->second.changes;
  (level == 1 ? stats_.from_fusion : stats_.from_precision) += 1;
  return it->second.workload;
}

// A fusion prefix is kept from its second evaluation on: most moves of a search change a fusion
// variable (DLRM: 15 of 18 variables are chains), so most fusion prefixes are met once, and
// keeping each would cost a copy of the graph per evaluation, more than the reuse saves
// (docs/optimizer.md, "Incremental evaluation").
bool PrefixEvaluator::seen_before(const Assignment& key) {
  const std::lock_guard lock(mutex_);
  if (std::find(seen_.begin(), seen_.end(), key) != seen_.end()) return true;
  seen_.push_back(key);
  if (seen_.size() > kSeenKeys) seen_.pop_front();
  return false;
}

void PrefixEvaluator::remember(Level& level, const Assignment& key, const whatif::Workload& w,
                               const std::vector<whatif::Change>& changes) {
  auto copy = std::make_shared<whatif::Workload>(w);  // the copy outside the lock
  copy->graph.dfg.ops().share();  // the plans that start from it copy a pointer, not the op table
  std::shared_ptr<const whatif::Workload> entry = std::move(copy);
  const std::lock_guard lock(mutex_);
  if (level.contains(key)) return;  // another thread made it meanwhile
  if (level.size() >= max_cached_) {
    auto oldest = std::min_element(level.begin(), level.end(),
                                   [](const auto& x, const auto& y) { return x.second.used < y.second.used; });
    level.erase(oldest);
  }
  level[key] = Entry{std::move(entry), changes, ++clock_, nullptr};
}

PrefixEvaluator::Pricing PrefixEvaluator::pricing(bool precision, const Assignment& key, bool intermediates_kept) {
  // Calibrations of one intermediates_kept flag are cached (decision_rewrites uses one); another
  // flag gets none.
  Pricing p;
  {
    const std::lock_guard lock(mutex_);
    if (!pricer_kept_) pricer_kept_ = intermediates_kept;
    if (*pricer_kept_ != intermediates_kept) return {};
    if (precision) {
      const auto it = levels_[0].find(key);
      if (it == levels_[0].end()) return {};
      p = {it->second.workload, it->second.pricer};
    } else {
      p.pricer = base_pricer_;
    }
  }
  if (p.pricer) return p;
  const whatif::Workload& graph = p.workload ? *p.workload : conditioned_;
  p.pricer = std::make_shared<const Fusing>(graph, intermediates_kept,
                                            whatif::FusionDevice{paths_.device_dir, conditions_.device, paths_.device_profile});
  const std::lock_guard lock(mutex_);
  if (!precision) {
    if (!base_pricer_) base_pricer_ = p.pricer;
    p.pricer = base_pricer_;
    return p;
  }
  const auto it = levels_[0].find(key);
  if (it != levels_[0].end() && it->second.workload == p.workload && !it->second.pricer) it->second.pricer = p.pricer;
  return p;
}

whatif::Change PrefixEvaluator::fuse(whatif::Workload& w, const whatif::OpFusion& fusion, bool precision,
                                     const Assignment& key) {
  const Pricing p = pricing(precision, key, fusion.intermediates_kept);
  if (!p.pricer) return whatif::op_fusion(w, fusion);
  return whatif::op_fusion(w, fusion, p.pricer->pricer, p.pricer->streams);
}

std::shared_ptr<const whatif::CommRetimeCache> PrefixEvaluator::comm_cache(const whatif::CommRetime& comm) {
  // decision_rewrites gives every compression paths_.device_dir (comm_retime uses the meter only
  // where the directories match).
  const std::string& devices = paths_.device_dir;
  {
    const std::lock_guard lock(mutex_);
    if (comm_cache_ && comm_cache_->clusters_dir == comm.clusters_dir) return comm_cache_;
    if (comm_cache_ || comm_cache_failed_) return nullptr;  // this plan reads its own, as a full evaluation does
  }
  std::shared_ptr<const whatif::CommRetimeCache> made;
  try {
    made = std::make_shared<const whatif::CommRetimeCache>(
        conditioned_, comm.clusters_dir, devices, paths_.device_profile,
        comm.compression ? comm.compression->device : comm.device);
  } catch (const std::exception&) {
    // A bad file: each plan reads the files itself and fails where and as whatif::evaluate does.
    const std::lock_guard lock(mutex_);
    comm_cache_failed_ = true;
    return nullptr;
  }
  const std::lock_guard lock(mutex_);
  if (!comm_cache_) comm_cache_ = std::move(made);
  return comm_cache_;
}

std::shared_ptr<const whatif::PrecisionCache> PrefixEvaluator::precision_cache(const whatif::Precision& precision) {
  {
    const std::lock_guard lock(mutex_);
    if (precision_cache_ || precision_cache_failed_) return precision_cache_;  // serves() checks the options
  }
  std::shared_ptr<const whatif::PrecisionCache> made;
  try {
    made = std::make_shared<const whatif::PrecisionCache>(*base_, precision.device_dir, precision.device,
                                                          precision.device_profile);
  } catch (const std::exception&) {
    const std::lock_guard lock(mutex_);
    precision_cache_failed_ = true;
    return nullptr;
  }
  const std::lock_guard lock(mutex_);
  if (!precision_cache_) precision_cache_ = std::move(made);
  return precision_cache_;
}

PlanOutcome PrefixEvaluator::evaluate(const Assignment& a, replayer::Simulator& simulator, whatif::Workload* scratch,
                                      replayer::Record record) {
  std::vector<whatif::Rewrite> rewrites = decision_rewrites(conditions_, decisions_of(space_, a), paths_);
  for (whatif::Rewrite& r : rewrites)
    if (auto* comm = std::get_if<whatif::CommRetime>(&r)) comm->cache = comm_cache(*comm);
  // decision_rewrites' order: [precision] [op fusion] [communication].
  const std::size_t p1 = leading<whatif::Precision>(rewrites, 0);
  const std::size_t p2 = leading<whatif::OpFusion>(rewrites, p1);
  DPRO_CHECK(p1 <= 1 && p2 <= p1 + 1 && leading<whatif::CommRetime>(rewrites, p2) == rewrites.size());
  const Assignment keys[2] = {project(a, 0), project(a, 1)};

  PlanOutcome out;
  std::size_t applied = 0;
  std::shared_ptr<const whatif::Workload> start;
  if (p2 > p1 && (start = find(1, keys[1], out.changes))) applied = p2;
  else if (p1 > 0 && (start = find(0, keys[0], out.changes))) applied = p1;
  if (!start) {
    const std::lock_guard lock(mutex_);
    ++stats_.from_base;
  }

  // From base_, the precision rewrite (the first) edits a copy of it: the cache made on base_ serves.
  if (!start && p1 > 0) {
    auto& precision = std::get<whatif::Precision>(rewrites[0]);
    precision.cache = precision_cache(precision);
  }

  whatif::Workload local;
  whatif::Workload& w = scratch ? *scratch : local;
  w = start ? *start : *base_;  // an assignment: the scratch's tables keep their capacity
  for (; applied < rewrites.size(); ++applied) {
    const auto* fusion = std::get_if<whatif::OpFusion>(&rewrites[applied]);
    out.changes.push_back(fusion ? fuse(w, *fusion, p1 > 0, keys[0]) : whatif::apply(w, rewrites[applied]));
    if (applied + 1 == p1) remember(levels_[0], keys[0], w, out.changes);
    if (applied + 1 == p2 && p2 > p1 && seen_before(keys[1])) remember(levels_[1], keys[1], w, out.changes);
  }
  graph::Dfg& dfg = w.graph.dfg;
  if (!dfg.finalized()) dfg.finalize();
  // No check_acyclic: the constructor checked the conditioned job, and no rewrite of the space
  // can close a cycle (see the class comment), so whatif::evaluate's check never throws here.
  out.simulation = &simulator.run(dfg, record);
  replayer::ReportOptions options;
  options.top_ops = 0;
  options.analysis = false;
  out.report = replayer::make_report(*w.traces, w.graph, *out.simulation, options);
  return out;
}

}  // namespace dpro::optimizer
