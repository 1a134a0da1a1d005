#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "comm_fixtures.h"
#include "core/error.h"
#include "costmodel/comm/collective_model.h"

using namespace dpro;
using comm::CollectiveOp;

namespace {

const comm::ClusterCatalog& catalog() {
  static const auto cat = comm::ClusterCatalog::load_directory(test::clusters_dir());
  return cat;
}

comm::CollectiveCall call(const comm::CollectiveModel& m, CollectiveOp op, std::int64_t bytes, int ranks) {
  return {op, bytes, comm::place(m.cluster(), ranks)};
}

double busbw(const comm::CollectiveModel& m, CollectiveOp op, std::int64_t bytes, int ranks) {
  const auto c = call(m, op, bytes, ranks);
  return comm::CollectiveModel::bus_bandwidth_gbps(c, m.estimate(c).time_us);
}

}  // namespace

TEST_CASE("large all-reduce bus bandwidth on 8 GPUs is within 15% of NVIDIA's nccl-tests figures") {
  const std::int64_t bytes = std::int64_t{8} << 30;
  // ~230 GB/s on 8 A100 (NVIDIA/nccl-tests#149), ~480 GB/s with NVLink SHARP on 8 H100
  // (NVIDIA/nccl-tests#212); see docs/communication.md.
  const comm::CollectiveModel a100(catalog().get("dgx-a100")), h100(catalog().get("dgx-h100"));
  CHECK(busbw(a100, CollectiveOp::kAllReduce, bytes, 8) == Approx(230.0).epsilon(0.15));
  CHECK(busbw(h100, CollectiveOp::kAllReduce, bytes, 8) == Approx(480.0).epsilon(0.15));
  CHECK(h100.estimate(call(h100, CollectiveOp::kAllReduce, bytes, 8)).algorithm == comm::Algorithm::kNvls);
  CHECK(a100.estimate(call(a100, CollectiveOp::kAllReduce, bytes, 8)).algorithm == comm::Algorithm::kRing);
}

TEST_CASE("small messages are latency-bound and pick a low-latency protocol") {
  const comm::CollectiveModel m(catalog().get("dgx-a100"));
  const auto e = m.estimate(call(m, CollectiveOp::kAllReduce, 1024, 8));
  CHECK(e.protocol == comm::Protocol::kLL);
  CHECK(e.time_us == Approx(6.6 + 14 * 0.6).margin(0.5));  // NCCL ring LL: base + 2(n-1) hops
  CHECK(m.estimate(call(m, CollectiveOp::kAllReduce, 1024, 1)).time_us == 0.0);
}

TEST_CASE("every operation costs more for more bytes and for slower links") {
  const comm::ClusterSpec base = catalog().get("dgx-a100");
  comm::ClusterSpec slow = base;
  slow.inter.bandwidth_gbps /= 4;
  slow.intra.bandwidth_gbps /= 4;
  const comm::CollectiveModel fast_m(base), slow_m(slow);
  for (CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kAllGather, CollectiveOp::kReduceScatter,
                          CollectiveOp::kBroadcast, CollectiveOp::kReduce, CollectiveOp::kAllToAll,
                          CollectiveOp::kSendRecv, CollectiveOp::kGather, CollectiveOp::kScatter}) {
    for (int ranks : {2, 8, 64}) {
      INFO(comm::to_string(op) << " on " << ranks << " ranks");
      const double small = fast_m.estimate(call(fast_m, op, 1 << 20, ranks)).time_us;
      const double large = fast_m.estimate(call(fast_m, op, 1 << 28, ranks)).time_us;
      CHECK(small > 0);
      CHECK(large > small);
      CHECK(slow_m.estimate(call(slow_m, op, 1 << 28, ranks)).time_us > large);
    }
  }
}

TEST_CASE("across nodes the network bounds the bandwidth and a faster network helps") {
  comm::ClusterSpec c = catalog().get("dgx-a100");
  const comm::CollectiveModel hdr(c);
  // 8 NICs of 25 GB/s per node: bus bandwidth near the node's 200 GB/s x 0.96, below NVLink's 240.
  const double bw = busbw(hdr, CollectiveOp::kAllReduce, std::int64_t{8} << 30, 64);
  CHECK(bw == Approx(192.0).epsilon(0.05));
  c.inter.bandwidth_gbps = 50;
  const comm::CollectiveModel ndr(c);
  CHECK(busbw(ndr, CollectiveOp::kAllReduce, std::int64_t{8} << 30, 64) > bw);
}

TEST_CASE("unknown collectives are rejected by name") {
  CHECK(comm::parse_collective_op("allreduce") == CollectiveOp::kAllReduce);
  CHECK(comm::parse_collective_op("all_to_all") == CollectiveOp::kAllToAll);
  CHECK(comm::parse_collective_op("nccl:all_gather") == CollectiveOp::kAllGather);
  CHECK(comm::parse_collective_op("send") == CollectiveOp::kSendRecv);
  // Names PyTorch's ProcessGroupNCCL records as "Collective name" (before, "unknown collective").
  CHECK(comm::parse_collective_op("allreduce_coalesced") == CollectiveOp::kAllReduce);
  CHECK(comm::parse_collective_op("barrier") == CollectiveOp::kAllReduce);
  CHECK(comm::parse_collective_op("allgather_coalesced") == CollectiveOp::kAllGather);
  CHECK(comm::parse_collective_op("_broadcast_oop") == CollectiveOp::kBroadcast);
  CHECK(comm::parse_collective_op("_reduce_oop") == CollectiveOp::kReduce);
  CHECK(comm::parse_collective_op("all_to_allv") == CollectiveOp::kAllToAll);
  CHECK(comm::parse_collective_op("gather") == CollectiveOp::kGather);
  CHECK(comm::parse_collective_op("nccl:scatter") == CollectiveOp::kScatter);
  REQUIRE_THROWS_WITH(comm::parse_collective_op("allshuffle", "t.json", "kernel X"),
                      Catch::Contains("t.json") && Catch::Contains("kernel X") &&
                          Catch::Contains("unknown collective operation 'allshuffle'"));
}

TEST_CASE("the calibration scales the time of the pair NCCL's own model picks and does not change the pick") {
  const comm::ClusterSpec& c = catalog().get("dgx-a100");
  comm::Calibration cal;
  cal.of(CollectiveOp::kAllReduce) = {20.0, 0.5};  // a latency this large would favour Simple if it chose
  const comm::CollectiveModel raw(c), calibrated(c, cal);
  for (std::int64_t bytes : {std::int64_t{1024}, std::int64_t{1} << 20, std::int64_t{1} << 28}) {
    const auto call = comm::CollectiveCall{CollectiveOp::kAllReduce, bytes, comm::place(c, 8)};
    const auto r = raw.estimate(call), e = calibrated.estimate(call);
    CHECK(e.algorithm == r.algorithm);
    CHECK(e.protocol == r.protocol);
    CHECK(e.time_us == Approx(20.0 * r.latency_us + 0.5 * r.byte_time_us));
  }
  // Other operations keep their own scales.
  const auto bcast = comm::CollectiveCall{CollectiveOp::kBroadcast, 1 << 20, comm::place(c, 8)};
  CHECK(calibrated.estimate(bcast).time_us == Approx(raw.estimate(bcast).time_us));
}

TEST_CASE("a gather or scatter is priced as the all-to-all that loads every rank's links as it loads the root's") {
  // PyTorch runs gather and scatter as grouped sends/receives with the root: the root moves
  // (n-1)/n of its buffer to or from n-1 peers, as each rank does in an all-to-all of that buffer.
  for (const char* name : {"dgx-a100", "dgx1-v100", "dgx-h100"}) {
    const comm::CollectiveModel m(catalog().get(name));
    for (int ranks : {2, 8, 16, 64}) {
      for (std::int64_t bytes : {std::int64_t{192}, std::int64_t{1} << 20, std::int64_t{1} << 30}) {
        INFO(name << ", " << ranks << " ranks, " << bytes << " bytes");
        const auto a2a = m.estimate(call(m, CollectiveOp::kAllToAll, bytes, ranks));
        for (CollectiveOp op : {CollectiveOp::kGather, CollectiveOp::kScatter}) {
          const auto e = m.estimate(call(m, op, bytes, ranks));
          CHECK(e.time_us == Approx(a2a.time_us));
          CHECK(e.protocol == a2a.protocol);
          CHECK(e.algorithm == comm::Algorithm::kPointToPoint);
          // nccl-tests' bus bandwidth factor for gather and scatter is (n-1)/n.
          CHECK(comm::CollectiveModel::bus_bandwidth_gbps(call(m, op, bytes, ranks), 10.0) ==
                Approx(bytes / 1e4 * (ranks - 1) / ranks));
        }
      }
    }
    // Across nodes the root's NICs carry the remote pieces: slower than within a node.
    CHECK(m.estimate(call(m, CollectiveOp::kGather, std::int64_t{1} << 30, 16)).time_us >
          m.estimate(call(m, CollectiveOp::kGather, std::int64_t{1} << 30, 8)).time_us);
  }
  // They take the point-to-point family's scales when the trace fits none of their own.
  CHECK(comm::is_point_to_point(CollectiveOp::kGather));
  CHECK(comm::is_point_to_point(CollectiveOp::kScatter));
}

TEST_CASE("an all-to-all's time grows with its group as --ranks scales it out") {
  // Beyond one node every rank reaches more peers, more of them over the network, in more rounds.
  // Sizes whose messages to each peer stay on one side of NCCL's LL threshold (16 KB) from 8 to
  // 1024 ranks: DLRM's (192 B to 24 KB) and a large one. Across the threshold the model is not
  // monotone (docs/communication.md, limits): a 1 MB all-to-all on dgx-h100 is priced at 85 us
  // over 32 ranks (32 KB per peer, Simple) and 74 us over 64 (16 KB per peer, LL).
  for (const char* name : {"dgx1-v100", "dgx-a100", "dgx-h100"}) {
    const comm::CollectiveModel m(catalog().get(name));
    for (const std::int64_t bytes : {std::int64_t{0}, std::int64_t{192}, std::int64_t{13568}, std::int64_t{24576},
                                     std::int64_t{64} << 20}) {
      double previous = 0;
      for (int ranks = 8; ranks <= 1024; ranks *= 2) {
        INFO(name << ", " << bytes << " bytes, " << ranks << " ranks");
        const double t = m.estimate(call(m, CollectiveOp::kAllToAll, bytes, ranks)).time_us;
        CHECK(t > previous);
        previous = t;
      }
    }
  }
}

TEST_CASE("a size inferred from an all-to-all's time is the size that gave that time (the model inverted)") {
  // infer_sizes searches the bytes at which the (calibrated) model gives an op's transfer time;
  // round trip: size -> model time (to the nanosecond, as a trace has it) -> inferred size.
  const comm::ClusterSpec& v100 = catalog().get("dgx1-v100");
  comm::Calibration dlrm;  // the scales DLRM's all-to-alls fit (docs/communication.md)
  dlrm.of(CollectiveOp::kAllToAll) = {0.95, 5.95};
  for (const comm::Calibration& calibration : {comm::Calibration{}, dlrm}) {
    const comm::CollectiveModel m(v100, calibration);
    for (const int ranks : {8, 64, 1024}) {
      for (const std::int64_t bytes : {std::int64_t{0}, std::int64_t{192}, std::int64_t{1536}, std::int64_t{13568},
                                       std::int64_t{24576}, std::int64_t{4} << 20, std::int64_t{256} << 20}) {
        INFO(ranks << " ranks, " << bytes << " bytes, byte time x" << calibration.of(CollectiveOp::kAllToAll).byte_time);
        const auto e = m.estimate(call(m, CollectiveOp::kAllToAll, bytes, ranks));
        std::vector<comm::CommOp> ops(1);
        ops[0].op = CollectiveOp::kAllToAll;
        ops[0].group_size = ranks;
        ops[0].transfer = e.time_ns();
        REQUIRE(comm::infer_sizes(ops, m, v100) == 1);
        CHECK(ops[0].size_source == comm::SizeSource::kInferred);
        const std::int64_t inferred = ops[0].bytes.value();
        // One nanosecond of the measured time is worth this many bytes (and one byte this many
        // nanoseconds): the search finds the size, and the time it gives, to within them.
        const double bytes_per_ns = e.algorithm_gbps / calibration.of(CollectiveOp::kAllToAll).byte_time;
        CHECK(std::abs(static_cast<double>(inferred - bytes)) <= bytes_per_ns + 1);
        const Nanos again = m.estimate(call(m, CollectiveOp::kAllToAll, inferred, ranks)).time_ns();
        CHECK(static_cast<double>(std::abs(again - e.time_ns())) <= 1 / bytes_per_ns + 1);
      }
    }
  }
}
