#pragma once
// Loads the traces of one job: a list of files and/or directories (one file per rank).
// Assigns ranks, checks the set is complete, sorts ranks, and brings all ranks onto one
// clock (see clock_alignment.h).
#include <functional>
#include <string>
#include <vector>

#include "core/log.h"
#include "trace/event.h"
#include "trace/importer.h"

namespace dpro::trace {

struct LoadOptions {
  ImportOptions import;
  // Accept a multi-rank set that lacks some ranks of its world size (collectives of absent
  // ranks are then replayed with their measured durations).
  bool allow_partial = false;
  bool align_clocks = true;
  // Iterations are the occurrences of this CPU annotation/operator name ('*' = any characters)
  // instead of ProfilerStep#N; empty: ProfilerStep#N. A marker found on no rank is an error.
  std::string iteration_marker;
  // Rank files read at once (one task per file); 0: one per core. The result is the same whatever
  // the count and the threads' timing.
  unsigned threads = 0;
  // Called as each file's read starts (index counts the reads started, from 0; calls come one at a
  // time, from the reading threads) and once more, from the caller's thread, when all are read.
  std::function<void(std::size_t index, std::size_t total, const std::string& file)> progress;
};

// Expands directories (files ending .json, .json.gz, .dpro, .dpro.gz inside, sorted).
std::vector<std::string> expand_trace_paths(const std::vector<std::string>& paths);

TraceSet load_traces(const std::vector<std::string>& paths, const LoadOptions& options, Logger& log);

}  // namespace dpro::trace
