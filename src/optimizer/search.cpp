#include "optimizer/search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <random>
#include <thread>
#include <tuple>

#include "core/error.h"

namespace dpro::optimizer {

Nanos median_step(const replayer::Report& report) {
  const bool has_steps = std::any_of(report.iterations.begin(), report.iterations.end(),
                                     [](const replayer::IterationReport& it) { return !it.whole_trace; });
  std::vector<Nanos> steps;
  for (const replayer::IterationReport& it : report.iterations)
    if (!has_steps || !it.whole_trace) steps.push_back(it.job_predicted_ns);
  if (steps.empty()) return 0;
  std::sort(steps.begin(), steps.end());
  const std::size_t m = steps.size() / 2;
  return steps.size() % 2 == 1 ? steps[m] : steps[m - 1] + (steps[m] - steps[m - 1]) / 2;
}

std::int64_t extra_memory_bytes(const std::vector<whatif::Change>& changes) {
  std::int64_t bytes = 0;
  for (const whatif::Change& change : changes) {
    const auto* comm = std::get_if<whatif::CommChange>(&change);
    if (!comm || !comm->compression) continue;
    for (const auto& [method, stats] : comm->compression->by_method) bytes += stats.residual_bytes;
  }
  return bytes;
}

Evaluator::Evaluator(const whatif::Workload& conditioned, const SearchSpace& space, Conditions conditions,
                     ResourcePaths paths, int threads, EvaluationMode mode)
    : conditioned_(conditioned), space_(space), conditions_(std::move(conditions)), paths_(std::move(paths)) {
  for (int i = 0; i < std::max(1, threads); ++i) {
    simulators_.push_back(std::make_unique<replayer::Simulator>());
    scratch_.push_back(std::make_unique<whatif::Workload>());
  }
  if (mode == EvaluationMode::kIncremental)
    prefix_ = std::make_unique<PrefixEvaluator>(conditioned_, space_, conditions_, paths_);
  if (std::any_of(space_.variables.begin(), space_.variables.end(), [](const Variable& v) { return v.strategy == Strategy::kPrecision; }))
    activations_ = estimate_activation_bytes(conditioned_);
}

Evaluator::~Evaluator() = default;

PrefixStats Evaluator::prefix_stats() const { return prefix_ ? prefix_->stats() : PrefixStats{}; }

Score Evaluator::replay(const Assignment& a, std::size_t worker) {
  const std::int64_t precision_bytes = activations_ ? precision_memory(*activations_, decisions_of(space_, a)).delta() : 0;
  if (prefix_) {
    // A score reads the report's median step, times only: no causes (replayer::Record).
    const PlanOutcome o = prefix_->evaluate(a, *simulators_[worker], scratch_[worker].get(), replayer::Record::kTimes);
    return {median_step(o.report), risk_of(space_, a), extra_memory_bytes(o.changes) + precision_bytes};
  }
  whatif::EvaluateOptions options;
  options.report.top_ops = 0;
  options.report.analysis = false;
  const whatif::Evaluation e =
      whatif::evaluate(conditioned_, decision_rewrites(conditions_, decisions_of(space_, a), paths_), *simulators_[worker], options);
  return {median_step(e.report), risk_of(space_, a), extra_memory_bytes(e.changes) + precision_bytes};
}

std::vector<Score> Evaluator::score(const std::vector<Assignment>& batch) {
  std::vector<Assignment> todo;
  for (const Assignment& a : batch)
    if (!memo_.contains(a) && std::find(todo.begin(), todo.end(), a) == todo.end()) todo.push_back(a);
  std::vector<Score> scores(todo.size());
  std::vector<std::exception_ptr> errors(todo.size());
  const std::size_t workers = std::min(simulators_.size(), todo.size());
  auto work = [&](std::size_t w) {
    for (std::size_t i = w; i < todo.size(); i += workers) {
      try {
        scores[i] = replay(todo[i], w);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  if (workers <= 1) {
    if (!todo.empty()) work(0);
  } else {
    std::vector<std::thread> threads;
    for (std::size_t w = 1; w < workers; ++w) threads.emplace_back(work, w);
    work(0);
    for (std::thread& t : threads) t.join();
  }
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  for (std::size_t i = 0; i < todo.size(); ++i) memo_.emplace(todo[i], scores[i]);
  std::vector<Score> out;
  out.reserve(batch.size());
  for (const Assignment& a : batch) out.push_back(memo_.at(a));
  return out;
}

namespace {

// Non-dominated plans over (step, risk, extra memory): no other plan is as good in all three and
// better in one. The fastest first; ties by risk, memory, then assignment.
std::vector<Scored> pareto_of(const std::map<Assignment, Score, AssignmentLess>& scored) {
  std::vector<Scored> all;
  for (const auto& [a, s] : scored) all.push_back({a, s});
  std::sort(all.begin(), all.end(), [](const Scored& x, const Scored& y) {
    if (x.score.step_ns != y.score.step_ns) return x.score.step_ns < y.score.step_ns;
    if (x.score.risk != y.score.risk) return x.score.risk < y.score.risk;
    if (x.score.extra_memory_bytes != y.score.extra_memory_bytes) return x.score.extra_memory_bytes < y.score.extra_memory_bytes;
    return AssignmentLess()(x.assignment, y.assignment);
  });
  // In this order a plan can only be dominated by one before it.
  std::vector<Scored> out;
  for (const Scored& s : all) {
    const bool dominated = std::any_of(out.begin(), out.end(), [&](const Scored& k) {
      return k.score.risk <= s.score.risk && k.score.extra_memory_bytes <= s.score.extra_memory_bytes;
    });
    if (!dominated) out.push_back(s);
  }
  return out;
}

// Faster; at the same step, less risky, then lighter on memory.
bool better(const Score& x, const Score& y) {
  return std::tie(x.step_ns, x.risk, x.extra_memory_bytes) < std::tie(y.step_ns, y.risk, y.extra_memory_bytes);
}

class Clock {
 public:
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// Uniform integer in [0, n) from the engine's raw bits (the same on every standard library).
std::size_t draw(std::mt19937_64& rng, std::size_t n) { return static_cast<std::size_t>(rng() % n); }
double draw_unit(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// The annealing's third partition move (beside split and merge, which set one boundary
// variable): shift a boundary by one position, exchanging the value of partition variable i with
// its neighbour's (before it, or after it with `later`) where they differ; otherwise no move.
void shift_boundary(const SearchSpace& space, Assignment& a, std::size_t i, bool later) {
  if (!later && i == 0) return;
  const std::size_t j = later ? i + 1 : i - 1;
  if (j >= a.size() || space.variables[j].strategy != Strategy::kPartition) return;
  std::swap(a[i], a[j]);
}

void finish(Evaluator& evaluator, const SearchSpace& space, const Limits& limits, SearchResult& r) {
  r.pareto = pareto_of(evaluator.scored());
  r.best = r.baseline;
  for (const auto& [a, s] : evaluator.scored())
    if (limits.admits(s) && (!limits.admits(r.best.score) || better(s, r.best.score))) r.best = {a, s};
  std::vector<Assignment> without;
  for (const std::vector<std::size_t>& vars : decision_variables(space, r.best.assignment)) {
    Assignment a = r.best.assignment;
    for (std::size_t i : vars) a[i] = 0;
    without.push_back(std::move(a));
  }
  const std::vector<Score> s = evaluator.score(without);
  for (const Score& x : s) r.gains_ns.push_back(x.step_ns - r.best.score.step_ns);
}

}  // namespace

SearchResult search(Evaluator& evaluator, const SearchSpace& space, const SearchOptions& options) {
  DPRO_CHECK(options.max_evaluations >= 1);
  const Clock clock;
  SearchResult r;
  const std::size_t start_replays = evaluator.replays();
  auto used = [&] { return evaluator.replays() - start_replays; };
  auto out_of_budget = [&] {
    if (used() >= options.max_evaluations) return true;
    if (options.max_seconds > 0 && clock.seconds() >= options.max_seconds) {
      r.stopped_by_time = true;
      return true;
    }
    return false;
  };
  auto report_progress = [&](Nanos best) {
    if (options.progress) options.progress(used(), options.max_evaluations, best);
  };
  const std::size_t n = space.variables.size();
  r.baseline = {Assignment(n, 0), evaluator.score({Assignment(n, 0)})[0]};
  Scored current = r.baseline;

  // Greedy: one variable at a time, every value tried with the others fixed (one batch), in
  // strategy order; passes until one changes nothing.
  for (bool improved = true; improved && !out_of_budget();) {
    improved = false;
    for (std::size_t i = 0; i < n && !out_of_budget(); ++i) {
      std::vector<Assignment> batch;
      for (std::size_t v = 0; v < space.variables[i].values.size(); ++v) {
        if (v == current.assignment[i]) continue;
        Assignment a = current.assignment;
        a[i] = static_cast<std::uint8_t>(v);
        if (risk_of(space, a) > options.limits.max_risk) continue;
        batch.push_back(std::move(a));
      }
      const std::size_t room = options.max_evaluations - used();
      std::size_t fresh = 0;
      std::vector<Assignment> kept;
      for (Assignment& a : batch) {
        const bool known = evaluator.scored().contains(a);
        if (!known && fresh == room) continue;
        fresh += known ? 0 : 1;
        kept.push_back(std::move(a));
      }
      const std::vector<Score> scores = evaluator.score(kept);
      for (std::size_t k = 0; k < kept.size(); ++k) {
        if (options.limits.admits(scores[k]) && (!options.limits.admits(current.score) || better(scores[k], current.score))) {
          current = {kept[k], scores[k]};
          improved = true;
        }
      }
      report_progress(current.score.step_ns);
    }
  }
  r.greedy_evaluations = used();

  // Simulated annealing from the greedy plan: a move sets one variable (or, one time in four,
  // two) to another value (a partition variable, one time in two, shifts its boundary
  // instead); moves are drawn in pairs and scored together, the second used only when the
  // first is rejected. The temperature falls linearly from 2 % of the baseline step.
  std::mt19937_64 rng(options.seed);
  const double t0 = 0.02 * static_cast<double>(std::max<Nanos>(1, r.baseline.score.step_ns));
  const std::size_t max_proposals = 20 * options.max_evaluations + 100;
  bool any_move = false;
  for (std::size_t i = 0; i < n; ++i) any_move = any_move || space.variables[i].values.size() > 1;
  for (std::size_t proposals = 0; any_move && proposals < max_proposals && !out_of_budget();) {
    std::vector<Assignment> pair;
    while (pair.size() < 2 && proposals < max_proposals) {
      ++proposals;
      Assignment a = current.assignment;
      const int moves = draw(rng, 4) == 0 ? 2 : 1;
      for (int m = 0; m < moves; ++m) {
        const std::size_t i = draw(rng, n);
        const std::size_t values = space.variables[i].values.size();
        if (values < 2) continue;
        if (space.variables[i].strategy == Strategy::kPartition && draw(rng, 2) == 0) {
          shift_boundary(space, a, i, draw(rng, 2) == 0);
          continue;
        }
        const std::size_t v = (a[i] + 1 + draw(rng, values - 1)) % values;
        a[i] = static_cast<std::uint8_t>(v);
      }
      if (a == current.assignment || risk_of(space, a) > options.limits.max_risk) continue;
      pair.push_back(std::move(a));
    }
    if (pair.empty()) break;
    if (used() + pair.size() > options.max_evaluations) pair.resize(1);
    const std::vector<Score> scores = evaluator.score(pair);
    const double progress = std::min(1.0, static_cast<double>(used()) / static_cast<double>(options.max_evaluations));
    const double temperature = t0 * (1.0 - progress);
    for (std::size_t k = 0; k < pair.size(); ++k) {
      const double delta = static_cast<double>(scores[k].step_ns - current.score.step_ns);
      const double u = draw_unit(rng);
      if (!options.limits.admits(scores[k])) continue;
      // From a plan over the limits (a baseline over the memory budget), any plan within them.
      if (delta <= 0 || !options.limits.admits(current.score) || (temperature > 0 && u < std::exp(-delta / temperature))) {
        current = {pair[k], scores[k]};
        break;
      }
    }
    report_progress(current.score.step_ns);
  }
  r.evaluations = used();
  finish(evaluator, space, options.limits, r);
  r.seconds = clock.seconds();
  return r;
}

SearchResult exhaustive(Evaluator& evaluator, const SearchSpace& space, const Limits& limits, std::size_t max_plans) {
  const Clock clock;
  std::size_t plans = 1;
  for (const Variable& v : space.variables) {
    if (plans > max_plans / v.values.size()) {
      plans = max_plans + 1;
      break;
    }
    plans *= v.values.size();
  }
  if (plans > max_plans)
    throw OptionError("strategies", "", "the space has more than " + std::to_string(max_plans) + " plans: too many to enumerate");
  const std::size_t n = space.variables.size();
  std::vector<Assignment> all;
  Assignment a(n, 0);
  for (;;) {
    if (risk_of(space, a) <= limits.max_risk) all.push_back(a);
    std::size_t i = 0;
    while (i < n && ++a[i] == space.variables[i].values.size()) a[i++] = 0;
    if (i == n) break;
  }
  const std::size_t before = evaluator.replays();
  evaluator.score(all);
  SearchResult r;
  r.baseline = {Assignment(n, 0), evaluator.score({Assignment(n, 0)})[0]};
  r.evaluations = evaluator.replays() - before;
  finish(evaluator, space, limits, r);
  r.seconds = clock.seconds();
  return r;
}

}  // namespace dpro::optimizer
