// The profiler's own CPU cost per recorded activity: walking real CUPTI records with
// cuptiActivityGetNextRecord and encoding them, merging and writing them to a file, the NCCL
// plugin's per-event cost, and reading the file back. Prints JSON lines; run by hand:
//   build/tests/profiler/bench_profiler [buffers [pipeline]]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "../profiler/cupti_buffers.h"
#include "bench_util.h"
#include "core/log.h"
#include "profiler/cupti_records.h"
#include "profiler/nccl_plugin.h"
#include "profiler/nccl_profiler_abi.h"
#include "profiler/session.h"
#include "trace/native/native_reader.h"
#include "trace/format/native_writer.h"

using namespace dpro;

namespace {

// CPU time of `f`: the profiler's own cost, less sensitive than wall time to other work on a
// shared machine.
template <typename F>
double seconds(F&& f) {
  const double t0 = bench::cpu_seconds();
  f();
  return bench::cpu_seconds() - t0;
}

// Best of `repeats` runs: the cost without interference from other processes.
template <typename F>
double best_seconds(int repeats, F&& f) {
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) best = std::min(best, seconds(f));
  return best;
}

void emit(const char* bench, double value, const char* unit) {
  std::printf("{\"bench\": \"%s\", \"value\": %.1f, \"unit\": \"%s\"}\n", bench, value, unit);
}

// Records are stamped near "now", like real ones relative to the session's base time.
const std::uint64_t kBase = profiler::realtime_ns();

// A 4 MB CUPTI buffer shaped like a training step: per launch a runtime call and its kernel,
// some NCCL launches with external correlations, copies and syncs. 20 distinct kernel names.
test::ActivityBufferBuilder training_buffer(std::size_t* records) {
  static std::vector<std::string> names;
  for (int i = 0; names.size() < 20; ++i)
    names.push_back("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, "
                    "at::detail::Array<char*, 3> >(int, at::native::AddFunctor<float>, variant " +
                    std::to_string(i) + ")");
  test::ActivityBufferBuilder b;
  *records = 0;
  std::uint64_t t = kBase + 1000;
  for (std::uint32_t corr = 1; b.bytes() < (4u << 20) - 1024; corr += 2, t += 5000) {
    b.add(test::api_record(false, 211, t, t + 3000, corr));
    b.add(test::kernel_record(names[corr % names.size()].c_str(), t + 4000, t + 9000, corr));
    *records += 2;
    if (corr % 16 == 1) {
      b.add(test::api_record(true, 652, t + 100, t + 900, corr + 1));
      b.add(test::external_record(corr, corr + 1));
      b.add(test::memcpy_record(t + 9500, t + 9900, corr + 1, 1 << 16));
      *records += 3;
    }
  }
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  const int buffers = argc > 1 ? std::atoi(argv[1]) : 50;
  const bool pipeline_only = argc > 2 && std::string(argv[2]) == "pipeline";  // for profiling
  std::size_t per_buffer = 0;
  const auto buffer = training_buffer(&per_buffer);
  const double total_records = static_cast<double>(per_buffer) * buffers;
  const double cupti_mb = static_cast<double>(buffer.bytes()) * buffers / 1e6;

  const std::string dir = std::filesystem::temp_directory_path() / ("dpro-bench-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  profiler::SessionConfig config;
  config.out_dir = dir;
  config.flush_ms = 0;  // flushed explicitly below, every 4 buffers
  config.pid = ::getpid();
  config.host = "bench";

  // 1. Parse + encode alone, as the CUPTI buffer-completion thread does.
  {
    native::StringInterner strings;
    native::RecordEncoder encoder(strings, static_cast<std::int64_t>(kBase));
    profiler::CallbackNames names;
    double parse_s = best_seconds(3, [&] {
      for (int i = 0; i < buffers; ++i) {
        profiler::encode_activity_buffer(buffer.data(), buffer.bytes(), encoder, names);
        encoder.take();
      }
    });
    emit("profiler.cupti_parse_encode_ns_per_record", parse_s * 1e9 / total_records, "ns/record");
    emit("profiler.cupti_parse_encode_throughput", cupti_mb / parse_s, "MB/s of CUPTI buffers");
  }

  // 2. The whole pipeline of a traced process: parse + encode each completed buffer, submit
  // it to the session, and flush (merge in time order + write) every 4 buffers.
  std::string path;
  double total_s = 1e30;
  for (int repeat = 0; repeat < 3; ++repeat) {
    profiler::ProfilerSession session(config);
    path = session.path();
    native::RecordEncoder encoder(session.strings(), session.base_time());
    profiler::CallbackNames names;
    total_s = std::min(total_s, seconds([&] {
      for (int i = 0; i < buffers; ++i) {
        profiler::encode_activity_buffer(buffer.data(), buffer.bytes(), encoder, names);
        session.submit(encoder.take());
        if (i % 4 == 3) session.flush();
      }
      session.shutdown();
    }));
  }
  {
    double file_mb = static_cast<double>(std::filesystem::file_size(path)) / 1e6;
    emit("profiler.pipeline_ns_per_record", total_s * 1e9 / total_records, "ns/record");
    emit("profiler.pipeline_throughput", cupti_mb / total_s, "MB/s of CUPTI buffers");
    emit("profiler.pipeline_output_throughput", file_mb / total_s, "MB/s of native trace");
    emit("profiler.native_bytes_per_record", file_mb * 1e6 / total_records, "bytes/record");
    emit("profiler.cupti_bytes_per_record", cupti_mb * 1e6 / total_records, "bytes/record");
  }
  const double file_mb = static_cast<double>(std::filesystem::file_size(path)) / 1e6;
  if (pipeline_only) {
    std::filesystem::remove_all(dir);
    return 0;
  }

  // 3. Reading the trace back (dpro-replay's import, record decoding only).
  Logger log(LogLevel::kQuiet);
  std::uint64_t read_records = 0;
  double read_s = best_seconds(3, [&] { read_records = native::read_native_capture(path, log).record_count; });
  emit("profiler.read_ns_per_record", read_s * 1e9 / static_cast<double>(read_records), "ns/record");
  emit("profiler.read_throughput", file_mb / read_s, "MB/s of native trace");

  // 4. The NCCL plugin: one allreduce = GroupApi, CollApi, Coll, KernelLaunch events.
  {
    config.pid += 1;  // a second file
    profiler::ProfilerSession session(config);
    profiler::NcclProfilerCore core(session, nullptr);
    void* ctx = nullptr;
    core.init(&ctx, 0xabc, "bench", 1, 8, 0, 5);
    const int ops = 200'000;
    double nccl_s = seconds([&] {
      for (int k = 0; k < ops; ++k) {
        namespace abi = profiler::nccl_abi;
        profiler::NcclEventDescr g{.type = abi::kGroupApi};
        void* group = core.start(ctx, g);
        profiler::NcclEventDescr c{.type = abi::kColl, .parent = group, .func = "AllReduce",
                                   .datatype = "ncclFloat32", .algo = "RING", .proto = "LL",
                                   .count = 1024, .sequence = static_cast<std::uint64_t>(k),
                                   .has_sequence = true};
        void* coll = core.start(ctx, c);
        void* launch = core.start(ctx, {.type = abi::kKernelLaunch, .parent = group});
        core.stop(launch);
        core.stop(coll);
        core.stop(group);
      }
      session.flush();
    });
    emit("profiler.nccl_plugin_ns_per_event", nccl_s * 1e9 / (3.0 * ops), "ns/event");
  }
  std::filesystem::remove_all(dir);
  return 0;
}
