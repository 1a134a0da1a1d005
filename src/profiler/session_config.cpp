#include "profiler/session_config.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <limits>
#include <string>

#include "core/strings.h"

namespace dpro::profiler {
namespace {

std::optional<int> int_env(const EnvLookup& env, const char* name) {
  const char* v = env(name);
  if (!v || !*v) return std::nullopt;
  // A whole number that fits an int, and nothing else (RANK=99999999999 is no rank, not a wrapped one).
  const auto n = parse_integer(v);
  if (!n || *n < std::numeric_limits<int>::min() || *n > std::numeric_limits<int>::max()) return std::nullopt;
  return static_cast<int>(*n);
}

std::string sanitize(std::string s) {
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) c = '_';
  return s;
}

}  // namespace

constexpr std::string_view kOffClasses[] = {"kernel", "runtime", "driver", "memcpy", "memset",
                                            "sync", "event", "correlation", "nvtx", "subscribe"};

bool known_off_class(std::string_view name) {
  return std::find(std::begin(kOffClasses), std::end(kOffClasses), name) != std::end(kOffClasses);
}

std::string known_off_classes() {
  std::string list;
  for (auto c : kOffClasses) list.append(list.empty() ? "" : ", ").append(c);
  return list;
}

std::vector<std::string> recorded_classes(const SessionConfig& config) {
  std::vector<std::string> out;
  for (auto c : kOffClasses) {
    if (c == "subscribe" || (c == "nvtx" && !config.nvtx)) continue;
    if (std::find(config.off.begin(), config.off.end(), c) == config.off.end()) out.emplace_back(c);
  }
  return out;
}

SessionConfig config_from_env(const EnvLookup& lookup) {
  EnvLookup env = lookup ? lookup : [](const char* name) { return static_cast<const char*>(std::getenv(name)); };
  SessionConfig c;
  auto text = [&](const char* name) { const char* v = env(name); return std::string(v ? v : ""); };
  if (auto out = text("DPRO_PROFILE_OUT"); !out.empty()) c.out_dir = out;
  c.steps = text("DPRO_PROFILE_STEPS");
  c.step_name = text("DPRO_PROFILE_STEP_NAME");
  c.nvtx = text("DPRO_PROFILE_NVTX") == "1";
  c.nccl = text("DPRO_PROFILE_NCCL") != "0";
  c.disabled = text("DPRO_PROFILE_DISABLE") == "1";
  c.all_cuda_calls = text("DPRO_PROFILE_CUDA_API") == "all";
  c.calibrate = text("DPRO_PROFILE_CALIBRATE") != "0";
  const std::string off = text("DPRO_PROFILE_OFF");
  for (std::size_t from = 0; from <= off.size();) {
    const std::size_t comma = std::min(off.find(',', from), off.size());
    const std::string name = off.substr(from, comma - from);
    if (!name.empty()) (known_off_class(name) ? c.off : c.unknown_off).push_back(name);
    from = comma + 1;
  }
  if (auto ms = int_env(env, "DPRO_PROFILE_FLUSH_MS"); ms && *ms >= 0) c.flush_ms = static_cast<std::uint32_t>(*ms);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  c.host = host;
  c.pid = static_cast<long>(::getpid());
  c.rank = int_env(env, "RANK");
  c.local_rank = int_env(env, "LOCAL_RANK");
  c.world_size = int_env(env, "WORLD_SIZE");
  c.restart_count = int_env(env, "TORCHELASTIC_RESTART_COUNT").value_or(0);
  return c;
}

std::string trace_file_path(const SessionConfig& c) {
  // Built with append(): GCC 12 warns spuriously (-Wrestrict) on chains of operator+.
  std::string name = c.out_dir;
  name.append("/");
  name.append(c.rank ? "rank" + std::to_string(*c.rank) : std::string("norank"));
  if (c.local_rank) name.append(".local").append(std::to_string(*c.local_rank));
  name.append(".").append(sanitize(c.host.empty() ? "host" : c.host));
  name.append(".pid").append(std::to_string(c.pid));
  if (c.restart_count > 0) name.append(".restart").append(std::to_string(c.restart_count));
  return name.append(".dpro");
}

}  // namespace dpro::profiler
