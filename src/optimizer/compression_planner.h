#pragma once
// Per-bucket gradient compression, planned analytically (issue 30's compression strategy; the
// peer is Espresso/ByteComp's per-tensor decision, notes/optimizer.md): a method per gradient
// bucket position, "none" included, chosen from ONE baseline replay with no replay per candidate.
//
// The model (PlannerModel), from the baseline replay of the job under its conditions:
// - each bucket instance (rank, step, position): when its gradients are ready and launched
//   without waiting for the communication stream (its members' other start-edges, from the
//   replayed times), and what every method costs it (comm::price_method, the very function the
//   compression rewrite applies: transfer, compression and decompression kernels, residual);
// - the communication stream of each rank, per step, in position order: a bucket starts when it
//   is ready and the previous one has finished, compresses, waits for its peers (the collective
//   ends at the latest peer's start plus its transfer), then decompresses;
// - its consumers: the nodes that wait for a bucket (stream waits, syncs), with the time their
//   other dependencies allow them; the one on the step's critical path in the baseline (walked
//   back through the replay's causes) moves the step end by as much as it moves, each other
//   consumer only by how far it comes later than in the baseline (an assumed slack of 0, so an
//   uncertain gain never beats "none").
// A step's predicted time is its baseline time plus that shift; the objective is the median over
// steps (search.h's), then their sum. With every bucket at "none" the model gives the baseline.
//
// The choice: the best single method for every bucket (or none) first, then coordinate descent in
// position order (the order the buckets run: backward order), each bucket trying every method
// with the others fixed, keeping a change only when it strictly shortens the objective, within a
// risk limit (a method's risk, space.h) and an error-feedback memory limit; passes until one
// changes nothing. The result is verified by one real replay (replay_compression).
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "optimizer/space.h"
#include "whatif/comm/compress.h"
#include "whatif/evaluate.h"

namespace dpro::optimizer {

struct PlannerOptions {
  // Candidate methods per bucket, as compression values ("none", "fp16", "topk:0.01"); empty: the
  // compression values of the search space (space.h). "none" is always a candidate.
  std::vector<std::string> methods;
  double max_risk = std::numeric_limits<double>::infinity();
  std::int64_t max_extra_memory_bytes = std::numeric_limits<std::int64_t>::max();  // per rank
  // Whether a method may compress the bucket at a position (per-bucket tolerances, tolerances.h);
  // empty: every method everywhere. A single method for all buckets must be allowed at each.
  std::function<bool(std::size_t position, const std::string& method)> method_allowed;
};

// The analytic model; plain data, so that a benchmark can build larger cases from a real one.
struct PlannerModel {
  struct Bucket {
    std::size_t rank = 0;      // index of the rank's communication stream within its step (0..ranks-1)
    std::size_t position = 0;  // within the step, in the order the trace runs them
    Nanos ready = 0;           // replay clock
    comm::BucketShape shape;   // what `cost` was priced on
    // An earlier bucket (index into Step::buckets) whose consumer held up the work that made this
    // one ready (the replay's causes): this one's readiness moves as much as that one's end.
    std::optional<std::size_t> follows;
    Nanos follows_end = 0;     // that bucket's end with no compression
    Nanos fixed = 0;           // what the collective takes beyond its transfer (waiting for peers outside the trace)
    std::vector<comm::MethodCost> cost;  // per method
  };
  struct Wait {
    std::size_t bucket = 0;  // index into Step::buckets
    Nanos gap = 0;           // after the bucket's end (its decompression's end when compressed)
  };
  struct Consumer {
    Nanos other_ready = 0;     // when its other dependencies allow it (replay clock), its delay included
    Nanos delay = 0;           // a start's delay after its last dependency (in every Wait::gap)
    std::vector<Wait> waits;
    Nanos baseline = 0;        // its time in the model with no compression
    bool critical = false;     // on the step's critical path in the baseline
  };
  struct Step {
    Nanos baseline_ns = 0;   // the baseline replay's job step
    std::size_t ranks = 0;
    std::vector<Bucket> buckets;  // ordered by (position, rank)
    std::vector<Consumer> consumers;
  };
  std::vector<std::string> methods;  // methods[0] == "none"
  std::vector<double> risks;         // per method
  std::vector<comm::CompressionSpec> specs;  // per method, as compress.h prices them
  // What priced the buckets (their Bucket::cost): kept so that a benchmark can price more.
  std::optional<comm::CollectiveModel> target;
  comm::GpuRates rates;
  std::size_t positions = 0;         // bucket positions per step
  std::vector<Step> steps;           // every step of the replay (those without buckets keep their time)
};

// Sets every consumer's `baseline` from the model with no compression (after editing a model).
void set_consumer_baselines(PlannerModel& model);

// A method per position (index into PlannerModel::methods).
using BucketChoice = std::vector<std::size_t>;

struct PlannedScore {
  Nanos median_ns = 0;  // median over steps, as search.h's median_step
  Nanos total_ns = 0;   // sum over steps (breaks ties of the median)
  std::int64_t extra_memory_bytes = 0;  // per rank: error-feedback residuals over the positions
  double risk = 0;                      // the riskiest method chosen
  double risk_sum = 0;                  // summed over positions (prefers fewer compressed buckets)
};
PlannedScore score(const PlannerModel& model, const BucketChoice& choice);

struct CompressionPlan {
  BucketChoice choice;                 // per position
  std::string value;                   // the choice as a compression decision's value ("none,topk:0.01,...")
  PlannedScore planned;                // the model's prediction for `choice`
  PlannedScore none;                   // the model with no compression (the baseline's median)
  std::string best_single;             // the best method for every bucket by the same model ("none" possible)
  PlannedScore best_single_score;
  std::size_t buckets = 0;             // bucket instances (ranks x steps x positions)
  std::size_t evaluations = 0;         // model evaluations the choice made
};
CompressionPlan choose(const PlannerModel& model, const PlannerOptions& options);

// The model of `conditioned` (condition_rewrites applied) under `conditions` with `decisions`
// (other strategies' decisions; no compression decision), from one replay. Throws OptionError
// ("strategies") when the job has no gradient bucket to compress (no all-reduce of two or more
// ranks, or a scale-in) and what the rewrites throw.
PlannerModel build_model(const whatif::Workload& conditioned, const Conditions& conditions,
                         const std::vector<Decision>& decisions, const ResourcePaths& paths,
                         const PlannerOptions& options);

// The median step of one real replay of `decisions` (the verification of a plan).
Nanos replay_step(const whatif::Workload& conditioned, const Conditions& conditions,
                  const std::vector<Decision>& decisions, const ResourcePaths& paths);

// The planner on the space's job: when the space has a compression variable and the plan
// compresses some bucket but not all alike, its per-bucket value is added to that variable (the
// search then scores it by replay like any value, and keeps it only where it wins). Returns the
// plan, or nullopt with `why` set when there is none to add.
std::optional<CompressionPlan> add_planned_compression(SearchSpace& space, const whatif::Workload& conditioned,
                                                       const Conditions& conditions, const ResourcePaths& paths,
                                                       const PlannerOptions& options, std::string* why);

}  // namespace dpro::optimizer
