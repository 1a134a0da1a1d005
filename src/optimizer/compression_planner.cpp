#include "optimizer/compression_planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"
#include "optimizer/search.h"
#include "trace/iterations.h"

namespace dpro::optimizer {
namespace {

constexpr std::size_t kMaxPasses = 4;

Nanos time_at(const replayer::Simulation& sim, graph::NodeId n, graph::Point p) {
  return p == graph::Point::kEnd ? sim.end[n] : sim.start[n];
}

// The job's rewrites under its conditions with `decisions`, the communication re-timing asked to
// hand out its buckets' pricing (added when the conditions need no re-timing of their own).
std::vector<whatif::Rewrite> priced_rewrites(const Conditions& conditions, const std::vector<Decision>& decisions,
                                             const ResourcePaths& paths) {
  std::vector<whatif::Rewrite> rewrites = decision_rewrites(conditions, decisions, paths);
  whatif::CommRetime* comm = nullptr;
  for (whatif::Rewrite& r : rewrites)
    if (auto* c = std::get_if<whatif::CommRetime>(&r)) comm = c;
  if (!comm) {
    whatif::CommRetime c;
    c.clusters_dir = paths.clusters_dir;
    rewrites.emplace_back(std::move(c));
    comm = &std::get<whatif::CommRetime>(rewrites.back());
  }
  if (comm->compression) throw OptionError("strategies", "", "the compression planner plans from the uncompressed job");
  comm->price_buckets = true;
  comm->devices_dir = paths.device_dir;
  comm->device_profile = paths.device_profile;
  comm->device = conditions.device;
  return rewrites;
}

// The report's steps median_step uses, and for each rank index and trace iteration the step.
struct StepIndex {
  std::vector<const replayer::IterationReport*> steps;
  std::map<std::pair<std::size_t, int>, std::size_t> of;  // (rank index, iteration index) -> step
  bool whole_trace = false;

  std::optional<std::size_t> step_of(std::size_t rank_index, int iteration) const {
    if (whole_trace) return std::size_t{0};
    const auto it = of.find({rank_index, iteration});
    return it == of.end() ? std::nullopt : std::optional<std::size_t>(it->second);
  }
};

StepIndex index_steps(const trace::TraceSet& traces, const replayer::Report& report) {
  StepIndex s;
  s.whole_trace = std::none_of(report.iterations.begin(), report.iterations.end(),
                               [](const replayer::IterationReport& it) { return !it.whole_trace; });
  std::map<std::int64_t, std::size_t> by_number;
  for (const replayer::IterationReport& it : report.iterations) {
    if (!s.whole_trace && it.whole_trace) continue;
    by_number[it.number] = s.steps.size();
    s.steps.push_back(&it);
  }
  for (std::size_t ri = 0; ri < traces.ranks.size() && !s.whole_trace; ++ri) {
    const auto& its = traces.ranks[ri].iterations;
    for (std::size_t k = 0; k < its.size(); ++k)
      if (const auto f = by_number.find(its[k].number); f != by_number.end()) s.of[{ri, static_cast<int>(k)}] = f->second;
  }
  return s;
}

// When a bucket's gradients are ready and launched: its members' start-edges other than the
// communication stream's own order (from another bucket member) and the collective barriers;
// with the node and point that decided it (none: a release time).
struct Readiness {
  Nanos at = 0;
  graph::NodeId node;
  graph::Point point = graph::Point::kEnd;
};
Readiness ready_of(const graph::Dfg& dfg, const replayer::Simulation& sim, const comm::GradientBucket& b,
                   const std::set<graph::NodeId>& members) {
  Readiness ready;
  for (const graph::NodeId m : b.members) {
    const graph::Node& node = dfg.node(m);
    Readiness r{node.release.value_or(0), graph::NodeId::none(), graph::Point::kEnd};
    dfg.for_each_in_edge(m, [&](graph::EdgeId id) {
      const graph::Edge& e = dfg.edge(id);
      if (e.dst_point != graph::Point::kStart || e.kind == graph::EdgeKind::kCollective || members.contains(e.src)) return;
      if (const Nanos t = time_at(sim, e.src, e.src_point) + e.gap; t > r.at) r = {t, e.src, e.src_point};
    });
    r.at += node.delay;
    if (m == b.members.front() || r.at > ready.at) ready = r;
  }
  return ready;
}

// The time a consumer's other dependencies allow it at `point`, and the delay its waits add.
std::pair<Nanos, Nanos> other_ready(const graph::Dfg& dfg, const replayer::Simulation& sim, graph::NodeId x,
                                    graph::Point point, const std::set<graph::NodeId>& carriers) {
  const graph::Node& node = dfg.node(x);
  Nanos t = point == graph::Point::kStart ? node.release.value_or(0) : sim.start[x] + node.duration;
  dfg.for_each_in_edge(x, [&](graph::EdgeId id) {
    const graph::Edge& e = dfg.edge(id);
    if (e.dst_point != point || (carriers.contains(e.src) && e.src_point == graph::Point::kEnd)) return;
    t = std::max(t, time_at(sim, e.src, e.src_point) + e.gap);
  });
  const Nanos delay = point == graph::Point::kStart ? node.delay : 0;
  return {t + delay, delay};
}

// The node of each step that ends last in the replay (where its critical path starts).
std::vector<graph::NodeId> last_nodes(const trace::TraceSet& traces, const graph::Dfg& dfg,
                                      const replayer::Simulation& sim, const StepIndex& steps) {
  std::map<int, std::size_t> rank_index;
  for (std::size_t i = 0; i < traces.ranks.size(); ++i) rank_index[traces.ranks[i].rank] = i;
  std::vector<graph::NodeId> last(steps.steps.size());
  for (const graph::NodeId id : dfg.node_ids()) {
    const graph::Node& n = dfg.node(id);
    if (!graph::is_op(n.kind)) continue;
    const auto ri = rank_index.find(n.rank);
    if (ri == rank_index.end()) continue;
    const auto s = steps.step_of(ri->second, trace::iteration_index_at(traces.ranks[ri->second], n.measured_start));
    if (s && (!last[*s].valid() || sim.end[id] > sim.end[last[*s]])) last[*s] = id;
  }
  return last;
}

// Walks the replay's causes back from `from` at `point` until an edge out of a bucket carrier's
// end decided a node: that node, its point and the carrier (nullopt: none after `not_before`).
struct CarrierCause {
  graph::NodeId node;
  graph::Point point = graph::Point::kStart;
  graph::NodeId carrier;
};
std::optional<CarrierCause> carrier_on_path(const graph::Dfg& dfg, const replayer::Simulation& sim, graph::NodeId from,
                                            graph::Point point, Nanos not_before, const std::set<graph::NodeId>& carriers) {
  graph::NodeId n = from;
  graph::Point p = point;
  for (std::size_t hops = 0; n.valid() && hops < dfg.node_count() * 2; ++hops) {
    if (time_at(sim, n, p) < not_before) return std::nullopt;
    const graph::EdgeId cause = p == graph::Point::kEnd ? sim.end_cause[n] : sim.start_cause[n];
    if (!cause.valid()) {
      if (p == graph::Point::kStart) return std::nullopt;
      p = graph::Point::kStart;
      continue;
    }
    const graph::Edge& e = dfg.edge(cause);
    if (carriers.contains(e.src) && e.src_point == graph::Point::kEnd && e.kind != graph::EdgeKind::kCollective)
      return CarrierCause{n, p, e.src};
    n = e.src;
    p = e.src_point;
  }
  return std::nullopt;
}

// Every bucket's end (its decompression's end) under `choice`.
void bucket_ends(const PlannerModel::Step& step, const BucketChoice& choice, std::vector<Nanos>& clock,
                 std::vector<Nanos>& ends) {
  clock.assign(step.ranks, 0);
  ends.resize(step.buckets.size());
  for (std::size_t i = 0; i < step.buckets.size();) {
    std::size_t j = i;
    Nanos latest = 0;
    for (; j < step.buckets.size() && step.buckets[j].position == step.buckets[i].position; ++j) {
      const PlannerModel::Bucket& b = step.buckets[j];
      // A bucket whose gradients came after an earlier bucket's consumer moves with that bucket.
      const Nanos ready = b.follows ? b.ready + (ends[*b.follows] - b.follows_end) : b.ready;
      latest = std::max(latest, std::max(ready, clock[b.rank]) + b.cost[choice[b.position]].compress);
    }
    for (std::size_t k = i; k < j; ++k) {
      const PlannerModel::Bucket& b = step.buckets[k];
      const comm::MethodCost& c = b.cost[choice[b.position]];
      ends[k] = latest + b.fixed + c.transfer + c.decompress;
      clock[b.rank] = ends[k];
    }
    i = j;
  }
}

Nanos step_time(const PlannerModel::Step& step, const BucketChoice& choice, std::vector<Nanos>& clock,
                std::vector<Nanos>& ends) {
  if (step.buckets.empty()) return step.baseline_ns;
  bucket_ends(step, choice, clock, ends);
  // The critical consumer moves the step end as much as it moves. Another one delays it only
  // where it comes later than it did and than the critical one did (its slack; without a critical
  // consumer none is assumed); one that comes earlier changes nothing.
  std::optional<Nanos> critical, critical_at;
  for (const PlannerModel::Consumer& c : step.consumers)
    if (c.critical) critical_at = std::max(critical_at.value_or(c.baseline), c.baseline);
  Nanos later = std::numeric_limits<Nanos>::min();
  for (const PlannerModel::Consumer& c : step.consumers) {
    Nanos t = c.other_ready;
    for (const PlannerModel::Wait& w : c.waits) t = std::max(t, ends[w.bucket] + w.gap);
    if (c.critical) critical = std::max(critical.value_or(t - c.baseline), t - c.baseline);
    else if (t > c.baseline) later = std::max(later, t - std::max(c.baseline, critical_at.value_or(c.baseline)));
  }
  return step.baseline_ns + std::max(critical.value_or(0), later);
}

Nanos median_of(std::vector<Nanos> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : v[m - 1] + (v[m] - v[m - 1]) / 2;
}

// Faster first; at the same times, the lighter choice (summed method risks, then residual memory),
// so that a bucket whose compression gains nothing is left uncompressed.
bool better(const PlannedScore& x, const PlannedScore& y) {
  return std::tie(x.median_ns, x.total_ns, x.risk_sum, x.extra_memory_bytes) <
         std::tie(y.median_ns, y.total_ns, y.risk_sum, y.extra_memory_bytes);
}

std::string value_of(const PlannerModel& model, const BucketChoice& choice) {
  std::string out;
  for (std::size_t p = 0; p < choice.size(); ++p) out += (p ? "," : "") + model.methods[choice[p]];
  return out;
}

}  // namespace

void set_consumer_baselines(PlannerModel& model) {
  std::vector<Nanos> clock, ends;
  for (PlannerModel::Step& step : model.steps) {
    for (PlannerModel::Bucket& b : step.buckets) b.follows_end = 0;
    // With no compression a bucket does not move, nor one that follows it: their ends are fixed points.
    std::vector<std::optional<std::size_t>> follows;
    for (PlannerModel::Bucket& b : step.buckets) follows.push_back(b.follows), b.follows.reset();
    bucket_ends(step, BucketChoice(model.positions, 0), clock, ends);
    for (std::size_t k = 0; k < step.buckets.size(); ++k) {
      step.buckets[k].follows = follows[k];
      if (follows[k]) step.buckets[k].follows_end = ends[*follows[k]];
    }
    for (PlannerModel::Consumer& c : step.consumers) {
      c.baseline = c.other_ready;
      for (const PlannerModel::Wait& w : c.waits) c.baseline = std::max(c.baseline, ends[w.bucket] + w.gap);
    }
  }
}

PlannedScore score(const PlannerModel& model, const BucketChoice& choice) {
  DPRO_CHECK(choice.size() == model.positions);
  PlannedScore s;
  std::vector<Nanos> steps, clock, ends;
  for (const PlannerModel::Step& step : model.steps) {
    steps.push_back(step_time(step, choice, clock, ends));
    s.total_ns += steps.back();
  }
  s.median_ns = median_of(std::move(steps));
  // Residuals per position: the largest instance's (one per rank and step), summed.
  std::vector<std::int64_t> residual(model.positions, 0);
  for (const PlannerModel::Step& step : model.steps)
    for (const PlannerModel::Bucket& b : step.buckets)
      residual[b.position] = std::max(residual[b.position], b.cost[choice[b.position]].residual_bytes);
  for (std::size_t p = 0; p < model.positions; ++p) {
    s.extra_memory_bytes += residual[p];
    s.risk = std::max(s.risk, model.risks[choice[p]]);
    s.risk_sum += model.risks[choice[p]];
  }
  return s;
}

namespace {

// Whether method `a` costs every instance of position `p` no more than `b` in each part (kernels,
// transfer, residual) and is no riskier: then `b` can never make the step shorter than `a` does.
bool dominates(const PlannerModel& model, std::size_t p, std::size_t a, std::size_t b) {
  if (model.risks[a] > model.risks[b]) return false;
  for (const PlannerModel::Step& step : model.steps)
    for (const PlannerModel::Bucket& x : step.buckets) {
      if (x.position != p) continue;
      const comm::MethodCost &ca = x.cost[a], &cb = x.cost[b];
      if (ca.compress > cb.compress || ca.transfer > cb.transfer || ca.decompress > cb.decompress ||
          ca.residual_bytes > cb.residual_bytes)
        return false;
    }
  return true;
}

// Per position, the allowed methods no other allowed method dominates (of equals, the first).
std::vector<std::vector<std::size_t>> candidates(const PlannerModel& model, const std::vector<std::size_t>& allowed) {
  std::vector<std::vector<std::size_t>> out(model.positions);
  for (std::size_t p = 0; p < model.positions; ++p)
    for (std::size_t i = 0; i < allowed.size(); ++i) {
      bool dominated = false;
      for (std::size_t j = 0; j < allowed.size() && !dominated; ++j) {
        if (i == j || !dominates(model, p, allowed[j], allowed[i])) continue;
        dominated = j < i || !dominates(model, p, allowed[i], allowed[j]);
      }
      if (!dominated) out[p].push_back(allowed[i]);
    }
  return out;
}

}  // namespace

CompressionPlan choose(const PlannerModel& model, const PlannerOptions& options) {
  CompressionPlan plan;
  for (const PlannerModel::Step& s : model.steps) plan.buckets += s.buckets.size();
  std::vector<std::size_t> allowed;
  for (std::size_t m = 0; m < model.methods.size(); ++m)
    if (m == 0 || model.risks[m] <= options.max_risk) allowed.push_back(m);
  auto admits = [&](const PlannedScore& s) { return s.extra_memory_bytes <= options.max_extra_memory_bytes; };
  auto allowed_at = [&](std::size_t p, std::size_t m) {
    return m == 0 || !options.method_allowed || options.method_allowed(p, model.methods[m]);
  };
  auto evaluate = [&](const BucketChoice& c) {
    ++plan.evaluations;
    return score(model, c);
  };

  BucketChoice best(model.positions, 0);
  plan.none = evaluate(best);
  PlannedScore best_score = plan.none;
  plan.best_single = model.methods[0];
  for (const std::size_t m : allowed) {
    if (m == 0) continue;
    bool everywhere = true;
    for (std::size_t p = 0; p < model.positions; ++p) everywhere = everywhere && allowed_at(p, m);
    if (!everywhere) continue;
    const BucketChoice all(model.positions, m);
    const PlannedScore s = evaluate(all);
    if (admits(s) && better(s, best_score)) best = all, best_score = s, plan.best_single = model.methods[m];
  }
  plan.best_single_score = best_score;

  const std::vector<std::vector<std::size_t>> tried = candidates(model, allowed);
  for (std::size_t pass = 0; pass < kMaxPasses; ++pass) {
    bool changed = false;
    for (std::size_t p = 0; p < model.positions; ++p) {
      for (const std::size_t m : tried[p]) {
        if (m == best[p] || !allowed_at(p, m)) continue;
        BucketChoice trial = best;
        trial[p] = m;
        const PlannedScore s = evaluate(trial);
        if (admits(s) && better(s, best_score)) best = std::move(trial), best_score = s, changed = true;
      }
    }
    if (!changed) break;
  }
  plan.choice = best;
  plan.planned = best_score;
  plan.value = value_of(model, best);
  return plan;
}

PlannerModel build_model(const whatif::Workload& conditioned, const Conditions& conditions,
                         const std::vector<Decision>& decisions, const ResourcePaths& paths,
                         const PlannerOptions& options) {
  PlannerModel model;
  model.methods = {"none"};
  for (const std::string& m : options.methods.empty() ? compression_values() : options.methods)
    if (m != "none") model.methods.push_back(m);
  std::vector<comm::CompressionSpec>& specs = model.specs;
  for (const std::string& m : model.methods) {
    specs.push_back(comm::parse_compression(m).all);
    model.risks.push_back(compression_risk(m));
  }

  replayer::Simulator simulator;
  whatif::EvaluateOptions eo;
  eo.report.top_ops = 0;
  eo.report.analysis = false;
  const whatif::Evaluation e = whatif::evaluate(conditioned, priced_rewrites(conditions, decisions, paths), simulator, eo);
  const comm::BucketPricing* pricing = nullptr;
  for (const whatif::Change& c : e.changes)
    if (const auto* comm = std::get_if<whatif::CommChange>(&c); comm && comm->bucket_pricing) pricing = &*comm->bucket_pricing;
  const graph::Dfg& dfg = e.workload.graph.dfg;
  const trace::TraceSet& traces = *e.workload.traces;
  const StepIndex steps = index_steps(traces, e.report);
  model.steps.resize(steps.steps.size());
  for (std::size_t s = 0; s < steps.steps.size(); ++s) model.steps[s].baseline_ns = steps.steps[s]->job_predicted_ns;

  std::set<graph::NodeId> members, carriers;
  std::vector<const comm::GradientBucket*> buckets;
  if (pricing)
    for (const comm::GradientBucket& b : pricing->buckets) {
      if (b.shape.group < 2 || !steps.step_of(b.rank_index, b.iteration)) continue;
      buckets.push_back(&b);
      members.insert(b.members.begin(), b.members.end());
      carriers.insert(b.members.back());
    }
  if (pricing) model.target = pricing->target, model.rates = pricing->rates;
  if (buckets.empty())
    throw OptionError("strategies", "", "the compression planner found no gradient bucket of two or more ranks to compress");

  std::map<std::size_t, std::map<std::size_t, std::size_t>> dense_rank;  // step -> rank index -> stream
  std::map<graph::NodeId, Readiness> readiness;                          // carrier -> what made its bucket ready
  for (const comm::GradientBucket* b : buckets) {
    const std::size_t s = *steps.step_of(b->rank_index, b->iteration);
    auto& ranks = dense_rank[s];
    ranks.emplace(b->rank_index, ranks.size());
    PlannerModel::Bucket pb;
    pb.rank = ranks.at(b->rank_index);
    pb.position = b->position;
    const Readiness ready = ready_of(dfg, e.simulation, *b, members);
    pb.ready = ready.at;
    if (ready.node.valid()) readiness[b->members.back()] = ready;
    pb.shape = b->shape;
    pb.fixed = std::max<Nanos>(0, dfg.node(b->members.back()).duration - b->shape.transfer);
    for (const comm::CompressionSpec& spec : specs) pb.cost.push_back(pricing->price(spec, *b));
    model.positions = std::max(model.positions, b->position + 1);
    model.steps[s].buckets.push_back(std::move(pb));
  }
  const std::vector<graph::NodeId> last = last_nodes(traces, dfg, e.simulation, steps);
  for (std::size_t s = 0; s < model.steps.size(); ++s) {
    PlannerModel::Step& step = model.steps[s];
    step.ranks = dense_rank[s].size();
    // Carriers of this step, in (position, rank) order, and their consumers.
    std::vector<std::pair<std::pair<std::size_t, std::size_t>, graph::NodeId>> order;
    for (const comm::GradientBucket* b : buckets)
      if (*steps.step_of(b->rank_index, b->iteration) == s)
        order.push_back({{b->position, dense_rank[s].at(b->rank_index)}, b->members.back()});
    std::sort(order.begin(), order.end());
    std::sort(step.buckets.begin(), step.buckets.end(), [](const PlannerModel::Bucket& x, const PlannerModel::Bucket& y) {
      return std::tie(x.position, x.rank) < std::tie(y.position, y.rank);
    });
    std::map<std::pair<graph::NodeId, graph::Point>, std::size_t> consumer_of;
    Nanos earliest = std::numeric_limits<Nanos>::max();
    for (std::size_t k = 0; k < order.size(); ++k) {
      earliest = std::min(earliest, step.buckets[k].ready);
      dfg.for_each_out_edge(order[k].second, [&](graph::EdgeId id) {
        const graph::Edge& edge = dfg.edge(id);
        if (edge.kind == graph::EdgeKind::kCollective || edge.src_point != graph::Point::kEnd || members.contains(edge.dst))
          return;
        const auto key = std::make_pair(edge.dst, edge.dst_point);
        auto [it, fresh] = consumer_of.emplace(key, step.consumers.size());
        if (fresh) {
          PlannerModel::Consumer c;
          std::tie(c.other_ready, c.delay) = other_ready(dfg, e.simulation, edge.dst, edge.dst_point, carriers);
          step.consumers.push_back(std::move(c));
        }
        step.consumers[it->second].waits.push_back({k, edge.gap});
      });
    }
    for (PlannerModel::Consumer& c : step.consumers)
      for (PlannerModel::Wait& w : c.waits) w.gap += c.delay;
    if (last[s].valid())
      if (const auto crit = carrier_on_path(dfg, e.simulation, last[s], graph::Point::kEnd, earliest, carriers))
        if (const auto it = consumer_of.find({crit->node, crit->point}); it != consumer_of.end())
          step.consumers[it->second].critical = true;
    // Buckets made ready by what an earlier bucket held up (its consumer, then the work after it).
    std::map<graph::NodeId, std::size_t> index_of;
    for (std::size_t k = 0; k < order.size(); ++k) index_of[order[k].second] = k;
    for (std::size_t k = 0; k < order.size(); ++k) {
      const auto r = readiness.find(order[k].second);
      if (r == readiness.end()) continue;
      const auto cause = carrier_on_path(dfg, e.simulation, r->second.node, r->second.point, earliest, carriers);
      if (!cause) continue;
      const auto j = index_of.find(cause->carrier);
      if (j != index_of.end() && step.buckets[j->second].position < step.buckets[k].position) step.buckets[k].follows = j->second;
    }
  }
  set_consumer_baselines(model);
  return model;
}

Nanos replay_step(const whatif::Workload& conditioned, const Conditions& conditions,
                  const std::vector<Decision>& decisions, const ResourcePaths& paths) {
  replayer::Simulator simulator;
  whatif::EvaluateOptions eo;
  eo.report.top_ops = 0;
  eo.report.analysis = false;
  return median_step(whatif::evaluate(conditioned, decision_rewrites(conditions, decisions, paths), simulator, eo).report);
}

std::optional<CompressionPlan> add_planned_compression(SearchSpace& space, const whatif::Workload& conditioned,
                                                       const Conditions& conditions, const ResourcePaths& paths,
                                                       const PlannerOptions& options, std::string* why) {
  auto variable = std::find_if(space.variables.begin(), space.variables.end(),
                               [](const Variable& v) { return v.strategy == Strategy::kCompression; });
  auto fail = [&](std::string reason) -> std::optional<CompressionPlan> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  if (variable == space.variables.end()) return fail("no compression decision in the search space");
  PlannerModel model;
  try {
    model = build_model(conditioned, conditions, {}, paths, options);
  } catch (const OptionError& e) {
    return fail(e.message());
  }
  CompressionPlan plan = choose(model, options);
  const bool uniform = std::all_of(plan.choice.begin(), plan.choice.end(), [&](std::size_t m) { return m == plan.choice[0]; });
  if (uniform) return fail(fmt::format("the planner chose {} for every bucket", model.methods[plan.choice[0]]));
  if (variable->values.size() >= 255) return fail("the compression decision has no room for another value");
  variable->values.push_back(plan.value);
  return plan;
}

}  // namespace dpro::optimizer
