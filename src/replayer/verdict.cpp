#include "replayer/verdict.h"

#include <fmt/format.h>

#include <array>

namespace dpro::replayer {

namespace {

using Bound = Verdict::Bound;

struct Group {
  Bound bound;
  const char* what;  // for describe()
  std::initializer_list<Category> members;
};

const std::array<Group, 6>& groups() {
  static const std::array<Group, 6> kGroups = {{
      {Bound::kGpu, "GPU work", {Category::kCompute, Category::kCopies, Category::kBlockedOnGpu}},
      {Bound::kCpu, "host work", {Category::kCpuOp, Category::kCpuUntraced, Category::kLaunch}},
      {Bound::kCommunication, "communication", {Category::kCommunication}},
      {Bound::kPeer, "peer wait", {Category::kPeerWait}},
      {Bound::kUnresolvedWaits, "unresolved waits", {Category::kUnresolvedWait}},
      {Bound::kIdle, "idle", {Category::kIdle}},
  }};
  return kGroups;
}

double share(Nanos part, Nanos whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

}  // namespace

Verdict verdict_of(const Breakdown& path, Nanos gpu_busy, Nanos step) {
  Verdict v;
  v.gpu_busy_share = share(gpu_busy, step);
  auto group_time = [&](const Group& g) {
    Nanos sum = 0;
    for (Category c : g.members) sum += path[c];
    return sum;
  };
  Nanos best = -1;
  for (const Group& g : groups()) {
    if (const Nanos t = group_time(g); t > best) {
      best = t;
      v.bound = g.bound;
    }
  }
  if (v.gpu_busy_share >= kGpuBoundBusyShare) v.bound = Bound::kGpu;
  for (const Group& g : groups())
    if (g.bound == v.bound) v.path_share = share(group_time(g), path.total());
  if (v.bound == Bound::kPeer) v.peer = path.main_peer();
  return v;
}

std::string headline(const Verdict& v) {
  switch (v.bound) {
    case Bound::kGpu: return "GPU-bound";
    case Bound::kCpu: return "CPU-bound";
    case Bound::kCommunication: return "communication-bound";
    case Bound::kPeer: return fmt::format("waiting for rank {}", v.peer);
    case Bound::kUnresolvedWaits: return "bound by unresolved waits";
    case Bound::kIdle: return "idle";
  }
  return "unknown";
}

std::string describe(const Verdict& v) {
  const char* what = "";
  for (const Group& g : groups())
    if (g.bound == v.bound) what = g.what;
  return fmt::format("{} ({} {:.1f}% of the critical path, GPU busy {:.1f}% of the step)", headline(v), what,
                     100.0 * v.path_share, 100.0 * v.gpu_busy_share);
}

}  // namespace dpro::replayer
