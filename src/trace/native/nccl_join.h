#pragma once
// Joins NCCL kernels (CUPTI kernel records) to the NCCL profiler plugin's Coll/P2p records.
// Primary path: the kernel's correlation id has an external correlation of kind
// kNcclExternalKind whose id is a KernelLaunch event; that launch names (communicator, group)
// and the kernel takes the next collective of that group (all p2p operations of the group at
// once). Fallback (NCCL 2.27 / v4 plugin, no KernelLaunch events): kernels whose name starts
// with "nccl" take the next unclaimed operation of the same kind, in time order.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "trace/event.h"
#include "trace/native/native_reader.h"

namespace dpro::native {

// "AllReduce" -> "allreduce", "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL" -> "reducescatter".
std::string normalise_nccl_op(std::string_view func);
std::optional<std::string> nccl_op_from_kernel_name(std::string_view kernel_name);

class NcclJoin {
 public:
  explicit NcclJoin(const NativeCapture& capture);
  // Collective metadata for a kernel, or nullopt when it is not an NCCL kernel. Each plugin
  // operation is handed out at most once.
  std::optional<trace::CollectiveInfo> claim(const StoredKernel& kernel);

 private:
  std::vector<std::size_t> next_in_group(const std::vector<std::size_t>& colls) const;
  std::optional<trace::CollectiveInfo> from_colls(const std::vector<std::size_t>& colls) const;
  const NativeCapture& capture_;
  std::vector<bool> claimed_;
  std::vector<std::size_t> by_time_;  // coll indices ordered by start
  std::unordered_map<std::uint32_t, std::uint64_t> launch_of_correlation_;
  std::unordered_map<std::uint64_t, std::size_t> launch_index_;
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::vector<std::size_t>> group_colls_;
};

}  // namespace dpro::native
