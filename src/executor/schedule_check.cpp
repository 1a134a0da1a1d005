// The host programs of a schedule can all run to their end: every wait for an event's record or a
// host flag is met by a step of some thread that does not itself wait, directly or not, for the
// waiting one. Run without a device: each thread advances until it reaches a wait nothing has met
// yet; the programs are runnable when every thread reaches its end.
#include <stdexcept>

#include "executor/schedule.h"

namespace dpro::executor {

std::string stuck_host_step(const Schedule& s) {
  std::vector<char> recorded(s.events, 0), raised(s.flags, 0);
  std::vector<std::size_t> pc(s.threads.size(), 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (std::size_t t = 0; t < s.threads.size(); ++t) {
      const auto& steps = s.threads[t].steps;
      for (; pc[t] < steps.size(); ++pc[t], progress = true) {
        const HostStep& st = steps[pc[t]];
        if ((st.kind == StepKind::kWaitEvent || st.kind == StepKind::kSyncEvent) && !recorded[st.index]) break;
        if (st.kind == StepKind::kAwait && !raised[st.index]) break;
        if (st.kind == StepKind::kRecord) recorded[st.index] = 1;
        if (st.kind == StepKind::kSignal) raised[st.index] = 1;
      }
    }
  }
  for (std::size_t t = 0; t < s.threads.size(); ++t) {
    if (pc[t] == s.threads[t].steps.size()) continue;
    const HostStep& st = s.threads[t].steps[pc[t]];
    return "host thread " + s.threads[t].name + " step " + std::to_string(pc[t]) + " (" + to_string(st.kind) + " " +
           std::to_string(st.index) + ", node " + std::to_string(st.node.value) + ") waits for nothing that comes";
  }
  return "";
}

}  // namespace dpro::executor
