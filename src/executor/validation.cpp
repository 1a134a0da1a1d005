#include "executor/validation.h"

#include <algorithm>
#include <stdexcept>
#include <variant>

namespace dpro::executor {

namespace {

Nanos median_of(std::vector<Nanos> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The replay's predicted step of the schedule's rank in its window.
Nanos predicted_step(const Schedule& s, const replayer::Report& report) {
  for (const replayer::IterationReport& it : report.iterations) {
    const bool same_window = s.window.empty() ? it.whole_trace : it.name == s.window;
    if (!same_window) continue;
    for (const replayer::RankIteration& r : it.ranks)
      if (r.rank == s.rank) return r.predicted_ns;
  }
  throw std::invalid_argument("the replay report has no step " + (s.window.empty() ? "(whole trace)" : s.window) +
                              " of rank " + std::to_string(s.rank));
}

}  // namespace

const char* to_string(ValidationClass c) {
  switch (c) {
    case ValidationClass::kGemm: return "gemm";
    case ValidationClass::kElementwise: return "elementwise/fused";
    case ValidationClass::kCast: return "cast";
    case ValidationClass::kCompress: return "compress";
    case ValidationClass::kCopy: return "copy";
    case ValidationClass::kCollective: return "collective stand-in";
    case ValidationClass::kStandin: return "other stand-in";
  }
  return "?";
}

ValidationClass validation_class(const LoweredLaunch& launch) {
  struct Visitor {
    ValidationClass operator()(const StandinKernel&) const { return ValidationClass::kStandin; }
    ValidationClass operator()(const GemmCall&) const { return ValidationClass::kGemm; }
    ValidationClass operator()(const ElementwiseChain&) const { return ValidationClass::kElementwise; }
    ValidationClass operator()(const CastCall&) const { return ValidationClass::kCast; }
    ValidationClass operator()(const CompressCall&) const { return ValidationClass::kCompress; }
    ValidationClass operator()(const CopyCall&) const { return ValidationClass::kCopy; }
    ValidationClass operator()(const MemsetCall&) const { return ValidationClass::kCopy; }
    ValidationClass operator()(const CollectiveCall&) const { return ValidationClass::kCollective; }
  };
  return std::visit(Visitor{}, launch.launch);
}

std::optional<double> Compared::error() const {
  if (predicted == 0) return std::nullopt;
  return static_cast<double>(measured - predicted) / static_cast<double>(predicted);
}

Validation compare_run(const Schedule& s, const RunResult& run, const replayer::Simulation& sim,
                       const replayer::Report& report) {
  const std::size_t n = s.launches.size();
  if (run.launch_start_ns.size() != n || run.launch_end_ns.size() != n || run.iteration_ns.empty())
    throw std::invalid_argument("the run has no per-launch times of the schedule (time_launches off?)");
  Validation v;
  v.device = run.device;
  v.rank = s.rank;
  v.window = s.window;
  v.recorded_ns = s.window_end - s.window_start;
  v.measured_step_ns = run.iteration_ns;
  v.predicted_step_ns = predicted_step(s, report);
  v.step = {median_of(run.iteration_ns), v.predicted_step_ns};
  for (int c = 0; c < kValidationClassCount; ++c) v.classes[c].cls = static_cast<ValidationClass>(c);
  v.streams.resize(s.streams.size());
  for (std::size_t st = 0; st < s.streams.size(); ++st) v.streams[st].name = s.streams[st].name;
  for (std::size_t i = 0; i < n; ++i) {
    const ScheduledLaunch& l = s.launches[i];
    const Nanos measured = run.launch_end_ns[i] - run.launch_start_ns[i];
    const Nanos predicted = sim.end[l.node] - sim.start[l.node];
    v.launch_measured_ns.push_back(measured);
    v.launch_predicted_ns.push_back(predicted);
    ClassComparison& c = v.classes[static_cast<int>(validation_class(l.lowered))];
    ++c.launches;
    c.time.measured += measured;
    c.time.predicted += predicted;
    StreamComparison& st = v.streams[l.stream];
    ++st.launches;
    st.busy.predicted += predicted;
  }
  for (std::size_t st = 0; st < s.streams.size(); ++st) {
    std::vector<Nanos> per_iteration;
    for (const auto& it : run.stream_busy_ns) per_iteration.push_back(it.at(st));
    v.streams[st].busy.measured = median_of(std::move(per_iteration));
  }
  return v;
}

}  // namespace dpro::executor
