// Bundled traces loaded and replayed once per test program, for the many test cases that only
// read a baseline replay (the 8-rank DLRM set takes most of a second to load and replay).
#pragma once

#include <string>

#include "replayer/replay.h"
#include "trace_fixtures.h"

namespace dpro::test {

// A trace set and its baseline replay with default options, built in place (the replay's graph
// refers to the set's names, so the two never move apart). `log` holds what loading and replaying
// said.
struct ReplayedSet {
  CapturingLog log;
  trace::TraceSet set;
  replayer::Replay replay;
  explicit ReplayedSet(const std::string& path)
      : set(load({path}, log.log)), replay(replayer::replay_traces(set, {}, log.log)) {}
};

// The 8-rank DLRM set (traces/dlrm-8xV100), replayed on first use; shared, read-only.
inline const ReplayedSet& dlrm_replayed() {
  static const ReplayedSet replayed(dlrm_dir());
  return replayed;
}

}  // namespace dpro::test
