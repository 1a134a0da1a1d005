#include "cmd_optimize.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <thread>

#include "core/error.h"
#include "core/json_fields.h"
#include "core/log.h"
#include "optimizer/compression_planner.h"
#include "optimizer/memory.h"
#include "optimizer/plan.h"
#include "optimizer/search.h"
#include "optimizer/space.h"
#include "optimizer/tolerances.h"
#include "output_file.h"
#include "replayer/replay.h"
#include "replayer/tables.h"
#include "report_html/html_report.h"
#include "trace/loader.h"
#include "whatif/evaluate.h"
#include "whatif_flags.h"

namespace dpro::cli {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// A plan's memory beyond the job's: GiB, or MiB below a hundredth of one (a precision plan's
// activations on a small batch); negative where it frees memory.
std::string memory_text(std::int64_t bytes) {
  if (bytes == 0) return "0";
  const double gib = static_cast<double>(bytes) / kGiB;
  if (std::abs(gib) >= 0.01) return fmt::format("{:+.2f} GiB", gib);
  return fmt::format("{:+.2f} MiB", gib * 1024.0);
}

std::string percent(Nanos after, Nanos before) {
  return fmt::format("{:+.2f}%", 100.0 * static_cast<double>(after - before) / static_cast<double>(std::max<Nanos>(1, before)));
}

// One line per plan: each decision, but op fusion as a count of chains.
std::string decisions_text(const std::vector<optimizer::Decision>& decisions) {
  if (decisions.empty()) return "none (as recorded)";
  std::string out;
  std::size_t chains = 0;
  for (const optimizer::Decision& d : decisions) {
    if (d.strategy == optimizer::Strategy::kOpFusion) ++chains;
    else out += (out.empty() ? "" : "; ") + optimizer::describe(d);
  }
  if (chains > 0) out += fmt::format("{}op fusion of {} kernel chain(s)", out.empty() ? "" : "; ", chains);
  return out;
}

class OptimizeCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    CLI::App* sub = parent.add_subcommand(
        "optimize",
        "Search for changes that make the job faster, scored by the replayer: gradient buckets and\n"
        "compression (jobs with all-reduces), precision and op fusion, jointly. A greedy pass per strategy,\n"
        "then simulated annealing over all decisions; prints the plans that are best for their accuracy risk\n"
        "(the Pareto set) and what each decision of the fastest one gains. Compression is searched per bucket too:\n"
        "an analytic planner chooses a method for each gradient bucket from one replay, and its plan is one more\n"
        "value the search replays. Any what-if flag sets the\n"
        "conditions of the search (\"the best plan for this job on 64 ranks over 25 Gb/s Ethernet\").\n"
        "`dpro-replay replay TRACES --plan FILE` replays a plan written by --plan-out.");
    sub->add_option("traces", traces_, "trace files (.json, .json.gz, .dpro) or directories of them")->required();
    sub->add_option("--strategies", strategies_,
                    "strategies to search, comma-separated: buckets, compression, precision, op_fusion, partition\n"
                    "(partition: gradient bucket boundaries placed one by one, searched with the bucket sizes;\n"
                    "default: every one that applies to the traces)")
        ->delimiter(',');
    sub->add_option("--budget", budget_, "plans to replay at most, the baseline included (1 to 1000000)")
        ->default_val(300)
        ->check(CLI::Range(1, 1000000));
    sub->add_option("--time-limit", time_limit_,
                    "stop the search after this many seconds (0: none; a time limit makes the result depend on\n"
                    "the machine's speed, a --budget does not)")
        ->default_val(0)
        ->check(CLI::Range(0.0, 1e7));
    sub->add_option("--seed", seed_, "seed of the annealing's random moves (same traces, flags and seed: same plan)")
        ->default_val(1);
    sub->add_option("--max-risk", max_risk_,
                    "accuracy-risk limit of the chosen plan (the sum of its decisions' risks; docs/optimizer.md)")
        ->check(CLI::Range(0.0, 1e9));
    sub->add_option("--memory-headroom", memory_headroom_gib_,
                    "memory per rank (GiB) the chosen plan may use beyond what the recorded job used (error-feedback\n"
                    "residuals of lossy compression, precision's change to the activations; default: no limit)")
        ->check(CLI::Range(0.0, 1e6));
    sub->add_option("--memory-budget", memory_budget_gib_,
                    "total memory per rank (GiB) a plan must fit in. The job's own memory per rank is the peak its\n"
                    "memory events record, else 4 x the gradient bytes a rank all-reduces in a step (weights, gradients\n"
                    "and Adam's two moments) plus, where the trace records tensor shapes, an activation estimate\n"
                    "(docs/optimizer.md); a plan may add at most the rest. Precision plans are credited for the\n"
                    "activations they narrow, so a budget below the job's own memory is met by one that frees enough,\n"
                    "and refused when none can. Needs a job with memory events or gradient all-reduces")
        ->check(CLI::Range(0.0, 1e6));
    sub->add_option("--tolerances", tolerances_path_,
                    "per-layer tolerances: a JSON file of rules that limit what the search may decide per op class\n"
                    "(gemm, conv) or part of one (conv@0,-1: the class's ops at those positions in a step; conv#0,-1:\n"
                    "its first and last layers, each a forward op with its backward ops, from the autograd sequence\n"
                    "numbers torch.profiler and emit_nvtx record; decided apart from the rest), gradient bucket\n"
                    "(bucket:N) or kernel-name substring (fusion chains), e.g.\n"
                    "{\"rules\": [{\"match\": \"gemm\", \"precision\": [\"tf32\"]}, {\"match\": \"bucket:0\", \"compression\": [\"none\"]}]};\n"
                    "forbidden decisions are taken out of the search (docs/optimizer.md)");
    sub->add_option("--threads", threads_, "plans replayed at once (default: the machine's cores)")
        ->check(CLI::Range(1, 256));
    sub->add_option("--json", json_path_, "also write the result as JSON to this file ('-' = stdout, no text)");
    sub->add_option("--html", html_path_,
                    "also write one self-contained HTML page: the job under the search's conditions and under the chosen\n"
                    "plan side by side (verdicts, breakdowns, step times, top ops, tables)");
    sub->add_option("--plan-out", plan_path_,
                    "write the chosen plan to this file (for `replay --plan` and the reference executor)");
    sub->add_flag("--allow-partial", allow_partial_,
                  "accept a multi-rank set that lacks some ranks (their collectives keep measured durations)");
    sub->add_flag("--force", force_, "overwrite existing output files");
    sub->add_flag("-q,--quiet", quiet_, "print nothing but errors: no text result, no progress (--json and --plan-out files\n"
                                     "are still written)");
    sub->add_flag("-v,--verbose", verbose_, "print progress details on stderr");
    whatifs_.add_to(*sub, WhatIfFlags::Flags::kConditions);
    command_ = sub;
    return sub;
  }

  int run() override {
    Logger log(quiet_ ? LogLevel::kError : verbose_ ? LogLevel::kInfo : LogLevel::kWarning);
    optimizer::SpaceOptions space_options;
    for (const std::string& s : strategies_) space_options.strategies.push_back(optimizer::parse_strategy(s, "strategies"));
    const optimizer::Conditions conditions = whatifs_.conditions();
    const optimizer::ResourcePaths paths = whatifs_.paths();
    space_options.device = conditions.device;
    space_options.device_dir = paths.device_dir;
    space_options.device_profile = paths.device_profile;
    check_output_paths({{"--json", json_path_}, {"--plan-out", plan_path_}, {"--html", html_path_}},
                       command_line_values(*command_, {"--json", "--plan-out", "--html"}), force_);
    // A bad rules file is refused before the traces are read.
    if (!tolerances_path_.empty()) tolerances_ = optimizer::read_tolerances(tolerances_path_);
    const bool tty = !quiet_ && isatty(STDERR_FILENO);
    trace::LoadOptions load;
    load.allow_partial = allow_partial_;
    const auto traces = std::make_shared<const trace::TraceSet>(trace::load_traces(traces_, load, log));
    replayer::ReplayOptions options;
    options.report.top_ops = 0;
    replayer::Replay recorded = replayer::replay_traces(*traces, options, log);

    // The job under the search's conditions, once; each plan's decisions then apply to a copy.
    replayer::Simulator simulator;
    whatif::Evaluation conditioned = whatif::evaluate({traces, recorded.graph}, optimizer::condition_rewrites(conditions, paths),
                                                      simulator, whatif::EvaluateOptions{});
    optimizer::SearchSpace space = optimizer::make_space(conditioned.workload, space_options);
    // Precision plans are credited for the activations they narrow (memory.h's precision_memory),
    // so a budget below the job's own memory can still be met by one of them.
    activation_credit_ = precision_credits(space, conditioned.workload);
    std::int64_t largest_credit = 0;
    for (const Credit& c : activation_credit_)
      if (c.searched) largest_credit = std::max(largest_credit, -c.memory.delta());
    std::optional<std::int64_t> max_extra_memory;
    if (memory_headroom_gib_) max_extra_memory = static_cast<std::int64_t>(*memory_headroom_gib_ * kGiB);
    if (memory_budget_gib_) {
      job_memory_ = optimizer::estimate_memory_per_rank(conditioned.workload);
      const std::int64_t room = optimizer::headroom_under_budget(*memory_budget_gib_, job_memory_, largest_credit);
      max_extra_memory = std::min(max_extra_memory.value_or(room), room);
    }
    optimizer::PlannerOptions planner;
    if (max_risk_) planner.max_risk = *max_risk_;
    if (tolerances_)
      planner.method_allowed = [this](std::size_t p, const std::string& m) { return optimizer::compression_allowed(*tolerances_, p, m); };
    // The planner's residuals may use the room a precision plan frees too; the search checks the
    // whole plan against the limit.
    if (max_extra_memory) planner.max_extra_memory_bytes = *max_extra_memory + largest_credit;
    std::string no_plan;
    const auto clock = std::chrono::steady_clock::now();
    planned_ = optimizer::add_planned_compression(space, conditioned.workload, conditions, paths, planner, &no_plan);
    planner_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - clock).count();
    if (!planned_) log.info("compression planner: " + no_plan);
    if (tolerances_) {
      optimizer::check_layer_rules(*tolerances_, conditioned.workload, paths.device_dir, conditions.device);
      const optimizer::ToleranceEffect effect = optimizer::apply_tolerances(space, *tolerances_, conditioned.workload);
      for (const std::string& rule : effect.unmatched)
        log.warn(fmt::format("{}: {} matches no decision of this search", tolerances_path_, rule));
      tolerance_text_ = fmt::format("tolerances {}: {} rule(s), {} value(s) and {} decision(s) taken out of the search\n",
                                    tolerances_path_, tolerances_->rules.size(), effect.values_removed,
                                    effect.variables_removed);
    }
    for (const auto& [s, why] : space.not_applicable)
      if (!strategies_.empty()) log.warn(fmt::format("strategy {} left out: {}", optimizer::to_string(s), why));
    const int threads = threads_ ? *threads_ : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    optimizer::Evaluator evaluator(conditioned.workload, space, conditions, paths, threads);
    optimizer::SearchOptions search;
    search.seed = seed_;
    search.max_evaluations = budget_;
    search.max_seconds = time_limit_;
    if (max_risk_) search.limits.max_risk = *max_risk_;
    if (max_extra_memory) search.limits.max_extra_memory_bytes = *max_extra_memory;
    if (tty) {
      search.progress = [](std::size_t done, std::size_t budget, Nanos best) {
        std::fprintf(stderr, "\rsearching: %zu/%zu plans replayed, best median step %s\033[K", done, budget,
                     format_duration(best).c_str());
      };
    }
    const optimizer::SearchResult result = optimizer::search(evaluator, space, search);
    if (tty) std::fprintf(stderr, "\r\033[K");
    if (max_extra_memory && !search.limits.admits(result.best.score))
      throw OptionError(memory_budget_gib_ ? "memory_budget" : "memory_headroom",
                        fmt::format("{:g}", memory_budget_gib_ ? *memory_budget_gib_ : memory_headroom_gib_.value_or(0)),
                        fmt::format("none of the {} plans searched fits in it: the job is {} over it, and a precision "
                                    "plan frees at most {:.3f} MiB of activations",
                                    result.evaluations, memory_text(-*max_extra_memory),
                                    static_cast<double>(largest_credit) / (1024.0 * 1024.0)));
    if (planned_) planned_replayed_ = replayed_planned(evaluator, space);

    optimizer::Plan plan;
    plan.trace = optimizer::identify(recorded.graph);
    plan.conditions = conditions;
    plan.decisions = optimizer::decisions_of(space, result.best.assignment);
    plan.baseline_ns = result.baseline.score.step_ns;
    plan.step_ns = result.best.score.step_ns;
    plan.risk = result.best.score.risk;
    plan.extra_memory_bytes = result.best.score.extra_memory_bytes;
    plan.gains_ns = result.gains_ns;
    plan.seed = seed_;
    plan.evaluations = result.evaluations;
    plan.strategies = space.strategies;
    if (tolerances_) {
      plan.tolerances_file = tolerances_path_;
      plan.tolerances_fingerprint = fmt::format("{:016x}", tolerances_->fingerprint);
      plan.tolerances_rules = optimizer::rules_json(*tolerances_).dump();
    }

    const bool stdout_json = json_path_ == "-";
    if (!stdout_json && !quiet_) std::cout << render_text(space, result, plan, threads);
    flush_stdout();
    if (!json_path_.empty())
      write_output(json_path_, [&](std::ostream& out) { out << dump_output_json(to_json(space, result, plan), 2) << "\n"; },
                   force_);
    if (!plan_path_.empty()) {
      write_output(plan_path_, [&](std::ostream& out) { out << dump_output_json(optimizer::to_json(plan), 2) << "\n"; },
                   force_);
      log.info("plan written to " + plan_path_);
    }
    if (!html_path_.empty()) write_html({traces, recorded.graph}, conditioned, conditions, paths, plan);
    return 0;
  }

  // The page shows the job under the conditions (the search's baseline) beside the chosen plan,
  // both replayed with the full analysis (the search itself scores plans by their times only).
  void write_html(const whatif::Workload& recorded, const whatif::Evaluation& conditioned, const optimizer::Conditions& conditions,
                  const optimizer::ResourcePaths& paths, const optimizer::Plan& plan) const {
    std::vector<whatif::Rewrite> rewrites = optimizer::condition_rewrites(conditions, paths);
    for (whatif::Rewrite& r : optimizer::decision_rewrites(conditions, plan.decisions, paths)) rewrites.push_back(std::move(r));
    replayer::Simulator simulator;
    const whatif::Evaluation planned = whatif::evaluate(recorded, rewrites, simulator, whatif::EvaluateOptions{});
    const auto tables_of = [](const whatif::Evaluation& e) {
      return replayer::to_json(replayer::make_tables(*e.workload.traces, e.workload.graph, e.simulation, e.report));
    };
    report_html::HtmlReport page;
    page.title = "dpro optimize: the chosen plan";
    page.baseline = {"baseline under the search's conditions", &conditioned.report, tables_of(conditioned)};
    page.prediction = report_html::ReportView{fmt::format("chosen plan: {} decision(s), predicted", plan.decisions.size()),
                                              &planned.report, tables_of(planned)};
    write_output(html_path_, [&](std::ostream& out) { out << report_html::render_html(page); }, force_);
  }

 private:
  // The activation estimate, and what each combination of the space's precision values changes
  // in it ("gemm bf16, conv bf16"). Where the search has no precision decision, the same for
  // bf16, fp16 and fp8 as a reference, not searched. Empty without recorded shapes.
  struct Credit {
    std::string what;
    optimizer::PrecisionMemory memory;
    bool searched = false;
  };
  std::vector<Credit> precision_credits(const optimizer::SearchSpace& space, const whatif::Workload& job) {
    std::vector<Credit> out;
    activations_ = optimizer::estimate_activation_bytes(job);
    if (!activations_) return out;
    std::vector<std::string> gemm = {"as_recorded"}, conv = {"as_recorded"};
    for (const optimizer::Variable& v : space.variables)
      if (v.strategy == optimizer::Strategy::kPrecision) (v.subject == "conv" ? conv : gemm) = v.values;
    const bool searched = gemm.size() > 1 || conv.size() > 1;
    if (!searched) {
      gemm = {"as_recorded", "bf16", "fp16", "fp8"};
      conv = {"as_recorded", "bf16", "fp16"};
    }
    for (const std::string& g : gemm)
      for (const std::string& c : conv) {
        if (g == "as_recorded" && c == "as_recorded") continue;
        std::string what;
        if (g != "as_recorded") what = "gemm " + g;
        if (c != "as_recorded") what += (what.empty() ? "" : ", ") + std::string("conv ") + c;
        out.push_back({what, optimizer::precision_memory(*activations_, g, c), searched});
      }
    return out;
  }

  // What the text and JSON say of precision and activations.
  std::string activation_basis() const {
    if (activations_)
      return fmt::format("precision plans credited against {:.3f} MiB of activations (rank {}'s median step, {} forward "
                         "ops): saved activations of lowered GEMMs and convolutions, and of the ops after them that run in their "
                         "input's dtype, at the narrower width, less; their weights' casts, more",
                         static_cast<double>(activations_->bytes) / (1024.0 * 1024.0), activations_->rank, activations_->ops);
    return "precision plans not credited for activations: the trace records no tensor shapes before a backward op";
  }

  std::string render_text(const optimizer::SearchSpace& space, const optimizer::SearchResult& r,
                          const optimizer::Plan& plan, int threads) const {
    std::string strategies;
    for (optimizer::Strategy s : space.strategies) strategies += (strategies.empty() ? "" : ", ") + std::string(optimizer::to_string(s));
    std::string out = fmt::format("optimize: strategies {} ({} decisions to make), seed {}\n", strategies,
                                  space.variables.size(), seed_);
    for (const auto& [s, why] : space.not_applicable) out += fmt::format("  {} left out: {}\n", optimizer::to_string(s), why);
    out += fmt::format("searched {} plans in {:.2f} s on {} thread(s): greedy {}, annealing {}{}\n", r.evaluations,
                       r.seconds, threads, r.greedy_evaluations, r.evaluations - r.greedy_evaluations,
                       r.stopped_by_time ? " (stopped by --time-limit)" : "");
    out += tolerance_text_;
    out += fmt::format("baseline (no change, under the conditions): median step {}\n",
                       format_duration(r.baseline.score.step_ns));
    if (job_memory_)
      out += fmt::format("memory per rank: the job's at least {:.3f} GiB ({}); budget {} GiB\n",
                         static_cast<double>(job_memory_->bytes) / kGiB, job_memory_->source, *memory_budget_gib_);
    const bool precision_searched =
        std::find(space.strategies.begin(), space.strategies.end(), optimizer::Strategy::kPrecision) != space.strategies.end();
    if (precision_searched || (memory_budget_gib_ && activations_)) {
      out += "memory of precision plans: " + activation_basis() + (precision_searched ? "" : " (precision not searched: for reference)") + "\n";
      // Each class alone, and both at one dtype.
      for (const Credit& c : activation_credit_) {
        const std::size_t comma = c.what.find(',');
        if (comma == std::string::npos || c.what.substr(5, comma - 5) == c.what.substr(comma + 7))
          out += fmt::format("  {}: {} (activations -{:.3f} MiB, weight casts +{:.3f} MiB)\n", c.what, memory_text(c.memory.delta()),
                             static_cast<double>(c.memory.saved) / (1024.0 * 1024.0),
                             static_cast<double>(c.memory.casts) / (1024.0 * 1024.0));
      }
    }
    if (planned_)
      out += fmt::format("compression planner ({:.1f} ms, {} buckets per step): {}: median step {} by its model, {} replayed; "
                         "best single method by its model: {} ({})\n",
                         1e3 * planner_seconds_, planned_->choice.size(),
                         optimizer::describe({optimizer::Strategy::kCompression, "", planned_->value, {}}),
                         format_duration(planned_->planned.median_ns), format_duration(planned_replayed_),
                         planned_->best_single, format_duration(planned_->best_single_score.median_ns));
    out += "plans best for their accuracy risk (Pareto set), fastest first:\n";
    out += fmt::format("  {:>3}  {:>12}  {:>8}  {:>5}  {:>10}  {}\n", "#", "median step", "change", "risk", "memory",
                       "decisions");
    for (std::size_t i = 0; i < r.pareto.size(); ++i) {
      const optimizer::Scored& p = r.pareto[i];
      out += fmt::format("  {:>3}  {:>12}  {:>8}  {:>5.2f}  {:>10}  {}\n", i + 1, format_duration(p.score.step_ns),
                         percent(p.score.step_ns, r.baseline.score.step_ns), p.score.risk,
                         memory_text(p.score.extra_memory_bytes), decisions_text(optimizer::decisions_of(space, p.assignment)));
    }
    std::string limits;
    if (max_risk_) limits += fmt::format("risk at most {}", *max_risk_);
    if (memory_headroom_gib_) limits += fmt::format("{}memory at most +{} GiB", limits.empty() ? "" : ", ", *memory_headroom_gib_);
    if (memory_budget_gib_) limits += fmt::format("{}memory at most {} GiB per rank", limits.empty() ? "" : ", ", *memory_budget_gib_);
    out += fmt::format("chosen plan{}: median step {} ({} of the baseline), risk {:.2f}, memory {}\n",
                       limits.empty() ? std::string() : " (" + limits + ")", format_duration(plan.step_ns),
                       percent(plan.step_ns, plan.baseline_ns), plan.risk, memory_text(plan.extra_memory_bytes));
    if (plan.decisions.empty()) out += "  no change is predicted to help: keep the job as it is\n";
    else out += fmt::format("  {:>12}  decision\n", "gain");
    for (std::size_t i = 0; i < plan.decisions.size(); ++i)
      out += fmt::format("  {:>12}  {}\n", format_duration(plan.gains_ns[i]), optimizer::describe(plan.decisions[i]));
    if (!plan.decisions.empty()) out += "  (gain: how much slower the plan is without that decision)\n";
    if (!plan_path_.empty()) out += fmt::format("plan written to {} (replay it: dpro-replay replay TRACES --plan {})\n", plan_path_, plan_path_);
    return out;
  }

  nlohmann::json to_json(const optimizer::SearchSpace& space, const optimizer::SearchResult& r,
                         const optimizer::Plan& plan) const {
    nlohmann::json j;
    j["baseline_ns"] = r.baseline.score.step_ns;
    j["plan"] = optimizer::to_json(plan);
    nlohmann::json pareto = nlohmann::json::array();
    for (const optimizer::Scored& p : r.pareto) {
      pareto.push_back({{"step_ns", p.score.step_ns},
                        {"risk", p.score.risk},
                        {"extra_memory_bytes", p.score.extra_memory_bytes},
                        {"decisions", optimizer::to_json(optimizer::decisions_of(space, p.assignment))}});
    }
    j["pareto"] = std::move(pareto);
    nlohmann::json left_out = nlohmann::json::array();
    for (const auto& [s, why] : space.not_applicable) left_out.push_back({{"strategy", optimizer::to_string(s)}, {"why", why}});
    j["not_applicable"] = std::move(left_out);
    {
      nlohmann::json plans = nlohmann::json::array();
      for (const Credit& c : activation_credit_)
        plans.push_back({{"precision", c.what}, {"searched", c.searched}, {"delta_bytes", c.memory.delta()},
                         {"activation_bytes_saved", c.memory.saved}, {"weight_cast_bytes", c.memory.casts}});
      j["precision_memory"] = {{"basis", activation_basis()},
                               {"activation_bytes_per_rank", activations_ ? nlohmann::json(activations_->bytes) : nlohmann::json()},
                               {"plans", std::move(plans)}};
    }
    if (job_memory_)
      j["memory"] = {{"job_bytes_per_rank", job_memory_->bytes}, {"estimated_from", job_memory_->source},
                     {"gradient_bytes_per_rank", job_memory_->gradient_bytes},
                     {"activation_bytes_per_rank", job_memory_->activation_bytes},
                     {"budget_bytes_per_rank", static_cast<std::int64_t>(*memory_budget_gib_ * kGiB)}};
    if (planned_)
      j["compression_planner"] = {{"value", planned_->value},
                                  {"model_step_ns", planned_->planned.median_ns},
                                  {"replayed_step_ns", planned_replayed_},
                                  {"best_single", planned_->best_single},
                                  {"best_single_model_step_ns", planned_->best_single_score.median_ns},
                                  {"none_model_step_ns", planned_->none.median_ns},
                                  {"buckets", planned_->buckets},
                                  {"seconds", planner_seconds_}};
    j["search"] = {{"evaluations", r.evaluations}, {"greedy_evaluations", r.greedy_evaluations},
                   {"seconds", r.seconds}, {"stopped_by_time", r.stopped_by_time}};
    return j;
  }

  // The replayed step of the planner's per-bucket value alone (the search scored it, or one more replay).
  static Nanos replayed_planned(optimizer::Evaluator& evaluator, const optimizer::SearchSpace& space) {
    optimizer::Assignment a(space.variables.size(), 0);
    for (std::size_t i = 0; i < a.size(); ++i)
      if (space.variables[i].strategy == optimizer::Strategy::kCompression)
        a[i] = static_cast<std::uint8_t>(space.variables[i].values.size() - 1);
    return evaluator.score({a})[0].step_ns;
  }

  std::optional<optimizer::CompressionPlan> planned_;
  std::string tolerances_path_;
  std::optional<optimizer::Tolerances> tolerances_;
  std::string tolerance_text_;
  std::optional<double> memory_budget_gib_;
  std::optional<optimizer::MemoryEstimate> job_memory_;
  std::optional<optimizer::ActivationEstimate> activations_;
  std::vector<Credit> activation_credit_;
  Nanos planned_replayed_ = 0;
  double planner_seconds_ = 0;
  std::vector<std::string> traces_;
  std::vector<std::string> strategies_;
  std::size_t budget_ = 300;
  double time_limit_ = 0;
  std::uint64_t seed_ = 1;
  std::optional<double> max_risk_;
  std::optional<double> memory_headroom_gib_;
  std::optional<int> threads_;
  std::string json_path_;
  std::string plan_path_;
  std::string html_path_;
  bool allow_partial_ = false;
  bool force_ = false;
  bool quiet_ = false;
  bool verbose_ = false;
  WhatIfFlags whatifs_;
  CLI::App* command_ = nullptr;
};

}  // namespace

std::unique_ptr<Command> make_optimize_command() { return std::make_unique<OptimizeCommand>(); }

}  // namespace dpro::cli
