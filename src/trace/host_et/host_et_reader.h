#pragma once
// PyTorch host execution traces (Chakra/ET JSON): the reader of their NCCL communication nodes,
// which give the message sizes a Kineto trace may lack (costmodel/comm/comm_ops.h attaches them).
#include <cstdint>
#include <string>
#include <vector>

namespace dpro::trace {

// Largest message a host trace may give (2^40 bytes, a tebibyte): beyond any GPU's memory, so
// larger is a corrupt trace, not a size to model.
inline constexpr std::int64_t kMaxHostEtMessageBytes = std::int64_t{1} << 40;

// One communication op of a PyTorch host execution trace (Chakra/ET JSON "nccl:*" nodes).
struct HostEtComm {
  std::string op;          // "all_reduce", "all_to_all", ...
  std::int64_t bytes = 0;  // the tensor the op was called with (send buffer)
};
// The "nccl:*" nodes of one host execution trace (.json or .json.gz), in execution order.
// Throws InputError naming the file and the node when a node is malformed (not an object, a
// name or id of the wrong type, a tensor whose element count or size is negative, or a message
// above kMaxHostEtMessageBytes).
std::vector<HostEtComm> load_host_et_comms(const std::string& path);
// Files of a list of files/directories, one per rank, ordered by the last number in the name.
std::vector<std::string> expand_host_et_paths(const std::vector<std::string>& paths);

}  // namespace dpro::trace
