#include "replayer/compare.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/byte_source.h"
#include "core/error.h"
#include "core/json_fields.h"
#include "trace/kineto_importer.h"

namespace dpro::replayer {
namespace {

using nlohmann::json;

// Readers of a report's members; `where` is the path to `object` ("" at the top), and messages
// name the member's path ("iterations[1].job.measured_ns"). Times are read as exact integers
// (json_field's readers, for config files, go through double).
std::string path_of(const std::string& where, const char* key) { return where.empty() ? key : where + "." + key; }

const json& member(const json& object, const char* key, const std::string& file, const std::string& where) {
  if (!object.is_object() || !object.contains(key))
    throw InputError(file, path_of(where, key), "missing (not a dpro-replay replay --json report?)");
  return object.at(key);
}

Nanos nanos(const json& object, const char* key, const std::string& file, const std::string& where) {
  const json& v = member(object, key, file, where);
  if (!v.is_number_integer()) throw InputError(file, path_of(where, key), "not an integer number of nanoseconds");
  constexpr Nanos kMax = trace::kMaxTraceNanos;  // the bound the trace importers put on times
  if (v.is_number_unsigned() ? v.get<std::uint64_t>() > static_cast<std::uint64_t>(kMax)
                             : v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > kMax)
    throw InputError(file, path_of(where, key), "not a time (0 to 3e18 ns)");
  return v.get<Nanos>();
}

std::string text(const json& object, const char* key, const std::string& file, const std::string& where) {
  const json& v = member(object, key, file, where);
  if (!v.is_string()) throw InputError(file, path_of(where, key), "not a string");
  return v.get<std::string>();
}

std::string signed_duration(double ns) {
  std::string out(ns < 0 ? "-" : "+");  // not `"-" + std::string`: a GCC 12 -Wrestrict false positive
  out += format_duration(static_cast<Nanos>(std::llround(std::abs(ns))));
  return out;
}

// Adds a report's critical-path breakdown to `ns`. Reports written before the categories of
// issue 29 lack the new keys (read as 0) and have cpu_launch_ns, which covered CPU ops, runtime
// calls, the gaps between them and launch latency: it is read as cpu_op, the closest category.
void add_critical_path(const json& path, const std::string& file, const std::string& where,
                       double (&ns)[kCategoryCount]) {
  if (!path.is_object()) throw InputError(file, where, "not an object");
  for (int c = 0; c < kCategoryCount; ++c) {
    const std::string key = std::string(to_string(static_cast<Category>(c))) + "_ns";
    if (path.contains(key)) ns[c] += static_cast<double>(nanos(path, key.c_str(), file, where));
  }
  if (path.contains("cpu_launch_ns"))
    ns[static_cast<int>(Category::kCpuOp)] += static_cast<double>(nanos(path, "cpu_launch_ns", file, where));
}

Nanos median_of(std::vector<Nanos> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// The names the section's summary marks as warm-up or outlier steps (none without a summary).
std::set<std::string> unsteady_names(const json& section) {
  std::set<std::string> names;
  const auto summary = section.find("summary");
  if (summary == section.end() || !summary->is_object()) return names;
  for (const char* key : {"warmup", "outliers"}) {
    const auto list = summary->find(key);
    if (list == summary->end() || !list->is_array()) continue;
    for (const json& name : *list)
      if (name.is_string()) names.insert(name.get<std::string>());
  }
  return names;
}

// Each rank's step time in the iterations, the steady ones (`steady`[i]) for its noise.
std::vector<ReportSummary::RankTimes> rank_times(const json& iterations, const std::vector<bool>& steady, bool whatif,
                                                 const std::string& file, const std::string& where) {
  std::map<int, ReportSummary::RankTimes> by_rank;
  std::map<int, std::vector<Nanos>> steady_ns;
  for (std::size_t i = 0; i < iterations.size(); ++i) {
    const auto ranks = iterations[i].find("ranks");
    if (ranks == iterations[i].end() || !ranks->is_array()) continue;
    for (std::size_t k = 0; k < ranks->size(); ++k) {
      const std::string at = fmt::format("{}[{}].ranks[{}]", where, i, k);
      const json& r = (*ranks)[k];
      if (!member(r, "rank", file, at).is_number_integer()) throw InputError(file, at + ".rank", "not an integer");
      const int rank = r.at("rank").get<int>();
      const Nanos ns = nanos(r, whatif ? "predicted_ns" : "measured_ns", file, at);
      by_rank[rank].rank = rank;
      by_rank[rank].ns.push_back(ns);
      if (steady[i]) steady_ns[rank].push_back(ns);
    }
  }
  std::vector<ReportSummary::RankTimes> out;
  for (auto& [rank, t] : by_rank) {
    t.median_ns = median_of(t.ns);
    t.noise_ns = noise_of(steady_ns[rank]);
    out.push_back(std::move(t));
  }
  return out;
}

StepCheck check_step(std::string name, Nanos base, Nanos next, Nanos noise, std::optional<double> limit) {
  StepCheck c{std::move(name), base, next, noise};
  c.change = base > 0 ? static_cast<double>(next - base) / static_cast<double>(base) : 0.0;
  using O = StepCheck::Outcome;
  if (std::abs(next - base) <= noise) c.outcome = O::kWithinNoise;
  else if (next < base) c.outcome = O::kFaster;
  else c.outcome = limit && c.change > *limit ? O::kRegression : O::kSlower;
  return c;
}

}  // namespace

Nanos noise_of(const std::vector<Nanos>& values) {
  if (values.empty()) return 0;
  const Nanos median = median_of(values);
  std::vector<Nanos> deviations;
  for (Nanos v : values) deviations.push_back(std::abs(v - median));
  return static_cast<Nanos>(std::llround(1.4826 * static_cast<double>(median_of(deviations))));
}

const char* to_string(StepCheck::Outcome o) {
  switch (o) {
    case StepCheck::Outcome::kWithinNoise: return "within noise";
    case StepCheck::Outcome::kFaster: return "faster";
    case StepCheck::Outcome::kSlower: return "slower";
    case StepCheck::Outcome::kRegression: return "regression";
  }
  return "?";
}

bool Comparison::failed() const {
  return std::any_of(checks.begin(), checks.end(), [](const StepCheck& c) { return c.failed(); }) ||
         (max_slowdown && same_job == false);
}

ReportSummary summarize_report(const json& report, const std::string& file) {
  ReportSummary s;
  s.file = file;
  if (!report.is_object()) throw InputError(file, "", "not a JSON object (not a dpro-replay replay --json report?)");
  const json* section = &report;
  std::string where;
  if (report.contains("whatif")) {
    s.whatif = true;
    section = &report.at("whatif");
    where = "whatif";
  }
  const json& iterations = member(*section, "iterations", file, where);
  where = path_of(where, "iterations");
  if (!iterations.is_array()) throw InputError(file, where, "not an array");
  if (iterations.empty())
    throw InputError(file, where, "empty: the replay found no iteration to report, so there is nothing to compare");
  bool complete_everywhere = true;
  std::map<std::pair<std::string, std::string>, std::size_t> listed_in;  // iterations that list the op
  for (std::size_t i = 0; i < iterations.size(); ++i) {
    const std::string at = fmt::format("{}[{}].job", where, i);
    const json& job = member(iterations[i], "job", file, fmt::format("{}[{}]", where, i));
    s.job_ns.push_back(nanos(job, s.whatif ? "predicted_ns" : "measured_ns", file, at));
    const json& path = member(job, "critical_path", file, at);
    add_critical_path(path, file, at + ".critical_path", s.critical_path_ns);
    const json& ops = member(job, "top_ops", file, at);
    if (!ops.is_array()) throw InputError(file, at + ".top_ops", "not an array");
    const auto complete = job.find("top_ops_complete");
    if (complete == job.end() || !complete->is_boolean() || !complete->get<bool>()) complete_everywhere = false;
    std::set<std::pair<std::string, std::string>> seen;  // an op listed once per rank
    for (std::size_t k = 0; k < ops.size(); ++k) {
      const std::string op_at = fmt::format("{}.top_ops[{}]", at, k);
      const auto key = std::make_pair(text(ops[k], "category", file, op_at), text(ops[k], "name", file, op_at));
      s.op_ns[key] += static_cast<double>(nanos(ops[k], "time_ns", file, op_at));
      if (seen.insert(key).second) ++listed_in[key];
    }
  }
  const std::set<std::string> unsteady = unsteady_names(*section);
  std::vector<bool> steady(iterations.size(), true);
  std::vector<Nanos> steady_job;
  for (std::size_t i = 0; i < iterations.size(); ++i) {
    const auto name = iterations[i].find("name");
    steady[i] = name == iterations[i].end() || !name->is_string() || !unsteady.contains(name->get<std::string>());
    if (steady[i]) steady_job.push_back(s.job_ns[i]);
  }
  s.job_noise_ns = noise_of(steady_job);
  s.ranks = rank_times(iterations, steady, s.whatif, file, where);
  const double n = static_cast<double>(s.job_ns.size());
  for (double& v : s.critical_path_ns) v /= n;
  for (auto& [key, v] : s.op_ns) v /= n;
  s.ops_complete = complete_everywhere;
  if (!s.ops_complete)
    std::erase_if(s.op_ns, [&](const auto& op) { return listed_in[op.first] != s.job_ns.size(); });
  if (const auto p = report.find("provenance"); p != report.end() && p->is_object()) {
    std::vector<std::string> gpus;
    const json& list = member(*p, "gpus", file, "provenance");
    if (!list.is_array()) throw InputError(file, "provenance.gpus", "not an array");
    for (std::size_t k = 0; k < list.size(); ++k) {
      if (!list[k].is_string()) throw InputError(file, fmt::format("provenance.gpus[{}]", k), "not a string");
      gpus.push_back(list[k].get<std::string>());
    }
    s.gpus = std::move(gpus);
    if (const auto w = p->find("world_size"); w != p->end() && w->is_number_integer()) s.world_size = w->get<int>();
  }
  s.median_job_ns = median_of(s.job_ns);
  return s;
}

ReportSummary read_report_summary(const std::string& file) { return parse_report_summary(read_whole_file(file), file); }

ReportSummary parse_report_summary(const std::string& bytes, const std::string& file) {
  json report;
  try {
    report = json::parse(bytes);
  } catch (const json::parse_error& e) {
    throw InputError(file, fmt::format("byte {}", e.byte), "not valid JSON (not a dpro-replay replay --json report?)");
  } catch (const json::exception& e) {  // a number beyond a double's range (out_of_range.406), ...
    throw InputError(file, "", std::string("not valid JSON: ") + e.what());
  }
  json_field::check_json_depth(report, file);
  return summarize_report(report, file);
}

Comparison compare_reports(ReportSummary base, ReportSummary next, std::optional<double> max_slowdown,
                           std::size_t top, bool check_ranks) {
  Comparison c;
  c.base = std::move(base);
  c.next = std::move(next);
  c.max_slowdown = max_slowdown;
  c.change = c.base.median_job_ns > 0 ? static_cast<double>(c.next.median_job_ns - c.base.median_job_ns) /
                                            static_cast<double>(c.base.median_job_ns)
                                      : 0.0;
  for (int k = 0; k < kCategoryCount; ++k)
    c.critical_path_change_ns[k] = c.next.critical_path_ns[k] - c.base.critical_path_ns[k];
  c.checks.push_back(check_step("job", c.base.median_job_ns, c.next.median_job_ns,
                                std::max(c.base.job_noise_ns, c.next.job_noise_ns), max_slowdown));
  for (const ReportSummary::RankTimes& b : c.base.ranks) {
    const auto n = std::find_if(c.next.ranks.begin(), c.next.ranks.end(), [&](const auto& r) { return r.rank == b.rank; });
    if (n != c.next.ranks.end())
      c.checks.push_back(check_step(fmt::format("rank {}", b.rank), b.median_ns, n->median_ns,
                                    std::max(b.noise_ns, n->noise_ns), check_ranks ? max_slowdown : std::nullopt));
  }
  if (c.base.gpus && c.next.gpus) {
    const std::vector<std::string>& a = *c.base.gpus;
    const std::vector<std::string>& b = *c.next.gpus;
    if (a.size() != b.size()) c.job_differences.push_back(fmt::format("ranks: {} -> {}", a.size(), b.size()));
    if (c.base.world_size != c.next.world_size && c.base.world_size && c.next.world_size)
      c.job_differences.push_back(fmt::format("world size: {} -> {}", *c.base.world_size, *c.next.world_size));
    std::set<std::string> ga(a.begin(), a.end()), gb(b.begin(), b.end());
    ga.erase(""), gb.erase("");
    if (!ga.empty() && !gb.empty() && ga != gb)
      c.job_differences.push_back(fmt::format("GPUs: {} -> {}", fmt::join(ga, ", "), fmt::join(gb, ", ")));
    c.same_job = c.job_differences.empty();
  }
  // An op one report does not list took 0 there when that report lists every op; else unknown.
  std::map<std::pair<std::string, std::string>, OpChange> ops;
  for (const auto& [key, ns] : c.base.op_ns)
    ops[key] = OpChange{key.first, key.second, ns, c.next.ops_complete ? std::optional<double>(0.0) : std::nullopt};
  for (const auto& [key, ns] : c.next.op_ns) {
    auto [it, added] = ops.try_emplace(
        key, OpChange{key.first, key.second, c.base.ops_complete ? std::optional<double>(0.0) : std::nullopt, 0.0});
    it->second.new_ns = ns;
  }
  for (auto& [key, op] : ops)
    if (op.delta() != 0.0) c.ops.push_back(std::move(op));  // an unknown delta is kept, after the known ones
  auto magnitude = [](const OpChange& op) { return op.delta() ? std::abs(*op.delta()) : -1.0; };
  std::stable_sort(c.ops.begin(), c.ops.end(),
                   [&](const OpChange& a, const OpChange& b) { return magnitude(a) > magnitude(b); });
  if (c.ops.size() > top) c.ops.resize(top);
  return c;
}

namespace {

// The CI verdict: the job's, then each rank that failed, then a difference of jobs.
std::string verdict_lines(const Comparison& c) {
  std::string out;
  const double limit = 100.0 * *c.max_slowdown;
  for (const StepCheck& k : c.checks) {
    const bool job = &k == &c.checks.front();
    if (k.failed())
      out += fmt::format("REGRESSION: {} {:+.2f}% is slower than --max-slowdown {}% allows and beyond the noise (+-{})\n",
                         k.name, 100.0 * k.change, limit, format_duration(k.noise_ns));
    else if (job && k.outcome == StepCheck::Outcome::kWithinNoise && k.change > *c.max_slowdown)
      out += fmt::format("ok: {:+.2f}% is within the noise (+-{}), though beyond --max-slowdown {}%\n", 100.0 * k.change,
                         format_duration(k.noise_ns), limit);
    else if (job)
      out += fmt::format("ok: {:+.2f}% is within --max-slowdown {}%\n", 100.0 * k.change, limit);
  }
  if (c.same_job == false) out += "FAILED: the two reports describe different recorded jobs\n";
  return out;
}

}  // namespace

std::string render_text(const Comparison& c) {
  auto source = [](const ReportSummary& s) {
    return fmt::format("{} ({} iteration{}, {})", s.file, s.job_ns.size(), s.job_ns.size() == 1 ? "" : "s",
                       s.whatif ? "the what-if's prediction" : "measured");
  };
  std::string out = fmt::format("base: {}\nnew:  {}\n", source(c.base), source(c.next));
  if (!c.job_differences.empty())
    out += fmt::format("note: the two reports describe different recorded jobs ({}): the change is not that of one "
                       "job\n", fmt::join(c.job_differences, "; "));
  out += fmt::format("job time, median over iterations: {} -> {} ({:+.2f}%; noise +-{}, the larger spread of the two "
                     "reports' steady steps)\n",
                     format_duration(c.base.median_job_ns), format_duration(c.next.median_job_ns), 100.0 * c.change,
                     format_duration(c.checks.front().noise_ns));
  out += "critical path per iteration (mean):\n";
  for (int k = 0; k < kCategoryCount; ++k) {
    out += fmt::format("  {:<14} {:>12} -> {:>12}  ({})\n", to_string(static_cast<Category>(k)),
                       format_duration(static_cast<Nanos>(std::llround(c.base.critical_path_ns[k]))),
                       format_duration(static_cast<Nanos>(std::llround(c.next.critical_path_ns[k]))),
                       signed_duration(c.critical_path_change_ns[k]));
  }
  if (!c.ops.empty()) {
    const bool unknown = std::any_of(c.ops.begin(), c.ops.end(), [](const OpChange& op) { return !op.delta(); });
    out += unknown ? "ops on the critical path that changed most (mean per iteration; '?': an older report that "
                     "lists only its top ops does not say; replay it again to compare every op):\n"
                   : "ops on the critical path that changed most (mean per iteration):\n";
    auto time = [](const std::optional<double>& ns) {
      return ns ? format_duration(static_cast<Nanos>(std::llround(*ns))) : std::string("?");
    };
    for (const OpChange& op : c.ops) {
      out += fmt::format("  {:>12}  {:<13}  {:>12} -> {:<12}  {}\n", op.delta() ? signed_duration(*op.delta()) : "?",
                         op.category,
                         time(op.base_ns), time(op.new_ns), op.name.substr(0, 90));
    }
  }
  if (c.max_slowdown) out += verdict_lines(c);
  return out;
}

nlohmann::json to_json(const Comparison& c) {
  auto summary = [](const ReportSummary& s) {
    json path = json::object();
    for (int k = 0; k < kCategoryCount; ++k)
      path[std::string(to_string(static_cast<Category>(k))) + "_ns"] = std::llround(s.critical_path_ns[k]);
    return json{{"file", s.file},
                {"source", s.whatif ? "whatif" : "measured"},
                {"iterations", s.job_ns.size()},
                {"job_ns", s.job_ns},
                {"median_job_ns", s.median_job_ns},
                {"noise_ns", s.job_noise_ns},
                {"critical_path_mean_ns", path}};
  };
  json ops = json::array();
  for (const OpChange& op : c.ops)
    ops.push_back({{"category", op.category}, {"name", op.name},
                   {"base_ns", op.base_ns ? json(std::llround(*op.base_ns)) : json(nullptr)},
                   {"new_ns", op.new_ns ? json(std::llround(*op.new_ns)) : json(nullptr)},
                   {"delta_ns", op.delta() ? json(std::llround(*op.delta())) : json(nullptr)}});
  json change = json::object();
  for (int k = 0; k < kCategoryCount; ++k)
    change[std::string(to_string(static_cast<Category>(k))) + "_ns"] = std::llround(c.critical_path_change_ns[k]);
  json j = {{"base", summary(c.base)}, {"new", summary(c.next)}, {"change", c.change},
            {"same_job", c.same_job ? json(*c.same_job) : json(nullptr)}, {"job_differences", c.job_differences},
            {"critical_path_change_ns", change}, {"ops", ops}};
  json checks = json::array();
  for (const StepCheck& k : c.checks)
    checks.push_back({{"name", k.name}, {"base_ns", k.base_ns}, {"new_ns", k.new_ns}, {"noise_ns", k.noise_ns},
                      {"change", k.change}, {"outcome", to_string(k.outcome)}, {"failed", k.failed()}});
  j["checks"] = checks;
  if (c.max_slowdown) {
    j["max_slowdown"] = *c.max_slowdown;
    j["regression"] = c.regression();
    j["failed"] = c.failed();
  }
  return j;
}

}  // namespace dpro::replayer
