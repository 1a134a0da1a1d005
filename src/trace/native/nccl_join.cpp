#include "trace/native/nccl_join.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <unordered_map>

namespace dpro::native {

std::string normalise_nccl_op(std::string_view func) {
  std::string out;
  for (char c : func)
    if (std::isalnum(static_cast<unsigned char>(c)))
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (out.starts_with("nccl")) out.erase(0, 4);
  return out;
}

std::optional<std::string> nccl_op_from_kernel_name(std::string_view name) {
  for (std::string_view prefix : {"ncclDevKernel_", "ncclKernel_"}) {
    if (!name.starts_with(prefix)) continue;
    name.remove_prefix(prefix.size());
    return normalise_nccl_op(name.substr(0, name.find_first_of("_(")));
  }
  if (name.starts_with("nccl")) return std::string("unknown");
  return std::nullopt;
}

NcclJoin::NcclJoin(const NativeCapture& capture)
    : capture_(capture), claimed_(capture.nccl_colls.size(), false) {
  by_time_.resize(capture.nccl_colls.size());
  for (std::size_t i = 0; i < by_time_.size(); ++i) by_time_[i] = i;
  std::stable_sort(by_time_.begin(), by_time_.end(), [&](std::size_t a, std::size_t b) {
    return capture.nccl_colls[a].start < capture.nccl_colls[b].start;
  });
  for (const auto& ext : capture.external_correlations)
    if (ext.kind == kNcclExternalKind) launch_of_correlation_[ext.correlation] = ext.external_id;
  for (std::size_t i = 0; i < capture.nccl_launches.size(); ++i)
    launch_index_[capture.nccl_launches[i].launch_id] = i;
  for (auto i : by_time_) {
    const auto& c = capture.nccl_colls[i];
    group_colls_[{c.comm_hash, c.group_id}].push_back(i);
  }
}

std::optional<trace::CollectiveInfo> NcclJoin::from_colls(
    const std::vector<std::size_t>& colls) const {
  const auto& first = capture_.nccl_colls[colls.front()];
  trace::CollectiveInfo info;
  bool p2p = first.flags & kCollIsP2p;
  if (p2p) {
    bool send = false, recv = false;
    for (auto i : colls) {
      auto op = normalise_nccl_op(capture_.str(capture_.nccl_colls[i].func));
      send |= op == "send";
      recv |= op == "recv";
    }
    info.op = send && recv ? "sendrecv" : send ? "send" : "recv";
  } else {
    info.op = normalise_nccl_op(capture_.str(first.func));
  }
  info.group_name = std::to_string(first.comm_hash);
  for (const auto& comm : capture_.nccl_comms)
    if (comm.comm_hash == first.comm_hash) info.group_size = comm.nranks;
  std::int64_t count = 0;
  for (auto i : colls) count += static_cast<std::int64_t>(capture_.nccl_colls[i].count);
  info.in_nelems = count;
  if (auto dtype = capture_.str(first.datatype); !dtype.empty()) info.dtype = std::string(dtype);
  if (first.flags & kCollHasSequence) info.sequence = static_cast<std::int64_t>(first.sequence);
  if (auto algo = capture_.str(first.algo); !algo.empty()) info.algorithm = std::string(algo);
  if (auto proto = capture_.str(first.proto); !proto.empty()) info.protocol = std::string(proto);
  if (first.channels > 0) info.channels = static_cast<int>(first.channels);
  return info;
}

// The next unclaimed collective of a group, or all its unclaimed p2p operations (NCCL runs
// the sends and receives of one group in one kernel).
std::vector<std::size_t> NcclJoin::next_in_group(const std::vector<std::size_t>& colls) const {
  std::vector<std::size_t> picked;
  for (auto i : colls) {
    if (claimed_[i]) continue;
    bool p2p = capture_.nccl_colls[i].flags & kCollIsP2p;
    if (picked.empty()) {
      picked.push_back(i);
      if (!p2p) break;
    } else if (p2p) {
      picked.push_back(i);
    }
  }
  return picked;
}

std::optional<trace::CollectiveInfo> NcclJoin::claim(const StoredKernel& kernel) {
  std::vector<std::size_t> picked;
  // Correlation -> KernelLaunch -> (communicator, group) -> its operations.
  if (auto ext = launch_of_correlation_.find(kernel.correlation); ext != launch_of_correlation_.end()) {
    if (auto l = launch_index_.find(ext->second); l != launch_index_.end()) {
      const auto& launch = capture_.nccl_launches[l->second];
      auto group = group_colls_.find({launch.comm_hash, launch.group_id});
      if (group != group_colls_.end()) picked = next_in_group(group->second);
    }
  }
  auto kernel_op = nccl_op_from_kernel_name(capture_.str(kernel.name));
  if (picked.empty() && kernel_op) {
    for (auto i : by_time_) {
      const auto& c = capture_.nccl_colls[i];
      if (claimed_[i]) continue;
      bool p2p = c.flags & kCollIsP2p;
      auto op = normalise_nccl_op(capture_.str(c.func));
      if (p2p ? (*kernel_op == "sendrecv" || *kernel_op == op) : op == *kernel_op) {
        picked.push_back(i);
        break;
      }
    }
  }
  if (picked.empty()) {
    if (!kernel_op) return std::nullopt;
    trace::CollectiveInfo info;
    info.op = *kernel_op;
    return info;
  }
  for (auto i : picked) claimed_[i] = true;
  return from_colls(picked);
}

}  // namespace dpro::native
