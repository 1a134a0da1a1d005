// The critical path's categories, the GPU busy breakdown, unresolved waits and the verdict
// (critical_path.h, report.h, verdict.h) on small synthetic Kineto traces, one CPU thread
// (pid 10, tid 11) launching onto GPU 0, and on a bundled H100 capture.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "replayer/replay.h"
#include "step_fixtures.h"
#include "trace_fixtures.h"

using namespace dpro;
using replayer::Category;

using test::cpu;
using test::find_op;
using test::gpu;
using test::kUs;
using test::replay_step;

TEST_CASE("Categories: the untraced gap before a cheap CPU call is cpu_untraced, not the call's time") {
  // 570 us of untraced host time (Python) before a 5 us cudaStreamWaitEvent.
  const auto r = replay_step("untraced", 0, 640, {cpu("cpu_op", "aten::add", 10, 20), cpu("cuda_runtime", "cudaStreamWaitEvent", 600, 5),
                                                 cpu("cpu_op", "aten::mul", 610, 20)});
  REQUIRE(r.report.iterations.size() == 1);
  const auto& it = r.report.iterations[0];
  const replayer::PathOp* wait = find_op(it, "cudaStreamWaitEvent");
  REQUIRE(wait);
  CHECK(wait->own == 5 * kUs);
  CHECK(wait->gap_before == 570 * kUs);
  CHECK(wait->calls == 1);
  CHECK(wait->category == Category::kCpuOp);
  // 10 us lead, 570 + 5 us gaps, 10 us tail after the last op.
  CHECK(it.job_critical_path[Category::kCpuUntraced] == (570 + 5 + 10) * kUs);
  CHECK(it.job_critical_path[Category::kCpuOp] == (20 + 5 + 20) * kUs);
  CHECK(it.job_critical_path.total() == it.job_predicted_ns);
  CHECK(replayer::headline(it.verdict) == "CPU-bound");
}

TEST_CASE("Categories: a GPU op held 300 us after its launch with no edge is an unresolved wait, counted and named") {
  const auto r = replay_step("unresolved", 95, 460,
                             {cpu("cuda_runtime", "cudaLaunchKernel", 100, 5, 1), gpu("kernel", "gemm", 7, 400, 50, 1),
                              cpu("cuda_runtime", "cudaDeviceSynchronize", 110, 342)});
  const auto& it = r.report.iterations.at(0);
  CHECK(it.unresolved.count == 1);
  CHECK(it.unresolved.total == 300 * kUs);
  REQUIRE(it.unresolved.ops.size() == 1);
  CHECK(it.unresolved.ops[0].name == "gemm");
  CHECK(it.job_critical_path[Category::kUnresolvedWait] == 300 * kUs);
  CHECK(it.job_critical_path[Category::kLaunch] == 0);
  CHECK(replayer::headline(it.verdict) == "bound by unresolved waits");
  const std::string text = replayer::render_text(r.report);
  CHECK_THAT(text, Catch::Contains("unresolved waits: 1 GPU ops") && Catch::Contains("gemm (rank 0, x1, 300.000 us)"));
  const auto json = replayer::to_json(r.report);
  CHECK(json["iterations"][0]["job"]["unresolved_waits"]["count"] == 1);
  CHECK(json["iterations"][0]["job"]["verdict"]["bound"] == "bound by unresolved waits");
}

TEST_CASE("Categories: a launch 5 us before its kernel is launch latency, no unresolved wait") {
  const auto r = replay_step("launched", 95, 460,
                             {cpu("cuda_runtime", "cudaLaunchKernel", 100, 5, 1), gpu("kernel", "gemm", 7, 105, 50, 1),
                              cpu("cuda_runtime", "cudaDeviceSynchronize", 110, 342)});
  const auto& it = r.report.iterations.at(0);
  CHECK(it.unresolved.count == 0);
  CHECK(it.job_critical_path[Category::kUnresolvedWait] == 0);
  CHECK(it.job_critical_path[Category::kLaunch] == 5 * kUs);
}

TEST_CASE("GPU breakdown: a union over streams, never above the step, and DeepEP kernels are communication") {
  // Stream 7 computes 100-400 us; a copy on stream 8 (200-350) hides under it; a DeepEP
  // dispatch on stream 9 (350-500) shows for the 100 us nothing else runs.
  const std::string deep_ep = "void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*)";
  const auto r = replay_step("streams", 90, 510,
                             {cpu("cuda_runtime", "cudaLaunchKernel", 95, 3, 1), gpu("kernel", "gemm", 7, 100, 300, 1),
                              cpu("cuda_runtime", "cudaMemcpyAsync", 195, 3, 2),
                              gpu("gpu_memcpy", "Memcpy DtoD (Device -> Device)", 8, 200, 150, 2),
                              cpu("cuda_runtime", "cudaLaunchKernel", 345, 3, 3), gpu("kernel", deep_ep, 9, 350, 150, 3),
                              cpu("cuda_runtime", "cudaDeviceSynchronize", 349, 153)});
  const auto& rank = r.report.iterations.at(0).ranks.at(0);
  CHECK(rank.gpu_busy[Category::kCompute] == 300 * kUs);
  CHECK(rank.gpu_busy[Category::kCopies] == 0);
  CHECK(rank.gpu_busy[Category::kCommunication] == 100 * kUs);
  CHECK(rank.gpu_busy.total() + rank.gpu_idle == rank.predicted_ns);
  CHECK(rank.gpu_idle == 20 * kUs);
  const replayer::PathOp* dispatch = find_op(r.report.iterations[0], deep_ep);
  REQUIRE(dispatch);
  CHECK(dispatch->category == Category::kCommunication);
  CHECK(replayer::is_communication_kernel("vllm::cross_device_reduce_1stage<half, 8>"));
  CHECK(replayer::is_communication_kernel("nvshmemi_transfer_rma_kernel"));
  CHECK(replayer::is_communication_kernel("tensorrt_llm::kernels::oneShotAllReduceKernel"));
  CHECK_FALSE(replayer::is_communication_kernel("void at::native::reduce_kernel<512, 1>"));
}

TEST_CASE("Verdict: a step whose GPU is busy almost throughout is GPU-bound") {
  const auto r = replay_step("gpu_bound", 95, 1110,
                             {cpu("cuda_runtime", "cudaLaunchKernel", 100, 3, 1), gpu("kernel", "gemm", 7, 104, 1000, 1),
                              cpu("cuda_runtime", "cudaDeviceSynchronize", 110, 996)});
  const auto& it = r.report.iterations.at(0);
  CHECK(replayer::headline(it.verdict) == "GPU-bound");
  CHECK(it.verdict.gpu_busy_share >= replayer::kGpuBoundBusyShare);
  CHECK(replayer::headline(it.ranks.at(0).verdict) == "GPU-bound");
  CHECK_THAT(replayer::render_text(r.report), Catch::Contains("verdict: GPU-bound"));
}

TEST_CASE("Verdict rules on breakdowns: peer wait names the rank, ties and the busy GPU") {
  replayer::Breakdown b;
  b[Category::kPeerWait] = 60;
  b.peer_wait_by_rank = {{2, 10}, {3, 50}};
  b[Category::kCpuOp] = 40;
  CHECK(replayer::headline(replayer::verdict_of(b, 10, 100)) == "waiting for rank 3");
  CHECK(replayer::headline(replayer::verdict_of(b, 95, 100)) == "GPU-bound");
  b[Category::kCommunication] = 70;
  CHECK(replayer::headline(replayer::verdict_of(b, 10, 100)) == "communication-bound");
  b[Category::kCpuUntraced] = 40;
  CHECK(replayer::headline(replayer::verdict_of(b, 10, 100)) == "CPU-bound");
}

TEST_CASE("Verdict on the H100 GPT-2 capture: host work holds its path, its first measured step is CPU-bound") {
  test::CapturingLog log;
  const auto traces = test::load({test::source_path("traces/h100/gpt2")}, log.log);
  const auto report = replayer::replay_traces(traces, {}, log.log).report;
  Nanos host = 0, gpu_work = 0;
  for (const auto& it : report.iterations) {
    const auto& b = it.job_critical_path;
    host += b[Category::kCpuOp] + b[Category::kCpuUntraced] + b[Category::kLaunch];
    gpu_work += b[Category::kCompute] + b[Category::kCopies];
    CHECK(it.job_critical_path.total() == it.job_predicted_ns);
    for (const auto& r : it.ranks) CHECK(r.gpu_busy.total() + r.gpu_idle == r.predicted_ns);
  }
  Nanos total = 0;
  for (const auto& it : report.iterations) total += it.job_predicted_ns;
  CHECK(2 * host > total);
  CHECK(host > gpu_work);
  const auto step10 = std::find_if(report.iterations.begin(), report.iterations.end(),
                                   [](const auto& it) { return it.number == 10; });
  REQUIRE(step10 != report.iterations.end());
  CHECK(replayer::headline(step10->verdict) == "CPU-bound");
  // True call counts: no op is listed with more calls than the step has nodes.
  for (const auto& op : step10->path_ops) CHECK(op.calls <= report.nodes);
}
