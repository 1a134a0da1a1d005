#pragma once
// The search space of one job: per strategy, the decisions the optimizer may take (variables,
// each with its values; value 0 is always "as recorded", so the empty plan is reachable and
// "none" can win), their accuracy-risk proxy, and the translation of a set of decisions into
// the what-if rewrites that the replayer scores (whatif::evaluate).
//
// Accuracy risk is an ordinal proxy, not a prediction of accuracy: each value carries a risk
// from what the literature reports for it (notes/optimizer.md; docs/optimizer.md has the table),
// and a plan's risk is the sum over its decisions. 0 means the arithmetic is unchanged
// (buckets, op fusion); the lossy compressors assume error feedback.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "optimizer/plan.h"
#include "whatif/evaluate.h"
#include "whatif/op_fusion.h"
#include "whatif/precision.h"

namespace dpro::optimizer {

// Partition variables: one per boundary between a step's recorded all-reduces that can merge,
// subject its position ("1": before the step's second all-reduce), values {"split", "merge"}
// (split: as recorded). They are one decision (a partition, decisions_of), and the space that
// has them has the buckets size variable too: every single size is a partition, so a search
// with partition contains the best single size (and the greedy pass tries every size first).
struct Variable {
  Strategy strategy = Strategy::kBuckets;
  std::string subject;             // precision: the op class ("gemm", "conv"); partition: the boundary's position
  std::vector<std::string> chain;  // op_fusion: the kernel sequence this variable fuses
  std::vector<std::string> values; // values[0]: as recorded (no decision)
};

struct SpaceOptions {
  std::vector<Strategy> strategies;  // the strategies to search; empty: every strategy that applies
  std::size_t max_fusion_chains = 16;  // op fusion: the most promising kernel sequences, one variable each
  std::size_t max_epilogue_chains = 8;  // op fusion: the most promising GEMM epilogues (GEMM + its bias/activation), one each
  // Op fusion: which chains are the most promising. true: by what they could save on or near the
  // baseline replay's critical path (fusion_critical_saving), then as whatif ranks them; false:
  // as whatif ranks them (predicted GPU saving, then launches saved), wherever they run.
  bool rank_fusion_by_slack = true;
  std::string device;      // the conditions' target GPU ("": the recorded one); precision is priced there
  std::string device_dir;  // GPU spec files
  std::string device_profile;  // a device profile of that GPU ("" none): hw/device_rates.h
};

struct SearchSpace {
  std::vector<Variable> variables;
  std::vector<Strategy> strategies;  // those with at least one variable
  // Strategies asked for that have nothing to decide on this job, and why ("no gradient all-reduce").
  std::vector<std::pair<Strategy, std::string>> not_applicable;
};

// A value index per variable, parallel to SearchSpace::variables.
using Assignment = std::vector<std::uint8_t>;

// Orders assignments (a map key); a plain loop, which GCC 12's memcmp overread check leaves alone.
struct AssignmentLess {
  bool operator()(const Assignment& x, const Assignment& y) const;
};

// The variables of `base` (the job under its conditions). Throws OptionError("strategies", ...)
// when none of the strategies asked for applies to the job.
SearchSpace make_space(const whatif::Workload& base, const SpaceOptions& options);

// What fusing every occurrence of `candidate` could save on or near the critical path of the
// replay of `dfg` whose per-node start slack is `slack` (replayer/slack.h; `dfg` is the graph the
// candidate was found in): per occurrence, its GPU saving less the smallest slack of its kernels, and the CPU
// time of the launches it removes less their smallest slack, each counted where positive. A
// chain off the critical path by more than it saves counts 0: fusing it alone leaves the step as
// it was. The search keeps the chains with the largest such saving (SpaceOptions::max_fusion_chains).
Nanos fusion_critical_saving(const whatif::FusionCandidate& candidate, const graph::Dfg& dfg,
                             const IdVector<graph::NodeId, Nanos>& slack);

// Per-layer precision: splits the precision variable of `part`'s class (the class itself, or the
// class's rest "conv@^..." after an earlier split) into a variable for the part's ops (subject
// "conv@-1,0", the part's positions less those an earlier part took) and one for the rest of the
// class (subject "conv@^..": every position no part names), each with the class's values, the
// part right before the rest. Each subject then names a disjoint set of the class's ops, so a
// plan's decisions (precision_of_class) give each its own dtype. Returns false, changing nothing,
// when the space has no precision variable for the class or the part names no new position.
bool split_precision(SearchSpace& space, const whatif::OpPart& part);

// The compression values the search offers ("none" first), and the risk of a compression value:
// its method's whatever its parameter; for a per-bucket list ("none,topk:0.01"), its riskiest
// method's (unknown methods count as 1).
std::vector<std::string> compression_values();
double compression_risk(const std::string& value);

// The decisions an assignment takes (variables at a value other than 0), in variable order; the
// partition variables make one decision, where the first of them is. decision_variables: the
// variables each decision comes from (parallel to decisions_of).
std::vector<Decision> decisions_of(const SearchSpace& space, const Assignment& a);
std::vector<std::vector<std::size_t>> decision_variables(const SearchSpace& space, const Assignment& a);
// The risk of decisions (unknown values count as the highest risk, 1), and of an assignment's.
double risk_of(const std::vector<Decision>& decisions);
double risk_of(const SearchSpace& space, const Assignment& a);

// Where the what-ifs find their files (the CLI's defaults, or its flags).
struct ResourcePaths {
  std::string model_path, device_dir, clusters_dir;
  std::string device_profile;  // measured rates of the target GPU that price precision and compression ("" none)
};

// The conditions' rewrites that do not depend on the decisions and must come before them (host,
// device), in the order they apply.
std::vector<whatif::Rewrite> condition_rewrites(const Conditions& conditions, const ResourcePaths& paths);
// The rewrites of `decisions` under `conditions`, to apply after condition_rewrites: precision
// (one rewrite for every op class's dtype: "all" sets GEMMs and convolutions, a class's own
// decision overrides it)
// and op fusion (on the GPU the graph is timed for), then communication (the conditions'
// cluster, job size and settings, with the buckets and compression decided). Throws OptionError
// for a decision value no rewrite knows.
std::vector<whatif::Rewrite> decision_rewrites(const Conditions& conditions, const std::vector<Decision>& decisions,
                                               const ResourcePaths& paths);

// The part of an op class a precision decision's subject names ("conv@0,-1"), nullopt for a whole
// class or "all"; a subject with '@' that is no part is OptionError("precision", subject, ...), as
// decision_rewrites refuses it.
std::optional<whatif::OpPart> precision_part(const std::string& subject);

}  // namespace dpro::optimizer
