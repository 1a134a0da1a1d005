#pragma once
// Several ranks of one job, one device each (docs/executor.md, "Several ranks"): each rank's
// schedule as build_schedule makes it, for the same recorded iteration, plus the collective groups
// that join them. A rank's collective runs on its group's communicator (CollectiveCall::comm) where
// two or more of the group's recorded members are scheduled (the group narrowed to them: ranks 0-3
// of an 8-rank job run their world all-reduce among 4), and as a stand-in otherwise.
//
// Issue order. NCCL hangs unless every member issues the collectives of one communicator in the
// same order. Within a rank, the collectives of a group are issued in recorded order (a host flag
// orders two that different host threads issue); across ranks, the k-th collective of a group must
// be the same collective (same barrier of the graph where it has one, op, bytes and dtype) on
// every member, and no two groups' collectives may wait on each other in a cycle through the
// members' streams: build_multi_rank_schedule checks both and throws InputError naming the first
// position where two members differ, or the cycle.
#include <cstdint>
#include <string>
#include <vector>

#include "executor/runner.h"
#include "executor/schedule.h"

namespace dpro::executor {

inline constexpr std::uint32_t kNoGroup = UINT32_MAX;

struct RankGroup {
  std::string name;             // the recorded process group (communicator id)
  std::vector<int> ranks;       // scheduled members, ascending: group rank i is ranks[i]
  std::size_t recorded_size = 0;  // members the recorded group had
  std::size_t collectives = 0;    // per member, per iteration
};

struct MultiRankSchedule {
  std::vector<Schedule> ranks;                         // ascending rank
  std::vector<RankGroup> groups;                       // groups of two or more scheduled members
  std::vector<std::vector<std::uint32_t>> launch_group;  // per rank, per launch: index into groups, or kNoGroup
};

// `ranks`: the trace ranks to schedule (at least one, each at most once); the iteration is
// options.iteration or the first rank's middle one, for every rank. Throws OptionError("--ranks")
// for a rank the traces do not hold, OptionError("--iteration") for an iteration a rank did not
// record, InputError for collectives the members would issue in different orders.
MultiRankSchedule build_multi_rank_schedule(const whatif::Workload& workload, const std::vector<int>& ranks,
                                            ScheduleOptions options);

// Where the members of a group would issue different collectives at the same position, or where
// collectives of different groups would wait on each other in a cycle (collective_wait_cycle): a
// message, empty when every group agrees. (build_multi_rank_schedule throws with it.)
std::string collective_order_mismatch(const graph::Dfg& dfg, const MultiRankSchedule& schedule);

// A cycle of waits between collectives of different groups, as a message naming each step (rank,
// the two collectives, the stream), or "" when there is none. A device stream runs its launches one
// after another, so a rank that issues group A's k-th collective before group B's j-th on one stream
// makes B#j wait for A#k; two ranks issuing them in opposite orders hang NCCL. Only stream order is
// followed (waits through events between streams are not). `position[r][i]`: the index of rank r's
// launch i among its group's collectives (ignored for launches of no group).
std::string collective_wait_cycle(const MultiRankSchedule& schedule, const std::vector<std::vector<std::uint32_t>>& position);

// Plays every rank's schedule at once, rank i on devices[i] (its own host threads), each
// iteration's timing as run_schedule's. `fabric` opens one communicator per group over its
// members' devices; nullptr runs every collective as a stand-in (one GPU). A rank that fails aborts
// the fabric so that the others stop; the first failure is rethrown after every rank stopped.
std::vector<RunResult> run_ranks(const std::vector<Device*>& devices, CollectiveFabric* fabric,
                                 const MultiRankSchedule& schedule, const RunOptions& options);

}  // namespace dpro::executor
