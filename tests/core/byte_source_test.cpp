#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/byte_source.h"
#include "core/error.h"
#include "core/gzip_inflater.h"
#include "test_paths.h"

using dpro::ByteSource;
using dpro::GzipDecoder;
using dpro::InputError;

namespace {
std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("dpro_core_" + std::to_string(::getpid()) + "_" + name)).string();
}
std::string read_raw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
// All of a file read through `decoder`, `piece` bytes per read() call.
std::string read_all(const std::string& path, GzipDecoder decoder, std::size_t piece = 1 << 16) {
  ByteSource source(path, decoder);
  std::string data, chunk(piece, '\0');
  while (const std::size_t n = source.read(chunk.data(), chunk.size())) data.append(chunk.data(), n);
  return data;
}
// The decoders this build has: zlib always, the fastest (ISA-L) when built with it.
std::vector<GzipDecoder> decoders() {
  std::vector<GzipDecoder> all{GzipDecoder::kZlib};
  if (dpro::make_isal_inflater()) all.push_back(GzipDecoder::kFastest);
  return all;
}
}  // namespace

TEST_CASE("ByteSource inflates gzip transparently, detected by magic bytes") {
  const std::string path = dpro::test::source_path("traces/hta/triton.json.gz");
  ByteSource source(path);
  CHECK(source.gzipped());
  const std::string text = dpro::read_whole_file(path);
  CHECK(text.size() == 16645);  // the uncompressed size of this trace
  CHECK(text[text.find_first_not_of(" \n")] == '{');
}

TEST_CASE("ByteSource reads plain files unchanged") {
  const std::string path = temp_path("plain.json");
  { std::ofstream(path) << "{\"traceEvents\": []}"; }
  CHECK(dpro::read_whole_file(path) == "{\"traceEvents\": []}");
  ByteSource source(path);
  CHECK_FALSE(source.gzipped());
}

TEST_CASE("Every gzip decoder of the build reads the same bytes, in any size of read") {
  const std::string path = dpro::test::source_path("traces/hta/a100-ws2-rank0-nccl.json.gz");
  const std::string expected = read_all(path, GzipDecoder::kZlib);
  CHECK(expected.size() == 9778890);  // the uncompressed size of this trace
  for (const GzipDecoder decoder : decoders()) {
    CAPTURE(ByteSource(path, decoder).gzip_decoder());
    CHECK(read_all(path, decoder) == expected);
    CHECK(read_all(path, decoder, 4093) == expected);  // reads ending anywhere in the output
  }
}

TEST_CASE("Concatenated gzip members are read in turn, and bytes after the last are ignored") {
  const std::string member = read_raw(dpro::test::source_path("traces/hta/triton.json.gz"));
  const std::string text = read_all(dpro::test::source_path("traces/hta/triton.json.gz"), GzipDecoder::kZlib);
  const std::string path = temp_path("members.json.gz");
  { std::ofstream(path, std::ios::binary) << member << member << "trailing junk\n"; }
  for (const GzipDecoder decoder : decoders()) {
    CAPTURE(ByteSource(path, decoder).gzip_decoder());
    CHECK(read_all(path, decoder) == text + text);
  }
}

TEST_CASE("A truncated gzip file is an InputError naming the file") {
  const std::string whole = read_raw(dpro::test::source_path("traces/hta/alexnet-a100-single.json.gz"));
  const std::string path = temp_path("truncated.json.gz");
  { std::ofstream(path, std::ios::binary) << whole.substr(0, whole.size() / 2); }
  const GzipDecoder decoder = GENERATE(GzipDecoder::kZlib, GzipDecoder::kFastest);
  try {
    read_all(path, decoder);
    FAIL("no error for a truncated gzip file");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find(path) != std::string::npos);
    CHECK(std::string(e.what()).find("truncated") != std::string::npos);
  }
}

TEST_CASE("Corrupt gzip data is an InputError") {
  std::string whole = read_raw(dpro::test::source_path("traces/hta/alexnet-a100-single.json.gz"));
  for (std::size_t i = 100; i < 400; ++i) whole[i] = static_cast<char>(whole[i] ^ 0x5a);
  const std::string path = temp_path("corrupt.json.gz");
  { std::ofstream(path, std::ios::binary) << whole; }
  const GzipDecoder decoder = GENERATE(GzipDecoder::kZlib, GzipDecoder::kFastest);
  try {
    read_all(path, decoder);
    FAIL("no error for corrupt gzip data");
  } catch (const InputError& e) {
    const std::string message = e.what();
    CHECK(message.find(path) != std::string::npos);
    CHECK(message.find("corrupt gzip data: ") != std::string::npos);
    CHECK(message.find('\n') == std::string::npos);  // one line
  }
}

TEST_CASE("A gzip file whose checksum does not match its data is an InputError") {
  std::string whole = read_raw(dpro::test::source_path("traces/hta/triton.json.gz"));
  whole[whole.size() - 6] = static_cast<char>(whole[whole.size() - 6] ^ 1);  // the trailer's CRC-32
  const std::string path = temp_path("crc.json.gz");
  { std::ofstream(path, std::ios::binary) << whole; }
  const GzipDecoder decoder = GENERATE(GzipDecoder::kZlib, GzipDecoder::kFastest);
  CHECK_THROWS_WITH(read_all(path, decoder), Catch::Contains(path) && Catch::Contains("incorrect data check"));
}

TEST_CASE("A missing file is an InputError naming it") {
  CHECK_THROWS_WITH(ByteSource("/nonexistent/trace.json"), Catch::Contains("/nonexistent/trace.json"));
}

TEST_CASE("A directory given for a file is an InputError saying so, not a read error") {
  const std::string dir = std::filesystem::temp_directory_path().string();
  CHECK_THROWS_WITH(ByteSource(dir), Catch::Contains(dir) && Catch::Contains("is a directory, not a file"));
  CHECK_THROWS_WITH(dpro::read_whole_file(dir), Catch::Contains("is a directory, not a file"));
}

namespace {
// All of a gzip file read through a ReadAhead, and the error that ended it ("" when none).
std::pair<std::string, std::string> read_ahead_all(const std::string& path, bool threaded) {
  ByteSource source(path);
  dpro::ReadAhead ahead(source);
  CHECK(ahead.threaded() == threaded);
  std::string data, chunk(100'003, '\0');
  try {
    while (const std::size_t n = ahead.read(chunk.data(), chunk.size())) data.append(chunk.data(), n);
  } catch (const InputError& e) {
    return {data, e.what()};
  }
  return {data, ""};
}
}  // namespace

TEST_CASE("ReadAhead hands over the bytes and errors of its source, in a thread of its own or inline") {
  const std::string path = dpro::test::source_path("traces/hta/a100-ws2-rank0-nccl.json.gz");
  const std::string expected = read_all(path, GzipDecoder::kFastest);
  const std::string whole = read_raw(path);
  const std::string truncated = temp_path("ahead-truncated.json.gz");
  { std::ofstream(truncated, std::ios::binary) << whole.substr(0, whole.size() / 2); }
  const auto check = [&](bool threaded) {
    CHECK(read_ahead_all(path, threaded) == std::pair<std::string, std::string>{expected, ""});
    const auto [data, error] = read_ahead_all(truncated, threaded);
    CHECK(error.find("truncated gzip data") != std::string::npos);
    CHECK(data.size() > expected.size() / 4);  // what was inflated before the end is handed over
    CHECK(expected.compare(0, data.size(), data) == 0);
  };
  SECTION("in a thread") { check(true); }
  SECTION("inline, under a ReadAheadInline, which nests") {
    dpro::ReadAheadInline outer;
    {
      dpro::ReadAheadInline inner;
      check(false);
    }
    check(false);  // still inline: the inner scope restored the outer one's state
  }
  SECTION("in a thread again once the scope has ended") {
    { dpro::ReadAheadInline scope; }
    check(true);
  }
}

TEST_CASE("A small gzip file is inflated inline, a large one in a thread") {
  const std::string small = dpro::test::source_path("traces/hta/triton.json.gz");
  const std::string large = dpro::test::source_path("traces/hta/a100-ws2-rank0-nccl.json.gz");
  ByteSource small_source(small), large_source(large);
  REQUIRE(small_source.file_bytes() < dpro::ReadAhead::kMinThreadedBytes);
  REQUIRE(large_source.file_bytes() >= dpro::ReadAhead::kMinThreadedBytes);
  CHECK_FALSE(dpro::ReadAhead(small_source).threaded());
  CHECK(dpro::ReadAhead(large_source).threaded());
  CHECK(read_ahead_all(small, false).first == read_all(small, GzipDecoder::kZlib));
}
