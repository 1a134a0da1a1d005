#include <catch2/catch.hpp>

#include "comm_fixtures.h"
#include "core/error.h"
#include "hw/cluster.h"

using namespace dpro;

namespace {

const char* kGood = R"({"name": "box", "gpu_arch": "ampere", "gpus_per_node": 8,
  "intra_node": {"fabric": "nvswitch", "bandwidth_gbps": 300, "latency_us": 0},
  "inter_node": {"bandwidth_gbps": 25, "latency_us": 1}})";

std::string with(const std::string& from, const std::string& to) {
  std::string s = kGood;
  const auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("the bundled cluster files load and describe the systems") {
  const auto cat = comm::ClusterCatalog::load_directory(test::clusters_dir());
  for (const char* name : {"dgx1-v100", "dgx-a100", "dgx-h100", "dgx-h200", "pcie-a100"}) CHECK(cat.find(name) != nullptr);
  // DGX H200: the NVLink4/NVSwitch fabric and the 400 Gb/s NICs of the DGX H100.
  const comm::ClusterSpec& h200 = cat.get("dgx-h200");
  CHECK(h200.arch == comm::GpuArch::kHopper);
  CHECK(h200.fabric == comm::Fabric::kNvswitch);
  CHECK(h200.intra.bandwidth_gbps == 450.0);
  CHECK(h200.inter.bandwidth_gbps == 50.0);
  const comm::ClusterSpec& h = cat.get("dgx-h100");
  CHECK(h.gpus_per_node == 8);
  CHECK(h.fabric == comm::Fabric::kNvswitch);
  CHECK(h.arch == comm::GpuArch::kHopper);
  CHECK(h.intra.bandwidth_gbps == 450.0);
  CHECK(h.inter.bandwidth_gbps == 50.0);
  CHECK(cat.get("pcie-a100").fabric == comm::Fabric::kPcie);
  REQUIRE_THROWS_WITH(cat.get("dgx-z9"), Catch::Contains("cluster dgx-z9: unknown cluster") && Catch::Contains("dgx-h100"));
  REQUIRE_THROWS_WITH(cat.get("dgx-z9", "--origin-cluster"), Catch::Contains("--origin-cluster dgx-z9: unknown cluster"));
}

TEST_CASE("the cluster of a trace is guessed from its GPU names") {
  const auto cat = comm::ClusterCatalog::load_directory(test::clusters_dir());
  const auto dlrm = test::load_dlrm();
  REQUIRE(cat.guess(dlrm.traces.gpu_names()) != nullptr);
  CHECK(cat.guess(dlrm.traces.gpu_names())->name == "dgx1-v100");
  const auto a100 = test::load_a100();
  REQUIRE(cat.guess(a100.traces.gpu_names()) != nullptr);
  CHECK(cat.guess(a100.traces.gpu_names())->name == "dgx-a100");
  trace::TraceSet unknown;
  unknown.ranks.emplace_back();
  unknown.ranks[0].devices.push_back({0, "Mystery GPU 9000", {}, {}, {}, {}});
  CHECK(cat.guess(unknown.gpu_names()) == nullptr);
  // The H200 SXM calls itself "NVIDIA H200" (traces/h200); the PCIe H200 NVL and a GH200 are
  // other systems, which an entry anchored at the end of the name ("NVIDIA H200$") leaves out.
  auto guess_of = [&](const std::string& name) {
    unknown.ranks[0].devices[0].name = name;
    const comm::ClusterSpec* c = cat.guess(unknown.gpu_names());
    return c ? c->name : std::string("none");
  };
  CHECK(guess_of("NVIDIA H200") == "dgx-h200");
  CHECK(guess_of("NVIDIA H200 NVL") == "none");
  CHECK(guess_of("NVIDIA GH200 480GB") == "none");
  CHECK(guess_of("NVIDIA H100 80GB HBM3") == "dgx-h100");
  CHECK(comm::gpu_name_matches("H200$", "NVIDIA H200"));
  CHECK_FALSE(comm::gpu_name_matches("H200$", "NVIDIA H200 NVL"));
  CHECK(comm::gpu_name_length("NVIDIA H200$") == 11);
  const auto h200 = test::load_job({test::source_path("traces/h200/bert-ddp-emit-nvtx-step")});
  REQUIRE(cat.guess(h200.traces.gpu_names()) != nullptr);
  CHECK(cat.guess(h200.traces.gpu_names())->name == "dgx-h200");
}

TEST_CASE("a clusters directory without cluster files is an error saying so") {
  const std::string dir = test::fresh_dir("comm_empty_clusters");
  REQUIRE_THROWS_WITH(comm::ClusterCatalog::load_directory(dir),
                      Catch::Contains(dir) && Catch::Contains("has no cluster files"));
}

TEST_CASE("bad cluster files are rejected with the file and the key") {
  CHECK_NOTHROW(comm::parse_cluster(kGood, "good.json"));
  SECTION("missing bandwidth") {
    REQUIRE_THROWS_WITH(comm::parse_cluster(with("\"bandwidth_gbps\": 25, ", ""), "c.json"),
                        Catch::Contains("c.json") && Catch::Contains("inter_node.bandwidth_gbps") &&
                            Catch::Contains("missing"));
  }
  SECTION("negative bandwidth") {
    REQUIRE_THROWS_WITH(comm::parse_cluster(with("300", "-300"), "c.json"),
                        Catch::Contains("intra_node.bandwidth_gbps") && Catch::Contains("from 0.001 to 1e6 GB/s"));
  }
  SECTION("zero bandwidth") {
    REQUIRE_THROWS_WITH(comm::parse_cluster(with("25,", "0,"), "c.json"),
                        Catch::Contains("inter_node.bandwidth_gbps") && Catch::Contains("from 0.001 to 1e6 GB/s"));
  }
  SECTION("bandwidth that is not a number") {
    REQUIRE_THROWS_WITH(comm::parse_cluster(with("300", "\"fast\""), "c.json"), Catch::Contains("must be a number"));
  }
  SECTION("unknown fabric") {
    REQUIRE_THROWS_WITH(comm::parse_cluster(with("nvswitch", "carrier-pigeon"), "c.json"),
                        Catch::Contains("intra_node.fabric") && Catch::Contains("carrier-pigeon"));
  }
  SECTION("no GPUs per node") {
    REQUIRE_THROWS_WITH(comm::parse_cluster(with("\"gpus_per_node\": 8", "\"gpus_per_node\": 0"), "c.json"),
                        Catch::Contains("gpus_per_node"));
  }
  SECTION("negative latency") {
    REQUIRE_THROWS_WITH(comm::parse_cluster(with("\"latency_us\": 1", "\"latency_us\": -1"), "c.json"),
                        Catch::Contains("inter_node.latency_us"));
  }
  SECTION("bandwidth or latency beyond any network") {
    REQUIRE_THROWS_WITH(comm::parse_cluster(with("300", "1e-300"), "c.json"),
                        Catch::Contains("intra_node.bandwidth_gbps") && Catch::Contains("from 0.001 to 1e6"));
    REQUIRE_THROWS_WITH(comm::parse_cluster(with("\"latency_us\": 1", "\"latency_us\": 1e300"), "c.json"),
                        Catch::Contains("inter_node.latency_us") && Catch::Contains("from 0 to 1e6"));
  }
  SECTION("a value of the wrong type names its key") {
    REQUIRE_THROWS_WITH(comm::parse_cluster(with("\"ampere\"", "7"), "c.json"),
                        Catch::Contains("c.json") && Catch::Contains("gpu_arch") && Catch::Contains("must be a string"));
    REQUIRE_THROWS_WITH(comm::parse_cluster(with("\"nvswitch\"", "[]"), "c.json"), Catch::Contains("intra_node.fabric"));
    REQUIRE_THROWS_WITH(comm::parse_cluster(with("\"gpus_per_node\"", "\"gpu_names\": [1], \"gpus_per_node\""), "c.json"),
                        Catch::Contains("gpu_names"));
    REQUIRE_THROWS_WITH(comm::parse_cluster(with("\"fabric\"", "\"nvlink_generation\": \"3\", \"fabric\""), "c.json"),
                        Catch::Contains("intra_node.nvlink_generation"));
    REQUIRE_THROWS_WITH(comm::parse_cluster(with("\"gpus_per_node\": 8", "\"gpus_per_node\": 9223372036854775807"),
                                            "c.json"),
                        Catch::Contains("gpus_per_node") && Catch::Contains("1 to 1024"));
  }
  SECTION("missing or misspelled latency, and unknown keys") {
    // Before, a missing latency_us silently became 0 and unknown keys were ignored.
    REQUIRE_THROWS_WITH(comm::parse_cluster(with(", \"latency_us\": 1", ""), "c.json"),
                        Catch::Contains("c.json") && Catch::Contains("inter_node.latency_us") &&
                            Catch::Contains("missing"));
    REQUIRE_THROWS_WITH(comm::parse_cluster(with("\"latency_us\": 1", "\"latency_usec\": 1"), "c.json"),
                        Catch::Contains("c.json") && Catch::Contains("inter_node.latency_usec: unknown key"));
    REQUIRE_THROWS_WITH(comm::parse_cluster(with("\"gpus_per_node\"", "\"gpu_per_node\": 8, \"gpus_per_node\""), "c.json"),
                        Catch::Contains("c.json: gpu_per_node: unknown key") && Catch::Contains("gpus_per_node"));
    REQUIRE_THROWS_WITH(comm::parse_cluster(with("\"fabric\"", "\"bandwith_gbps\": 9, \"fabric\""), "c.json"),
                        Catch::Contains("intra_node.bandwith_gbps: unknown key"));
  }
  SECTION("not JSON") {
    REQUIRE_THROWS_AS(comm::parse_cluster("{", "c.json"), InputError);
  }
  SECTION("a missing file") {
    REQUIRE_THROWS_WITH(comm::load_cluster_file("/nonexistent/cluster.json"), Catch::Contains("cannot open"));
  }
}

TEST_CASE("ranks that do not divide into nodes are rejected") {
  const comm::ClusterSpec c = comm::parse_cluster(kGood, "box.json");
  CHECK(comm::place(c, 4).nodes == 1);
  CHECK(comm::place(c, 4).ranks_per_node == 4);
  CHECK(comm::place(c, 1024).nodes == 128);
  REQUIRE_THROWS_WITH(comm::place(c, 12), Catch::Contains("ranks 12") && Catch::Contains("whole nodes of 8"));
  REQUIRE_THROWS_AS(comm::place(c, 0), InputError);
}

TEST_CASE("set changes one cluster parameter and rejects unknown keys and bad values") {
  comm::ClusterSpec c = comm::parse_cluster(kGood, "box.json");
  comm::apply_setting(c, "network.inter_node_gbps=50");
  comm::apply_setting(c, "network.intra_node_gbps=600");
  comm::apply_setting(c, "network.inter_node_latency_us=3.5");
  CHECK(c.inter.bandwidth_gbps == 50);
  CHECK(c.intra.bandwidth_gbps == 600);
  CHECK(c.inter.latency_us == 3.5);
  REQUIRE_THROWS_WITH(comm::apply_setting(c, "network.warp_speed=9"), Catch::Contains("unknown key"));
  REQUIRE_THROWS_WITH(comm::apply_setting(c, "network.inter_node_gbps=-5"), Catch::Contains("from 0.001 to 1e6 GB/s"));
  REQUIRE_THROWS_WITH(comm::apply_setting(c, "network.inter_node_gbps=fast"), Catch::Contains("not a decimal number"));
  // strtod once read these as 16 and 50: the value must be a decimal number and nothing else.
  for (const char* bad : {"network.inter_node_gbps=0x10", "network.inter_node_gbps=50GB", "network.inter_node_gbps=",
                          "network.intra_node_gbps=1e400"})
    REQUIRE_THROWS_WITH(comm::apply_setting(c, bad), Catch::Contains("not a decimal number"));
  CHECK(c.inter.bandwidth_gbps == 50);
  REQUIRE_THROWS_WITH(comm::apply_setting(c, "network.inter_node_gbps"), Catch::Contains("key=value"));
  REQUIRE_THROWS_WITH(comm::apply_setting(c, "cluster.gpus_per_node=4.5"), Catch::Contains("whole number"));
  REQUIRE_THROWS_WITH(comm::apply_setting(c, "cluster.gpus_per_node=1e300"), Catch::Contains("whole number"));
  REQUIRE_THROWS_WITH(comm::apply_setting(c, "network.inter_node_gbps=1e-300"), Catch::Contains("0.001 to 1e6"));
  REQUIRE_THROWS_WITH(comm::apply_setting(c, "network.inter_node_gbps=inf"), Catch::Contains("0.001 to 1e6"));
  REQUIRE_THROWS_WITH(comm::apply_setting(c, "network.inter_node_latency_us=nan"), Catch::Contains("from 0 to 1e6 us"));
  REQUIRE_THROWS_WITH(comm::apply_setting(c, "network.intra_node_latency_us=1e300"), Catch::Contains("from 0 to 1e6 us"));
  comm::apply_setting(c, "cluster.gpus_per_node=4");
  CHECK(comm::place(c, 16).nodes == 4);
}
