#pragma once
// Test helper: a what-if given as `dpro-replay replay` flags, bound as the CLI binds them
// (cli::WhatIfFlags), applied through the what-if library, rendered as the CLI renders it
// (render_whatif.h), its option errors named by their flags as main() names them. Tests of a
// rewrite as a library call whatif:: directly (tests/whatif).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "render_whatif.h"
#include "whatif/evaluate.h"
#include "whatif_flags.h"

namespace dpro::test {

class FlagWhatIf {
 public:
  explicit FlagWhatIf(std::vector<std::string> args) {
    CLI::App app{"replay"};
    flags_.add_to(app);
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    app.parse(reversed);
  }
  bool enabled() const { return !flags_.rewrites().empty(); }
  // Applies the rewrites in place to `built` (the traces are borrowed, not copied).
  void apply(graph::BuiltGraph& built, const trace::TraceSet& traces, Logger& log) {
    whatif::Workload w{std::shared_ptr<const trace::TraceSet>(std::shared_ptr<void>(), &traces), std::move(built)};
    changes_.clear();
    try {
      for (const whatif::Rewrite& r : flags_.rewrites()) {
        changes_.push_back(whatif::apply(w, r));
        cli::log_warnings(changes_.back(), log);
      }
    } catch (const OptionError& e) {
      built = std::move(w.graph);
      throw cli::with_flag(e);
    } catch (...) {
      built = std::move(w.graph);
      throw;
    }
    built = std::move(w.graph);
  }
  std::string summary() const { return changes_.empty() ? std::string() : cli::summary(changes_.back()); }
  nlohmann::json details() const { return changes_.empty() ? nlohmann::json() : cli::details(changes_.back()); }
  const whatif::Change& change() const { return changes_.back(); }
  const char* key() const { return cli::key(changes_.back()); }

 private:
  cli::WhatIfFlags flags_;
  std::vector<whatif::Change> changes_;
};

}  // namespace dpro::test
