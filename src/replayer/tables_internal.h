#pragma once
// Helpers shared by the table files (tables.cpp, tables_cpu.cpp, tables_gpu_time.cpp): step
// windows and interval arithmetic. Not part of the replayer's interface.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "replayer/report.h"
#include "replayer/tables.h"

namespace dpro::replayer {

// One rank's step, [begin, end): measured (trace clock) or predicted (replay clock).
struct StepWindow {
  std::int64_t step = -1;  // ProfilerStep number, -1 for a whole-trace window
  Nanos begin = 0, end = 0;
};
std::map<int, std::vector<StepWindow>> measured_windows(const Report& report);
std::map<int, std::vector<StepWindow>> predicted_windows(const Report& report);
// The window holding `t`, nullptr for none.
const StepWindow* window_of(const std::vector<StepWindow>& windows, Nanos t);

using Interval = std::pair<Nanos, Nanos>;  // [first, second)
// Sorted, disjoint, non-empty intervals covering the same time as `v`.
std::vector<Interval> merge(std::vector<Interval> v);
Nanos length(const std::vector<Interval>& merged);
bool covers(const std::vector<Interval>& merged, Nanos t);
// Time covered by both (both merged).
Nanos overlap_length(const std::vector<Interval>& a, const std::vector<Interval>& b);

// A CSV field: quoted, inner quotes doubled.
std::string csv_field(const std::string& s);
// Adds the operators, overlap, idle, memory and phases tables to `out` (to_json's object).
void add_views_json(const Tables& t, nlohmann::json& out);

}  // namespace dpro::replayer
