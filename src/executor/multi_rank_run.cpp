// run_ranks (multi_rank.h): one runner per rank, its own host threads and device.
#include <atomic>
#include <exception>
#include <stdexcept>
#include <thread>

#include "executor/multi_rank.h"

namespace dpro::executor {

namespace {

// Per rank, per launch: the communicator of its group (0: a stand-in).
std::vector<std::vector<CommHandle>> open_comms(const std::vector<Device*>& devices, CollectiveFabric* fabric,
                                                const MultiRankSchedule& m) {
  std::vector<std::vector<CommHandle>> out;
  for (const auto& groups : m.launch_group) out.emplace_back(groups.size(), 0);
  if (!fabric) return out;
  std::vector<CommHandle> handles;
  for (const RankGroup& g : m.groups) {
    std::vector<Device*> members;
    for (int rank : g.ranks)
      for (std::size_t r = 0; r < m.ranks.size(); ++r)
        if (m.ranks[r].rank == rank) members.push_back(devices[r]);
    handles.push_back(fabric->open(members));
  }
  for (std::size_t r = 0; r < out.size(); ++r)
    for (std::size_t i = 0; i < out[r].size(); ++i)
      if (m.launch_group[r][i] != kNoGroup) out[r][i] = handles[m.launch_group[r][i]];
  return out;
}

}  // namespace

std::vector<RunResult> run_ranks(const std::vector<Device*>& devices, CollectiveFabric* fabric,
                                 const MultiRankSchedule& schedule, const RunOptions& options) {
  if (devices.size() != schedule.ranks.size()) throw std::invalid_argument("run_ranks: one device per rank");
  const std::vector<std::vector<CommHandle>> comms = open_comms(devices, fabric, schedule);
  std::vector<RunResult> results(devices.size());
  std::vector<std::exception_ptr> errors(devices.size());
  std::atomic<int> first_failed{-1};
  std::vector<std::thread> runners;
  for (std::size_t r = 0; r < devices.size(); ++r) {
    runners.emplace_back([&, r] {
      RunOptions o = options;
      o.comms = &comms[r];
      auto failed = [&first_failed, r] {
        int none = -1;
        first_failed.compare_exchange_strong(none, static_cast<int>(r));
      };
      // The failing thread marks its rank before it aborts the others' collectives.
      o.on_failure = [failed, fabric] {
        failed();
        if (fabric) fabric->abort();
      };
      try {
        results[r] = run_schedule(*devices[r], schedule.ranks[r], o);
      } catch (...) {
        errors[r] = std::current_exception();
        failed();
        if (fabric) fabric->abort();
      }
    });
  }
  for (std::thread& t : runners) t.join();
  // The rank that failed first, not one that stopped because it aborted the fabric.
  if (const int f = first_failed.load(); f >= 0) std::rethrow_exception(errors[static_cast<std::size_t>(f)]);
  return results;
}

}  // namespace dpro::executor
