// Fuzz target: a cluster description (configs/clusters/*.json, hw/cluster.h). Oracles: a
// cluster the parser accepts has the bounds its header promises (positive GPU count and
// bandwidths, latencies of 0 or more, efficiencies in [0, 1]) and places ranks on whole nodes
// or refuses with an InputError; bad input is an InputError, never another exception, a crash
// or a hang.
#include <cmath>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "fuzz_support.h"
#include "hw/cluster.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  dpro::comm::ClusterSpec c;
  try {
    c = dpro::comm::parse_cluster(text, "fuzz-cluster.json");
  } catch (const dpro::InputError& e) {
    dpro::fuzz::note(e.what());
    return 0;
  }
  dpro::fuzz::note("accepted");
  const auto link_ok = [](const dpro::comm::Link& l) {
    return std::isfinite(l.bandwidth_gbps) && l.bandwidth_gbps > 0 && std::isfinite(l.latency_us) &&
           l.latency_us >= 0 && l.efficiency >= 0 && l.efficiency <= 1;
  };
  DPRO_FUZZ_CHECK(c.gpus_per_node > 0, text);
  DPRO_FUZZ_CHECK(link_ok(c.intra) && link_ok(c.inter), text);
  DPRO_FUZZ_CHECK(c.intra_efficiency() > 0 && c.intra_efficiency() <= 1, text);
  DPRO_FUZZ_CHECK(c.inter_efficiency() > 0 && c.inter_efficiency() <= 1, text);
  for (int ranks : {1, 2, c.gpus_per_node, c.gpus_per_node + 1, 1 << 20}) {
    try {
      const auto p = dpro::comm::place(c, ranks);
      DPRO_FUZZ_CHECK(p.ranks == ranks && p.nodes >= 1 && p.ranks_per_node >= 1, text);
      DPRO_FUZZ_CHECK(static_cast<long long>(p.nodes) * p.ranks_per_node == ranks, text);
    } catch (const dpro::InputError&) {
    }
  }
  for (const auto& name : c.gpu_names) (void)dpro::comm::gpu_name_matches(name, "NVIDIA H100 80GB HBM3");
  return 0;
}
