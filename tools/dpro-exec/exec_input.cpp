#include "exec_input.h"

#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "core/error.h"
#include "executor/fake_device.h"
#include "executor/plan_rewrites.h"
#include "graph/profiler_cost.h"
#include "optimizer/plan.h"
#include "optimizer/space.h"
#include "resource_paths.h"
#include "trace/loader.h"
#if DPRO_EXECUTOR_CUDA
#include "executor/cuda/cuda_device.h"
#endif

namespace dpro::exec_cli {

void ExecFlags::add_to(CLI::App& sub, bool json_flag, bool multi_rank) {
  sub.add_option("traces", traces, "trace files (.json, .json.gz, .dpro) or directories of them, one job")->required();
  CLI::Option* one = sub.add_option("--rank", rank, "the rank whose part of the job runs (default: the first the traces hold)")
                         ->check(CLI::NonNegativeNumber);
  if (multi_rank) {
    CLI::Option* list = sub.add_option("--ranks", ranks,
                                       "several ranks at once, e.g. 0-3 or 0,2,5: one GPU each with NCCL collectives\n"
                                       "(see --gpus), or fake devices joined by a fake collective fabric with --fake");
    CLI::Option* all = sub.add_flag("--all-ranks", all_ranks, "every rank the traces hold (as --ranks)");
    one->excludes(list)->excludes(all);
    list->excludes(all);
  }
  sub.add_option("--iteration", iteration,
                 "the recorded iteration to run, ProfilerStep#N (default: the middle one the rank recorded)");
  sub.add_option("--plan", plan_path,
                 "run a plan written by `dpro-replay optimize --plan-out`: its decisions (op fusion, precision,\n"
                 "compression, buckets) are applied to the graph first; the conditions it was searched under\n"
                 "(another GPU or cluster) are not: the executor runs on the GPU it has");
  if (json_flag) sub.add_flag("--json", json, "print JSON instead of text");
  sub.add_flag("-q,--quiet", quiet, "print only errors on stderr");
}

namespace {

// The plan's decisions as rewrites of `workload`; notes for the reader.
void apply_plan(const ExecFlags& flags, Job& job) {
  const optimizer::Plan plan = optimizer::read_plan(flags.plan_path);
  optimizer::check_plan_matches(plan, job.workload.graph, flags.plan_path);
  const cli::ResourcePaths& r = cli::resource_paths();
  std::vector<whatif::Rewrite> rewrites;
  try {
    rewrites = optimizer::decision_rewrites(plan.conditions, plan.decisions, {r.model_path, r.device_dir, r.cluster_dir, ""});
  } catch (const OptionError& e) {
    throw optimizer::plan_decision_error(flags.plan_path, e);
  }
  executor::AppliedRewrites applied;
  try {
    applied = executor::apply_rewrites(job.workload, rewrites);
  } catch (const OptionError& e) {
    // A partition's boundaries are checked against the job's steps only when applied.
    if (e.option() != "partition") throw;
    throw InputError(flags.plan_path, "decisions: partition " + e.value(), e.message());
  }
  job.options.launch = applied.launch;
  for (const std::string& n : applied.notes) job.notes.push_back(n);
  job.notes.push_back(fmt::format("plan {}: {} decision(s) applied", flags.plan_path, plan.decisions.size()));
  for (const optimizer::Decision& d : plan.decisions) job.notes.push_back("  " + optimizer::describe(d));
  if (!plan.conditions.device.empty() || !plan.conditions.cluster.empty() || plan.conditions.ranks)
    job.notes.push_back("the plan was searched under other conditions (device, cluster or ranks): they are not run here");
}

}  // namespace

Job load_job(const ExecFlags& flags, Logger& log) {
  trace::LoadOptions load;
  auto traces = std::make_shared<const trace::TraceSet>(trace::load_traces(flags.traces, load, log));
  graph::BuiltGraph built = graph::build_graph(*traces, graph::BuildOptions{}, log);
  // CPU ops spend their cost without what the profiler's own records cost the traced job.
  graph::remove_profiler_cost(*traces, built, graph::ProfilerCostOptions{});
  Job job{{traces, std::move(built)}, {}, {}};
  job.options.rank = flags.rank;
  job.options.iteration = flags.iteration;
  if (!flags.plan_path.empty()) apply_plan(flags, job);
  return job;
}

void DeviceFlags::add_to(CLI::App& sub, const std::string& fake_help, bool multi_rank) {
  sub.add_option("--gpu", gpu, multi_rank ? "the CUDA device ordinal (several ranks: the first GPU)" : "the CUDA device ordinal")
      ->default_val(0)
      ->check(CLI::NonNegativeNumber);
  if (multi_rank)
    sub.add_option("--gpus", gpus,
                   "with --ranks / --all-ranks: GPUs to use, 1 (the ranks one after another, collectives as stand-ins)\n"
                   "or the number of ranks (the default: one GPU each from --gpu on, collectives on NCCL)")
        ->check(CLI::PositiveNumber);
  sub.add_flag("--fake", fake, fake_help);
}

int fake_violations(const executor::Device& device) {
  const auto* fake = dynamic_cast<const executor::FakeDevice*>(&device);
  if (!fake || fake->violations().empty()) return 0;
  std::fprintf(stderr, "dpro-exec: internal error: the fake device saw %zu violation(s); first: %s\n",
               fake->violations().size(), fake->violations().front().c_str());
  return 1;
}

std::unique_ptr<executor::Device> open_device(bool fake, int gpu) {
  if (fake) return std::make_unique<executor::FakeDevice>(executor::FakeDevice::Options{.keep_calls = false});
#if DPRO_EXECUTOR_CUDA
  try {
    return executor::open_cuda_device(gpu);
  } catch (const std::runtime_error& e) {
    throw InputError("--gpu", std::to_string(gpu), e.what());
  }
#else
  (void)gpu;
  return nullptr;
#endif
}

}  // namespace dpro::exec_cli
