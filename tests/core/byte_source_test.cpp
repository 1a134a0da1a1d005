#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/byte_source.h"
#include "core/error.h"
#include "test_paths.h"

using dpro::ByteSource;
using dpro::InputError;

namespace {
std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("dpro_core_" + std::to_string(::getpid()) + "_" + name)).string();
}
std::string read_raw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
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

TEST_CASE("A truncated gzip file is an InputError naming the file") {
  const std::string whole = read_raw(dpro::test::source_path("traces/hta/alexnet-a100-single.json.gz"));
  const std::string path = temp_path("truncated.json.gz");
  { std::ofstream(path, std::ios::binary) << whole.substr(0, whole.size() / 2); }
  try {
    dpro::read_whole_file(path);
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
  CHECK_THROWS_AS(dpro::read_whole_file(path), InputError);
}

TEST_CASE("A missing file is an InputError naming it") {
  CHECK_THROWS_WITH(ByteSource("/nonexistent/trace.json"), Catch::Contains("/nonexistent/trace.json"));
}
