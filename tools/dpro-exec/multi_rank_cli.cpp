#include "multi_rank_cli.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "core/error.h"
#include "executor/fake_device.h"
#include "executor/fake_fabric.h"
#if DPRO_EXECUTOR_CUDA
#include "executor/cuda/cuda_device.h"
#endif

namespace dpro::exec_cli {

namespace {

int parse_rank(const std::string& text, const std::string& list) {
  std::size_t used = 0;
  int v = -1;
  try {
    v = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || v < 0) throw OptionError("--ranks", list, "expected ranks like 0-3 or 0,2,5");
  return v;
}

std::set<int> parse_ranks(const std::string& list) {
  std::set<int> out;
  std::size_t begin = 0;
  while (begin <= list.size()) {
    const std::size_t comma = std::min(list.find(',', begin), list.size());
    const std::string item = list.substr(begin, comma - begin);
    const std::size_t dash = item.find('-');
    const int lo = parse_rank(item.substr(0, dash), list);
    const int hi = dash == std::string::npos ? lo : parse_rank(item.substr(dash + 1), list);
    if (hi < lo) throw OptionError("--ranks", list, "a range must go up (" + item + ")");
    for (int r = lo; r <= hi; ++r) out.insert(r);
    begin = comma + 1;
  }
  return out;
}

}  // namespace

std::optional<std::vector<int>> requested_ranks(const ExecFlags& flags, const trace::TraceSet& traces) {
  std::set<int> held;
  for (const trace::TraceRank& r : traces.ranks) held.insert(r.rank);
  if (flags.all_ranks) return std::vector<int>(held.begin(), held.end());
  if (flags.ranks.empty()) return std::nullopt;
  const std::set<int> wanted = parse_ranks(flags.ranks);
  for (int r : wanted)
    if (!held.contains(r))
      throw OptionError("--ranks", flags.ranks,
                        "no trace of rank " + std::to_string(r) + " (ranks " + std::to_string(*held.begin()) + " to " +
                            std::to_string(*held.rbegin()) + ")");
  return std::vector<int>(wanted.begin(), wanted.end());
}

RankDevices open_rank_devices(const DeviceFlags& flags, std::size_t ranks, std::string& error) {
  const std::size_t gpus = flags.gpus > 0 ? static_cast<std::size_t>(flags.gpus) : ranks;
  if (gpus != 1 && gpus != ranks)
    throw OptionError("--gpus", std::to_string(flags.gpus),
                      "must be 1 (ranks one after another) or the number of ranks, " + std::to_string(ranks) + " (one GPU each)");
  RankDevices out;
  if (flags.fake) {
    for (std::size_t i = 0; i < gpus; ++i) out.devices.push_back(open_device(true, 0));
    if (gpus > 1) out.fabric = std::make_unique<executor::FakeFabric>();
    return out;
  }
#if DPRO_EXECUTOR_CUDA
  if (gpus > 1) {
    out.fabric = executor::open_nccl_fabric();
    if (!out.fabric) {
      error = "dpro-exec: this build has no NCCL (nccl.h or libnccl not found with the CUDA toolkit): several ranks on "
              "several GPUs cannot run; --gpus 1 runs them one after another on one GPU, --fake on fake devices\n";
      return {};
    }
  }
  for (std::size_t i = 0; i < gpus; ++i) {
    out.gpus.push_back(flags.gpu + static_cast<int>(i));
    out.devices.push_back(open_device(false, out.gpus.back()));
  }
#else
  error = kNoCudaExecutor;
#endif
  return out;
}

std::vector<executor::RunResult> run_multi(RankDevices& d, const executor::MultiRankSchedule& m,
                                           const executor::RunOptions& options) {
  if (d.devices.size() == 1) {
    std::vector<executor::RunResult> out;
    for (const executor::Schedule& s : m.ranks) out.push_back(executor::run_schedule(*d.devices.front(), s, options));
    return out;
  }
  std::vector<executor::Device*> devices;
  for (auto& p : d.devices) devices.push_back(p.get());
  return executor::run_ranks(devices, d.fabric.get(), m, options);
}

int multi_fake_violations(const RankDevices& d) {
  for (const auto& p : d.devices)
    if (const int bad = fake_violations(*p)) return bad;
  return 0;
}

std::vector<std::string> multi_rank_notes(const RankDevices& d, const executor::MultiRankSchedule& m) {
  std::vector<std::string> out;
  if (d.devices.size() == 1) {
    out.push_back(fmt::format("{} ranks one after another on one device; collectives as stand-ins", m.ranks.size()));
    return out;
  }
  out.push_back(fmt::format("{} ranks at once, one device each; collectives on {} communicator(s) ({})", m.ranks.size(),
                            m.groups.size(), d.fabric ? d.fabric->name() : "none"));
  for (const executor::RankGroup& g : m.groups)
    out.push_back(fmt::format("  group {}: {} of its {} recorded members, {} collective(s) per iteration",
                              g.name.empty() ? "(unnamed)" : g.name, g.ranks.size(), g.recorded_size, g.collectives));
  return out;
}

std::unique_ptr<MultiRankJob> prepare_multi_rank(const ExecFlags& flags, const DeviceFlags& device, Logger& log,
                                                 std::string& error) {
  auto m = std::make_unique<MultiRankJob>(MultiRankJob{load_job(flags, log), {}, {}, {}});
  m->ranks = *requested_ranks(flags, *m->job.workload.traces);
  m->devices = open_rank_devices(device, m->ranks.size(), error);
  if (m->devices.devices.empty()) return nullptr;
  m->schedule = executor::build_multi_rank_schedule(m->job.workload, m->ranks, m->job.options);
  return m;
}

}  // namespace dpro::exec_cli
