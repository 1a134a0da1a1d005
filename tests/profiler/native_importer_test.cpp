// The native importer: CUPTI-derived records become the trace model (kinds, resources,
// correlations), NCCL kernels are joined to the plugin's operations, NVTX ranges and
// cudaProfilerStart/Stop spans become ProfilerStep#N annotations.
#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>

#include "native_trace_builder.h"
#include "temp_dir.h"
#include "trace/native/native_importer.h"
#include "trace/iterations.h"
#include "trace/native/chrome_export.h"
#include "trace/native/nccl_join.h"
#include "trace/native/nvtx_op_range.h"

using namespace dpro;
using namespace dpro::native;
using dpro::trace::EventKind;

namespace {

constexpr std::uint64_t kT0 = 1'700'000'000'000'000'000ull + 1'000'000;
constexpr std::uint64_t kComm = 0x1234abcdull;

struct Loaded {
  StringTable strings;
  trace::TraceRank rank;
  int warnings = 0;

  std::vector<const trace::Event*> of_kind(EventKind kind) const {
    std::vector<const trace::Event*> out;
    for (const auto& e : rank.events)
      if (e.kind == kind) out.push_back(&e);
    return out;
  }
  std::string name(const trace::Event* e) const { return strings.str(e->name); }
};

void load(const std::string& path, Loaded& out) {
  Logger log(LogLevel::kQuiet);
  out.rank = trace::make_native_importer()->read(path, out.strings, {}, log);
  out.warnings = log.warning_count();
}

// A step of one rank: a cudaLaunchKernel + gemm kernel, then an NCCL allreduce launched via
// cuLaunchKernelEx inside a KernelLaunch event (external correlation = launch id).
void add_step(test::NativeTraceBuilder& b, std::uint64_t t, std::uint32_t corr, std::uint64_t seq) {
  b.add(ApiRecord{ApiKind::kRuntime, 211, t, t + 100, 10, 11, corr, "cudaLaunchKernel_v7000"});
  b.add(KernelRecord{t + 200, t + 1200, 0, 1, 7, corr, "gemm", {1, 1, 1}, {32, 1, 1}, 32, 0});
  std::uint64_t launch_id = 1000 + seq, group = 500 + seq;
  b.add(NcclCollRecord{2000 + seq, kComm, group, kCollHasSequence, 0, "AllReduce", "ncclFloat32",
                       "RING", "LL", seq, 4096, 2, 0, t + 300, t + 310, 10, 11});
  b.add(NcclLaunchRecord{launch_id, kComm, group, t + 320, t + 400, 10, 11});
  b.add(ApiRecord{ApiKind::kDriver, 652, t + 330, t + 390, 10, 11, corr + 1, "cuLaunchKernelEx"});
  b.add(ExternalCorrelationRecord{kNcclExternalKind, launch_id, corr + 1});
  b.add(KernelRecord{t + 1300, t + 3000, 0, 1, 9, corr + 1,
                     "ncclDevKernel_AllReduce_Sum_f32_RING_LL", {2, 1, 1}, {512, 1, 1}, 90, 0});
}

}  // namespace

TEST_CASE("native import yields the trace model with launches joined to GPU work", "[native]") {
  test::TempDir dir("import");
  test::NativeTraceBuilder b(test::header_for(2, "node-a"));
  b.add(NcclCommRecord{kComm, "world", 8, 2, 1});
  b.add(MarkerRecord{kMarkerStart, kT0 - 10, 1, 10, 11, "ProfilerStep#0", ""});
  add_step(b, kT0, 1, 0);
  b.add(MarkerRecord{kMarkerEnd, kT0 + 4000, 1, 10, 11, "", ""});
  b.add(MarkerRecord{kMarkerStart, kT0 + 4000, 2, 10, 11, "ProfilerStep#1", ""});
  add_step(b, kT0 + 5000, 10, 1);
  b.add(MarkerRecord{kMarkerEnd, kT0 + 9000, 2, 10, 11, "", ""});
  b.add(MemcpyRecord{kT0 + 9500, kT0 + 9600, 0, 1, 7, 30, 8192, 2, 0, 0, 0, 0});
  b.write(dir.file("r2.dpro"));
  Loaded t;
  load(dir.file("r2.dpro"), t);
  CHECK(t.warnings == 0);
  CHECK(t.rank.format == "native");
  CHECK(t.rank.rank == 2);
  CHECK(t.rank.rank_known);
  CHECK(t.rank.world_size == 8);
  CHECK(t.rank.host == "node-a");
  CHECK(t.rank.backend == "nccl");

  auto kernels = t.of_kind(EventKind::kKernel);
  auto colls = t.of_kind(EventKind::kCollective);
  auto runtime = t.of_kind(EventKind::kRuntimeCall);
  REQUIRE(kernels.size() == 2);
  REQUIRE(colls.size() == 2);
  CHECK(runtime.size() == 2);
  CHECK(t.of_kind(EventKind::kDriverCall).size() == 2);
  CHECK(t.of_kind(EventKind::kMemcpy).size() == 1);

  // GPU events live on (device, stream); CPU events on (pid, tid).
  const auto& gpu = t.rank.resources[kernels[0]->resource];
  CHECK(gpu.kind == trace::ResourceKind::kGpuStream);
  CHECK(gpu.pid == 0);
  CHECK(gpu.tid == 7);
  const auto& cpu = t.rank.resources[runtime[0]->resource];
  CHECK(cpu.kind == trace::ResourceKind::kCpuThread);
  CHECK(cpu.tid == 11);
  CHECK(kernels[0]->correlation == runtime[0]->correlation);

  const auto* info = t.rank.attrs_of(*colls[1]);
  REQUIRE(info);
  REQUIRE(info->collective);
  CHECK(info->collective->op == "allreduce");
  CHECK(info->collective->group_name == std::to_string(kComm));
  CHECK(info->collective->sequence == 1);
  CHECK(info->collective->algorithm == "RING");
  CHECK(info->collective->protocol == "LL");
  CHECK(info->collective->channels == 2);
  CHECK(info->collective->group_size == 8);
  CHECK(info->collective->in_nelems == 4096);
  CHECK(colls[1]->external_id == 1001);

  auto steps = t.of_kind(EventKind::kUserAnnotation);
  REQUIRE(steps.size() == 2);
  CHECK(t.name(steps[0]) == "ProfilerStep#0");
  CHECK(steps[1]->start == static_cast<Nanos>(kT0 + 4000));
  CHECK(steps[1]->dur == 5000);
  CHECK(t.rank.resources[steps[0]->resource].tid == 11);

  CHECK(std::is_sorted(t.rank.events.begin(), t.rank.events.end(), [](const auto& a, const auto& b) {
    return a.start != b.start ? a.start < b.start : a.dur > b.dur;
  }));
}

TEST_CASE("kernel and API names read as torch.profiler shows them", "[native]") {
  // Seen on the H100: CUPTI names kernels by their mangled symbol and API calls with a version.
  test::TempDir dir("names");
  test::NativeTraceBuilder b(test::header_for(0, "node-a"));
  b.add(ApiRecord{ApiKind::kRuntime, 51, kT0, kT0 + 100, 10, 11, 1, "cudaMemsetAsync_v3020"});
  b.add(ApiRecord{ApiKind::kDriver, 307, kT0 + 200, kT0 + 300, 10, 11, 2, "cuMemcpyHtoD_v2"});
  b.add(ApiRecord{ApiKind::kRuntime, 211, kT0 + 400, kT0 + 500, 10, 11, 3, "cudaLaunchKernel_v7000"});
  b.add(KernelRecord{kT0 + 600, kT0 + 900, 0, 1, 7, 3, "_ZN2at6native24vectorized_gather_kernelILi16ElEEvPcS2_PT0_illllb",
                     {1, 1, 1}, {32, 1, 1}, 32, 0});
  b.add(KernelRecord{kT0 + 1000, kT0 + 1100, 0, 1, 7, 4, "_Znot_a_symbol", {1, 1, 1}, {32, 1, 1}, 32, 0});
  b.write(dir.file("n.dpro"));
  Loaded t;
  load(dir.file("n.dpro"), t);
  auto kernels = t.of_kind(EventKind::kKernel);
  REQUIRE(kernels.size() == 2);
  CHECK(t.name(kernels[0]) == "void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int, long, long, long, long, bool)");
  CHECK(t.name(kernels[1]) == "_Znot_a_symbol");  // not demangled: kept as recorded
  auto runtime = t.of_kind(EventKind::kRuntimeCall);
  REQUIRE(runtime.size() == 2);
  CHECK(t.name(runtime[0]) == "cudaMemsetAsync");
  CHECK(t.name(runtime[1]) == "cudaLaunchKernel");
  auto driver = t.of_kind(EventKind::kDriverCall);
  REQUIRE(driver.size() == 1);
  CHECK(t.name(driver[0]) == "cuMemcpyHtoD_v2");  // an API version, not CUPTI's
}

TEST_CASE("grouped send and receive run as one sendrecv kernel", "[native]") {
  test::TempDir dir("p2p");
  test::NativeTraceBuilder b(test::header_for(0, "h"));
  b.add(NcclCollRecord{1, kComm, 9, kCollIsP2p, 0, "Send", "ncclInt8", "", "", 0, 100, 1, 1, kT0, kT0 + 5, 1, 1});
  b.add(NcclCollRecord{2, kComm, 9, kCollIsP2p, 0, "Recv", "ncclInt8", "", "", 0, 100, 1, 1, kT0 + 6, kT0 + 9, 1, 1});
  b.add(NcclLaunchRecord{77, kComm, 9, kT0 + 10, kT0 + 20, 1, 1});
  b.add(ExternalCorrelationRecord{kNcclExternalKind, 77, 5});
  b.add(KernelRecord{kT0 + 100, kT0 + 900, 0, 1, 3, 5, "ncclDevKernel_SendRecv", {}, {}, 0, 0});
  b.write(dir.file("p.dpro"));
  Loaded t;
  load(dir.file("p.dpro"), t);
  auto colls = t.of_kind(EventKind::kCollective);
  REQUIRE(colls.size() == 1);
  const auto& c = *t.rank.attrs_of(*colls[0])->collective;
  CHECK(c.op == "sendrecv");
  CHECK(c.in_nelems == 200);
  CHECK_FALSE(c.sequence);
}

TEST_CASE("without KernelLaunch events (NCCL 2.27) NCCL kernels join by name and order", "[native]") {
  test::TempDir dir("v4");
  test::NativeTraceBuilder b(test::header_for(0, "h"));
  b.add(NcclCollRecord{1, kComm, 3, kCollHasSequence, 0, "AllGather", "ncclBfloat16", "RING", "SIMPLE", 0, 64, 4, 0, kT0, kT0 + 5, 1, 1});
  b.add(NcclCollRecord{2, kComm, 4, kCollHasSequence, 0, "AllReduce", "ncclBfloat16", "TREE", "LL128", 0, 64, 4, 0, kT0 + 10, kT0 + 15, 1, 1});
  b.add(KernelRecord{kT0 + 100, kT0 + 200, 0, 1, 3, 5, "ncclDevKernel_AllReduce_Sum_bf16_TREE_LL128", {}, {}, 0, 0});
  b.add(KernelRecord{kT0 + 300, kT0 + 400, 0, 1, 3, 6, "ncclDevKernel_AllGather_RING_SIMPLE", {}, {}, 0, 0});
  b.add(KernelRecord{kT0 + 500, kT0 + 600, 0, 1, 3, 7, "ncclDevKernel_Broadcast_RING_LL", {}, {}, 0, 0});
  b.write(dir.file("v4.dpro"));
  Loaded t;
  load(dir.file("v4.dpro"), t);
  auto colls = t.of_kind(EventKind::kCollective);
  REQUIRE(colls.size() == 3);
  CHECK(t.rank.attrs_of(*colls[0])->collective->op == "allreduce");
  CHECK(t.rank.attrs_of(*colls[0])->collective->algorithm == "TREE");
  CHECK(t.rank.attrs_of(*colls[1])->collective->op == "allgather");
  CHECK(t.rank.attrs_of(*colls[1])->collective->protocol == "SIMPLE");
  CHECK(t.rank.attrs_of(*colls[2])->collective->op == "broadcast");  // from the name only
  CHECK_FALSE(t.rank.attrs_of(*colls[2])->collective->group_name);
}

TEST_CASE("cudaProfilerStart/Stop spans become ProfilerStep annotations", "[native]") {
  test::TempDir dir("cps");
  test::NativeTraceBuilder b(test::header_for(0, "h"));
  for (std::uint64_t k = 0; k < 3; ++k) {
    std::uint64_t t = kT0 + k * 10000;
    b.add(ApiRecord{ApiKind::kRuntime, kCbidCudaProfilerStart, t, t + 10, 1, 2, 0, "cudaProfilerStart"});
    b.add(ApiRecord{ApiKind::kRuntime, 211, t + 100, t + 200, 1, 2, 40 + static_cast<std::uint32_t>(k), "cudaLaunchKernel"});
    b.add(ApiRecord{ApiKind::kRuntime, kCbidCudaProfilerStop, t + 5000, t + 5010, 1, 2, 0, "cudaProfilerStop"});
  }
  b.write(dir.file("c.dpro"));
  Loaded t;
  load(dir.file("c.dpro"), t);
  auto steps = t.of_kind(EventKind::kUserAnnotation);
  REQUIRE(steps.size() == 3);
  CHECK(t.name(steps[2]) == "ProfilerStep#2");
  CHECK(steps[1]->start == static_cast<Nanos>(kT0 + 10000));
  CHECK(steps[1]->dur == 5010);
}

TEST_CASE("a user step name and a step selection are applied at load", "[native]") {
  test::TempDir dir("sel");
  test::NativeTraceBuilder b(test::header_for(0, "h"));
  b.add().add_metadata("step_name", "train_step");
  b.add().add_metadata("steps", "1:1");
  for (std::uint32_t k = 0; k < 3; ++k) {
    std::uint64_t t = kT0 + k * 10000;
    b.add(MarkerRecord{kMarkerStart, t, k + 1, 1, 2, "train_step", ""});
    b.add(ApiRecord{ApiKind::kRuntime, 211, t + 100, t + 200, 1, 2, k + 1, "cudaLaunchKernel"});
    b.add(MarkerRecord{kMarkerEnd, t + 9000, k + 1, 1, 2, "", ""});
  }
  b.write(dir.file("s.dpro"));
  Loaded t;
  load(dir.file("s.dpro"), t);
  auto steps = t.of_kind(EventKind::kUserAnnotation);
  REQUIRE(steps.size() == 1);
  CHECK(t.name(steps[0]) == "ProfilerStep#1");
  auto calls = t.of_kind(EventKind::kRuntimeCall);
  REQUIRE(calls.size() == 1);
  CHECK(calls[0]->correlation == 2);
}

TEST_CASE("a damaged step selection keeps all events with a warning", "[native]") {
  // These once ended in std::stol's invalid_argument / out_of_range ("internal error").
  for (const char* steps : {"1:x", "99999999999999999999:1", ":", "1:2:3"}) {
    INFO(steps);
    test::TempDir dir("badsel");
    test::NativeTraceBuilder b(test::header_for(0, "h"));
    b.add().add_metadata("steps", steps);
    for (std::uint32_t k = 0; k < 3; ++k) {
      const std::uint64_t t = kT0 + k * 10000;
      b.add(MarkerRecord{kMarkerStart, t, k + 1, 1, 2, "ProfilerStep#" + std::to_string(k), ""});
      b.add(MarkerRecord{kMarkerEnd, t + 9000, k + 1, 1, 2, "", ""});
    }
    b.write(dir.file("s.dpro"));
    Loaded t;
    load(dir.file("s.dpro"), t);
    CHECK(t.of_kind(EventKind::kUserAnnotation).size() == 3);
    CHECK(t.warnings >= 1);
  }
  // A range named like a step but without a number is not a step (and is no error).
  test::TempDir dir("oddname");
  test::NativeTraceBuilder b(test::header_for(0, "h"));
  b.add().add_metadata("steps", "1:1");
  for (std::uint32_t k = 0; k < 3; ++k) {
    const std::uint64_t t = kT0 + k * 10000;
    b.add(MarkerRecord{kMarkerStart, t, k + 1, 1, 2, k == 0 ? "ProfilerStep#x" : "ProfilerStep#" + std::to_string(k), ""});
    b.add(MarkerRecord{kMarkerEnd, t + 9000, k + 1, 1, 2, "", ""});
  }
  b.write(dir.file("s.dpro"));
  Loaded t;
  load(dir.file("s.dpro"), t);
  const auto kept = t.of_kind(EventKind::kUserAnnotation);
  REQUIRE(kept.size() == 1);
  CHECK(t.name(kept[0]) == "ProfilerStep#1");
}

TEST_CASE("emit_nvtx range names give the operator and its shapes", "[native][nvtx]") {
  using trace::parse_nvtx_op_range;
  // As torch/csrc/profiler/util.cpp's getNvtxStr writes them.
  auto full = parse_nvtx_op_range(
      "aten::addmm, seq = 12, op_id = 345, sizes = [[1024], [64, 512], [512, 1024], [], []], input_op_ids = [(340,0), (341,0)]");
  REQUIRE(full);
  CHECK(full->op == "aten::addmm");
  CHECK(full->seq == 12);
  CHECK(full->input_dims == "[[1024], [64, 512], [512, 1024], [], []]");
  auto backward = parse_nvtx_op_range("autograd::engine::evaluate_function: AddmmBackward0, seq = 12, op_id = 400");
  REQUIRE(backward);
  CHECK(backward->op == "autograd::engine::evaluate_function: AddmmBackward0");
  CHECK(backward->input_dims.empty());
  auto no_seq = parse_nvtx_op_range("aten::empty, op_id = 7, sizes = [[], [], [], [], [], []]");
  REQUIRE(no_seq);
  CHECK_FALSE(no_seq->seq);
  CHECK(no_seq->input_dims == "[[], [], [], [], [], []]");
  auto bare = parse_nvtx_op_range("aten::view");
  REQUIRE(bare);
  CHECK(bare->op == "aten::view");
  CHECK(full->is_operator);
  CHECK(backward->is_operator);
  CHECK(bare->is_operator);
  CHECK(parse_nvtx_op_range("AddmmBackward0, seq = 12, op_id = 401")->is_operator);
  // A record_function scope under emit_nvtx: named the same way, but a user annotation.
  auto scope = parse_nvtx_op_range("ProfilerStep#3, op_id = 12");
  REQUIRE(scope);
  CHECK(scope->op == "ProfilerStep#3");
  CHECK_FALSE(scope->is_operator);
  CHECK_FALSE(parse_nvtx_op_range("Optimizer.step#SGD.step, op_id = 90")->is_operator);
  // Not an operator: other ranges, and names that only look like one.
  for (const char* other : {"ProfilerStep#3", "forward", "aten::", "aten::add backward", ", seq = 3",
                            "aten::add, seq = x", "aten::add, seq = 3, colour = red", "aten::add, sizes = [[1, 2]",
                            "aten::add, sizes = [[1.5]]", "aten::add, sizes = [1, 2]", "aten::add, sizes = [[1,2]]",
                            "aten::add, sizes = [[1]]x", "aten::add, input_op_ids = (1,0)"}) {
    INFO(other);
    CHECK_FALSE(parse_nvtx_op_range(other));
  }
}

TEST_CASE("a capture of a job under emit_nvtx has its operators as CPU ops with shapes", "[native][nvtx]") {
  test::TempDir dir("emit_nvtx");
  test::NativeTraceBuilder b(test::header_for(0, "h"));
  b.add(MarkerRecord{kMarkerStart, kT0, 1, 10, 11, "ProfilerStep#0, op_id = 19", ""});  // record_function
  b.add(MarkerRecord{kMarkerStart, kT0 + 10, 2, 10, 11, "aten::linear, seq = 5, op_id = 20, sizes = [[8, 512], [1024, 512], [1024]]", ""});
  b.add(MarkerRecord{kMarkerStart, kT0 + 20, 3, 10, 11, "aten::addmm, seq = 5, op_id = 21, sizes = [[1024], [8, 512], [512, 1024], [], []]", ""});
  b.add(ApiRecord{ApiKind::kRuntime, 211, kT0 + 30, kT0 + 60, 10, 11, 1, "cudaLaunchKernel_v7000"});
  b.add(MarkerRecord{kMarkerEnd, kT0 + 70, 3, 10, 11, "", ""});
  b.add(MarkerRecord{kMarkerEnd, kT0 + 80, 2, 10, 11, "", ""});
  b.add(KernelRecord{kT0 + 100, kT0 + 900, 0, 1, 7, 1, "ampere_sgemm_64x32_tn", {16, 1, 1}, {128, 1, 1}, 32, 0});
  b.add(MarkerRecord{kMarkerEnd, kT0 + 1000, 1, 10, 11, "", ""});
  b.write(dir.file("e.dpro"));
  Loaded t;
  load(dir.file("e.dpro"), t);
  CHECK(t.warnings == 0);
  const auto steps = t.of_kind(EventKind::kUserAnnotation);
  REQUIRE(steps.size() == 1);
  CHECK(t.name(steps[0]) == "ProfilerStep#0");  // the record_function scope, without its op_id
  CHECK(trace::profiler_step_number(t.name(steps[0])) == 0);  // an iteration mark
  const auto ops = t.of_kind(EventKind::kCpuOp);
  REQUIRE(ops.size() == 2);
  CHECK(t.name(ops[0]) == "aten::linear");
  CHECK(t.name(ops[1]) == "aten::addmm");
  CHECK(ops[1]->start == static_cast<Nanos>(kT0 + 20));
  CHECK(ops[1]->dur == 50);
  const auto* a = t.rank.attrs_of(*ops[1]);
  REQUIRE(a);
  CHECK(a->input_dims == "[[1024], [8, 512], [512, 1024], [], []]");
  CHECK(a->input_types.empty());  // emit_nvtx records no types
  CHECK(a->sequence_number == 5);
  // The Chrome export writes them as torch.profiler does (cpu_op with "Input Dims").
  std::ostringstream json;
  trace::write_chrome_json(t.rank, t.strings, json);
  CHECK(json.str().find("\"cat\": \"cpu_op\", \"name\": \"aten::addmm\"") != std::string::npos);
  CHECK(json.str().find("\"Input Dims\": [[1024], [8, 512], [512, 1024], [], []], \"Sequence number\": 5") !=
        std::string::npos);
}

TEST_CASE("kernel names map to normalised NCCL operations", "[native]") {
  CHECK(nccl_op_from_kernel_name("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL") == "reducescatter");
  CHECK(nccl_op_from_kernel_name("ncclKernel_AllGather_RING_LL_Sum_int8_t") == "allgather");
  CHECK(nccl_op_from_kernel_name("ncclDevKernel_SendRecv") == "sendrecv");
  CHECK_FALSE(nccl_op_from_kernel_name("volta_sgemm_128x64_nn"));
  CHECK(normalise_nccl_op("AllToAll") == "alltoall");
}

TEST_CASE("a capture's calibration of its records' cost is read from its metadata", "[native][profiler-cost]") {
  auto capture = [](const std::string& dir, const char* record_cost) {
    test::NativeTraceBuilder b(test::header_for(0, "h"));
    if (record_cost) b.add().add_metadata("record_cost", record_cost);
    b.add().add_metadata("record_cost.calibration", "runtime: cudaGetDevice, 9 x 200 calls, ...");
    b.add(ApiRecord{ApiKind::kRuntime, 211, kT0, kT0 + 100, 1, 2, 1, "cudaLaunchKernel"});
    b.write(dir + "/c.dpro");
  };
  SECTION("with one") {
    test::TempDir dir("cost");
    capture(dir.path(), "runtime=2104ns,driver=1876ns");
    Loaded t;
    load(dir.file("c.dpro"), t);
    REQUIRE(t.rank.record_costs);
    CHECK(t.rank.record_costs->of(trace::RecordClass::kRuntime) == 2104);
    CHECK(t.rank.record_costs->of(trace::RecordClass::kDriver) == 1876);
    CHECK_FALSE(t.rank.record_costs->of(trace::RecordClass::kKernel));
    CHECK(t.warnings == 0);
  }
  SECTION("a class a later profiler calibrates is skipped with a warning") {
    test::TempDir dir("cost-later");
    capture(dir.path(), "runtime=2us,nvtx=900ns");
    Loaded t;
    load(dir.file("c.dpro"), t);
    REQUIRE(t.rank.record_costs);
    CHECK(t.rank.record_costs->of(trace::RecordClass::kRuntime) == 2000);
    CHECK(t.warnings == 1);
  }
  SECTION("a damaged one leaves the rank without costs, with a warning") {
    test::TempDir dir("cost-bad");
    capture(dir.path(), "runtime=fast");
    Loaded t;
    load(dir.file("c.dpro"), t);
    CHECK_FALSE(t.rank.record_costs);
    CHECK(t.warnings == 1);
    CHECK(t.of_kind(EventKind::kRuntimeCall).size() == 1);
  }
  SECTION("a capture from before the calibration has none, and no warning") {
    test::TempDir dir("cost-none");
    capture(dir.path(), nullptr);
    Loaded t;
    load(dir.file("c.dpro"), t);
    CHECK_FALSE(t.rank.record_costs);
    CHECK(t.warnings == 0);
  }
}

TEST_CASE("the bundled H100 captures, recorded before the calibration, load without costs", "[native][profiler-cost]") {
  for (const char* job : {"traces/h100/gpt2/norank.vm.pid1078.dpro.gz",
                          "traces/h100/bert-ddp/rank0.local0.vm.pid1574.dpro.gz"}) {
    INFO(job);
    Loaded t;
    load(std::string(DPRO_SOURCE_DIR) + "/" + job, t);
    CHECK_FALSE(t.rank.record_costs);
    CHECK(t.of_kind(EventKind::kKernel).size() > 40'000);
  }
}
