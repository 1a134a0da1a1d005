#pragma once
// A plan: the changes the optimizer chose for one job (its decisions), the conditions it was
// searched under (another GPU, cluster, host, job size: the what-if flags), and what the
// replayer predicted for it. Saved as JSON; `dpro-replay replay --plan FILE` applies it as a
// what-if, and the reference executor reads the same file to run it.
//
// A decision names a strategy, what it applies to and its value, in words a person and the
// executor can act on without dpro's graph ids, and every decision applies to an equivalence
// class (every rank, every repeated layer):
//   buckets      value "25"          gradient buckets of at most 25 MiB ("off": as recorded)
//   partition    boundaries [1, 3]   gradient buckets placed one by one: a step's all-reduces (the
//                                    recorded ones, in the order the trace runs them: backward order,
//                                    position 0 first) fused into buckets that begin at position 0
//                                    and at each listed position (strictly increasing, each from 1 to
//                                    the step's all-reduces - 1); every other boundary is merged. With
//                                    a buckets decision too, a bucket begins only where both place a
//                                    boundary. "value" is the same list as text ("1,3"; "" for one
//                                    bucket per step), for a person. New in this version-1 format: a
//                                    reader that predates it refuses the strategy by name.
//   compression  value "topk:0.01"   every gradient all-reduce compressed by this method
//                value "none,fp16,.."  a method per gradient bucket, by its position in a step (the
//                                    order the trace runs the buckets: backward order, 0 first), as
//                                    `--compress` takes it; buckets past the list are not compressed.
//                                    The compression planner writes this form (one decision, one gain);
//                                    it is still version 1 (a reader that knows one method reads the
//                                    list as --compress does).
//   precision    subject "gemm"      that op class run at the value's dtype ("bf16")
//                subject "conv@-1,0" part of a class (per-layer precision, whatif::OpPart): the
//                                    class's ops at those positions in a step ("conv@^-1,0": the
//                                    class's other ops). A part's decision overrides its class's;
//                                    the parts of one class are disjoint.
//   op_fusion    chain [k1, k2, ..]  every occurrence of that kernel sequence on a stream fused
//
// File format (version 1):
//   {"format": "dpro-plan", "version": 1,
//    "trace": {"fingerprint": "16 hex digits", "ranks": 1, "ops": 78357},
//    "conditions": {"device": "", "origin_device": "", "cluster": "", "origin_cluster": "",
//                   "set": [], "comm_sizes": [], "ranks": null},
//    "decisions": [{"strategy": "buckets", "value": "25"}, ...],
//    "predicted": {"baseline_ns": 1, "step_ns": 1, "risk": 0.1, "extra_memory_bytes": 0,
//                  "gains_ns": [..per decision..]},
//    "search": {"seed": 1, "evaluations": 200, "strategies": ["buckets", ...]},
//    "tolerances": {"file": "tol.json", "fingerprint": "16 hex digits", "rules": [...]}}
//   "tolerances" is there only when `optimize --tolerances` gave rules (optional in version 1;
//   `replay --plan` checks the decisions against it: tolerances.h's check_plan_tolerances).
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/time.h"
#include "graph/builder.h"

namespace dpro::optimizer {

enum class Strategy : std::uint8_t { kBuckets, kCompression, kPrecision, kOpFusion, kPartition };
inline constexpr int kStrategyCount = 5;
const char* to_string(Strategy s);  // "buckets", "compression", "precision", "op_fusion", "partition"
// Throws OptionError(option, name) for a name that is no strategy.
Strategy parse_strategy(const std::string& name, const std::string& option);

struct Decision {
  Strategy strategy = Strategy::kBuckets;
  std::string subject;             // precision: the op class; "" otherwise
  std::string value;               // buckets: MiB or "off"; compression: method; precision: dtype
  std::vector<std::string> chain;  // op_fusion: the kernel names, in stream order
  std::vector<std::size_t> boundaries = {};  // partition: positions in a step where a bucket begins
  bool operator==(const Decision&) const = default;
};
// "compression topk:0.01", "precision gemm bf16", "op_fusion 3 kernels (a -> b -> c)"
std::string describe(const Decision& d);

// The op classes a precision decision is taken for ("all" stands for both). Elementwise and norm
// kernels are precision-agnostic: they inherit their input's dtype (whatif/precision.h).
extern const std::vector<std::string> kPrecisionClasses;
// The dtype a plan's precision decisions give each class and part of a class, as disjoint
// subjects: "all" sets both classes, a class's own decision, wherever it comes, overrides it, and
// a part's decision (whatif::OpPart, "conv@-1,0") overrides its class's for the ops it names; the
// class's dtype then goes to the rest ("conv@^-1,0", or, beside a complement part, the positions
// it leaves that no part names). Keys canonical (OpPart::to_string); values as decided
// ("as_recorded" included); a class no decision names is absent. decision_rewrites and the memory
// credit read plans through it.
std::map<std::string, std::string> precision_of_class(const std::vector<Decision>& decisions);

// The what-if conditions a plan was searched under, as the replay flags give them (names, not
// paths: the files they name are found where the replaying command looks for them).
struct Conditions {
  std::string device, origin_device;
  std::string cluster, origin_cluster;
  std::vector<std::string> settings;    // --set key=value, host.* included
  std::vector<std::string> comm_sizes;  // host execution traces giving message sizes (paths as given)
  std::optional<int> ranks;
  bool operator==(const Conditions&) const = default;
};

// What identifies the job a plan was made for: a hash over every op of its graph (kind, rank,
// measured start and duration), with its rank and op counts for messages.
struct TraceIdentity {
  std::uint64_t fingerprint = 0;
  std::size_t ranks = 0;
  std::size_t ops = 0;
  bool operator==(const TraceIdentity&) const = default;
};
TraceIdentity identify(const graph::BuiltGraph& graph);

struct Plan {
  TraceIdentity trace;
  Conditions conditions;
  std::vector<Decision> decisions;
  Nanos baseline_ns = 0;  // predicted median step under the conditions, no decision applied
  Nanos step_ns = 0;      // predicted median step with the decisions
  double risk = 0;        // accuracy-risk proxy (space.h)
  std::int64_t extra_memory_bytes = 0;  // per rank, beyond the recorded job's (search.h's Score)
  std::vector<Nanos> gains_ns;  // per decision: step without it minus step with the plan (leave-one-out)
  std::uint64_t seed = 0;
  std::size_t evaluations = 0;
  std::vector<Strategy> strategies;
  // The per-layer tolerances the search honoured (tolerances.h), "" none: the file as given, the
  // rules' fingerprint (16 hex digits) and the rules themselves as canonical JSON text, so that
  // the search can be rerun under the same rules from the plan alone.
  std::string tolerances_file, tolerances_fingerprint, tolerances_rules;
};

nlohmann::json to_json(const Plan& plan);
// The "decisions" list of a plan file.
nlohmann::json to_json(const std::vector<Decision>& decisions);
// Throws InputError naming `file` and the offending item for anything that is not a version-1
// plan (wrong format or version, a missing or mistyped field, an unknown strategy).
// First refuses nesting deeper than json_field::kMaxJsonDepth (core/json_fields.h).
Plan plan_from_json(const nlohmann::json& j, const std::string& file);
// A plan file's text: text that is not JSON (a syntax error, a number beyond a double) is one
// InputError naming `file`, as read_json_file's; then plan_from_json.
Plan parse_plan(const std::string& text, const std::string& file);
// Reads a plan file (gzip or not) through json_field::read_json_file (a folder refused, the file
// recorded as an input, its text parsed as parse_plan's), then plan_from_json.
Plan read_plan(const std::string& path);

// A decision of `file` that a rewrite refused (OptionError "precision conv@-1<0: ...") as the
// InputError naming the plan file and the decision ("F: decisions: precision conv@-1<0: ...").
InputError plan_decision_error(const std::string& file, const OptionError& e);

// Throws InputError (naming `file`) when `plan` was made for another job than `graph`.
void check_plan_matches(const Plan& plan, const graph::BuiltGraph& graph, const std::string& file);

}  // namespace dpro::optimizer
