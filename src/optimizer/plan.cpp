#include "optimizer/plan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <limits>
#include <map>
#include <optional>
#include <set>

#include "core/byte_source.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/json_fields.h"
#include "core/output_file.h"
#include "costmodel/op_desc.h"
#include "whatif/op_fusion.h"
#include "whatif/precision.h"

namespace dpro::optimizer {
namespace {

constexpr const char* kStrategyNames[kStrategyCount] = {"buckets", "compression", "precision", "op_fusion", "partition"};
constexpr const char* kFormat = "dpro-plan";
constexpr int kVersion = 1;

const nlohmann::json& field(const nlohmann::json& obj, const char* key, const std::string& file,
                            const std::string& where) {
  const auto it = obj.find(key);
  if (it == obj.end()) throw InputError(file, where.empty() ? key : where + "." + key, "missing");
  return *it;
}

std::string string_field(const nlohmann::json& obj, const char* key, const std::string& file, const std::string& where,
                         bool required) {
  const std::string item = where.empty() ? key : where + "." + key;
  const auto it = obj.find(key);
  if (it == obj.end()) {
    if (required) throw InputError(file, item, "missing");
    return {};
  }
  if (!it->is_string()) throw InputError(file, item, "must be a string, got " + it->dump());
  return it->get<std::string>();
}

Nanos nanos_field(const nlohmann::json& obj, const char* key, const std::string& file, const std::string& where) {
  const nlohmann::json& v = field(obj, key, file, where);
  if (!v.is_number_integer() || v.get<std::int64_t>() < 0)
    throw InputError(file, where + "." + key, "must be a whole number of nanoseconds >= 0, got " + v.dump());
  return v.get<std::int64_t>();
}

// A partition's "boundaries": whole numbers >= 1, strictly increasing (their range is the job's:
// the rewrite checks it).
std::vector<std::size_t> boundaries_field(const nlohmann::json& o, const std::string& file, const std::string& where) {
  const nlohmann::json& list = field(o, "boundaries", file, where);
  const std::string item = where + ".boundaries";
  if (!list.is_array()) throw InputError(file, item, "must be a list of step positions (whole numbers >= 1), got " + list.dump());
  std::vector<std::size_t> out;
  for (const nlohmann::json& b : list) {
    if (!b.is_number_integer() || b.get<std::int64_t>() < 1)
      throw InputError(file, item, "a boundary is a step position >= 1 (position 0 always begins a bucket), got " + b.dump());
    if (!out.empty() && b.get<std::size_t>() <= out.back())
      throw InputError(file, item, "boundaries must be strictly increasing, got " + list.dump());
    out.push_back(b.get<std::size_t>());
  }
  return out;
}

// A kernel's function name without return type, namespaces, template and call arguments:
// "void at::native::vectorized_elementwise_kernel<4, ...>(int, ...)" -> "vectorized_elementwise_kernel".
// ("void at::native::(anonymous namespace)::fused_dropout_kernel_vec<...>(...)" was "?" until
// 2026-11-28: the anonymous namespace's parenthesis ended the name before the function.)
std::string short_kernel_name(std::string_view kernel_name) {
  const std::string full = costmodel::kernel_function_name(kernel_name);
  std::string_view name = full;
  if (const auto colon = name.rfind("::"); colon != std::string_view::npos) name.remove_prefix(colon + 2);
  if (name.empty()) return "?";
  return name.size() > 48 ? std::string(name.substr(0, 45)) + "..." : std::string(name);
}

std::string hex(std::uint64_t x) { return fmt::format("{:016x}", x); }

}  // namespace

const std::vector<std::string> kPrecisionClasses = {"gemm", "conv"};

std::map<std::string, std::string> precision_of_class(const std::vector<Decision>& decisions) {
  std::map<std::string, std::string> whole;  // class -> dtype ("all", then the class's own)
  for (const Decision& d : decisions) {
    if (d.strategy != Strategy::kPrecision) continue;
    for (const std::string& cls : kPrecisionClasses)
      if (d.subject == cls || (d.subject == "all" && !whole.contains(cls))) whole[cls] = d.value;
  }
  std::map<std::string, std::string> out;
  for (const std::string& cls : kPrecisionClasses) {
    std::set<long> named;                 // positions (or layers) the class's parts name
    std::optional<std::set<long>> rest;   // the positions a complement part ("conv@^0,-1") leaves out
    bool layers = false;                  // the parts name layers ("conv#0"; decision_rewrites refuses a mix)
    for (const Decision& d : decisions) {
      if (d.strategy != Strategy::kPrecision || !whatif::names_part_of(d.subject, cls)) continue;
      const std::optional<whatif::OpPart> part = whatif::parse_op_part(d.subject);
      if (!part) continue;
      layers = part->layers;
      out[part->to_string()] = d.value;
      if (part->complement) rest = std::set<long>(part->positions.begin(), part->positions.end());
      else named.insert(part->positions.begin(), part->positions.end());
    }
    const auto it = whole.find(cls);
    if (it == whole.end()) continue;
    // The class's own dtype covers what no part names.
    whatif::OpPart left;
    left.cls = cls == "conv" ? whatif::OpClass::kConv : whatif::OpClass::kGemm;
    left.layers = layers;
    if (rest) {
      for (long p : *rest)
        if (!named.contains(p)) left.positions.push_back(p);
      if (left.positions.empty()) continue;
    } else if (named.empty()) {
      out[cls] = it->second;
      continue;
    } else {
      left.complement = true;
      left.positions.assign(named.begin(), named.end());
    }
    out.emplace(left.to_string(), it->second);
  }
  return out;
}

const char* to_string(Strategy s) { return kStrategyNames[static_cast<int>(s)]; }

Strategy parse_strategy(const std::string& name, const std::string& option) {
  for (int i = 0; i < kStrategyCount; ++i)
    if (name == kStrategyNames[i]) return static_cast<Strategy>(i);
  throw OptionError(option, name, "unknown strategy (one of buckets, compression, precision, op_fusion, partition)");
}

std::string describe(const Decision& d) {
  switch (d.strategy) {
    case Strategy::kBuckets:
      return d.value == "off" ? "buckets off (each all-reduce alone)" : "buckets of " + d.value + " MiB";
    case Strategy::kCompression: {
      if (d.value.find(',') == std::string::npos) return "compression " + d.value;
      // A method per bucket: how many buckets take each.
      std::map<std::string, std::size_t> count;
      std::size_t buckets = 0;
      for (std::size_t begin = 0;; ++buckets) {
        const auto comma = d.value.find(',', begin);
        ++count[d.value.substr(begin, comma - begin)];
        if (comma == std::string::npos) break;
        begin = comma + 1;
      }
      std::string parts;
      for (const auto& [method, n] : count) parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", n, method);
      return fmt::format("compression per bucket ({} buckets: {})", buckets + 1, parts);
    }
    case Strategy::kPrecision: return "precision " + d.subject + " " + d.value;
    case Strategy::kPartition:
      return d.boundaries.empty() ? std::string("partition: one gradient bucket per step")
                                  : fmt::format("partition: {} gradient buckets per step, beginning at positions 0, {}",
                                                d.boundaries.size() + 1, fmt::join(d.boundaries, ", "));
    case Strategy::kOpFusion: {
      std::string names;
      for (std::size_t i = 0; i < d.chain.size(); ++i) names += (i ? " -> " : "") + short_kernel_name(d.chain[i]);
      // A chain headed by a GEMM is the GEMM with a cuBLASLt epilogue (whatif/op_fusion.h).
      if (whatif::is_epilogue_gemm(d.chain.front()))
        return fmt::format("op_fusion: GEMM epilogue of {} kernels ({})", d.chain.size(), names);
      return fmt::format("op_fusion of {} kernels ({})", d.chain.size(), names);
    }
  }
  return {};
}

TraceIdentity identify(const graph::BuiltGraph& graph) {
  const graph::Dfg& dfg = graph.dfg;
  Fnv1a hash;
  TraceIdentity id;
  id.ranks = graph.ranks.size();
  for (graph::NodeId n : dfg.node_ids()) {
    const graph::Node& node = dfg.node(n);
    if (!graph::is_op(node.kind)) continue;
    ++id.ops;
    hash.add(static_cast<std::uint64_t>(node.kind));
    hash.add(static_cast<std::uint64_t>(node.rank));
    hash.add(static_cast<std::uint64_t>(node.measured_start));
    hash.add(static_cast<std::uint64_t>(node.measured_duration));
  }
  hash.add(id.ranks);
  id.fingerprint = hash.value;
  return id;
}

nlohmann::json to_json(const std::vector<Decision>& decisions) {
  nlohmann::json out = nlohmann::json::array();
  for (const Decision& d : decisions) {
    nlohmann::json o = {{"strategy", to_string(d.strategy)}};
    if (d.strategy == Strategy::kOpFusion) o["chain"] = d.chain;
    else o["value"] = d.value;
    if (d.strategy == Strategy::kPartition) o["boundaries"] = d.boundaries;
    if (!d.subject.empty()) o["subject"] = d.subject;
    out.push_back(std::move(o));
  }
  return out;
}

nlohmann::json to_json(const Plan& plan) {
  nlohmann::json j;
  j["format"] = kFormat;
  j["version"] = kVersion;
  j["trace"] = {{"fingerprint", hex(plan.trace.fingerprint)}, {"ranks", plan.trace.ranks}, {"ops", plan.trace.ops}};
  const Conditions& c = plan.conditions;
  j["conditions"] = {{"device", c.device},   {"origin_device", c.origin_device}, {"cluster", c.cluster},
                     {"origin_cluster", c.origin_cluster}, {"set", c.settings},  {"comm_sizes", c.comm_sizes}};
  j["conditions"]["ranks"] = c.ranks ? nlohmann::json(*c.ranks) : nlohmann::json(nullptr);
  j["decisions"] = to_json(plan.decisions);
  j["predicted"] = {{"baseline_ns", plan.baseline_ns}, {"step_ns", plan.step_ns}, {"risk", plan.risk},
                    {"extra_memory_bytes", plan.extra_memory_bytes}, {"gains_ns", plan.gains_ns}};
  nlohmann::json strategies = nlohmann::json::array();
  for (Strategy s : plan.strategies) strategies.push_back(to_string(s));
  j["search"] = {{"seed", plan.seed}, {"evaluations", plan.evaluations}, {"strategies", strategies}};
  if (!plan.tolerances_rules.empty())
    j["tolerances"] = {{"file", plan.tolerances_file},
                       {"fingerprint", plan.tolerances_fingerprint},
                       {"rules", nlohmann::json::parse(plan.tolerances_rules)}};
  return j;
}

Plan plan_from_json(const nlohmann::json& j, const std::string& file) {
  json_field::check_json_depth(j, file);  // before any value is written into a message (dump recurses)
  if (!j.is_object()) throw InputError(file, "", "not a dpro plan (expected a JSON object)");
  if (string_field(j, "format", file, "", false) != kFormat)
    throw InputError(file, "format", "not a dpro plan (expected \"format\": \"dpro-plan\")");
  const nlohmann::json& version = field(j, "version", file, "");
  if (!version.is_number_integer() || version.get<std::int64_t>() != kVersion)
    throw InputError(file, "version", "plan version " + version.dump() + " is not supported (this dpro reads version 1)");
  Plan plan;
  const nlohmann::json& t = field(j, "trace", file, "");
  const std::string fp = string_field(t, "fingerprint", file, "trace", true);
  try {
    std::size_t used = 0;
    plan.trace.fingerprint = std::stoull(fp, &used, 16);
    if (used != fp.size() || fp.size() != 16) throw std::invalid_argument(fp);
  } catch (const std::exception&) {
    throw InputError(file, "trace.fingerprint", "must be 16 hex digits, got \"" + fp + "\"");
  }
  for (const char* key : {"ranks", "ops"}) {
    const nlohmann::json& v = field(t, key, file, "trace");
    if (!v.is_number_unsigned()) throw InputError(file, std::string("trace.") + key, "must be a whole number >= 0, got " + v.dump());
    (std::string(key) == "ranks" ? plan.trace.ranks : plan.trace.ops) = v.get<std::size_t>();
  }
  const nlohmann::json& c = field(j, "conditions", file, "");
  if (!c.is_object()) throw InputError(file, "conditions", "must be an object");
  plan.conditions.device = string_field(c, "device", file, "conditions", false);
  plan.conditions.origin_device = string_field(c, "origin_device", file, "conditions", false);
  plan.conditions.cluster = string_field(c, "cluster", file, "conditions", false);
  plan.conditions.origin_cluster = string_field(c, "origin_cluster", file, "conditions", false);
  for (const char* key : {"set", "comm_sizes"}) {
    const auto it = c.find(key);
    if (it == c.end()) continue;
    if (!it->is_array()) throw InputError(file, std::string("conditions.") + key, "must be a list of strings");
    std::vector<std::string>& out = std::string(key) == "set" ? plan.conditions.settings : plan.conditions.comm_sizes;
    for (const auto& s : *it) {
      if (!s.is_string()) throw InputError(file, std::string("conditions.") + key, "must be a list of strings, got " + s.dump());
      out.push_back(s.get<std::string>());
    }
  }
  if (const auto it = c.find("ranks"); it != c.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<std::int64_t>() < 1 || it->get<std::int64_t>() > std::numeric_limits<int>::max())
      throw InputError(file, "conditions.ranks", "must be a whole number >= 1 or null, got " + it->dump());
    plan.conditions.ranks = it->get<int>();
  }
  const nlohmann::json& decisions = field(j, "decisions", file, "");
  if (!decisions.is_array()) throw InputError(file, "decisions", "must be a list");
  for (std::size_t i = 0; i < decisions.size(); ++i) {
    const std::string where = fmt::format("decisions[{}]", i);
    const nlohmann::json& o = decisions[i];
    if (!o.is_object()) throw InputError(file, where, "must be an object");
    Decision d;
    try {
      d.strategy = parse_strategy(string_field(o, "strategy", file, where, true), "strategy");
    } catch (const OptionError& e) {
      throw InputError(file, where + ".strategy", e.message() + ", got \"" + e.value() + "\"");
    }
    d.subject = string_field(o, "subject", file, where, false);
    if (d.strategy == Strategy::kOpFusion) {
      const nlohmann::json& chain = field(o, "chain", file, where);
      if (!chain.is_array() || chain.size() < 2)
        throw InputError(file, where + ".chain", "must be a list of at least 2 kernel names");
      for (const auto& s : chain) {
        if (!s.is_string()) throw InputError(file, where + ".chain", "must be a list of kernel names, got " + s.dump());
        d.chain.push_back(s.get<std::string>());
      }
    } else if (d.strategy == Strategy::kPartition) {
      d.value = string_field(o, "value", file, where, false);
      d.boundaries = boundaries_field(o, file, where);
    } else {
      d.value = string_field(o, "value", file, where, true);
    }
    if (d.strategy == Strategy::kPrecision && d.subject.empty())
      throw InputError(file, where + ".subject", "missing: the op class the precision applies to");
    plan.decisions.push_back(std::move(d));
  }
  if (const auto it = j.find("predicted"); it != j.end()) {
    plan.baseline_ns = nanos_field(*it, "baseline_ns", file, "predicted");
    plan.step_ns = nanos_field(*it, "step_ns", file, "predicted");
    if (const auto r = it->find("risk"); r != it->end() && r->is_number()) plan.risk = r->get<double>();
    if (const auto m = it->find("extra_memory_bytes"); m != it->end() && m->is_number_integer())
      plan.extra_memory_bytes = m->get<std::int64_t>();
  }
  if (const auto it = j.find("tolerances"); it != j.end()) {
    if (!it->is_object()) throw InputError(file, "tolerances", "must be an object");
    plan.tolerances_file = string_field(*it, "file", file, "tolerances", false);
    plan.tolerances_fingerprint = string_field(*it, "fingerprint", file, "tolerances", false);
    const auto rules = it->find("rules");
    if (rules == it->end() || !rules->is_array()) throw InputError(file, "tolerances.rules", "must be a list of rules");
    plan.tolerances_rules = rules->dump();
  }
  return plan;
}

InputError plan_decision_error(const std::string& file, const OptionError& e) {
  return InputError(file, "decisions: " + e.option() + (e.value().empty() ? "" : " " + e.value()), e.message());
}

Plan parse_plan(const std::string& text, const std::string& file) {
  return plan_from_json(json_field::parse_json(text, file), file);
}

Plan read_plan(const std::string& path) {
  return plan_from_json(json_field::read_json_file(path, "a plan file (JSON)"), path);
}

void check_plan_matches(const Plan& plan, const graph::BuiltGraph& graph, const std::string& file) {
  const TraceIdentity here = identify(graph);
  if (here == plan.trace) return;
  throw InputError(file, "trace",
                   fmt::format("the plan was made for another job ({} rank(s), {} ops, fingerprint {}); these "
                               "traces have {} rank(s), {} ops, fingerprint {}",
                               plan.trace.ranks, plan.trace.ops, hex(plan.trace.fingerprint), here.ranks, here.ops,
                               hex(here.fingerprint)));
}

}  // namespace dpro::optimizer
