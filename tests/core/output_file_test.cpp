// Safe output files (core/output_file.h): what an attacker or a second run can plant next to an
// output never gets written through, and what a command read is never replaced.
#include "core/output_file.h"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>

#include "../profiler/temp_dir.h"
#include "core/byte_source.h"
#include "core/error.h"

namespace fs = std::filesystem;
using dpro::test::TempDir;

namespace {

void put(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }
std::string get(const std::string& path) { return dpro::read_whole_file(path); }
std::set<std::string> names_in(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}
auto text(const std::string& s) {
  return [s](std::ostream& out) { out << s; };
}

}  // namespace

TEST_CASE("a link planted where the old writer put its temporary file is never written through") {
  dpro::forget_opened_inputs();
  TempDir dir("out-link");
  put(dir.file("victim.txt"), "precious");
  fs::create_symlink(dir.file("victim.txt"), dir.file("out.json.partial"));
  dpro::write_output(dir.file("out.json"), text("{}\n"), false);
  CHECK(get(dir.file("out.json")) == "{}\n");
  CHECK(get(dir.file("victim.txt")) == "precious");
  CHECK(fs::is_symlink(dir.file("out.json.partial")));  // a user's file named like a temporary: untouched
  CHECK(names_in(dir.path()) == std::set<std::string>{"out.json", "out.json.partial", "victim.txt"});
}

TEST_CASE("an output that appears while the command runs is not replaced without --force") {
  dpro::forget_opened_inputs();
  TempDir dir("out-race");
  const std::string out = dir.file("report.json");
  // The other run finishes first, while this one is still writing.
  REQUIRE_THROWS_WITH(dpro::write_output(out, [&](std::ostream& s) { put(out, "the other run"); s << "mine"; }, false),
                      Catch::Contains("report.json") && Catch::Contains("--force"));
  CHECK(get(out) == "the other run");
  CHECK(names_in(dir.path()) == std::set<std::string>{"report.json"});  // no temporary left behind
  // With --force the later run replaces it whole: never an interleaving of both. (The checks
  // above read the file in this process: a new command would not have.)
  dpro::forget_opened_inputs();
  dpro::write_output(out, [&](std::ostream& s) { put(out, "the other run"); s << "mine"; }, true);
  CHECK(get(out) == "mine");
}

TEST_CASE("a file the command read through a link inside an input folder is never replaced, even with --force") {
  dpro::forget_opened_inputs();
  TempDir dir("out-input");
  fs::create_directory(dir.file("traces"));
  put(dir.file("real.json"), "the trace");
  fs::create_symlink(dir.file("real.json"), dir.file("traces/rank0.json"));
  // The path checks see no input there: real.json is outside the input folder.
  CHECK_NOTHROW(dpro::check_output_path(dir.file("real.json"), {dir.file("traces")}, true));
  { dpro::ByteSource source(dir.file("traces/rank0.json")); }  // the command reads it
  REQUIRE_THROWS_WITH(dpro::write_output(dir.file("real.json"), text("report"), true),
                      Catch::Contains("real.json") && Catch::Contains("read"));
  CHECK(get(dir.file("real.json")) == "the trace");
  CHECK(names_in(dir.path()) == std::set<std::string>{"real.json", "traces"});
}

TEST_CASE("a failed write leaves neither the output nor its temporary file") {
  dpro::forget_opened_inputs();
  TempDir dir("out-fail");
  CHECK_THROWS_AS(dpro::write_output(dir.file("o.json"), [](std::ostream&) { throw std::runtime_error("boom"); }, false),
                  std::runtime_error);
  CHECK(names_in(dir.path()).empty());
}

TEST_CASE("outputs keep the rules the CLI had: links followed, gzip by name, FIFOs and devices written into") {
  dpro::forget_opened_inputs();
  TempDir dir("out-rules");
  put(dir.file("target.json"), "old");
  fs::create_symlink(dir.file("target.json"), dir.file("link.json"));
  dpro::write_output(dir.file("link.json"), text("new"), true);
  CHECK(fs::is_symlink(dir.file("link.json")));
  CHECK(get(dir.file("target.json")) == "new");
  dpro::write_output(dir.file("o.json.gz"), text("compressed"), false);
  CHECK(dpro::ByteSource(dir.file("o.json.gz")).gzipped());
  CHECK(get(dir.file("o.json.gz")) == "compressed");
  dpro::write_output("/dev/null", text("nothing"), false);
  REQUIRE_THROWS_WITH(dpro::check_output_path(dir.file("target.json"), {}, false), Catch::Contains("--force"));
}
