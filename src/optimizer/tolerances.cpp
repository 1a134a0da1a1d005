#include "optimizer/tolerances.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "core/byte_source.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/json_fields.h"
#include "core/output_file.h"
#include "costmodel/comm/comm_ops.h"
#include "whatif/comm/retime.h"

namespace dpro::optimizer {
namespace {

const std::vector<std::string> kDtypes = {"as_recorded", "fp32", "tf32", "bf16", "fp16", "fp8"};
const std::vector<std::string> kOpClasses = {"gemm", "conv"};
const std::vector<std::string> kKeys = {"match", "max_risk", "precision", "compression", "fusion"};

std::string method_of(const std::string& value) { return value.substr(0, value.find(':')); }

bool known_method(const std::string& item) {
  const std::string m = method_of(item);
  for (const std::string& v : compression_values())
    if (method_of(v) == m) return true;
  return false;
}

std::vector<std::string> string_list(const nlohmann::json& v, const std::string& file, const std::string& item) {
  if (!v.is_array()) throw InputError(file, item, "must be a list of strings, got " + v.dump());
  std::vector<std::string> out;
  for (const auto& s : v) {
    if (!s.is_string()) throw InputError(file, item, "must be a list of strings, got " + s.dump());
    out.push_back(s.get<std::string>());
  }
  return out;
}

// Whether a rule applies to a precision subject: a class, or a part of one (whatif::OpPart). A
// part rule applies to every subject that may share an op with its part: its class, a part naming
// one of its positions, a class's rest leaving one of them.
bool applies_to_precision(const ToleranceRule& r, const std::string& subject) {
  using Kind = ToleranceRule::Kind;
  if (r.kind == Kind::kAll) return true;
  const std::string cls = subject.substr(0, subject.find_first_of("@#"));
  if (r.kind == Kind::kOpClass) return r.match == cls;
  if (r.kind != Kind::kOpPart || cls != whatif::to_string(r.part.cls)) return false;
  if (cls == subject) return true;
  const std::optional<whatif::OpPart> other = whatif::parse_op_part(subject);
  if (other->layers != r.part.layers) return true;  // positions and layers: they may share an op
  return std::any_of(r.part.positions.begin(), r.part.positions.end(), [&](long p) {
    return (std::find(other->positions.begin(), other->positions.end(), p) != other->positions.end()) != other->complement;
  });
}

bool applies_to_compression(const ToleranceRule& r, std::size_t position) {
  return r.kind == ToleranceRule::Kind::kAll || (r.kind == ToleranceRule::Kind::kBucket && position == r.bucket);
}

bool applies_to_chain(const ToleranceRule& r, const std::vector<std::string>& chain) {
  if (r.kind == ToleranceRule::Kind::kAll) return true;
  if (r.kind != ToleranceRule::Kind::kKernel) return false;
  return std::any_of(chain.begin(), chain.end(), [&](const std::string& k) { return k.find(r.match) != std::string::npos; });
}

bool method_listed(const std::vector<std::string>& allowed, const std::string& method) {
  return std::any_of(allowed.begin(), allowed.end(),
                     [&](const std::string& a) { return a == method || (a.find(':') == std::string::npos && a == method_of(method)); });
}

}  // namespace

Tolerances parse_tolerances(const nlohmann::json& j, const std::string& file) {
  json_field::check_json_depth(j, file);  // before any value is written into a message (dump recurses)
  if (!j.is_object()) throw InputError(file, "", "not a tolerances file (expected a JSON object with \"rules\")");
  for (const auto& [key, value] : j.items())
    if (key != "rules") throw InputError(file, key, "unknown key (a tolerances file has \"rules\" only)");
  const auto rules = j.find("rules");
  if (rules == j.end()) throw InputError(file, "rules", "missing: a list of rules");
  if (!rules->is_array()) throw InputError(file, "rules", "must be a list of rules");
  Tolerances t;
  t.file = file;
  for (std::size_t i = 0; i < rules->size(); ++i) {
    const std::string where = fmt::format("rules[{}]", i);
    const nlohmann::json& o = (*rules)[i];
    if (!o.is_object()) throw InputError(file, where, "must be an object");
    for (const auto& [key, value] : o.items())
      if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end())
        throw InputError(file, where + "." + key, "unknown key (one of match, max_risk, precision, compression, fusion)");
    ToleranceRule r;
    const auto match = o.find("match");
    if (match == o.end() || !match->is_string() || match->get<std::string>().empty())
      throw InputError(file, where + ".match", "missing: a non-empty string (\"*\", gemm, conv, conv@N,.., conv#N,.., bucket:N or a kernel-name substring)");
    r.match = match->get<std::string>();
    if (r.match == "*") {
      r.kind = ToleranceRule::Kind::kAll;
    } else if (std::find(kOpClasses.begin(), kOpClasses.end(), r.match) != kOpClasses.end()) {
      r.kind = ToleranceRule::Kind::kOpClass;
    } else if (r.match.find('@') != std::string::npos || whatif::names_part_of(r.match, "gemm") ||
               whatif::names_part_of(r.match, "conv")) {
      r.kind = ToleranceRule::Kind::kOpPart;
      std::optional<whatif::OpPart> part;
      try {
        part = whatif::parse_op_part(r.match);
      } catch (const OptionError&) {
        part.reset();
      }
      if (!part || part->complement)
        throw InputError(file, where + ".match",
                         "\"" + r.match + "\": a part of an op class is gemm@N or conv@N, op positions separated by "
                         "commas (integers, negative from the step's end: conv@0,-1), or gemm#N or conv#N, layers "
                         "(negative from the last: conv#0,-1)");
      r.part = *part;
      for (std::size_t k = 0; k < t.rules.size(); ++k)
        if (t.rules[k].kind == ToleranceRule::Kind::kOpPart && t.rules[k].part.cls == part->cls &&
            t.rules[k].part.layers != part->layers)
          throw InputError(file, where + ".match",
                           fmt::format("\"{}\" and rules[{}]'s \"{}\" name one op class by op positions (@) and by "
                                       "layers (#): a class's parts use one of the two",
                                       r.match, k, t.rules[k].match));
    } else if (r.match.rfind("bucket:", 0) == 0) {
      r.kind = ToleranceRule::Kind::kBucket;
      const std::string n = r.match.substr(7);
      if (n.empty() || n.size() > 6 || !std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; }))
        throw InputError(file, where + ".match", "\"" + r.match + "\": a bucket is bucket:N, N a position from 0");
      r.bucket = std::stoul(n);
    } else {
      r.kind = ToleranceRule::Kind::kKernel;
    }
    if (const auto it = o.find("max_risk"); it != o.end()) {
      if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0)
        throw InputError(file, where + ".max_risk", "must be a number >= 0, got " + it->dump());
      r.max_risk = it->get<double>();
    }
    if (const auto it = o.find("precision"); it != o.end()) {
      r.precision = string_list(*it, file, where + ".precision");
      for (const std::string& d : *r.precision)
        if (std::find(kDtypes.begin(), kDtypes.end(), d) == kDtypes.end())
          throw InputError(file, where + ".precision", "unknown dtype \"" + d + "\" (fp32, tf32, bf16, fp16, fp8 or as_recorded)");
    }
    if (const auto it = o.find("compression"); it != o.end()) {
      r.compression = string_list(*it, file, where + ".compression");
      for (const std::string& m : *r.compression)
        if (!known_method(m))
          throw InputError(file, where + ".compression",
                           "unknown method \"" + m + "\" (none, fp16, bf16, powersgd, topk, randomk, dgc, efsignsgd)");
    }
    if (const auto it = o.find("fusion"); it != o.end()) {
      if (!it->is_boolean()) throw InputError(file, where + ".fusion", "must be true or false, got " + it->dump());
      r.fusion = it->get<bool>();
    }
    using Kind = ToleranceRule::Kind;
    if (r.precision && r.kind != Kind::kAll && r.kind != Kind::kOpClass && r.kind != Kind::kOpPart)
      throw InputError(file, where + ".precision",
                       "\"" + r.match + "\" is no op class: precision is decided per op class or part of one (match gemm, "
                       "conv, conv@0,-1 or *)");
    if (r.compression && r.kind != Kind::kAll && r.kind != Kind::kBucket)
      throw InputError(file, where + ".compression",
                       "\"" + r.match + "\" is no bucket: compression is decided per gradient bucket (match bucket:N or *)");
    if (r.fusion && r.kind != Kind::kAll && r.kind != Kind::kKernel)
      throw InputError(file, where + ".fusion",
                       "\"" + r.match + "\" names no kernel: fusion chains are matched by a kernel-name substring (or *)");
    if (r.max_risk && r.kind == Kind::kKernel)
      throw InputError(file, where + ".max_risk",
                       "a kernel-name match constrains fusion chains only, whose risk is 0 (match gemm, conv, bucket:N or *)");
    if (!r.max_risk && !r.precision && !r.compression && !r.fusion)
      throw InputError(file, where, "limits nothing (give max_risk, precision, compression or fusion)");
    t.rules.push_back(std::move(r));
  }
  Fnv1a hash;
  for (const char c : rules_json(t).dump()) hash.add(static_cast<unsigned char>(c));
  t.fingerprint = hash.value;
  return t;
}

Tolerances read_tolerances(const std::string& path) {
  return parse_tolerances(json_field::read_json_file(path, "a tolerances file (JSON)"), path);
}

nlohmann::json rules_json(const Tolerances& t) {
  nlohmann::json out = nlohmann::json::array();
  for (const ToleranceRule& r : t.rules) {
    nlohmann::json o = {{"match", r.match}};
    if (r.max_risk) o["max_risk"] = *r.max_risk;
    if (r.precision) o["precision"] = *r.precision;
    if (r.compression) o["compression"] = *r.compression;
    if (r.fusion) o["fusion"] = *r.fusion;
    out.push_back(std::move(o));
  }
  return out;
}

bool precision_allowed(const Tolerances& t, const std::string& op_class, const std::string& dtype) {
  if (dtype == "as_recorded") return true;
  for (const ToleranceRule& r : t.rules) {
    if (!applies_to_precision(r, op_class)) continue;
    if (r.precision && std::find(r.precision->begin(), r.precision->end(), dtype) == r.precision->end()) return false;
    if (r.max_risk && risk_of({Decision{Strategy::kPrecision, op_class, dtype, {}, {}}}) > *r.max_risk) return false;
  }
  return true;
}

bool compression_allowed(const Tolerances& t, std::size_t position, const std::string& method) {
  if (method == "none") return true;
  for (const ToleranceRule& r : t.rules) {
    if (!applies_to_compression(r, position)) continue;
    if (r.compression && !method_listed(*r.compression, method)) return false;
    if (r.max_risk && compression_risk(method) > *r.max_risk) return false;
  }
  return true;
}

bool compression_value_allowed(const Tolerances& t, const std::string& value, std::size_t positions) {
  if (value.find(',') == std::string::npos) {
    for (std::size_t p = 0; p < std::max<std::size_t>(positions, 1); ++p)
      if (!compression_allowed(t, p, value)) return false;
    return true;
  }
  std::size_t position = 0;
  for (std::size_t begin = 0;; ++position) {
    const auto comma = value.find(',', begin);
    if (!compression_allowed(t, position, value.substr(begin, comma - begin))) return false;
    if (comma == std::string::npos) return true;
    begin = comma + 1;
  }
}

bool fusion_allowed(const Tolerances& t, const std::vector<std::string>& chain) {
  return std::none_of(t.rules.begin(), t.rules.end(),
                      [&](const ToleranceRule& r) { return r.fusion == false && applies_to_chain(r, chain); });
}

bool decisions_allowed(const Tolerances& t, const std::vector<Decision>& decisions, std::size_t positions) {
  return std::all_of(decisions.begin(), decisions.end(), [&](const Decision& d) {
    switch (d.strategy) {
      case Strategy::kPrecision: {
        if (d.subject != "all") return precision_allowed(t, d.subject, d.value);
        return std::all_of(kOpClasses.begin(), kOpClasses.end(), [&](const std::string& c) { return precision_allowed(t, c, d.value); });
      }
      case Strategy::kCompression: return compression_value_allowed(t, d.value, positions);
      case Strategy::kOpFusion: return fusion_allowed(t, d.chain);
      case Strategy::kBuckets:
      case Strategy::kPartition: return true;
    }
    return true;
  });
}

ToleranceEffect apply_tolerances(SearchSpace& space, const Tolerances& t, std::size_t bucket_positions) {
  ToleranceEffect effect;
  using Kind = ToleranceRule::Kind;
  // A rule on part of a class makes that part a decision of its own (space.h's split_precision).
  for (const ToleranceRule& r : t.rules)
    if (r.kind == Kind::kOpPart) effect.splits += split_precision(space, r.part);
  for (std::size_t i = 0; i < t.rules.size(); ++i) {
    const ToleranceRule& r = t.rules[i];
    const bool matched = std::any_of(space.variables.begin(), space.variables.end(), [&](const Variable& v) {
      switch (r.kind) {
        case Kind::kAll: return v.strategy == Strategy::kPrecision || v.strategy == Strategy::kCompression ||
                                v.strategy == Strategy::kOpFusion;
        case Kind::kOpClass:
        case Kind::kOpPart: return v.strategy == Strategy::kPrecision && applies_to_precision(r, v.subject);
        case Kind::kBucket: return v.strategy == Strategy::kCompression && r.bucket < bucket_positions;
        case Kind::kKernel: return v.strategy == Strategy::kOpFusion && applies_to_chain(r, v.chain);
      }
      return false;
    });
    if (!matched) effect.unmatched.push_back(fmt::format("rules[{}] (\"{}\")", i, r.match));
  }
  std::vector<Variable> kept;
  for (Variable& v : space.variables) {
    if (v.strategy == Strategy::kPrecision || v.strategy == Strategy::kCompression) {
      std::vector<std::string> values = {v.values.front()};
      for (std::size_t k = 1; k < v.values.size(); ++k) {
        const bool ok = v.strategy == Strategy::kPrecision ? precision_allowed(t, v.subject, v.values[k])
                                                           : compression_value_allowed(t, v.values[k], bucket_positions);
        if (ok) values.push_back(v.values[k]);
        else ++effect.values_removed;
      }
      v.values = std::move(values);
      if (v.values.size() < 2) {
        ++effect.variables_removed;
        continue;
      }
    } else if (v.strategy == Strategy::kOpFusion && !fusion_allowed(t, v.chain)) {
      ++effect.variables_removed;
      continue;
    }
    kept.push_back(std::move(v));
  }
  space.variables = std::move(kept);
  std::vector<Strategy> strategies;
  for (Strategy s : space.strategies) {
    if (std::any_of(space.variables.begin(), space.variables.end(), [&](const Variable& v) { return v.strategy == s; }))
      strategies.push_back(s);
    else
      space.not_applicable.emplace_back(s, "every decision forbidden by the tolerances (" + t.file + ")");
  }
  space.strategies = std::move(strategies);
  if (space.variables.empty())
    throw OptionError("tolerances", t.file, "the rules forbid every decision the search could take: nothing to search");
  return effect;
}

std::size_t bucket_positions(const graph::BuiltGraph& graph, const trace::TraceSet& traces) {
  return comm::step_allreduces(comm::find_comm_ops(graph.dfg, traces), traces).most;
}

ToleranceEffect apply_tolerances(SearchSpace& space, const Tolerances& t, const whatif::Workload& job) {
  return apply_tolerances(space, t, bucket_positions(job.graph, *job.traces));
}

void check_layer_rules(const Tolerances& t, const whatif::Workload& job, const std::string& device_dir,
                       const std::string& device) {
  std::optional<std::map<whatif::OpClass, std::size_t>> without;  // read on the first layer rule
  for (std::size_t i = 0; i < t.rules.size(); ++i) {
    const ToleranceRule& r = t.rules[i];
    if (r.kind != ToleranceRule::Kind::kOpPart || !r.part.layers) continue;
    if (!without) without = whatif::kernels_without_layer(job, device_dir, device);
    const auto it = without->find(r.part.cls);
    if (it == without->end()) continue;
    const char* cls = whatif::to_string(r.part.cls);
    throw InputError(t.file, fmt::format("rules[{}].match", i),
                     fmt::format("\"{}\" names layers, but {} {} kernel(s) of these traces have none: their ops "
                                 "record no autograd sequence number (record with torch.profiler, or dpro-profile "
                                 "--nvtx with a step inside emit_nvtx), so the rule could not be kept; name op "
                                 "positions instead ({}@0,-1)",
                                 r.match, it->second, cls, cls));
  }
}

void check_plan_tolerances(const Plan& plan, const graph::BuiltGraph& graph, const trace::TraceSet& traces,
                           const std::string& file) {
  if (plan.tolerances_rules.empty()) return;
  // plan_from_json took the rules as valid JSON; parse_tolerances names their item under "tolerances".
  nlohmann::json recorded;
  recorded["rules"] = nlohmann::json::parse(plan.tolerances_rules);
  const Tolerances t = parse_tolerances(recorded, file + " (tolerances)");
  if (fmt::format("{:016x}", t.fingerprint) != plan.tolerances_fingerprint)
    throw InputError(file, "tolerances.fingerprint",
                     fmt::format("\"{}\" is not the fingerprint of the recorded rules ({:016x}): the rules or the "
                                 "fingerprint were edited",
                                 plan.tolerances_fingerprint, t.fingerprint));
  const std::size_t positions = bucket_positions(graph, traces);
  for (const Decision& d : plan.decisions) {
    // A part rule matches a precision subject by parsing it, before decision_rewrites has checked
    // the decisions: a subject that is no part ("conv@-1<0") is refused here as decision_rewrites
    // refuses it, naming the plan (fuzzing finding 4, docs/fuzzing.md).
    if (d.strategy == Strategy::kPrecision) {
      try {
        precision_part(d.subject);
      } catch (const OptionError& e) {
        throw plan_decision_error(file, e);
      }
    }
    if (!decisions_allowed(t, {d}, positions))
      throw InputError(file, "decisions", describe(d) + ": forbidden by the plan's own tolerances (" + plan.tolerances_file + ")");
  }
}

}  // namespace dpro::optimizer
