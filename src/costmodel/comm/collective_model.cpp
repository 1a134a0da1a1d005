#include "costmodel/comm/collective_model.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"

namespace dpro::comm {

const char* to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce: return "allreduce";
    case CollectiveOp::kAllGather: return "allgather";
    case CollectiveOp::kReduceScatter: return "reducescatter";
    case CollectiveOp::kBroadcast: return "broadcast";
    case CollectiveOp::kReduce: return "reduce";
    case CollectiveOp::kAllToAll: return "alltoall";
    case CollectiveOp::kSendRecv: return "sendrecv";
    case CollectiveOp::kGather: return "gather";
    case CollectiveOp::kScatter: return "scatter";
  }
  return "?";
}

const char* to_string(Algorithm a) {
  switch (a) {
    case Algorithm::kRing: return "ring";
    case Algorithm::kTree: return "tree";
    case Algorithm::kNvls: return "nvls";
    case Algorithm::kPointToPoint: return "p2p";
  }
  return "?";
}

const char* to_string(Protocol p) {
  switch (p) {
    case Protocol::kLL: return "LL";
    case Protocol::kLL128: return "LL128";
    case Protocol::kSimple: return "Simple";
  }
  return "?";
}

CollectiveOp parse_collective_op(const std::string& name, const std::string& file, const std::string& item) {
  std::string n;
  for (char c : name) {
    if (c != '_' && c != ' ' && c != '-') n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (n.rfind("nccl:", 0) == 0) n = n.substr(5);
  // Besides the plain names, the "Collective name"s PyTorch's ProcessGroupNCCL records: the
  // coalesced forms (one NCCL group over several tensors; the size is their total), the
  // out-of-place broadcast and reduce, and barrier (a one-element all-reduce).
  if (n == "allreduce" || n == "allreducecoalesced" || n == "barrier") return CollectiveOp::kAllReduce;
  if (n == "allgather" || n == "allgatherbase" || n == "allgathercoalesced" || n == "allgatherintotensorcoalesced")
    return CollectiveOp::kAllGather;
  if (n == "reducescatter" || n == "reducescatterbase" || n == "reducescattertensorcoalesced")
    return CollectiveOp::kReduceScatter;
  if (n == "broadcast" || n == "broadcastoop") return CollectiveOp::kBroadcast;
  if (n == "reduce" || n == "reduceoop") return CollectiveOp::kReduce;
  if (n == "alltoall" || n == "alltoallv" || n == "alltoallbase") return CollectiveOp::kAllToAll;
  if (n == "sendrecv" || n == "send" || n == "recv") return CollectiveOp::kSendRecv;
  if (n == "gather") return CollectiveOp::kGather;
  if (n == "scatter") return CollectiveOp::kScatter;
  throw InputError(file, item.empty() ? "collective '" + name + "'" : item,
                   "unknown collective operation '" + name +
                       "'; the model knows allreduce, allgather, reducescatter, broadcast, reduce, alltoall, "
                       "sendrecv, gather, scatter");
}

bool is_point_to_point(CollectiveOp op) {
  return op == CollectiveOp::kAllToAll || op == CollectiveOp::kSendRecv || op == CollectiveOp::kGather ||
         op == CollectiveOp::kScatter;
}

Calibration Calibration::per_family(Scales collectives, Scales point_to_point) {
  Calibration c;
  for (int i = 0; i < kCollectiveOpCount; ++i)
    c.op[i] = is_point_to_point(static_cast<CollectiveOp>(i)) ? point_to_point : collectives;
  return c;
}

namespace {

// Facts from NCCL's tuning model (src/graph/tuning.cc, NCCL 2.8-2.18): latencies in us,
// indexed [protocol] = {LL, LL128, Simple}.
constexpr double kBaseLatRing[3] = {6.6, 14.0, 8.4};
constexpr double kBaseLatTree[3] = {6.8, 14.0, 0.0};
enum Hw { kHwNvlink, kHwPci, kHwNet };
constexpr double kHopLatRing[3][3] = {{0.6, 1.9, 3.4}, {1.0, 2.5, 5.7}, {2.7, 4.0, 14.0}};
constexpr double kHopLatTree[3][3] = {{0.6, 1.25, 4.0}, {1.0, 1.9, 6.0}, {5.0, 8.5, 14.0}};
// Maximum LL bus bandwidth (GB/s) by architecture and node count bucket (1, 2, >2 nodes).
constexpr double kLLMaxBw[3][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}};
// Tree all-reduce correction for mid sizes, powers of two from 64 B (index log2(bytes/64)).
constexpr double kTreeCorrection[3][22] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .5, .6, .6, .7, .7, .8, .9, .9, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .5, .5, .6, .6, .7, .8, .9}};
// NVLink SHARP efficiency on Hopper (NCCL's nvlsEfficiency).
constexpr double kNvlsEfficiency = 0.85;
// NCCL sends peer-to-peer messages up to this size per peer with LL (NCCL_P2P_LL_THRESHOLD).
constexpr std::int64_t kP2pLLThreshold = 16384;
// Assumption (not from NCCL's tuning model, which has no p2p model): a grouped all-to-all
// progresses 8 peers at a time, so its latency grows with ceil((n-1)/8) peer rounds.
constexpr int kP2pConcurrentPeers = 8;

struct Candidate {
  Algorithm algorithm;
  Protocol protocol;
  double latency_us;
  double algbw_gbps;  // 0: not available
};

int node_bucket(int nodes) { return nodes <= 1 ? 0 : nodes == 2 ? 1 : 2; }

class Terms {
 public:
  Terms(const ClusterSpec& c, const CollectiveCall& call) : c_(c), call_(call), p_(call.placement) {
    intra_hw_ = c.fabric == Fabric::kPcie ? kHwPci : kHwNvlink;
    intra_bw_ = c.intra.bandwidth_gbps * c.intra_efficiency();
    inter_bw_ = c.inter.bandwidth_gbps * c.inter_efficiency();
  }

  void collectives(std::vector<Candidate>& out) const {
    const int n = p_.ranks;
    const CollectiveOp op = call_.op;
    const bool nvlink = c_.fabric != Fabric::kPcie;
    const double ring_bus = p_.nodes == 1 ? intra_bw_ : std::min(intra_bw_, inter_bw_ * p_.ranks_per_node);
    const double ll_max = kLLMaxBw[static_cast<int>(c_.arch)][node_bucket(p_.nodes)];
    for (int pi = 0; pi < 3; ++pi) {
      const Protocol proto = static_cast<Protocol>(pi);
      if (proto == Protocol::kLL128 && !nvlink) continue;
      double bus = ring_bus;
      if (proto == Protocol::kLL) {
        const bool quarter = p_.nodes > 1 || op == CollectiveOp::kAllReduce || op == CollectiveOp::kReduce;
        bus = std::min(ll_max, bus * (quarter ? 0.25 : 1.0 / 3.0));
      } else if (proto == Protocol::kLL128) {
        bus *= p_.ranks_per_node < 2 ? 0.7 : 0.92;
      }
      out.push_back({Algorithm::kRing, proto, ring_latency(pi), bus * ring_ratio()});
      if (op == CollectiveOp::kAllReduce && p_.nodes > 1) {
        double tbus = ring_bus * 0.92;
        if (proto == Protocol::kLL) tbus = std::min(ll_max, tbus / 3.8);
        if (proto == Protocol::kLL128) tbus *= 120.0 / 128.0;
        const int lg = call_.bytes >= 64 ? static_cast<int>(std::log2(static_cast<double>(call_.bytes / 64))) : 0;
        const double corr = lg < 22 ? kTreeCorrection[pi][lg] : 1.0;
        out.push_back({Algorithm::kTree, proto, tree_latency(pi), tbus * 0.5 * corr});
      }
    }
    if (op == CollectiveOp::kAllReduce && c_.arch == GpuArch::kHopper && c_.fabric == Fabric::kNvswitch &&
        p_.nodes == 1 && n > 1) {
      // NVLink SHARP: each GPU sends its whole buffer into the switch (reduced there) and
      // receives its 1/n share of the result back plus the multicast of every other share:
      // (1 + 1/n) x bytes per direction through its links.
      const double algbw = intra_bw_ * kNvlsEfficiency * n / (n + 1.0);
      const double lat = kBaseLatRing[2] + 2 * (kHopLatRing[kHwNvlink][2] + c_.intra.latency_us);
      out.push_back({Algorithm::kNvls, Protocol::kSimple, lat, algbw});
    }
  }

  void point_to_point(std::vector<Candidate>& out) const {
    const int n = p_.ranks;
    // Every point-to-point operation but a single send/recv exchanges with all n-1 peers. A
    // gather (scatter) is the root's receives from (sends to) every other rank: the root's
    // links carry what every rank's links carry in an all-to-all whose send buffer is the
    // root's whole buffer, with as many peers, so it is priced as that all-to-all.
    const bool all_to_all = call_.op != CollectiveOp::kSendRecv;
    const std::int64_t per_peer = all_to_all ? call_.bytes / std::max(1, n) : call_.bytes;
    const int pi = per_peer <= kP2pLLThreshold ? 0 : 2;
    const double data_fraction = pi == 0 ? 0.5 : 1.0;  // LL lines carry 8 data bytes in 16
    const bool intra_peers = all_to_all ? p_.ranks_per_node > 1 : p_.nodes == 1;
    const bool inter_peers = p_.nodes > 1;
    double hop = 0;
    if (intra_peers) hop = std::max(hop, kHopLatRing[intra_hw_][pi] + c_.intra.latency_us);
    if (inter_peers) hop = std::max(hop, kHopLatRing[kHwNet][pi] + c_.inter.latency_us);
    const double s = static_cast<double>(call_.bytes);
    double intra_bytes = 0, inter_bytes = 0;
    if (all_to_all) {
      intra_bytes = s * (p_.ranks_per_node - 1) / n;
      inter_bytes = s * (n - p_.ranks_per_node) / n;
    } else {
      (p_.nodes == 1 ? intra_bytes : inter_bytes) = s;
    }
    const double t = std::max(intra_bytes / (1000.0 * intra_bw_ * data_fraction),
                              inter_bytes / (1000.0 * inter_bw_ * data_fraction));
    const double algbw = t > 0 ? s / (1000.0 * t) : std::numeric_limits<double>::infinity();
    // An all-to-all exchanges with n-1 peers; kP2pConcurrentPeers of them progress at once.
    const int rounds = all_to_all ? (n - 1 + kP2pConcurrentPeers - 1) / kP2pConcurrentPeers : 1;
    out.push_back({Algorithm::kPointToPoint, static_cast<Protocol>(pi), kBaseLatRing[pi] + rounds * hop, algbw});
  }

 private:
  double intra_lat(int pi, const double (&table)[3][3]) const {
    double l = table[intra_hw_][pi] + c_.intra.latency_us;
    if (p_.nodes > 1 && pi == 0) l *= 1.8;
    return l;
  }
  double inter_lat(int pi, const double (&table)[3][3]) const { return table[kHwNet][pi] + c_.inter.latency_us; }

  double ring_ratio() const {
    const int n = p_.ranks;
    switch (call_.op) {
      case CollectiveOp::kAllReduce: return n / (2.0 * (n - 1));
      case CollectiveOp::kAllGather:
      case CollectiveOp::kReduceScatter: return n / (n - 1.0);
      default: return 1.0;
    }
  }

  double ring_latency(int pi) const {
    const int n = p_.ranks, nodes = p_.nodes;
    double lat = kBaseLatRing[pi];
    switch (call_.op) {
      case CollectiveOp::kAllReduce: {
        const int steps = 2 * (n - 1), inter = 2 * (nodes - 1);
        lat += (steps - inter) * intra_lat(pi, kHopLatRing) + inter * inter_lat(pi, kHopLatRing);
        // NCCL's "plateau effect of ring" for multi-node Simple all-reduce.
        if (pi == 2 && nodes > 1 && static_cast<double>(call_.bytes) >= n / 16.0 * 65536)
          lat *= c_.arch == GpuArch::kVolta ? 1.9 : 1.4;
        return lat;
      }
      case CollectiveOp::kAllGather:
      case CollectiveOp::kReduceScatter: {
        const int steps = n - 1, inter = nodes - 1;
        return lat + (steps - inter) * intra_lat(pi, kHopLatRing) + inter * inter_lat(pi, kHopLatRing);
      }
      default: {  // broadcast, reduce: a pipeline along the ring, one hop per rank
        // Simple pipelines in chunks: NCCL charges the tree's Simple hop latency.
        const auto& table = pi == 2 ? kHopLatTree : kHopLatRing;
        const double hop = nodes > 1 ? inter_lat(pi, table) : intra_lat(pi, table);
        return lat + (n - 1) * hop;
      }
    }
  }

  double tree_latency(int pi) const {
    const double lg = std::log2(static_cast<double>(p_.nodes));
    return kBaseLatTree[pi] +
           2 * ((p_.ranks_per_node - 1) * intra_lat(pi, kHopLatTree) + std::floor(lg) * inter_lat(pi, kHopLatTree));
  }

  const ClusterSpec& c_;
  const CollectiveCall& call_;
  const Placement& p_;
  Hw intra_hw_;
  double intra_bw_, inter_bw_;
};

}  // namespace

CollectiveModel::CollectiveModel(ClusterSpec cluster, Calibration calibration)
    : cluster_(std::move(cluster)), calibration_(calibration) {}

CollectiveEstimate CollectiveModel::estimate(const CollectiveCall& call) const { return best(call, true); }
CollectiveEstimate CollectiveModel::estimate_uncalibrated(const CollectiveCall& call) const { return best(call, false); }

CollectiveEstimate CollectiveModel::best(const CollectiveCall& call, bool calibrated) const {
  CollectiveEstimate best_estimate;
  if (call.placement.ranks <= 1) return best_estimate;
  DPRO_CHECK(call.bytes >= 0);
  std::vector<Candidate> candidates;
  Terms terms(cluster_, call);
  if (is_point_to_point(call.op)) terms.point_to_point(candidates);
  else terms.collectives(candidates);
  const double ls = calibration_.of(call.op).latency, bs = calibration_.of(call.op).byte_time;
  double best_key = std::numeric_limits<double>::infinity();
  for (const Candidate& c : candidates) {
    if (!(c.algbw_gbps > 0)) continue;
    const double byte_time = static_cast<double>(call.bytes) / (1000.0 * c.algbw_gbps);
    // The pair is chosen by the uncalibrated model, as NCCL chooses it with its own tuning
    // model; the calibration corrects the time of that pair, not the choice.
    const double key = c.latency_us + byte_time;
    if (key >= best_key) continue;
    best_key = key;
    best_estimate.raw_latency_us = c.latency_us;
    best_estimate.raw_byte_time_us = byte_time;
    best_estimate.latency_us = (calibrated ? ls : 1.0) * c.latency_us;
    best_estimate.byte_time_us = (calibrated ? bs : 1.0) * byte_time;
    best_estimate.time_us = best_estimate.latency_us + best_estimate.byte_time_us;
    best_estimate.algorithm_gbps = c.algbw_gbps;
    best_estimate.algorithm = c.algorithm;
    best_estimate.protocol = c.protocol;
  }
  return best_estimate;
}

double CollectiveModel::bus_bandwidth_gbps(const CollectiveCall& call, double time_us) {
  if (!(time_us > 0)) return 0;
  const double algbw = static_cast<double>(call.bytes) / (1000.0 * time_us);
  const double n = call.placement.ranks;
  switch (call.op) {
    case CollectiveOp::kAllReduce: return algbw * 2 * (n - 1) / n;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllToAll:
    case CollectiveOp::kGather:
    case CollectiveOp::kScatter: return algbw * (n - 1) / n;
    default: return algbw;
  }
}

}  // namespace dpro::comm
