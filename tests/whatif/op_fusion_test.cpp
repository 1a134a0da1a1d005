// The op-fusion rewrite and its candidate finder, on bundled traces and on a hand-made graph.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "core/error.h"
#include "graph/builder.h"
#include "replayer/replay.h"
#include "whatif/evaluate.h"
#include "whatif/fusion_pricing.h"
#include "whatif/op_fusion.h"
#include "workload_fixtures.h"

using namespace dpro;
using graph::Edge;
using graph::EdgeKind;
using graph::NodeId;
using graph::NodeKind;
using graph::Point;
using test::load_workload;

namespace {

Nanos job_ns(const replayer::Report& r) { return r.iterations.at(0).job_predicted_ns; }

// The median of the iterations' predicted job steps (the optimizer's objective).
Nanos median_step(const replayer::Report& r) {
  std::vector<Nanos> steps;
  for (const auto& it : r.iterations) steps.push_back(it.job_predicted_ns);
  std::sort(steps.begin(), steps.end());
  return steps.size() % 2 ? steps[steps.size() / 2] : (steps[steps.size() / 2 - 1] + steps[steps.size() / 2]) / 2;
}

std::size_t count_kind(const graph::Dfg& dfg, NodeKind kind) {
  return static_cast<std::size_t>(
      std::count_if(dfg.nodes().begin(), dfg.nodes().end(), [&](const graph::Node& n) { return n.kind == kind; }));
}

// Checks the legality rule of op_fusion.h on one occurrence, from the graph's edges alone.
void check_legal(const graph::Dfg& dfg, const std::vector<NodeId>& parts) {
  REQUIRE(parts.size() >= 2);
  const graph::TrackId track = dfg.node(parts.front()).track;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const graph::Node& n = dfg.node(parts[i]);
    REQUIRE(n.kind == NodeKind::kKernel);
    REQUIRE(n.track == track);
    if (i > 0) {  // consecutive: the stream-order edge joins them and no GPU op of the track lies between
      bool joined = false;
      dfg.for_each_in_edge(parts[i], [&](graph::EdgeId e) {
        const Edge& edge = dfg.edge(e);
        joined = joined || (edge.kind == EdgeKind::kStreamOrder && edge.src == parts[i - 1]);
        if (dfg.node(edge.src).track != track) REQUIRE(edge.kind == EdgeKind::kLaunch);
      });
      REQUIRE(joined);
    }
    if (i + 1 < parts.size()) {  // launch-queue edges aside (op_fusion.h)
      dfg.for_each_out_edge(parts[i], [&](graph::EdgeId e) {
        if (dfg.edge(e).kind != EdgeKind::kLaunchQueue) REQUIRE(dfg.node(dfg.edge(e).dst).track == track);
      });
    }
  }
}

}  // namespace

TEST_CASE("op_fusion: a chain of fewer than two names is an option error") {
  whatif::Workload w = load_workload("traces/hta/alexnet-a100-single.json.gz");
  whatif::OpFusion empty;
  empty.chains = {{}};
  CHECK_THROWS_MATCHES(whatif::op_fusion(w, empty), OptionError,
                       Catch::Predicate<OptionError>([](const OptionError& e) { return e.option() == "chains"; }));
  whatif::OpFusion one;
  one.chains = {{"void at::native::vectorized_elementwise_kernel"}};
  CHECK_THROWS_AS(whatif::op_fusion(w, one), OptionError);
}

TEST_CASE("op_fusion: a chain that occurs nowhere changes nothing") {
  const whatif::Workload base = load_workload("traces/h100/resnet50");
  replayer::Simulator simulator;
  const whatif::Evaluation before = whatif::evaluate(base, {}, simulator, {});
  whatif::OpFusion nowhere;
  nowhere.chains = {{"no_such_kernel_a", "no_such_kernel_b"}};
  const whatif::Evaluation after = whatif::evaluate(base, {nowhere}, simulator, {});
  const auto& c = std::get<whatif::OpFusionChange>(after.changes.at(0));
  CHECK(c.instances == 0);
  CHECK(c.skipped == 0);
  CHECK(c.launches_removed == 0);
  CHECK(after.workload.graph.dfg.node_count() == base.graph.dfg.node_count());
  CHECK(job_ns(after.report) == job_ns(before.report));
  CHECK(after.simulation.end == before.simulation.end);
}

TEST_CASE("op_fusion: candidates on bundled traces are legal chains of 2 to 8 kernels") {
  for (const char* path :
       {"traces/h100/resnet50", "traces/h100/gpt2", "traces/hta/alexnet-a100-single.json.gz",
        "traces/hta/a100-ws2-rank0-nccl.json.gz", "traces/hta/amd-mi250-toy.json.gz",
        "traces/hta/cuda-event-sync.json.gz", "traces/hta/cuda-event-sync-multistream.json.gz",
        "traces/hta/cupti-counters.json.gz", "traces/hta/no-distributed-info.json.gz",
        "traces/hta/sampled-ws128-rank0.json.gz", "traces/hta/simple-add-kineto.json.gz", "traces/hta/triton.json.gz"}) {
    INFO(path);
    const whatif::Workload w = load_workload(path);
    const std::vector<whatif::FusionCandidate> candidates = whatif::find_fusion_candidates(w);
    for (const whatif::FusionCandidate& c : candidates) {
      REQUIRE(c.kernels.size() >= 2);
      REQUIRE(c.kernels.size() <= 8);
      REQUIRE(c.instances == c.occurrences.size());
      REQUIRE(c.predicted <= c.measured);
      for (const auto& parts : c.occurrences) check_legal(w.graph.dfg, parts);
    }
    for (std::size_t i = 1; i < candidates.size(); ++i)
      REQUIRE(candidates[i - 1].gpu_saving() >= candidates[i].gpu_saving());
  }
}

TEST_CASE("op_fusion: fusing the top candidate lowers GPU time, removes k-1 launches and replays no slower") {
  for (const char* path : {"traces/h100/resnet50", "traces/h100/gpt2"}) {
    INFO(path);
    const whatif::Workload base = load_workload(path);
    const std::vector<whatif::FusionCandidate> candidates = whatif::find_fusion_candidates(base);
    REQUIRE(!candidates.empty());
    const whatif::FusionCandidate& top = candidates.front();
    const std::size_t k = top.kernels.size();
    replayer::Simulator simulator;
    const whatif::Evaluation before = whatif::evaluate(base, {}, simulator, {});
    const whatif::Evaluation after = whatif::evaluate(base, {whatif::fuse_candidates({top})}, simulator, {});
    const auto& c = std::get<whatif::OpFusionChange>(after.changes.at(0));
    // The class also fuses where it occurs inside a longer run of kernels that are not all
    // memory-bound, or that was split elsewhere.
    CHECK(c.instances >= top.instances);
    CHECK(c.gpu_after <= c.gpu_before);
    CHECK(c.gpu_before - c.gpu_after >= top.gpu_saving());
    CHECK(c.launches_removed == (k - 1) * c.instances);
    const graph::Dfg& fused = after.workload.graph.dfg;
    CHECK(count_kind(fused, NodeKind::kKernel) == count_kind(base.graph.dfg, NodeKind::kKernel) - (k - 1) * c.instances);
    CHECK(count_kind(fused, NodeKind::kRuntimeCall) ==
          count_kind(base.graph.dfg, NodeKind::kRuntimeCall) - c.launches_removed);
    // evaluate checked the graph is acyclic and replayed it.
    CHECK(job_ns(after.report) <= job_ns(before.report));
    CHECK(after.simulation.makespan <= before.simulation.makespan);
  }
}

TEST_CASE("op_fusion: fusing every candidate of a trace replays no slower") {
  for (const char* path : {"traces/h100/resnet50", "traces/h100/gpt2", "traces/h100/bert-ddp",
                           "traces/hta/alexnet-a100-single.json.gz"}) {
    INFO(path);
    const whatif::Workload base = load_workload(path);
    const auto candidates = whatif::find_fusion_candidates(base);
    replayer::Simulator simulator;
    const whatif::Evaluation before = whatif::evaluate(base, {}, simulator, {});
    const whatif::Evaluation after = whatif::evaluate(base, {whatif::fuse_candidates(candidates)}, simulator, {});
    const auto& c = std::get<whatif::OpFusionChange>(after.changes.at(0));
    CHECK(c.instances > 0);
    CHECK(c.gpu_after <= c.gpu_before);
    CHECK(job_ns(after.report) <= job_ns(before.report));
  }
}

TEST_CASE("op_fusion: chains whose kernels have shapes are priced by the calibrated model, within bounds") {
  // An emit_nvtx step records the launching ops' shapes: the model prices what it describes.
  const whatif::Workload w = load_workload("traces/h100/gpt2-emit-nvtx-step");
  const whatif::FusionPricer pricer(*w.traces, w.graph.dfg);
  std::size_t modelled = 0;
  for (const whatif::FusionCandidate& c : whatif::find_fusion_candidates(w)) {
    for (const auto& parts : c.occurrences) {
      const whatif::FusedPrice price = pricer.price(parts);
      REQUIRE(price.duration <= price.parts);
      if (price.fallback) continue;
      ++modelled;
      const whatif::DeviceRates* rates = pricer.rates(parts.front());
      REQUIRE(rates);
      REQUIRE(rates->bytes_per_ns);
      REQUIRE(price.duration >= std::min(rates->shortest_kernel, price.parts));
      // The fused kernel moves no more than its parts, and no less than its largest part.
      double sum = 0, largest = 0;
      for (const NodeId p : parts) {
        sum += pricer.desc(p).bytes();
        largest = std::max(largest, pricer.desc(p).bytes());
      }
      REQUIRE(price.bytes <= sum);
      REQUIRE(price.bytes >= largest);
    }
  }
  CHECK(modelled > 100);
}

TEST_CASE("op_fusion: after another rewrite, fusion prices the durations that rewrite set") {
  const whatif::Workload base = load_workload("traces/h100/gpt2");
  const whatif::OpFusion top = whatif::fuse_candidates({whatif::find_fusion_candidates(base).front()});
  replayer::Simulator simulator;
  const whatif::Evaluation alone = whatif::evaluate(base, {top}, simulator, {});
  const whatif::Evaluation faster_host = whatif::evaluate(base, {whatif::HostRetime{2.0}, top}, simulator, {});
  const auto& a = std::get<whatif::OpFusionChange>(alone.changes.at(0));
  const auto& h = std::get<whatif::OpFusionChange>(faster_host.changes.at(1));
  CHECK(h.instances == a.instances);
  CHECK(h.launches_removed == a.launches_removed);
  CHECK(h.gpu_before == a.gpu_before);  // GPU ops keep their times on a faster host
  CHECK(h.launch_time_removed < a.launch_time_removed * 51 / 100);  // the calls cost half as much
  CHECK(h.launch_time_removed > a.launch_time_removed * 49 / 100);
}

namespace {

// One CPU thread launching three kernels k_a, k_b, k_c on stream 1; stream 2 runs k_x.
struct SmallGraph {
  std::shared_ptr<const trace::TraceSet> traces = std::make_shared<const trace::TraceSet>();
  graph::BuiltGraph built;
  std::array<NodeId, 3> calls, kernels;
  NodeId other;
};

SmallGraph small_graph(std::array<const char*, 3> names = {"k_a", "k_b", "k_c"}) {
  SmallGraph g;
  graph::Dfg& dfg = g.built.dfg;
  const auto thread = dfg.add_track({0, trace::ResourceKind::kCpuThread, 1, 1, "main"});
  const auto s1 = dfg.add_track({0, trace::ResourceKind::kGpuStream, 0, 1, "stream 1"});
  const auto s2 = dfg.add_track({0, trace::ResourceKind::kGpuStream, 0, 2, "stream 2"});
  auto op = [&](const char* name, NodeKind kind) {
    graph::OpDesc d;
    d.name = dfg.ops().intern(name);
    d.kind = kind;
    return dfg.ops().add(d);
  };
  const graph::OpId launch = op("cudaLaunchKernel", NodeKind::kRuntimeCall);
  for (int i = 0; i < 3; ++i) {
    graph::Node call;
    call.kind = NodeKind::kRuntimeCall;
    call.track = thread;
    call.measured_start = 1000 * i;
    call.measured_duration = call.duration = 500;
    g.calls[i] = dfg.add_node(call);
    dfg.set_op(g.calls[i], launch);
    graph::Node k;
    k.kind = NodeKind::kKernel;
    k.track = s1;
    k.measured_start = 10'000 + 2000 * i;
    k.measured_duration = k.duration = 1500;
    g.kernels[i] = dfg.add_node(k);
    dfg.set_op(g.kernels[i], op(names[i], NodeKind::kKernel));
    dfg.add_edge(Edge{g.calls[i], g.kernels[i], EdgeKind::kLaunch, Point::kStart, Point::kStart});
    if (i > 0) {
      dfg.add_edge(Edge{g.calls[i - 1], g.calls[i], EdgeKind::kThreadOrder});
      dfg.add_edge(Edge{g.kernels[i - 1], g.kernels[i], EdgeKind::kStreamOrder});
    }
  }
  dfg.node(g.calls[0]).release = 0;
  graph::Node x;
  x.kind = NodeKind::kKernel;
  x.track = s2;
  x.measured_start = 9000;
  x.measured_duration = x.duration = 500;
  x.release = 9000;
  g.other = dfg.add_node(x);
  dfg.set_op(g.other, op("k_x", NodeKind::kKernel));
  return g;
}

}  // namespace

TEST_CASE("op_fusion: a chain with a cross-stream event wait inside is not fused") {
  const whatif::OpFusion abc{{{"k_a", "k_b", "k_c"}}};
  SECTION("no wait: fused, two launches removed") {
    SmallGraph g = small_graph();
    g.built.dfg.finalize();
    whatif::Workload w{g.traces, std::move(g.built)};
    const whatif::OpFusionChange c = whatif::op_fusion(w, abc);
    CHECK(c.instances == 1);
    CHECK(c.launches_removed == 2);
    CHECK(c.launch_time_removed == 1000);
    CHECK(c.gpu_before == 4500);
    CHECK(c.gpu_after < c.gpu_before);
    CHECK(c.priced_by_fallback == 1);  // no shapes: the longest part + half the rest
    CHECK(c.gpu_after == 1500 + 1500);
    CHECK(count_kind(w.graph.dfg, NodeKind::kKernel) == 2);
    CHECK(count_kind(w.graph.dfg, NodeKind::kRuntimeCall) == 1);
    graph::check_acyclic(w.graph.dfg, *w.traces);
  }
  SECTION("stream 2 waits for the middle kernel") {
    SmallGraph g = small_graph();
    g.built.dfg.add_edge(Edge{g.kernels[1], g.other, EdgeKind::kStreamWait});
    g.built.dfg.finalize();
    whatif::Workload w{g.traces, std::move(g.built)};
    const whatif::OpFusionChange c = whatif::op_fusion(w, abc);
    CHECK(c.instances == 0);
    CHECK(c.chains.at(0).skipped[static_cast<int>(whatif::FusionSkip::kFeedsOtherTrack)] == 1);
    CHECK(count_kind(w.graph.dfg, NodeKind::kKernel) == 4);
  }
  SECTION("the middle kernel waits for stream 2") {
    SmallGraph g = small_graph();
    g.built.dfg.add_edge(Edge{g.other, g.kernels[1], EdgeKind::kStreamWait});
    g.built.dfg.finalize();
    whatif::Workload w{g.traces, std::move(g.built)};
    const whatif::OpFusionChange c = whatif::op_fusion(w, abc);
    CHECK(c.instances == 0);
    CHECK(c.chains.at(0).skipped[static_cast<int>(whatif::FusionSkip::kFedByOtherTrack)] == 1);
    // k_b may start a chain, not continue one.
    const whatif::OpFusionChange ab = whatif::op_fusion(w, whatif::OpFusion{{{"k_a", "k_b"}}});
    CHECK(ab.instances == 0);
    const whatif::OpFusionChange bc = whatif::op_fusion(w, whatif::OpFusion{{{"k_b", "k_c"}}});
    CHECK(bc.instances == 1);
    CHECK(bc.launches_removed == 1);
  }
}

TEST_CASE("op_fusion: launch-queue waits do not cut a chain, and the fused chain's waiting launches go") {
  const whatif::OpFusion abc{{{"k_a", "k_b", "k_c"}}};
  SmallGraph g = small_graph();
  graph::Dfg& dfg = g.built.dfg;
  // A later launch call on the thread waited for k_a's queue slot, another for k_c's; k_b's launch
  // call waited for stream 2's k_x.
  graph::Node later = dfg.node(g.calls[2]);
  later.measured_start = 3000;
  const NodeId wait_a = dfg.add_node(later);
  later.measured_start = 4000;
  const NodeId wait_c = dfg.add_node(later);
  dfg.add_edge(Edge{g.calls[2], wait_a, EdgeKind::kThreadOrder});
  dfg.add_edge(Edge{wait_a, wait_c, EdgeKind::kThreadOrder});
  dfg.add_edge(Edge{g.kernels[0], wait_a, EdgeKind::kLaunchQueue, Point::kEnd, Point::kEnd});
  dfg.add_edge(Edge{g.kernels[2], wait_c, EdgeKind::kLaunchQueue, Point::kEnd, Point::kEnd});
  dfg.add_edge(Edge{g.other, g.calls[1], EdgeKind::kLaunchQueue, Point::kEnd, Point::kEnd});
  dfg.finalize();
  const std::size_t queue_edges_before = 3;
  whatif::Workload w{g.traces, std::move(g.built)};
  const whatif::OpFusionChange c = whatif::op_fusion(w, abc);
  CHECK(c.instances == 1);
  CHECK(c.skipped == 0);
  CHECK(c.launches_removed == 2);
  // k_a's edge (an inner part) and the removed call's own wait go; k_c's stays on the fused kernel.
  CHECK(c.queue_waits_removed == 2);
  const graph::Dfg& fused = w.graph.dfg;
  std::size_t queue_edges = 0;
  for (const graph::EdgeId e : fused.edge_ids()) {
    if (fused.edge(e).kind != EdgeKind::kLaunchQueue) continue;
    ++queue_edges;
    CHECK(fused.node(fused.edge(e).src).kind == NodeKind::kKernel);
    CHECK(fused.op_name(fused.edge(e).src) != "k_x");  // the removed call's wait went with it
  }
  CHECK(queue_edges == queue_edges_before - 2);
  CHECK(count_kind(fused, NodeKind::kKernel) == 2);
  graph::check_acyclic(fused, *w.traces);
}

TEST_CASE("op_fusion: cuBLASLt epilogues are bias, relu, gelu, bias then an activation, and drelu/dgelu with bgrad") {
  using E = whatif::EpilogueOp;
  auto ok = [](std::initializer_list<E> steps) { return whatif::epilogue_supported(std::vector<E>(steps)); };
  CHECK(ok({E::kBias}));
  CHECK(ok({E::kGelu}));
  CHECK(ok({E::kRelu}));
  CHECK(ok({E::kBias, E::kGelu}));
  CHECK(ok({E::kBias, E::kRelu}));
  CHECK(ok({E::kDGelu}));
  CHECK(ok({E::kDGelu, E::kBGrad}));
  CHECK(ok({E::kDRelu, E::kBGrad}));
  CHECK_FALSE(ok({}));
  CHECK_FALSE(ok({E::kBGrad}));  // cuBLASLt's BGRADA/B reduce a GEMM input, not its output
  CHECK_FALSE(ok({E::kGelu, E::kBias}));
  CHECK_FALSE(ok({E::kBias, E::kBias}));
  CHECK_FALSE(ok({E::kGelu, E::kRelu}));
  CHECK_FALSE(ok({E::kBias, E::kGelu, E::kBias}));
  CHECK_FALSE(ok({E::kNone}));
  CHECK(whatif::is_epilogue_gemm("nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_TNT"));
  CHECK(whatif::is_epilogue_gemm("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"));
  CHECK(whatif::is_epilogue_gemm("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4>(Params)"));
  CHECK_FALSE(whatif::is_epilogue_gemm("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc"));
  CHECK_FALSE(whatif::is_epilogue_gemm("void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>"));
  CHECK_FALSE(whatif::is_epilogue_gemm("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>"));
}

TEST_CASE("op_fusion: a GEMM fuses with a gelu after it as an epilogue, and with no other kernel") {
  const char* gemm = "nvjet_sm90_tst_128x256_64x4_1x2_h_bz_coopA_NNT";
  SECTION("GEMM -> gelu: fused, priced as the GEMM plus half the gelu (no shapes: the fallback)") {
    SmallGraph g = small_graph({gemm, "gelu_kernel", "k_c"});
    g.built.dfg.finalize();
    whatif::Workload w{g.traces, std::move(g.built)};
    const whatif::OpFusionChange c = whatif::op_fusion(w, whatif::OpFusion{{{gemm, "gelu_kernel"}}});
    CHECK(c.instances == 1);
    CHECK(c.epilogue_instances == 1);
    CHECK(c.chains.at(0).epilogue);
    CHECK(c.launches_removed == 1);
    CHECK(c.priced_by_fallback == 1);
    CHECK(c.gpu_before == 3000);
    CHECK(c.gpu_after == 1500 + 750);
    CHECK(count_kind(w.graph.dfg, NodeKind::kKernel) == 3);
    graph::check_acyclic(w.graph.dfg, *w.traces);
  }
  SECTION("GEMM -> gelu -> a kernel no epilogue has: skipped") {
    SmallGraph g = small_graph({gemm, "gelu_kernel", "k_c"});
    g.built.dfg.finalize();
    whatif::Workload w{g.traces, std::move(g.built)};
    const whatif::OpFusionChange c = whatif::op_fusion(w, whatif::OpFusion{{{gemm, "gelu_kernel", "k_c"}}});
    CHECK(c.instances == 0);
    CHECK(c.chains.at(0).skipped[static_cast<int>(whatif::FusionSkip::kNotEpilogue)] == 1);
    CHECK(count_kind(w.graph.dfg, NodeKind::kKernel) == 4);
  }
  SECTION("GEMM -> gelu with stream 2 waiting for the GEMM: not fused") {
    SmallGraph g = small_graph({gemm, "gelu_kernel", "k_c"});
    g.built.dfg.add_edge(Edge{g.kernels[0], g.other, EdgeKind::kStreamWait});
    g.built.dfg.finalize();
    whatif::Workload w{g.traces, std::move(g.built)};
    const whatif::OpFusionChange c = whatif::op_fusion(w, whatif::OpFusion{{{gemm, "gelu_kernel"}}});
    CHECK(c.instances == 0);
    CHECK(c.chains.at(0).skipped[static_cast<int>(whatif::FusionSkip::kFeedsOtherTrack)] == 1);
  }
}

TEST_CASE("op_fusion: GEMM epilogue candidates on bundled traces are a GEMM and a cuBLASLt epilogue, priced within bounds") {
  std::size_t found = 0, modelled = 0;
  std::map<whatif::EpilogueOp, std::size_t> kinds;
  for (const char* path : {"traces/h100/bert-ddp", "traces/h100/bert-ddp-emit-nvtx-step", "traces/h100/gpt2",
                           "traces/h100/resnet50", "traces/hta/a100-ws2-rank0-nccl.json.gz", "traces/dlrm-8xV100"}) {
    INFO(path);
    const whatif::Workload w = load_workload(path);
    const whatif::FusionStreams view(*w.traces, w.graph.dfg);
    const whatif::FusionPricer pricer(*w.traces, w.graph.dfg, true);
    whatif::CandidateOptions co;
    co.intermediates_kept = true;
    const auto candidates = whatif::find_epilogue_candidates(w, co);
    for (const whatif::FusionCandidate& c : candidates) {
      INFO(c.kernels.front());
      REQUIRE(c.epilogue);
      REQUIRE(whatif::is_epilogue_gemm(c.kernels.front()));
      REQUIRE(c.kernels.size() >= 2);
      REQUIRE(c.kernels.size() <= 3);
      REQUIRE(c.instances == c.occurrences.size());
      REQUIRE(c.predicted <= c.measured);
      for (const auto& parts : c.occurrences) {
        check_legal(w.graph.dfg, parts);
        std::vector<whatif::EpilogueOp> steps;
        for (std::size_t i = 1; i < parts.size(); ++i) steps.push_back(view.epilogue_op(parts[i], pricer));
        REQUIRE(whatif::epilogue_supported(steps));
        for (const whatif::EpilogueOp e : steps) ++kinds[e];
        // The fused kernel takes at least the GEMM's time and at most the parts' together.
        const whatif::FusedPrice price = pricer.price_epilogue(parts);
        REQUIRE(price.duration >= w.graph.dfg.node(parts.front()).duration);
        REQUIRE(price.duration <= price.parts);
        if (!price.fallback) {
          ++modelled;
          double steps_bytes = 0;
          for (std::size_t i = 1; i < parts.size(); ++i) steps_bytes += pricer.desc(parts[i]).bytes();
          REQUIRE(price.bytes <= steps_bytes);  // the epilogue moves less than its kernels did
        }
      }
      found += c.instances;
    }
    for (std::size_t i = 1; i < candidates.size(); ++i)
      REQUIRE(candidates[i - 1].gpu_saving() >= candidates[i].gpu_saving());
  }
  CHECK(found > 500);   // bert's GEMM -> gelu, forward, in both captures
  CHECK(modelled > 50);  // the emit_nvtx step records the shapes
  CHECK(kinds[whatif::EpilogueOp::kGelu] > 500);  // bert's GELU kernel after its bias GEMMs
  CHECK(kinds[whatif::EpilogueOp::kRelu] > 0);    // DLRM's MLPs: aten::clamp_min (relu) after a GEMM
}

TEST_CASE("op_fusion: fusing bert's GEMM epilogues removes a kernel and a launch each and replays no slower") {
  const whatif::Workload base = load_workload("traces/h100/bert-ddp-emit-nvtx-step");
  whatif::CandidateOptions co;
  co.intermediates_kept = true;
  const auto candidates = whatif::find_epilogue_candidates(base, co);
  REQUIRE(!candidates.empty());
  std::size_t removed_kernels = 0;
  for (const auto& c : candidates) removed_kernels += (c.kernels.size() - 1) * c.instances;
  replayer::Simulator simulator;
  const whatif::Evaluation before = whatif::evaluate(base, {}, simulator, {});
  const whatif::Evaluation after = whatif::evaluate(base, {whatif::fuse_candidates(candidates, true)}, simulator, {});
  const auto& c = std::get<whatif::OpFusionChange>(after.changes.at(0));
  CHECK(c.epilogue_instances == c.instances);
  std::size_t instances = 0;
  for (const auto& cand : candidates) instances += cand.instances;
  CHECK(c.instances == instances);
  CHECK(c.gpu_after < c.gpu_before);
  const graph::Dfg& fused = after.workload.graph.dfg;
  CHECK(count_kind(fused, NodeKind::kKernel) == count_kind(base.graph.dfg, NodeKind::kKernel) - removed_kernels);
  CHECK(count_kind(fused, NodeKind::kRuntimeCall) == count_kind(base.graph.dfg, NodeKind::kRuntimeCall) - c.launches_removed);
  // Each fused kernel keeps its GEMM's op first among its parts (what the executor lowers).
  std::size_t epilogue_nodes = 0;
  for (const NodeId id : fused.node_ids()) {
    const graph::OpDesc* d = fused.op(id);
    if (!d || d->parts.empty()) continue;
    if (whatif::is_epilogue_gemm(fused.ops().name(fused.ops().op(d->parts.front()).name))) ++epilogue_nodes;
  }
  CHECK(epilogue_nodes == c.instances);
  graph::check_acyclic(fused, *after.workload.traces);
  CHECK(median_step(after.report) <= median_step(before.report));
}

TEST_CASE("op_fusion: on gpt2, chains through launch-queue waits fuse and drop those waits") {
  const whatif::Workload base = load_workload("traces/h100/gpt2");
  const auto candidates = whatif::find_fusion_candidates(base);
  // Occurrences with a launch-queue edge out of an inner part: cut before (kFeedsOtherTrack).
  std::size_t through_queue = 0;
  for (const auto& c : candidates)
    for (const auto& parts : c.occurrences)
      for (std::size_t i = 0; i + 1 < parts.size(); ++i)
        base.graph.dfg.for_each_out_edge(parts[i], [&](graph::EdgeId e) {
          through_queue += base.graph.dfg.edge(e).kind == EdgeKind::kLaunchQueue ? 1 : 0;
        });
  CHECK(through_queue > 100);
  replayer::Simulator simulator;
  const whatif::Evaluation before = whatif::evaluate(base, {}, simulator, {});
  const whatif::Evaluation after = whatif::evaluate(base, {whatif::fuse_candidates(candidates)}, simulator, {});
  const auto& c = std::get<whatif::OpFusionChange>(after.changes.at(0));
  CHECK(c.queue_waits_removed >= through_queue);
  CHECK(c.chains.size() == candidates.size());
  std::size_t feeds_other = 0;
  for (const auto& chain : c.chains) feeds_other += chain.skipped[static_cast<int>(whatif::FusionSkip::kFeedsOtherTrack)];
  CHECK(c.instances > 0);
  graph::check_acyclic(after.workload.graph.dfg, *after.workload.traces);
  CHECK(median_step(after.report) <= median_step(before.report));
  INFO("occurrences skipped for feeding another track: " << feeds_other);
}

// The candidates' instances, those priced by the fallback, launches saved, measured and
// predicted GPU time, summed (for the figures below).
struct CandidateTotals {
  std::size_t instances = 0, fallback = 0, launches = 0;
  Nanos measured = 0, predicted = 0;
};
CandidateTotals totals(const std::vector<whatif::FusionCandidate>& candidates) {
  CandidateTotals t;
  for (const auto& c : candidates) {
    t.instances += c.instances;
    t.fallback += c.priced_by_fallback;
    t.launches += c.launches_saved;
    t.measured += c.measured;
    t.predicted += c.predicted;
  }
  return t;
}

// The figures of the op-fusion report (hidden: run by hand with
// `whatif_op_fusion_tests "[figures]"`): per trace, the candidate classes and instances, and the
// replayed iteration before and after fusing every candidate.
TEST_CASE("op_fusion: figures of fusing every candidate", "[.][figures]") {
  for (const char* path : {"traces/h100/resnet50", "traces/h100/gpt2", "traces/h100/bert-ddp",
                           "traces/h100/resnet50-emit-nvtx-step", "traces/h100/gpt2-emit-nvtx-step",
                           "traces/h100/bert-ddp-emit-nvtx-step", "traces/hta/alexnet-a100-single.json.gz"}) {
    const whatif::Workload base = load_workload(path);
    const auto candidates = whatif::find_fusion_candidates(base);
    const auto [instances, fallback, launches, measured, predicted] = totals(candidates);
    replayer::Simulator simulator;
    const whatif::Evaluation before = whatif::evaluate(base, {}, simulator, {});
    const whatif::Evaluation after = whatif::evaluate(base, {whatif::fuse_candidates(candidates)}, simulator, {});
    const auto& c = std::get<whatif::OpFusionChange>(after.changes.at(0));
    const Nanos b = job_ns(before.report), a = job_ns(after.report);
    std::printf(
        "%s: %zu classes, %zu instances (%zu priced by the fallback), launches saved %zu, candidate GPU time %s -> %s; "
        "fused: %zu instances, %zu skipped, %zu launches removed (%s of CPU), GPU %s -> %s, %zu by fallback; "
        "iteration %s -> %s (%+.2f%%)\n",
        path, candidates.size(), instances, fallback, launches, format_duration(measured).c_str(),
        format_duration(predicted).c_str(), c.instances, c.skipped, c.launches_removed,
        format_duration(c.launch_time_removed).c_str(), format_duration(c.gpu_before).c_str(),
        format_duration(c.gpu_after).c_str(), c.priced_by_fallback, format_duration(b).c_str(),
        format_duration(a).c_str(), 100.0 * static_cast<double>(a - b) / static_cast<double>(b));
    std::array<std::size_t, whatif::kFusionSkipCount> skipped{};
    for (const auto& chain : c.chains)
      for (int r = 0; r < whatif::kFusionSkipCount; ++r) skipped[r] += chain.skipped[r];
    for (int r = 0; r < whatif::kFusionSkipCount; ++r)
      std::printf("  skipped %s: %zu\n", whatif::to_string(static_cast<whatif::FusionSkip>(r)), skipped[r]);
    // The steps after the first (a warm-up in these captures), summed.
    Nanos rest_before = 0, rest_after = 0;
    for (std::size_t i = 1; i < before.report.iterations.size(); ++i) {
      rest_before += before.report.iterations[i].job_predicted_ns;
      rest_after += after.report.iterations.at(i).job_predicted_ns;
    }
    if (rest_before > 0)
      std::printf("  steps after the first: %zu, mean %s -> %s (%+.2f%%)\n", before.report.iterations.size() - 1,
                  format_duration(rest_before / static_cast<Nanos>(before.report.iterations.size() - 1)).c_str(),
                  format_duration(rest_after / static_cast<Nanos>(before.report.iterations.size() - 1)).c_str(),
                  100.0 * static_cast<double>(rest_after - rest_before) / static_cast<double>(rest_before));
    for (std::size_t i = 0; i < std::min<std::size_t>(3, candidates.size()); ++i)
      std::printf("  top %zu: %zu kernels x %zu, saving %s, first %s\n", i + 1, candidates[i].kernels.size(),
                  candidates[i].instances, format_duration(candidates[i].gpu_saving()).c_str(),
                  candidates[i].kernels.front().substr(0, 90).c_str());
  }
}

// The figures of GEMM epilogues and of launch-queue waits in fusion (hidden: run by hand with
// `whatif_op_fusion_tests "[epilogue-figures]"`): per trace, the epilogue classes and instances,
// the top classes, the iteration before and after fusing every epilogue candidate; and the
// launch-queue edges the memory-bound chains drop.
TEST_CASE("op_fusion: figures of GEMM epilogues and launch-queue waits", "[.][epilogue-figures]") {
  for (const char* path : {"traces/h100/gpt2", "traces/h100/bert-ddp", "traces/h100/resnet50",
                           "traces/h100/gpt2-emit-nvtx-step", "traces/h100/bert-ddp-emit-nvtx-step",
                           "traces/hta/a100-ws2-rank0-nccl.json.gz", "traces/dlrm-8xV100"}) {
    const whatif::Workload base = load_workload(path);
    std::size_t queue_edges = 0;
    for (const graph::EdgeId e : base.graph.dfg.edge_ids())
      queue_edges += base.graph.dfg.edge(e).kind == EdgeKind::kLaunchQueue ? 1 : 0;
    whatif::CandidateOptions co;
    co.intermediates_kept = true;
    const auto epilogues = whatif::find_epilogue_candidates(base, co);
    const auto [instances, fallback, launches, measured, predicted] = totals(epilogues);
    replayer::Simulator simulator;
    const whatif::Evaluation before = whatif::evaluate(base, {}, simulator, {});
    const whatif::Evaluation after = whatif::evaluate(base, {whatif::fuse_candidates(epilogues, true)}, simulator, {});
    const auto& c = std::get<whatif::OpFusionChange>(after.changes.at(0));
    const Nanos b = median_step(before.report), a = median_step(after.report);
    std::printf("%s: launch-queue edges %zu; epilogues: %zu classes, %zu instances (%zu by fallback), GPU %s -> %s; "
                "fused %zu, launches removed %zu, queue waits removed %zu; median step %s -> %s (%+.2f%%)\n",
                path, queue_edges, epilogues.size(), instances, fallback, format_duration(measured).c_str(),
                format_duration(predicted).c_str(), c.instances, c.launches_removed, c.queue_waits_removed,
                format_duration(b).c_str(), format_duration(a).c_str(),
                100.0 * static_cast<double>(a - b) / static_cast<double>(b));
    for (std::size_t i = 0; i < std::min<std::size_t>(4, epilogues.size()); ++i) {
      std::string names;
      for (const auto& k : epilogues[i].kernels) names += (names.empty() ? "" : " -> ") + k.substr(0, 110);
      std::printf("  top %zu: x%zu, saving %s: %s\n", i + 1, epilogues[i].instances,
                  format_duration(epilogues[i].gpu_saving()).c_str(), names.c_str());
    }
    // What follows a GEMM on its stream: the launching op of the next kernel (top 4).
    const whatif::FusionStreams view(*base.traces, base.graph.dfg);
    std::map<std::string, std::size_t> next_ops;
    for (const auto& stream : view.streams())
      for (std::size_t i = 0; i + 1 < stream.size(); ++i)
        if (whatif::is_epilogue_gemm(view.name(stream[i]))) {
          const graph::OpDesc* d = base.graph.dfg.op(stream[i + 1]);
          std::string op = d ? std::string(base.graph.dfg.ops().name(d->launcher)) : std::string();
          if (op.empty()) op = std::string(view.name(stream[i + 1]).substr(0, 100));
          ++next_ops[std::string(view.name(stream[i]).substr(0, 40)) + " => " + op];
        }
    std::vector<std::pair<std::size_t, std::string>> ranked;
    for (const auto& [name, n] : next_ops) ranked.emplace_back(n, name.empty() ? "(no launching op)" : name);
    std::sort(ranked.rbegin(), ranked.rend());
    std::string after_gemm;
    for (std::size_t i = 0; i < std::min<std::size_t>(5, ranked.size()); ++i)
      after_gemm += (i ? ", " : "") + ranked[i].second + " x" + std::to_string(ranked[i].first);
    std::printf("  after a GEMM: %s\n", after_gemm.c_str());
    // Fused chains that a launch-queue edge out of an inner part cut before (op_fusion.h).
    const auto chains = whatif::find_fusion_candidates(base, co);
    std::size_t chain_instances = 0, through_queue = 0;
    for (const auto& cand : chains)
      for (const auto& parts : cand.occurrences) {
        ++chain_instances;
        bool queued = false;
        for (std::size_t i = 0; i + 1 < parts.size(); ++i)
          base.graph.dfg.for_each_out_edge(parts[i], [&](graph::EdgeId e) {
            queued = queued || base.graph.dfg.edge(e).kind == EdgeKind::kLaunchQueue;
          });
        through_queue += queued ? 1 : 0;
      }
    std::printf("  memory-bound chain instances %zu, of which %zu have a launch-queue edge out of an inner part\n",
                chain_instances, through_queue);
    const whatif::Evaluation fused = whatif::evaluate(base, {whatif::fuse_candidates(chains, true)}, simulator, {});
    const auto& f = std::get<whatif::OpFusionChange>(fused.changes.at(0));
    std::printf("  memory-bound chains: %zu classes, fused %zu, queue waits removed %zu, median step %s -> %s (%+.2f%%)\n",
                chains.size(), f.instances, f.queue_waits_removed, format_duration(b).c_str(),
                format_duration(median_step(fused.report)).c_str(),
                100.0 * static_cast<double>(median_step(fused.report) - b) / static_cast<double>(b));
  }
}
