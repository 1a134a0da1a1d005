#include "hw/cluster.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>

#include "core/error.h"
#include "core/install_layout.h"
#include "core/json_fields.h"
#include "core/output_file.h"
#include "core/strings.h"

namespace dpro::comm {

const char* to_string(Fabric f) {
  switch (f) {
    case Fabric::kNvlink: return "nvlink";
    case Fabric::kNvswitch: return "nvswitch";
    case Fabric::kPcie: return "pcie";
  }
  return "?";
}

const char* to_string(GpuArch a) {
  switch (a) {
    case GpuArch::kVolta: return "volta";
    case GpuArch::kAmpere: return "ampere";
    case GpuArch::kHopper: return "hopper";
  }
  return "?";
}

// Defaults: an SM moves 128-byte NVLink payloads, ~20 of 25 GB/s per link (NCCL's
// SM70/SM80 NVLink bandwidth); NCCL's PCI_BW is 12 GB/s for a 16 GB/s Gen3 x16 link; its
// NET_BW is 12 GB/s for a 12.5 GB/s (100 Gb/s) NIC.
double ClusterSpec::intra_efficiency() const {
  if (intra.efficiency > 0) return intra.efficiency;
  return fabric == Fabric::kPcie ? 0.75 : 0.8;
}
double ClusterSpec::inter_efficiency() const { return inter.efficiency > 0 ? inter.efficiency : 0.96; }

namespace {

using nlohmann::json;

// No node holds more GPUs than this; a larger figure is a typo (and would overflow an int).
constexpr int kMaxGpusPerNode = 1024;
// Link figures beyond these are typos (and would overflow the nanosecond clock).
constexpr double kMinGbps = 1e-3, kMaxGbps = 1e6, kMaxLatencyUs = 1e6;

const json_field::Range kBandwidth{kMinGbps, kMaxGbps, false, "GB/s per GPU per direction"};
const json_field::Range kLatency{0, kMaxLatencyUs, false, "us"};
const json_field::Range kEfficiency{0, 1, false, ""};

// A key the format does not have is a typo (`latency_usec`) whose value would otherwise be
// silently replaced by a default: an error naming it and the keys there are.
void reject_unknown_keys(const json& object, std::initializer_list<const char*> known, const std::string& file,
                         const std::string& where) {
  for (const auto& item : object.items()) {
    const std::string& key = item.key();  // not a structured binding: clang 14 cannot capture one
    if (std::find_if(known.begin(), known.end(), [&](const char* k) { return key == k; }) != known.end()) continue;
    std::string names;
    for (const char* k : known) names += (names.empty() ? "" : ", ") + std::string(k);
    throw InputError(file, where.empty() ? key : where + "." + key, "unknown key; known keys here: " + names);
  }
}

Link parse_link(const json& root, const char* key, const std::string& file) {
  if (!root.contains(key) || !root[key].is_object()) throw InputError(file, key, "missing object");
  const json& o = root[key];
  const std::string where(key);
  reject_unknown_keys(o,
                      where == "intra_node"
                          ? std::initializer_list<const char*>{"fabric", "nvlink_generation", "bandwidth_gbps",
                                                               "latency_us", "efficiency"}
                          : std::initializer_list<const char*>{"bandwidth_gbps", "latency_us", "efficiency"},
                      file, where);
  Link l;
  l.bandwidth_gbps = json_field::required_number(o, "bandwidth_gbps", kBandwidth, file, where + ".bandwidth_gbps");
  // Required like the bandwidth: a missing latency would model the link as having none.
  l.latency_us = json_field::required_number(o, "latency_us", kLatency, file, where + ".latency_us");
  l.efficiency = json_field::number(o, "efficiency", kEfficiency, file, where + ".efficiency").value_or(0);
  return l;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open cluster file");
  note_opened_input(path);  // no output of this process may replace it
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

ClusterSpec parse_cluster(const std::string& text, const std::string& file) {
  json root = json_field::parse_json(text, file);
  if (!root.is_object()) throw InputError(file, "", "a cluster file is a JSON object");
  reject_unknown_keys(root, {"name", "description", "gpu_arch", "gpu_names", "gpus_per_node", "intra_node", "inter_node"},
                      file, "");
  ClusterSpec c;
  c.file = file;
  if (!root.contains("name") || !root["name"].is_string() || root["name"].get<std::string>().empty())
    throw InputError(file, "name", "missing cluster name");
  c.name = root["name"];
  c.description = json_field::optional_string(root, "description", file, "description");
  const std::string arch = json_field::optional_string(root, "gpu_arch", file, "gpu_arch");
  if (arch == "volta") c.arch = GpuArch::kVolta;
  else if (arch == "ampere") c.arch = GpuArch::kAmpere;
  else if (arch == "hopper") c.arch = GpuArch::kHopper;
  else throw InputError(file, "gpu_arch", "must be volta, ampere or hopper, got '" + arch + "'");
  if (root.contains("gpu_names")) {
    if (!root["gpu_names"].is_array()) throw InputError(file, "gpu_names", "must be a list of GPU names");
    for (const auto& n : root["gpu_names"]) {
      if (!n.is_string() || n.get<std::string>().empty())
        throw InputError(file, "gpu_names", "must be a list of GPU names, got " + n.dump());
      c.gpu_names.push_back(n.get<std::string>());
    }
  }
  c.gpus_per_node = static_cast<int>(
      json_field::required_number(root, "gpus_per_node", {1, kMaxGpusPerNode, true}, file, "gpus_per_node"));
  c.intra = parse_link(root, "intra_node", file);
  c.inter = parse_link(root, "inter_node", file);
  const std::string fabric = json_field::optional_string(root["intra_node"], "fabric", file, "intra_node.fabric");
  if (fabric == "nvlink") c.fabric = Fabric::kNvlink;
  else if (fabric == "nvswitch") c.fabric = Fabric::kNvswitch;
  else if (fabric == "pcie") c.fabric = Fabric::kPcie;
  else throw InputError(file, "intra_node.fabric", "must be nvlink, nvswitch or pcie, got '" + fabric + "'");
  c.nvlink_generation = static_cast<int>(
      json_field::number(root["intra_node"], "nvlink_generation", {0, 10, true}, file, "intra_node.nvlink_generation")
          .value_or(0));
  return c;
}

ClusterSpec load_cluster_file(const std::string& path) { return parse_cluster(read_file(path), path); }

void apply_setting(ClusterSpec& c, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos) throw OptionError("set", assignment, "expected key=value");
  const std::string key = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  double v = 0;
  if (!parse_decimal(text, v)) throw OptionError("set", assignment, "value is not a decimal number");
  // The same ranges as in a cluster file, and the same wording.
  auto in = [&](const json_field::Range& range) {
    if (!json_field::in_range(range, v)) throw OptionError("set", assignment, "must be " + json_field::describe(range));
    return v;
  };
  if (key == "network.inter_node_gbps") c.inter.bandwidth_gbps = in(kBandwidth);
  else if (key == "network.intra_node_gbps") c.intra.bandwidth_gbps = in(kBandwidth);
  else if (key == "network.inter_node_latency_us") c.inter.latency_us = in(kLatency);
  else if (key == "network.intra_node_latency_us") c.intra.latency_us = in(kLatency);
  else if (key == "cluster.gpus_per_node") {
    c.gpus_per_node = static_cast<int>(in({1, kMaxGpusPerNode, true}));
  } else {
    throw OptionError("set", assignment,
                      "unknown key '" + key + "'; known: network.inter_node_gbps, network.intra_node_gbps, "
                     "network.inter_node_latency_us, network.intra_node_latency_us, cluster.gpus_per_node");
  }
}

ClusterCatalog ClusterCatalog::load_directory(const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) throw InputError(dir, "", "cluster directory not found");
  ClusterCatalog cat;
  cat.dir_ = dir;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    ClusterSpec c = load_cluster_file(f.string());
    if (cat.clusters_.count(c.name)) throw InputError(f.string(), "name", "cluster '" + c.name + "' defined twice");
    cat.clusters_.emplace(c.name, std::move(c));
  }
  if (cat.clusters_.empty()) throw InputError(dir, "", "the clusters directory has no cluster files (*.json)");
  return cat;
}

std::string ClusterCatalog::default_directory() {
  return (install::resource_root() / "configs/clusters").string();
}

const ClusterSpec* ClusterCatalog::find(const std::string& name) const {
  auto it = clusters_.find(name);
  return it == clusters_.end() ? nullptr : &it->second;
}

const ClusterSpec& ClusterCatalog::get(const std::string& name, const std::string& option) const {
  if (const ClusterSpec* c = find(name)) return *c;
  throw OptionError(option, name, "unknown cluster; known: " + known_names(), dir_);
}

std::string ClusterCatalog::known_names() const {
  std::string known;
  for (const auto& [n, c] : clusters_) known += (known.empty() ? "" : ", ") + n;
  return known;
}

bool gpu_name_matches(const std::string& pattern, const std::string& device_name) {
  if (!pattern.empty() && pattern.back() == '$') {
    const std::size_t n = pattern.size() - 1;
    return device_name.size() >= n && device_name.compare(device_name.size() - n, n, pattern, 0, n) == 0;
  }
  return device_name.find(pattern) != std::string::npos;
}

std::size_t gpu_name_length(const std::string& pattern) {
  return !pattern.empty() && pattern.back() == '$' ? pattern.size() - 1 : pattern.size();
}

const ClusterSpec* ClusterCatalog::guess(const std::vector<std::string>& device_names) const {
  const ClusterSpec* best = nullptr;
  std::size_t best_len = 0;
  for (const std::string& device : device_names) {
    for (const auto& [name, c] : clusters_) {
      for (const std::string& pattern : c.gpu_names) {
        const std::size_t len = gpu_name_length(pattern);
        if (gpu_name_matches(pattern, device) && len > best_len) {
          best = &c;
          best_len = len;
        }
      }
    }
  }
  return best;
}

Placement place(const ClusterSpec& cluster, int ranks) {
  if (ranks < 1) throw InputError(cluster.file, "ranks " + std::to_string(ranks), "must be at least 1");
  Placement p;
  p.ranks = ranks;
  if (ranks <= cluster.gpus_per_node) {
    p.nodes = 1;
    p.ranks_per_node = ranks;
    return p;
  }
  if (ranks % cluster.gpus_per_node != 0)
    throw InputError(cluster.file, "ranks " + std::to_string(ranks),
                     "do not divide into whole nodes of " + std::to_string(cluster.gpus_per_node) + " GPUs (cluster " +
                         cluster.name + ")");
  p.nodes = ranks / cluster.gpus_per_node;
  p.ranks_per_node = cluster.gpus_per_node;
  return p;
}

}  // namespace dpro::comm
