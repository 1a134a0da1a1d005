#pragma once
// Comparing two replay reports (the JSON of `dpro-replay replay --json`): the iteration time of
// a job before and after a change (a new recording of the job, or a what-if), and where on the
// critical path the time went. Used in CI to catch performance regressions: `dpro-replay
// compare BASE.json NEW.json --max-slowdown 3` exits 1 when NEW is slower by more than 3 % and by
// more than the noise.
//
// Noise (docs/replay.md, "compare in CI"): a report's noise is sigma = 1.4826 x the median absolute
// deviation of its steady steps' times (the steps its summary does not mark warm-up or outlier,
// step_stats.h; all steps for a report without a summary), a robust estimate of one step's spread.
// A change of the median step time no larger than the larger sigma of the two reports is "within
// noise" and never fails the check: a job whose steps vary by 5 % does not flap on a 3 % limit. The
// job's time and each rank's time (in both reports) are checked alike, each with its own noise. A
// report of one step has no noise estimate (sigma 0): the limit alone decides.
#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/time.h"
#include "replayer/critical_path.h"

namespace dpro::replayer {

// One report as the comparison reads it: its what-if's prediction when it has one, else the
// measured times of its trace.
struct ReportSummary {
  std::string file;
  bool whatif = false;          // figures from the report's "whatif" section (predicted)
  std::vector<Nanos> job_ns;    // job time per iteration (measured, or the what-if's prediction)
  Nanos median_job_ns = 0;
  double critical_path_ns[kCategoryCount] = {};  // mean per iteration
  // Mean time per iteration on the critical path of each op, by (category, name). A report of this
  // dpro lists every op of the path ("top_ops_complete"), so an op it does not list took 0 there.
  // An older report lists only its top few per iteration: an op listed in only some of its
  // iterations has no known mean and is left out; one it never lists is unknown too.
  std::map<std::pair<std::string, std::string>, double> op_ns;
  bool ops_complete = false;
  // The recorded job (the report's top-level "provenance"; a what-if's section describes the same
  // recording): GPU per rank and world size. Absent in reports of older versions.
  std::optional<std::vector<std::string>> gpus;
  std::optional<int> world_size;
  // The noise of the job time (see the top of this file), ns.
  Nanos job_noise_ns = 0;
  // Each rank's step time (measured, or the what-if's prediction) per iteration it is listed in,
  // its median and noise. Empty for a report whose iterations list no ranks.
  struct RankTimes {
    int rank = 0;
    std::vector<Nanos> ns;
    Nanos median_ns = 0, noise_ns = 0;
  };
  std::vector<RankTimes> ranks;
};

// sigma = 1.4826 x the median absolute deviation of `values` from their median, rounded; 0 for an
// empty set.
Nanos noise_of(const std::vector<Nanos>& values);

// Reads a report; throws InputError naming `file` and the offending key if it is not one.
ReportSummary summarize_report(const nlohmann::json& report, const std::string& file);
ReportSummary read_report_summary(const std::string& file);
// The same from the report's bytes (`file` names it in errors): invalid JSON is an InputError too.
ReportSummary parse_report_summary(const std::string& bytes, const std::string& file);

// An op's mean time per iteration on the critical path in each report; nullopt where that report
// does not say (an older report that lists only its top ops). Never counted as 0 unless it is.
struct OpChange {
  std::string category, name;
  std::optional<double> base_ns, new_ns;
  std::optional<double> delta() const {
    if (!base_ns || !new_ns) return std::nullopt;
    return *new_ns - *base_ns;
  }
};

// One check of a comparison: the median step time of the job or of one rank, base vs new.
struct StepCheck {
  enum class Outcome : std::uint8_t {
    kWithinNoise,  // |new - base| <= noise: no change that the steps' spread can tell
    kFaster,
    kSlower,        // slower beyond the noise, within --max-slowdown (or no limit given)
    kRegression,    // slower beyond the noise and beyond --max-slowdown: the check fails
  };
  std::string name;  // "job", "rank 3"
  Nanos base_ns = 0, new_ns = 0;
  Nanos noise_ns = 0;  // max of the two reports' noise
  double change = 0;   // (new - base) / base
  Outcome outcome = Outcome::kWithinNoise;
  bool failed() const { return outcome == Outcome::kRegression; }
};
const char* to_string(StepCheck::Outcome o);

struct Comparison {
  ReportSummary base, next;
  double change = 0;  // (new - base) / base of the median job time
  double critical_path_change_ns[kCategoryCount] = {};
  // Ops whose time changed, largest |delta()| first, then ops one report does not say (unknown delta).
  std::vector<OpChange> ops;
  // How the two recorded jobs differ ("ranks: 8 -> 16", "GPUs: ..."); empty when they match or a
  // report does not say (same_job then nullopt).
  std::vector<std::string> job_differences;
  std::optional<bool> same_job;
  std::optional<double> max_slowdown;  // fraction, if a limit was given
  // The job first, then every rank present in both reports, by rank.
  std::vector<StepCheck> checks;
  // The job's check failed: slower than the limit allows, beyond the noise.
  bool regression() const { return !checks.empty() && checks.front().failed(); }
  // What CI acts on: a check of the job or of a rank failed, or, with a limit, the reports describe
  // different jobs.
  bool failed() const;
};

// `top` = how many ops to keep (largest |change| first). `check_ranks` false: the ranks' checks are
// still listed but judged without the limit (never a regression); the job alone decides.
Comparison compare_reports(ReportSummary base, ReportSummary next, std::optional<double> max_slowdown,
                           std::size_t top, bool check_ranks = true);

std::string render_text(const Comparison& c);
nlohmann::json to_json(const Comparison& c);

}  // namespace dpro::replayer
