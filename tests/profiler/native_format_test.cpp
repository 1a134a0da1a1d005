// Writing and reading the native format: every record type round-trips, strings defined
// late still resolve, truncated files load up to the last complete record with one warning,
// future versions and foreign files are clear errors.
#include <catch2/catch.hpp>

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/byte_source.h"
#include "core/error.h"
#include "temp_dir.h"
#include "test_paths.h"
#include "trace/native/native_reader.h"
#include "trace/format/native_writer.h"

using namespace dpro;
using namespace dpro::native;

namespace {

Header test_header() {
  Header h;
  h.host = "node-a";
  h.rank = 3;
  h.local_rank = 1;
  h.world_size = 8;
  h.pid = 4242;
  h.cupti_version = 130001;
  h.nccl_version = 22809;
  h.base_time = 1'700'000'000'000'000'000;
  return h;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Writes a small trace with one record of each kind; returns the number of records.
std::uint64_t write_sample(const std::string& path, bool close = true, Header h = test_header()) {
  StringInterner strings;
  RecordEncoder enc(strings, h.base_time);
  std::uint64_t t = static_cast<std::uint64_t>(h.base_time) + 1000;
  enc.add(DeviceRecord{0, "NVIDIA H100", 80ull << 30, 9, 0, 132});
  enc.add(ApiRecord{ApiKind::kRuntime, 211, t, t + 500, 10, 11, 7, "cudaLaunchKernel_v7000"});
  enc.add(KernelRecord{t + 800, t + 2800, 0, 1, 7, 7, "gemm_kernel", {4, 2, 1}, {128, 1, 1}, 64, 1024});
  enc.add(MemcpyRecord{t + 3000, t + 3500, 0, 1, 7, 8, 4096, 1, 0, 0, 0, 0});
  enc.add(MemsetRecord{t + 3600, t + 3700, 0, 1, 7, 9, 256, 0});
  enc.add(SyncRecord{t + 4000, t + 4100, 3, 1, 7, 0, 10});
  enc.add(CudaEventRecord{12, 5, 7, 0, 1});
  enc.add(ExternalCorrelationRecord{5, 99, 7});
  enc.add(MarkerRecord{kMarkerStart, t, 1, 10, 11, "ProfilerStep#0", "dpro"});
  enc.add(MarkerRecord{kMarkerEnd, t + 5000, 1, 10, 11, "", ""});
  enc.add(NcclCommRecord{0xabcdef, "world", 8, 3, 1});
  enc.add(NcclCollRecord{1, 0xabcdef, 2, kCollHasSequence, 3, "AllReduce", "ncclFloat32", "RING", "LL",
                         17, 1024, 4, 0, t + 100, t + 200, 10, 11});
  enc.add(NcclKernelChRecord{1, 0, 5000, 6000});
  enc.add(DroppedRecord{3, 1, 7});
  enc.add_metadata("steps", "1:2");
  auto batch = enc.take();
  NativeFileWriter writer(path, h);
  writer.append(merge_in_time_order({&batch, 1}), batch.index.size());
  writer.flush();
  if (close) writer.close(3);
  return batch.index.size();
}

}  // namespace

TEST_CASE("native records round-trip through writer and reader", "[native]") {
  test::TempDir dir("native");
  std::string path = dir.file("t.dpro");
  auto written = write_sample(path);
  Logger log(LogLevel::kQuiet);
  auto c = read_native_capture(path, log);
  CHECK(log.warning_count() == 0);
  CHECK(c.has_footer);
  CHECK_FALSE(c.truncated);
  CHECK(c.version_major == kVersionMajor);
  CHECK(c.record_count == written + 2);  // + header + footer
  CHECK(c.header.host == "node-a");
  CHECK(c.header.rank == 3);
  CHECK(c.header.world_size == 8);
  CHECK(c.header.cupti_version == 130001);
  REQUIRE(c.devices.size() == 1);
  CHECK(c.devices[0].name == "NVIDIA H100");
  CHECK(c.devices[0].num_sms == 132);
  REQUIRE(c.apis.size() == 1);
  CHECK(c.str(c.apis[0].name) == "cudaLaunchKernel_v7000");
  CHECK(c.apis[0].start == c.header.base_time + 1000);
  CHECK(c.apis[0].dur == 500);
  REQUIRE(c.kernels.size() == 1);
  CHECK(c.str(c.kernels[0].name) == "gemm_kernel");
  CHECK(c.kernels[0].grid == std::array<std::int32_t, 3>{4, 2, 1});
  CHECK(c.kernels[0].correlation == 7);
  REQUIRE(c.copies.size() == 2);
  CHECK(c.copies[0].bytes == 4096);
  CHECK(c.copies[1].memset);
  REQUIRE(c.syncs.size() == 1);
  CHECK(c.syncs[0].type == 3);
  REQUIRE(c.external_correlations.size() == 1);
  CHECK(c.external_correlations[0].external_id == 99);
  REQUIRE(c.markers.size() == 2);
  CHECK(c.str(c.markers[0].name) == "ProfilerStep#0");
  REQUIRE(c.nccl_colls.size() == 1);
  CHECK(c.str(c.nccl_colls[0].func) == "AllReduce");
  CHECK(c.nccl_colls[0].sequence == 17);
  CHECK(c.nccl_colls[0].channels == 4);
  CHECK(c.dropped_records == 3);
  CHECK(c.metadata.at("steps") == "1:2");
}

TEST_CASE("merge_in_time_order interleaves batches by start time", "[native]") {
  StringInterner strings;
  RecordEncoder a(strings, 0), b(strings, 0);
  a.add(ApiRecord{ApiKind::kRuntime, 1, 100, 110, 1, 1, 1, "x"});
  a.add(ApiRecord{ApiKind::kRuntime, 1, 300, 310, 1, 1, 2, "x"});
  b.add(ApiRecord{ApiKind::kRuntime, 1, 200, 210, 1, 2, 3, "x"});
  EncodedBatch batches[] = {a.take(), b.take()};
  test::TempDir dir("merge");
  {
    NativeFileWriter w(dir.file("m.dpro"), Header{});
    w.append(merge_in_time_order(batches), 4);
    w.close(0);
  }
  Logger log(LogLevel::kQuiet);
  auto c = read_native_capture(dir.file("m.dpro"), log);
  REQUIRE(c.apis.size() == 3);
  CHECK(c.apis[0].correlation == 1);
  CHECK(c.apis[1].correlation == 3);
  CHECK(c.apis[2].correlation == 2);
  CHECK(c.str(c.apis[1].name) == "x");  // defined once, in batch a
}

TEST_CASE("a truncated trace loads up to its last complete record with one warning", "[native]") {
  test::TempDir dir("trunc");
  std::string full = dir.file("full.dpro");
  write_sample(full, /*close=*/false);
  Logger quiet(LogLevel::kQuiet);
  auto whole = read_native_capture(full, quiet);
  std::string bytes = read_bytes(full);
  std::uint64_t previous = 0;
  // Cut after every byte past the header: never throws, never invents records.
  std::size_t header_end = encode_preamble(test_header()).size();
  for (std::size_t cut = header_end; cut < bytes.size(); ++cut) {
    std::string path = dir.file("cut.dpro");
    write_bytes(path, bytes.substr(0, cut));
    Logger log(LogLevel::kQuiet);
    auto c = read_native_capture(path, log);
    CHECK(log.warning_count() == 1);
    CHECK(c.record_count <= whole.record_count);
    CHECK(c.record_count >= previous);
    previous = c.record_count;
  }
  CHECK(previous + 1 >= whole.record_count);
}

TEST_CASE("a trace cut inside its header is an error naming the file", "[native]") {
  test::TempDir dir("hdr");
  write_sample(dir.file("full.dpro"));
  std::string bytes = read_bytes(dir.file("full.dpro"));
  write_bytes(dir.file("cut.dpro"), bytes.substr(0, 20));
  Logger log(LogLevel::kQuiet);
  CHECK_THROWS_WITH(read_native_capture(dir.file("cut.dpro"), log),
                    Catch::Contains("cut.dpro") && Catch::Contains("header"));
}

TEST_CASE("a header whose rank is not one of its job is an error naming the file", "[native]") {
  // Before, a rank of 2^32 + 1 was read as rank 1, and rank 5 of a 4-rank job was replayed.
  test::TempDir dir("rank");
  Logger log(LogLevel::kQuiet);
  const std::vector<std::pair<std::int64_t, std::int64_t>> bad = {
      {-2, 8}, {5, 4}, {(std::int64_t{1} << 32) + 1, 0}, {0, std::int64_t{1} << 32}, {0, -2}};
  for (const auto& [rank, world] : bad) {
    INFO(rank << " of " << world);
    Header h = test_header();
    h.rank = rank;
    h.world_size = world;
    write_sample(dir.file("r.dpro"), true, h);
    CHECK_THROWS_WITH(read_native_capture(dir.file("r.dpro"), log),
                      Catch::Contains("r.dpro") && Catch::Contains("header") && Catch::Contains("is not a rank"));
  }
  Header unknown = test_header();  // rank -1 and world size -1 mean "not known"
  unknown.rank = -1;
  unknown.world_size = -1;
  write_sample(dir.file("u.dpro"), true, unknown);
  CHECK(read_native_capture(dir.file("u.dpro"), log).header.rank == -1);
}

TEST_CASE("a trace from a future major version is a clear error", "[native]") {
  test::TempDir dir("future");
  write_sample(dir.file("t.dpro"));
  std::string bytes = read_bytes(dir.file("t.dpro"));
  bytes[8] = static_cast<char>(kVersionMajor + 1);
  write_bytes(dir.file("future.dpro"), bytes);
  Logger log(LogLevel::kQuiet);
  CHECK_THROWS_AS(read_native_capture(dir.file("future.dpro"), log), InputError);
  CHECK_THROWS_WITH(read_native_capture(dir.file("future.dpro"), log),
                    Catch::Contains("future.dpro") && Catch::Contains("newer than this dpro supports"));
}

TEST_CASE("a file that is not a native trace is rejected", "[native]") {
  test::TempDir dir("magic");
  write_bytes(dir.file("x.dpro"), "{\"traceEvents\": []}");
  Logger log(LogLevel::kQuiet);
  CHECK_THROWS_WITH(read_native_capture(dir.file("x.dpro"), log), Catch::Contains("bad magic"));
  CHECK_FALSE(has_native_magic("{\"traceEvents\""));
}

TEST_CASE("unknown record types from a newer minor version are skipped", "[native]") {
  test::TempDir dir("minor");
  write_sample(dir.file("t.dpro"), /*close=*/false);
  std::string bytes = read_bytes(dir.file("t.dpro"));
  bytes += std::string("\x7f\x03" "abc", 5);  // type 127, 3-byte payload
  bytes += encode_footer({0, 0});
  write_bytes(dir.file("t2.dpro"), bytes);
  Logger log(LogLevel::kQuiet);
  auto c = read_native_capture(dir.file("t2.dpro"), log);
  CHECK(log.warning_count() == 0);
  CHECK(c.has_footer);
  CHECK(c.kernels.size() == 1);
}

TEST_CASE("a malformed record stops the load with a warning, keeping what precedes it", "[native]") {
  test::TempDir dir("bad");
  write_sample(dir.file("t.dpro"), /*close=*/false);
  std::string bytes = read_bytes(dir.file("t.dpro"));
  bytes += std::string("\x06\x02\xff\xff", 4);  // a kernel record whose varints run off its end
  bytes += encode_footer({0, 0});
  write_bytes(dir.file("bad.dpro"), bytes);
  Logger log(LogLevel::kQuiet);
  auto c = read_native_capture(dir.file("bad.dpro"), log);
  CHECK(log.warning_count() == 1);
  CHECK(c.truncated);
  CHECK(c.kernels.size() == 1);
  CHECK_FALSE(c.has_footer);
}

TEST_CASE("a record whose time lies beyond the bound every trace is held to is malformed, never overflowed", "[native]") {
  test::TempDir dir("far");
  const Header h = test_header();
  StringInterner strings;
  RecordEncoder enc(strings, h.base_time);
  const std::uint64_t t = static_cast<std::uint64_t>(h.base_time) + 1000;
  enc.add(KernelRecord{t, t + 2000, 0, 1, 7, 7, "gemm_kernel", {4, 2, 1}, {128, 1, 1}, 64, 1024});
  // 146 years after the base time: within int64, beyond the 3e18 ns bound.
  const std::uint64_t far = static_cast<std::uint64_t>(h.base_time) + 4'600'000'000'000'000'000ull;
  enc.add(KernelRecord{far, far + 10, 0, 1, 7, 8, "gemm_kernel", {4, 2, 1}, {128, 1, 1}, 64, 1024});
  auto batch = enc.take();
  {
    NativeFileWriter writer(dir.file("t.dpro"), h);
    writer.append(merge_in_time_order({&batch, 1}), batch.index.size());
    writer.close(0);
  }
  Logger log(LogLevel::kQuiet);
  auto c = read_native_capture(dir.file("t.dpro"), log);
  CHECK(log.warning_count() == 1);
  CHECK(c.kernels.size() == 1);
  CHECK(c.kernels[0].start == h.base_time + 1000);
}

TEST_CASE("a record claiming a huge length or a huge string id costs no memory beyond the file", "[native]") {
  test::TempDir dir("huge");
  write_sample(dir.file("t.dpro"), /*close=*/false);
  const std::string sample = read_bytes(dir.file("t.dpro"));
  auto varint = [](std::uint64_t v) {
    char buf[10];
    return std::string(buf, put_varint(buf, v));
  };
  // A string record for id 2^30: kept on its own, not a table of 2^30 strings.
  const std::string payload = varint(1u << 30) + varint(5) + "hello";
  std::string bytes = sample + std::string(1, static_cast<char>(RecordType::kString)) + varint(payload.size()) + payload;
  // Then a record that claims 2^40 bytes: malformed at once, not buffered up to the end of the stream.
  bytes += std::string(1, static_cast<char>(RecordType::kKernel)) + varint(1ull << 40) + std::string(4096, '\0');
  write_bytes(dir.file("huge.dpro"), bytes);
  Logger log(LogLevel::kQuiet);
  auto c = read_native_capture(dir.file("huge.dpro"), log);
  CHECK(c.str(1u << 30) == "hello");
  CHECK(c.strings.size() < 1000);
  CHECK(c.truncated);
  CHECK(log.warning_count() == 1);
  CHECK(c.kernels.size() == 1);
}

TEST_CASE("gzip-compressed native traces are read transparently", "[native]") {
  test::TempDir dir("gz");
  write_sample(dir.file("t.dpro"));
  std::string bytes = read_bytes(dir.file("t.dpro"));
  gzFile gz = gzopen(dir.file("t.dpro.gz").c_str(), "wb");
  REQUIRE(gz);
  gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(gz);
  Logger log(LogLevel::kQuiet);
  auto c = read_native_capture(dir.file("t.dpro.gz"), log);
  CHECK(c.has_footer);
  CHECK(c.kernels.size() == 1);
}

TEST_CASE("varints and zigzag encode the full 64-bit range", "[native]") {
  for (std::int64_t v : {std::int64_t{0}, std::int64_t{-1}, std::int64_t{1} << 40, INT64_MIN, INT64_MAX}) {
    char buf[10];
    std::size_t n = put_varint(buf, zigzag(v));
    const char* pos = buf;
    auto back = get_varint(pos, buf + n);
    REQUIRE(back);
    CHECK(unzigzag(*back) == v);
    CHECK(pos == buf + n);
  }
  char buf[10];
  std::size_t n = put_varint(buf, UINT64_MAX);
  const char* pos = buf;
  CHECK_FALSE(get_varint(pos, buf + n - 1));
}

// The committed fixture was written by format 1.0; every later reader must load it the same.
// Regenerate (only for a deliberate major version change): test_native_format "[.generate]"
TEST_CASE("write the 1.0 fixture", "[.generate]") {
  write_sample(test::source_path("tests/profiler/data/sample_v1_0.dpro"));
}

TEST_CASE("the committed format 1.0 fixture still loads", "[native]") {
  Logger log(LogLevel::kQuiet);
  auto c = read_native_capture(test::source_path("tests/profiler/data/sample_v1_0.dpro"), log);
  CHECK(log.warning_count() == 0);
  CHECK(c.version_major == 1);
  CHECK(c.version_minor == 0);
  CHECK(c.has_footer);
  CHECK(c.header.host == "node-a");
  CHECK(c.header.rank == 3);
  CHECK(c.header.nccl_version == 22809);
  REQUIRE(c.kernels.size() == 1);
  CHECK(c.str(c.kernels[0].name) == "gemm_kernel");
  CHECK(c.kernels[0].start == c.header.base_time + 1800);
  CHECK(c.kernels[0].dur == 2000);
  REQUIRE(c.nccl_colls.size() == 1);
  CHECK(c.str(c.nccl_colls[0].algo) == "RING");
  CHECK(c.nccl_colls[0].sequence == 17);
  CHECK(c.markers.size() == 2);
  CHECK(c.dropped_records == 3);
}

TEST_CASE("the trace writer creates its file exclusively: a planted link or an earlier trace is never written through",
          "[native]") {
  test::TempDir dir("exclusive");
  const std::string path = dir.file("rank0.host.pid42.dpro");
  { std::ofstream(dir.file("victim")) << "precious"; }
  std::filesystem::create_symlink(dir.file("victim"), path);
  NativeFileWriter first(path, Header{});
  CHECK(first.path() == dir.file("rank0.host.pid42.2.dpro"));
  NativeFileWriter second(path, Header{});  // the pid came round again
  CHECK(second.path() == dir.file("rank0.host.pid42.3.dpro"));
  first.close(0);
  second.close(0);
  CHECK(read_whole_file(dir.file("victim")) == "precious");
  CHECK(std::filesystem::is_symlink(path));
}

namespace {
// A disk that is full for a while: writes fail with ENOSPC while `full_writes` lasts, after
// taking at most `partial` bytes of the first failing call.
struct FlakyDisk {
  static inline int full_writes = 0;
  static inline std::size_t partial = 0;
  static inline int other_error = 0;
  static long write(int fd, const void* data, std::size_t size) {
    if (other_error != 0) {
      errno = other_error;
      return -1;
    }
    if (full_writes > 0) {
      --full_writes;
      if (partial > 0) {
        const std::size_t n = std::min(partial, size);
        partial = 0;
        return static_cast<long>(::write(fd, data, n));
      }
      errno = ENOSPC;
      return -1;
    }
    return static_cast<long>(::write(fd, data, size));
  }
};
}  // namespace

// Encoded records of `count` kernels, correlations first..first+count-1.
std::string kernel_batch(RecordEncoder& enc, std::uint32_t first, std::uint32_t count) {
  const std::uint64_t t = static_cast<std::uint64_t>(test_header().base_time) + 1000;
  for (std::uint32_t i = first; i < first + count; ++i)
    enc.add(KernelRecord{t + i * 100, t + i * 100 + 50, 0, 1, 7, i, "gemm_kernel", {4, 2, 1}, {128, 1, 1}, 64, 1024});
  auto batch = enc.take();
  return merge_in_time_order({&batch, 1});
}

TEST_CASE("a disk full for a while loses no record of the trace, and never one in its middle", "[native]") {
  // Issue 37: a write that failed dropped its bytes and the next flush wrote on, so a transiently
  // full disk left a hole (and a cut record) in the middle of the trace.
  test::TempDir dir("full-disk");
  const std::string path = dir.file("rank0.host.pid7.dpro");
  StringInterner strings;
  RecordEncoder enc(strings, test_header().base_time);
  FlakyDisk::full_writes = 0;
  FlakyDisk::other_error = 0;
  {
    NativeFileWriter writer(path, test_header(), &FlakyDisk::write);
    for (std::uint32_t batch = 0; batch < 3; ++batch) {
      if (batch == 1) {  // the disk fills in the middle of this batch's write, and stays full a while
        FlakyDisk::full_writes = 3;
        FlakyDisk::partial = 37;
      }
      writer.write_now(kernel_batch(enc, batch * 100, 100), 100);
      if (batch == 1) CHECK(writer.stalled());
    }
    writer.flush();
    CHECK_FALSE(writer.stalled());
    CHECK(writer.stopped_because().empty());
    writer.close(0);
  }
  Logger log(LogLevel::kQuiet);
  const auto c = read_native_capture(path, log);
  CHECK(log.warning_count() == 0);
  CHECK(c.has_footer);
  REQUIRE(c.kernels.size() == 300);
  for (std::uint32_t i = 0; i < 300; ++i) CHECK(c.kernels[i].correlation == i);
}

TEST_CASE("a write error stops the trace at its last whole record: the file ends there, nothing after", "[native]") {
  test::TempDir dir("write-error");
  const std::string path = dir.file("rank0.host.pid8.dpro");
  StringInterner strings;
  RecordEncoder enc(strings, test_header().base_time);
  FlakyDisk::full_writes = 0;
  FlakyDisk::other_error = 0;
  {
    NativeFileWriter writer(path, test_header(), &FlakyDisk::write);
    writer.write_now(kernel_batch(enc, 0, 50), 50);
    FlakyDisk::other_error = EIO;
    writer.write_now(kernel_batch(enc, 50, 10), 10);
    CHECK(writer.stopped_because() == std::strerror(EIO));
    FlakyDisk::other_error = 0;  // the device came back: nothing more is written all the same
    writer.write_now(kernel_batch(enc, 60, 10), 10);
    writer.close(0);
  }
  Logger log(LogLevel::kQuiet);
  const auto c = read_native_capture(path, log);
  CHECK(c.kernels.size() == 50);
  CHECK_FALSE(c.has_footer);
}
