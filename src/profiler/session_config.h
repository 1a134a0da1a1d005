#pragma once
// What a traced process learns from its environment (set by dpro-profile, or by hand):
//   DPRO_PROFILE_OUT        output directory (default ./dpro-traces)
//   DPRO_PROFILE_STEPS      "A:B": keep steps A..B when loading (stored as metadata)
//   DPRO_PROFILE_STEP_NAME  NVTX range name marking iterations (default ProfilerStep#N)
//   DPRO_PROFILE_NVTX       "1": record NVTX ranges
//   DPRO_PROFILE_NCCL       "0": the NCCL plugin records nothing
//   DPRO_PROFILE_FLUSH_MS   period of the background flush (default 1000 ms)
//   DPRO_PROFILE_DISABLE    "1": profile nothing in this process
//   DPRO_PROFILE_CUDA_API   "all": record every CUDA runtime call (default: those the replay uses)
//   DPRO_PROFILE_CALIBRATE  "0": no calibration of the records' host cost at start
//   DPRO_PROFILE_OFF        diagnostics: comma-separated record classes to leave out
//                           (kernel, runtime, driver, memcpy, memset, sync, event, correlation, nvtx;
//                           subscribe: no CUPTI callback subscriber, so neither another CUPTI
//                           client is detected nor a --steps window followed)
// plus the job's identity: RANK, LOCAL_RANK, WORLD_SIZE, TORCHELASTIC_RESTART_COUNT.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dpro::profiler {

struct SessionConfig {
  std::string out_dir = "dpro-traces";
  std::string steps;      // "" = all
  std::string step_name;  // "" = ProfilerStep#N
  bool nvtx = false;
  bool nccl = true;
  bool disabled = false;
  bool all_cuda_calls = false;
  bool calibrate = true;  // measure what each record class costs the host, at start (record_cost.h)
  std::vector<std::string> off;  // known class names only (others are ignored, with a warning)
  std::vector<std::string> unknown_off;
  std::uint32_t flush_ms = 1000;  // 0: no background flush
  std::string host;
  long pid = 0;
  std::optional<int> rank, local_rank, world_size;
  int restart_count = 0;
};

// The record classes DPRO_PROFILE_OFF accepts, and their list for messages.
bool known_off_class(std::string_view name);
std::string known_off_classes();

// The record classes the session records (DPRO_PROFILE_OFF's names but `subscribe`): all of them
// but those left out, and nvtx only when NVTX ranges are recorded.
std::vector<std::string> recorded_classes(const SessionConfig& config);

using EnvLookup = std::function<const char*(const char*)>;

// Reads the variables above through getenv (or the given lookup, for tests).
SessionConfig config_from_env(const EnvLookup& env = nullptr);

// "<out_dir>/rank3.local3.<host>.pid1234.dpro" ("norank" when RANK is unset; ".restartN"
// before ".dpro" after a torchelastic restart).
std::string trace_file_path(const SessionConfig& config);

}  // namespace dpro::profiler
