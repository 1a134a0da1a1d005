#pragma once
// A what-if is a graph rewrite plus model changes, applied before the replay; never a special
// case inside the engine. Each what-if declares its own flags on `dpro-replay replay`.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "core/log.h"
#include "graph/builder.h"
#include "replayer/replay.h"
#include "trace/event.h"

namespace dpro::cli {

class WhatIfOption {
 public:
  virtual ~WhatIfOption() = default;
  virtual void add_options(CLI::App& replay) = 0;
  virtual bool enabled() const = 0;
  // Rewrites the graph (node durations, nodes, edges) in place. Throws InputError for bad
  // option values. Called after the baseline replay, on a copy of the baseline's graph (its
  // per-rank node ranges included).
  virtual void apply(graph::BuiltGraph& built, const trace::TraceSet& traces, Logger& log) = 0;
  // What the rewrite did, for the report (e.g. coverage of each cost model).
  virtual std::string summary() const = 0;
  // The same as JSON for `replay --json` ("whatif" -> "changes" -> key()): counts and times
  // (integer nanoseconds), so that scripts need not parse the summary.
  virtual const char* key() const = 0;
  virtual nlohmann::json details() const = 0;
};

// Every what-if of this build, in the order they are applied; defined in whatifs.cpp.
std::vector<std::unique_ptr<WhatIfOption>> make_whatif_options();

// GPU work that a what-if made outlive its step: per reported step and rank whose re-timed GPU
// ops (those the trace started inside the step) end after the step's predicted end by more than
// the step's predicted length. The step time leaves that work out: the trace's CPU never waited
// for it inside the step, so the replay does not either (a slower network, a slower GPU). Adds a
// warning to the report's notes and the log, and returns the cases as JSON (an array of
// {iteration, rank, step_ns, gpu_end_after_step_ns}; empty when there are none).
nlohmann::json warn_gpu_work_after_steps(const trace::TraceSet& traces, replayer::Replay& whatif, Logger& log);

}  // namespace dpro::cli
