#pragma once
// `dpro-replay replay` communication what-ifs, one option group applied in one pass:
//   --cluster NAME          re-time every NCCL op for another cluster (configs/clusters/NAME.json)
//   --set KEY=VALUE         change the target cluster (network.inter_node_gbps=50, ...; GB/s, us)
//   --ranks N               data-parallel scale-out/in to N ranks (world-spanning groups resized)
//   --bucket-mb X           fuse consecutive all-reduces into gradient buckets of at most X MB
// with --origin-cluster (default: guessed from the trace's GPUs), --clusters-dir, and
// --comm-sizes (host execution traces giving message sizes the kernel trace lacks).
// Each NCCL op keeps its measured transfer time and is scaled by the ratio of the collective
// model's times (target / origin); the model is first calibrated on the trace's own ops.
// With --ranks N >= the trace's ranks, the trace ranks stand for all N (rank g runs trace rank
// g mod W), which is exact by symmetry (with --allow-partial and ranks missing, the present
// ranks stand in for the missing ones: not exact); for N < W the what-if replays the graph of
// the first N ranks (comm::scale_in), so its report, JSON and timeline are the N-rank job's.
// Without NCCL ops in the trace no cluster is needed: one the catalog cannot guess is no error.
#include <memory>

#include "whatif_option.h"

namespace dpro::cli {

std::unique_ptr<WhatIfOption> make_cluster_whatif();

}  // namespace dpro::cli
