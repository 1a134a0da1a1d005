#pragma once
// Several ranks in one dpro-exec (run, validate): --ranks LIST / --all-ranks pick them, --gpus N
// says where they run: one GPU each (N = the number of ranks; GPUs --gpu .. --gpu+N-1; collectives
// on NCCL communicators), or all on one GPU (N = 1: one rank after another, collectives as
// stand-ins, as a single-rank run has them). --fake: one fake device per rank joined by the fake
// fabric (or, with --gpus 1, one fake device for all, one rank after another).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exec_input.h"
#include "executor/multi_rank.h"
#include "trace/event.h"

namespace dpro::exec_cli {

// The ranks --ranks or --all-ranks names, ascending; none when neither was given (one rank, --rank).
// Throws OptionError("--ranks") for a bad list or a rank the traces do not hold.
std::optional<std::vector<int>> requested_ranks(const ExecFlags& flags, const trace::TraceSet& traces);

struct RankDevices {
  std::vector<std::unique_ptr<executor::Device>> devices;  // one per rank, or one for all (shared)
  std::unique_ptr<executor::CollectiveFabric> fabric;      // none: collectives are stand-ins
  std::vector<int> gpus;                                   // per device; empty for fakes
};

// Opens the devices for `ranks` ranks. Throws OptionError("--gpus") for a count that is neither 1
// nor the number of ranks, InputError("--gpu") for a GPU that cannot be opened. `devices` is empty
// when this build has no CUDA executor; `error` is then, or when several GPUs need NCCL that this
// build lacks, what to print (exit 2).
RankDevices open_rank_devices(const DeviceFlags& flags, std::size_t ranks, std::string& error);

// What `run` and `validate` of several ranks start from: the job, the ranks asked for, their
// devices and the schedule (built on `job`, which stays where it is: heap-held). Null when the
// devices cannot be opened (`error`: what to print, exit 2).
struct MultiRankJob {
  Job job;
  std::vector<int> ranks;
  RankDevices devices;
  executor::MultiRankSchedule schedule;
};
std::unique_ptr<MultiRankJob> prepare_multi_rank(const ExecFlags& flags, const DeviceFlags& device, Logger& log,
                                               std::string& error);

// Runs every rank: together on their devices (run_ranks), or one after another on the one device.
std::vector<executor::RunResult> run_multi(RankDevices& devices, const executor::MultiRankSchedule& m,
                                           const executor::RunOptions& options);

// Every device's fake violations (fake_violations): 1 when any, else 0.
int multi_fake_violations(const RankDevices& devices);

// Lines for the reader: where the ranks ran and each group's communicator.
std::vector<std::string> multi_rank_notes(const RankDevices& devices, const executor::MultiRankSchedule& m);

}  // namespace dpro::exec_cli
