#pragma once
// Per-layer tolerances (issue 30: "a user can give per-layer tolerances"): a small JSON file in
// which a user limits what the search may decide, per op class, per gradient bucket or per
// kernel. Decisions a rule forbids are taken out of the search space before the search (values
// of a variable dropped; a variable left with nothing but "as recorded" dropped), so the chosen
// plan and the Pareto set honour the rules by construction.
//
// File format (`optimize --tolerances FILE`; docs/optimizer.md has examples):
//   {"rules": [{"match": "gemm", "precision": ["tf32", "bf16"], "max_risk": 0.05},
//              {"match": "bucket:0", "compression": ["none", "fp16"]},
//              {"match": "layer_norm", "fusion": false}]}
// A rule's "match" says what it applies to, and the fields it may carry follow from the way
// decisions are structured (space.h):
//   "*"               every decision: precision, compression (every bucket), fusion, max_risk
//   "gemm", "conv"    the precision decision of that op class: precision, max_risk
//   "conv@0,-1"       part of an op class (per-layer precision, whatif::OpPart): the class's ops
//                     at those positions in a step (in start order, negative from the step's end;
//                     "conv@0,-1" is the first convolution's forward and the backward op that ends
//                     the step). The class's decision splits into one for the part and one for
//                     the rest (space.h's split_precision), so the search decides them apart:
//                     precision, max_risk
//   "conv#0,-1"       the same by layer: a forward op and the backward ops autograd pairs with it
//                     (whatif::OpPart); one class's rules name positions or layers, not both
//   "bucket:N"        gradient bucket N of a step, in the order a step runs them (backward order,
//                     0 first; the positions of the per-bucket compression list): compression,
//                     max_risk. A single method for every bucket is allowed only where every
//                     bucket of the job allows it.
//   anything else     a substring of kernel names: the fusion chains with such a kernel
//                     ("fusion": false forbids them; fusion's risk is 0, so max_risk has no effect)
// Fields: "precision" the dtypes allowed (tf32, bf16, fp16, fp8; fp32 and as_recorded name the
// recorded dtype, always allowed); "compression" the methods allowed ("topk" any parameter,
// "topk:0.01" that one; "none" is always allowed); "max_risk" the largest accuracy-risk proxy a
// value of the matched decisions may have (space.h's table); "fusion" true or false. "As
// recorded" (no decision) is never forbidden, so the empty plan stays reachable. Several rules
// that match one decision all apply (a value must pass every one).
//
// Bad files are InputError naming the file and the item ("rules[1].precision"): not JSON, a key
// other than these, an unknown dtype or method, a field the match cannot take. A rule that
// matches no decision of the search is not an error (one file serves searches of different
// strategies): apply_tolerances reports it, and the CLI warns.
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "optimizer/space.h"

namespace dpro::optimizer {

struct ToleranceRule {
  enum class Kind { kAll, kOpClass, kOpPart, kBucket, kKernel };
  std::string match;  // as written
  Kind kind = Kind::kAll;
  whatif::OpPart part;  // kOpPart: the class and positions
  std::size_t bucket = 0;  // kBucket: the position
  std::optional<double> max_risk;
  std::optional<std::vector<std::string>> precision;    // dtypes allowed
  std::optional<std::vector<std::string>> compression;  // methods allowed
  std::optional<bool> fusion;
};

struct Tolerances {
  std::string file;  // where the rules came from (for messages and the plan file)
  std::vector<ToleranceRule> rules;
  // A hash over the rules as canonical JSON (rules_json), recorded in the plan file.
  std::uint64_t fingerprint = 0;
};

// Throws InputError(file, item) for anything not described above.
Tolerances parse_tolerances(const nlohmann::json& j, const std::string& file);
Tolerances read_tolerances(const std::string& path);
// The rules as canonical JSON (every field as parsed, absent ones left out), for the plan file.
nlohmann::json rules_json(const Tolerances& t);

// Whether the rules allow a value. `op_class`: a precision subject, a class or part of one (a
// part rule applies to the subjects that may share an op with it). `position`: a bucket position. A compression value is one
// method for every one of a step's `positions` buckets (allowed where each bucket allows it), or
// a per-bucket list ("none,fp16"), checked position by position.
bool precision_allowed(const Tolerances& t, const std::string& op_class, const std::string& dtype);
bool compression_allowed(const Tolerances& t, std::size_t position, const std::string& method);
bool compression_value_allowed(const Tolerances& t, const std::string& value, std::size_t positions);
bool fusion_allowed(const Tolerances& t, const std::vector<std::string>& chain);
// Whether a plan's decisions all honour the rules, for a job of `positions` buckets a step.
bool decisions_allowed(const Tolerances& t, const std::vector<Decision>& decisions, std::size_t positions);

struct ToleranceEffect {
  std::size_t values_removed = 0;     // values other than "as recorded" taken out
  std::size_t variables_removed = 0;  // variables left with no value but "as recorded"
  std::size_t splits = 0;  // precision variables split by a part rule (split_precision)
  std::vector<std::string> unmatched;  // "rules[2] (\"foo\")": rules that match no variable of the space
};

// Takes out of `space` what the rules forbid. `bucket_positions`: the most gradient all-reduces a
// step runs (a "bucket:N" rule with N at or past it matches nothing). Strategies left without a
// variable move to space.not_applicable ("forbidden by the tolerances"). Throws
// OptionError("tolerances") when nothing is left to search.
ToleranceEffect apply_tolerances(SearchSpace& space, const Tolerances& t, std::size_t bucket_positions);
// The same, with the bucket positions of `job` (the job under its conditions).
ToleranceEffect apply_tolerances(SearchSpace& space, const Tolerances& t, const whatif::Workload& job);

// A rule on layers ("conv#0") needs every kernel of its class to have a layer (autograd's sequence
// numbers, whatif::OpPart): throws InputError naming the file and the rule where `job`'s do not
// (the rule could not be kept). `device_dir`, `device`: as the precision rewrite's.
void check_layer_rules(const Tolerances& t, const whatif::Workload& job, const std::string& device_dir,
                       const std::string& device);

// The most gradient all-reduces a step of the job runs (the positions "bucket:N" counts).
std::size_t bucket_positions(const graph::BuiltGraph& graph, const trace::TraceSet& traces);

// For `replay --plan`: a plan that records tolerances (Plan::tolerances_rules) must carry their
// fingerprint and decisions that honour them. Throws InputError naming `file` ("tolerances.rules[0]...",
// "tolerances.fingerprint", "decisions") otherwise; a plan without tolerances passes.
void check_plan_tolerances(const Plan& plan, const graph::BuiltGraph& graph, const trace::TraceSet& traces,
                           const std::string& file);

}  // namespace dpro::optimizer
