#pragma once
// Exact incremental evaluation of plans: a plan's rewrites are applied in a fixed order
// (decision_rewrites: precision, then op fusion, then communication), so plans that agree on the
// decisions of the early rewrites share the workload those rewrites make. It is kept, per prefix
// of decisions, and a later plan with the same prefix starts from a copy of it and applies only
// the remaining rewrites, then replays and reports as whatif::evaluate does. The op-fusion
// rewrite's calibration (whatif::FusionPricer) and its view of the streams (whatif::FusionStreams)
// are likewise made once per graph it fuses (the conditioned job, or each precision prefix) and
// reused by every plan that fuses a copy of it.
//
// Exactness: a rewrite is a deterministic function of the workload it edits and its own
// parameters (no clock, no randomness, no state between calls), and the parameters of each
// prefix rewrite are a function of the decisions in the prefix key (precision: the precision
// variables; op fusion: the op-fusion variables, in variable order). So the cached workload is
// the one a full evaluation builds at that point, and everything after it (the rest of the
// rewrites, the replay, the report) is computed from equal inputs: every node's start and end
// and the median step are identical to whatif::evaluate's (tests/optimizer/incremental_test.cpp
// checks that, 0 ns, on real traces).
//
// Per graph, not per plan: the op-fusion calibration (above), the communication rewrite's cluster
// catalog and GPU-rate meter (whatif::CommRetimeCache), the precision rewrite's catalog, profile
// and kernel descriptions of the job (whatif::PrecisionCache), and the cycle check. The check is made
// once, on the conditioned job: no rewrite of the space can close a cycle in an acyclic graph
// (graph::Editor refuses a fusion or an insert that would; precision's casts and compression's
// kernels are put beside an op with that op's own edges, graph/editor.h; buckets and re-timing
// change durations only), so whatif::evaluate's check of each plan never throws and is skipped.
//
// What it does not do (docs/optimizer.md, "Incremental evaluation"): restart the discrete-event
// replay itself from a mid-run snapshot. The replay is about a quarter of an incremental
// evaluation on DLRM, but every decision of the space touches the first iteration (a compression
// method or bucket size applies to every all-reduce, a fusion chain to every occurrence), so a
// snapshot before the earliest affected node falls in the first step: at most 1-4 % of the replay
// (median over sampled plans, bench_optimizer incremental), under 1 % of an evaluation.
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "optimizer/space.h"
#include "replayer/engine.h"
#include "replayer/report.h"
#include "whatif/evaluate.h"
#include "whatif/fusion_pricing.h"
#include "whatif/op_fusion.h"

namespace dpro::optimizer {

// What the optimizer needs of one evaluation (whatif::Evaluation less the workload and the
// post-replay checks, which no score reads).
struct PlanOutcome {
  const replayer::Simulation* simulation = nullptr;  // the simulator's: valid until its next run
  replayer::Report report;
  std::vector<whatif::Change> changes;  // one per rewrite, in order
};

// Cache statistics: evaluations by how far the cache got them.
struct PrefixStats {
  std::size_t from_base = 0;       // no prefix cached: every rewrite applied
  std::size_t from_precision = 0;  // the precision rewrite's workload reused
  std::size_t from_fusion = 0;     // the workload after precision and op fusion reused
};

// Evaluates plans of one space, reusing prefix workloads. Thread-safe: threads share the cached
// workloads (read-only once made), each evaluating with its own Simulator.
class PrefixEvaluator {
 public:
  // `conditioned` (the job under its conditions) and `space` must outlive the evaluator.
  // `max_cached`: workloads kept per prefix level (least recently used dropped first). Each is a
  // copy of the graph (ResNet-50, 80k nodes: about 40 MB), so fewer are kept of a large graph: at
  // most kCachedNodes nodes over both levels, and at least one workload per level. Throws
  // InputError when `conditioned` has a dependency cycle (whatif::evaluate made it: it has none).
  PrefixEvaluator(const whatif::Workload& conditioned, const SearchSpace& space, Conditions conditions,
                  ResourcePaths paths, std::size_t max_cached = 4);

  // The plan's evaluation, equal to whatif::evaluate(conditioned, decision_rewrites(...),
  // simulator, options with top_ops = 0 and analysis = false) in simulation, report and change
  // records. Throws what the rewrites throw. `scratch` (optional, one per thread, like the
  // simulator): the workload the plan's rewrites edit, assigned over instead of made anew, so
  // that its tables keep their memory from one plan to the next (making and freeing a copy of the
  // graph per plan was 13 % of an evaluation on DLRM). Its content on return is unspecified.
  // `record`: replayer::Record::kTimes replays without causes (the simulation's start_cause and
  // end_cause are empty); every time, the makespan, the event count and the report are the same
  // (a report with analysis off reads no cause). The search scores plans so (Evaluator).
  PlanOutcome evaluate(const Assignment& a, replayer::Simulator& simulator, whatif::Workload* scratch = nullptr,
                       replayer::Record record = replayer::Record::kTimesAndCauses);
  static constexpr std::size_t kCachedNodes = 1'000'000;  // about 0.5 GB at ~500 bytes per node
  PrefixStats stats() const;

 private:
  // What fusing a copy of one graph reads of that graph, made once on it: the calibration and
  // the streams (whatif::op_fusion's overloads taking them give the same result).
  struct Fusing {
    Fusing(const whatif::Workload& w, bool intermediates_kept, const whatif::FusionDevice& device)
        : pricer(*w.traces, w.graph.dfg, intermediates_kept, whatif::load_fusion_rates(*w.traces, device)),
          streams(*w.traces, w.graph.dfg) {}
    whatif::FusionPricer pricer;
    whatif::FusionStreams streams;
  };
  struct Entry {
    std::shared_ptr<const whatif::Workload> workload;
    std::vector<whatif::Change> changes;  // of the prefix's rewrites
    std::uint64_t used = 0;
    std::shared_ptr<const Fusing> pricer;  // on *workload, once a plan fused it
  };
  // A calibration and the graph it reads (kept alive while in use).
  struct Pricing {
    std::shared_ptr<const whatif::Workload> workload;  // null: the conditioned job
    std::shared_ptr<const Fusing> pricer;
  };
  using Level = std::map<Assignment, Entry, AssignmentLess>;
  Assignment project(const Assignment& a, std::size_t level) const;
  // The cached workload of a's prefix at `level`, if any (and its changes into `changes`).
  std::shared_ptr<const whatif::Workload> find(std::size_t level, const Assignment& key, std::vector<whatif::Change>& changes);
  // The calibration for fusing the workload of precision prefix `key` (the conditioned job when
  // `precision` is false), made on first use; none if that prefix is no longer cached.
  Pricing pricing(bool precision, const Assignment& key, bool intermediates_kept);
  whatif::Change fuse(whatif::Workload& w, const whatif::OpFusion& fusion, bool precision, const Assignment& key);
  bool seen_before(const Assignment& fusion_key);  // and notes it
  void remember(Level& level, const Assignment& key, const whatif::Workload& w, const std::vector<whatif::Change>& changes);

  const whatif::Workload& conditioned_;
  // A copy of conditioned_ whose op table is shared (graph::OpTable::share), as is every cached
  // workload's: a plan's copy of either copies the table's pointer, not its entries and names.
  std::shared_ptr<const whatif::Workload> base_;
  const SearchSpace& space_;
  Conditions conditions_;
  ResourcePaths paths_;
  std::size_t max_cached_;
  Level levels_[2];  // after precision; after precision and op fusion
  // The communication rewrite's catalog and GPU-rate meter, made on conditioned_ by the first
  // plan that re-times communication (so a bad cluster file throws where whatif::evaluate's would).
  std::shared_ptr<const whatif::CommRetimeCache> comm_cache(const whatif::CommRetime& comm);
  std::shared_ptr<const Fusing> base_pricer_;  // on conditioned_
  std::shared_ptr<const whatif::CommRetimeCache> comm_cache_;
  bool comm_cache_failed_ = false;
  // What the precision rewrite reads of the job (whatif::PrecisionCache), made on base_ at the
  // first plan whose precision rewrite starts from it; handed to the precision rewrite of every
  // plan that starts from base_ (precision is a plan's first rewrite, so it then edits a copy of
  // base_ not yet edited). None where making it threw: each plan then reads its own, and throws
  // where and as whatif::evaluate does.
  std::shared_ptr<const whatif::PrecisionCache> precision_cache(const whatif::Precision& precision);
  std::shared_ptr<const whatif::PrecisionCache> precision_cache_;
  bool precision_cache_failed_ = false;
  static constexpr std::size_t kSeenKeys = 64;
  std::deque<Assignment> seen_;  // the last kSeenKeys fusion prefixes evaluated, oldest first
  std::optional<bool> pricer_kept_;  // the intermediates_kept flag of every cached calibration
  std::uint64_t clock_ = 0;
  PrefixStats stats_;
  mutable std::mutex mutex_;  // guards levels_, seen_, base_pricer_, comm_cache_, precision_cache_, pricer_kept_, clock_, stats_
};

}  // namespace dpro::optimizer
