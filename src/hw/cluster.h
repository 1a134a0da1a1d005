#pragma once
// Cluster descriptions (configs/clusters/*.json): how many GPUs a node holds, the intra-node
// fabric (NVLink / NVSwitch / PCIe) and the inter-node network. Bandwidths are GB/s
// (1e9 bytes/s) per GPU and per direction, at line rate; the collective model applies the
// protocol efficiencies. Latencies are microseconds (double) in configs only.
#include <map>
#include <optional>
#include <string>
#include <vector>


namespace dpro::comm {

enum class Fabric { kNvlink, kNvswitch, kPcie };
enum class GpuArch { kVolta, kAmpere, kHopper };
const char* to_string(Fabric f);
const char* to_string(GpuArch a);

struct Link {
  double bandwidth_gbps = 0;  // GB/s per GPU per direction, line rate
  double latency_us = 0;      // added to NCCL's per-hop transport latency
  double efficiency = 0;      // fraction of line rate a NCCL kernel moves (0: fabric default)
};

struct ClusterSpec {
  std::string name;         // "dgx-a100"
  std::string description;
  std::string file;         // where it was read from ("" for built in code)
  GpuArch arch = GpuArch::kAmpere;
  // Substrings of CUDA device names that identify it; one ending in '$' must end the name
  // ("NVIDIA H200$" is the SXM H200, not "NVIDIA H200 NVL").
  std::vector<std::string> gpu_names;
  int gpus_per_node = 8;
  Fabric fabric = Fabric::kNvswitch;
  int nvlink_generation = 0;           // 0 for PCIe
  Link intra;                           // per GPU, inside a node
  Link inter;                           // per GPU's share of the node's NICs

  double intra_efficiency() const;     // intra.efficiency or the fabric default
  double inter_efficiency() const;
};

// Parses and validates one cluster file. Throws InputError(file, key, why) for a missing or
// non-positive bandwidth, a missing latency, a non-positive GPU count, an unknown fabric or
// architecture, and a key the format does not have (a typo would otherwise become a default).
ClusterSpec load_cluster_file(const std::string& path);
ClusterSpec parse_cluster(const std::string& text, const std::string& file);

// Applies one "--set key=value" override. Keys: network.inter_node_gbps,
// network.intra_node_gbps, network.inter_node_latency_us, network.intra_node_latency_us,
// cluster.gpus_per_node. Throws OptionError("set", assignment) for an unknown key or a bad value.
void apply_setting(ClusterSpec& cluster, const std::string& assignment);

// Whether a gpu_names entry matches a CUDA device name, and the length it matches with (the
// longest match wins a guess).
bool gpu_name_matches(const std::string& pattern, const std::string& device_name);
std::size_t gpu_name_length(const std::string& pattern);

// Every *.json in a directory, by name; a directory without any is an error.
class ClusterCatalog {
 public:
  static ClusterCatalog load_directory(const std::string& dir);
  static std::string default_directory();  // <source>/configs/clusters (a CLI may override it)

  const ClusterSpec* find(const std::string& name) const;
  // Throws OptionError naming `option` (the option that named the cluster) and the known names.
  const ClusterSpec& get(const std::string& name, const std::string& option = "cluster") const;
  // The cluster a job ran on, from the CUDA names of its GPUs (longest matching substring wins).
  const ClusterSpec* guess(const std::vector<std::string>& device_names) const;
  const std::map<std::string, ClusterSpec>& all() const { return clusters_; }
  std::string known_names() const;  // "dgx-a100, dgx-h100, ..."
  const std::string& directory() const { return dir_; }

 private:
  std::string dir_;
  std::map<std::string, ClusterSpec> clusters_;
};

// Ranks laid out on nodes, contiguous (rank r on node r / ranks_per_node).
struct Placement {
  int ranks = 1;
  int nodes = 1;
  int ranks_per_node = 1;
};
// Throws InputError when ranks > gpus_per_node and does not divide into whole nodes.
Placement place(const ClusterSpec& cluster, int ranks);

}  // namespace dpro::comm
