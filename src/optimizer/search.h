#pragma once
// The search: plans (assignments of the search space) scored by replaying them, a greedy pass
// per strategy, then simulated annealing over all moves warm-started from it; the result is the
// Pareto set over (predicted step, accuracy risk) of every plan evaluated, the fastest plan within
// the risk limit, and what each of its decisions gains.
//
// Determinism: the same space, options and seed give the same plans, whatever the number of
// threads (proposals are drawn before they are scored, in a fixed order, and every score is a
// pure function of the plan). A time limit (max_seconds) stops the search wherever it is and so
// breaks that promise; an evaluation budget keeps it.
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <vector>

#include "optimizer/incremental.h"
#include "optimizer/memory.h"
#include "optimizer/space.h"
#include "replayer/engine.h"
#include "replayer/report.h"
#include "whatif/evaluate.h"

namespace dpro::optimizer {

// The objective: the median predicted job step over the report's ProfilerSteps (of the whole trace
// when it has none), in ns; of an even number of steps, the mean of the middle two, rounded down.
// The median, not the mean: a trace's first steps (warm-up, cuDNN autotuning) can be 100 times
// longer than the steady state a plan is for.
Nanos median_step(const replayer::Report& report);

struct Score {
  Nanos step_ns = 0;
  double risk = 0;
  // Memory per rank the plan needs beyond the recorded job's, in bytes: the error-feedback
  // residuals of lossy compression (the largest rank's), plus, where the trace records shapes, what
  // its precision decisions change in the activation estimate (memory.h's precision_memory: saved
  // activations at the narrower width, less; weight casts kept for backward, more), so negative
  // when a precision plan frees more than it adds. Buckets, partition and op fusion count 0 (a
  // fused kernel writes what the backward pass keeps).
  std::int64_t extra_memory_bytes = 0;
};

// What a chosen plan may cost: accuracy risk and memory beyond the recorded job's.
struct Limits {
  double max_risk = std::numeric_limits<double>::infinity();
  std::int64_t max_extra_memory_bytes = std::numeric_limits<std::int64_t>::max();
  bool admits(const Score& s) const { return s.risk <= max_risk && s.extra_memory_bytes <= max_extra_memory_bytes; }
};

// How the Evaluator replays a plan: whatif::evaluate from the conditioned job each time (full), or
// reusing the workloads of shared decision prefixes (incremental.h; the same scores, exactly).
enum class EvaluationMode { kFull, kIncremental };

// Scores plans of one space: each assignment's decisions are applied (decision_rewrites) to the
// job under its conditions and replayed, on up to `threads` threads; every score is remembered,
// so a plan is replayed once.
class Evaluator {
 public:
  // `conditioned`: the job with condition_rewrites applied (whatif::evaluate's workload); it and
  // `space` must outlive the evaluator.
  Evaluator(const whatif::Workload& conditioned, const SearchSpace& space, Conditions conditions, ResourcePaths paths,
            int threads, EvaluationMode mode = EvaluationMode::kIncremental);
  ~Evaluator();

  // The scores of `batch`, in its order. Throws what the rewrites throw (InputError, OptionError).
  std::vector<Score> score(const std::vector<Assignment>& batch);
  // Plans replayed so far (distinct assignments).
  std::size_t replays() const { return memo_.size(); }
  const std::map<Assignment, Score, AssignmentLess>& scored() const { return memo_; }
  // Incremental mode: how far the prefix cache got the evaluations (all zero in full mode).
  PrefixStats prefix_stats() const;
  // The activation estimate of the conditioned job that precision plans are credited against
  // (nullopt: the trace records no shapes, and precision changes no plan's memory).
  const std::optional<ActivationEstimate>& activations() const { return activations_; }

 private:
  Score replay(const Assignment& a, std::size_t worker);

  const whatif::Workload& conditioned_;
  const SearchSpace& space_;
  Conditions conditions_;
  ResourcePaths paths_;
  std::vector<std::unique_ptr<replayer::Simulator>> simulators_;
  std::vector<std::unique_ptr<whatif::Workload>> scratch_;  // per worker, as the simulators (PrefixEvaluator::evaluate)
  std::unique_ptr<PrefixEvaluator> prefix_;  // shared by the threads; none in full mode
  std::map<Assignment, Score, AssignmentLess> memo_;
  std::optional<ActivationEstimate> activations_;
};

struct SearchOptions {
  std::uint64_t seed = 1;
  std::size_t max_evaluations = 300;  // distinct plans replayed, the baseline included (>= 1)
  double max_seconds = 0;             // 0: no time limit
  Limits limits;
  // Called after each batch: plans replayed, the budget, the best step so far.
  std::function<void(std::size_t, std::size_t, Nanos)> progress;
};

struct Scored {
  Assignment assignment;
  Score score;
};

struct SearchResult {
  Scored baseline;             // no decision
  // The fastest plan within the limits (the baseline if none is faster). A memory limit below 0
  // (a budget only a precision plan meets) can leave no plan within them: best is then the
  // baseline, which the limits do not admit; callers check limits.admits(best.score).
  Scored best;
  std::vector<Scored> pareto;  // non-dominated over (step, risk, extra memory), fastest first
  // Per decision of `best` (decisions_of order): the step without that decision minus the step
  // with the plan (leave-one-out; these replays are beyond the budget).
  std::vector<Nanos> gains_ns;
  std::size_t evaluations = 0;         // distinct plans replayed by the search (budget)
  std::size_t greedy_evaluations = 0;  // of them, by the greedy passes
  double seconds = 0;
  bool stopped_by_time = false;
};

SearchResult search(Evaluator& evaluator, const SearchSpace& space, const SearchOptions& options);

// Every assignment of the space within the risk limit, for spaces of at most `max_plans` plans (a
// check of the search's quality). Throws OptionError("strategies") for a larger space.
SearchResult exhaustive(Evaluator& evaluator, const SearchSpace& space, const Limits& limits, std::size_t max_plans = 4096);

}  // namespace dpro::optimizer
