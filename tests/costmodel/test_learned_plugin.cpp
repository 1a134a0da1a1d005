// LibTorch is loaded only where the learned model runs (learned_backend.h): dpro-replay and
// this test link no LibTorch library, a plain replay never opens the plugin, the learned model
// opens it on first use and predicts through it, and a missing plugin is an InputError.
#include <catch2/catch.hpp>

#include <elf.h>
#include <sys/wait.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "costmodel/learned_model.h"
#include "costmodel/learned_plugin.h"
#include "costmodel_fixtures.h"

using namespace dpro::costmodel;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The DT_NEEDED entries of a 64-bit ELF file (what the dynamic linker loads with it), read
// from its .dynamic section and the string table that section links to.
std::vector<std::string> needed_libraries(const std::string& path) {
  const std::string elf = read_file(path);
  REQUIRE(elf.size() >= sizeof(Elf64_Ehdr));
  Elf64_Ehdr header;
  std::memcpy(&header, elf.data(), sizeof header);
  REQUIRE(std::memcmp(header.e_ident, ELFMAG, SELFMAG) == 0);
  REQUIRE(header.e_ident[EI_CLASS] == ELFCLASS64);
  auto section = [&](std::size_t index) {
    Elf64_Shdr s;
    const std::size_t at = header.e_shoff + index * header.e_shentsize;
    REQUIRE(at + sizeof s <= elf.size());
    std::memcpy(&s, elf.data() + at, sizeof s);
    return s;
  };
  std::vector<std::string> needed;
  for (std::size_t i = 0; i < header.e_shnum; ++i) {
    const Elf64_Shdr dynamic = section(i);
    if (dynamic.sh_type != SHT_DYNAMIC) continue;
    const Elf64_Shdr strings = section(dynamic.sh_link);
    for (std::size_t at = dynamic.sh_offset; at + sizeof(Elf64_Dyn) <= dynamic.sh_offset + dynamic.sh_size;
         at += sizeof(Elf64_Dyn)) {
      Elf64_Dyn entry;
      std::memcpy(&entry, elf.data() + at, sizeof entry);
      if (entry.d_tag == DT_NULL) break;
      if (entry.d_tag == DT_NEEDED) needed.emplace_back(elf.c_str() + strings.sh_offset + entry.d_un.d_val);
    }
  }
  return needed;
}

bool mentions_torch(const std::string& text) {
  return text.find("libtorch") != std::string::npos || text.find("libc10") != std::string::npos;
}

// What the dynamic linker reports loading (LD_DEBUG=files: every library, needed or opened
// with dlopen) while `arguments` run in dpro-replay from the source tree, which must exit
// with `expected_status`.
std::string libraries_loaded_by(const std::string& arguments, int expected_status = 0) {
  const std::string command = "cd '" + dpro::test::source_path("") + "' && LD_DEBUG=files '" DPRO_REPLAY_BIN "' " +
                              arguments + " 2>&1 >/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  std::array<char, 4096> buffer;
  while (std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe)) out.append(buffer.data(), n);
  const int status = pclose(pipe);
  INFO(command << "\n" << out.substr(out.size() > 2000 ? out.size() - 2000 : 0));
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == expected_status);
  REQUIRE(out.find("file=") != std::string::npos);  // LD_DEBUG worked: the check can see
  return out;
}

bool built_with_torch() { return !learned::plugin_candidates().empty(); }

}  // namespace

TEST_CASE("dpro-replay and the tests link no LibTorch library") {
  for (const char* path : {DPRO_REPLAY_BIN, "/proc/self/exe"}) {
    const auto needed = needed_libraries(path);
    std::string all;
    for (const auto& name : needed) all += name + " ";
    INFO(path << " needs " << all);
    CHECK(all.find("libstdc++") != std::string::npos);  // the parser found the list
    CHECK_FALSE(mentions_torch(all));
  }
}

TEST_CASE("a plain replay loads no LibTorch; a learned-model command loads it through the plugin") {
  CHECK_FALSE(mentions_torch(libraries_loaded_by("--version", 0)));
  CHECK_FALSE(mentions_torch(libraries_loaded_by("replay -q traces/dlrm-8xV100")));
  if (!built_with_torch()) return;
  const std::string learned = libraries_loaded_by("replay -q traces/hta/alexnet-a100-single.json.gz --device T4");
  CHECK(learned.find("libdpro_learned_torch") != std::string::npos);
  CHECK(mentions_torch(learned));
}

TEST_CASE("a --device re-timing priced by the roofline-share model loads no LibTorch") {
  for (const char* pricer : {"--pricer roofline-share", "--pricer=roofline-share"}) {
    INFO(pricer);
    CHECK_FALSE(mentions_torch(libraries_loaded_by(
        std::string("replay -q traces/hta/alexnet-a100-single.json.gz --device T4 ") + pricer)));
  }
  // Nor with ops measured on the target (the few-shot fit of the share model's scalars).
  const std::string samples = dpro::test::binary_path("plugin_t4_share_samples.csv");
  std::ofstream(samples) << "OPName,Latency,Device,B,M,N,K\n"
                            "bmm,1.5,Tesla T4,64,512,512,512\nbmm,1.6,Tesla T4,64,512,512,512\n"
                            "bmm,1.4,Tesla T4,64,512,512,512\n";
  CHECK_FALSE(mentions_torch(libraries_loaded_by(
      "replay -q traces/hta/alexnet-a100-single.json.gz --device T4 --pricer roofline-share --device-samples '" +
      samples + "'")));
}

TEST_CASE("the learned model opens its plugin on first use and predicts through it") {
  // Nothing in this process has used the learned model yet.
  CHECK_FALSE(mentions_torch(read_file("/proc/self/maps")));
  if (!built_with_torch()) {
    CHECK_FALSE(LearnedModel::available());
    CHECK_THROWS_WITH(LearnedModel::load("model.dpcm"), Catch::Contains("model.dpcm: the learned cost model is not available"));
    return;
  }
  REQUIRE(LearnedModel::available());
  const std::string maps = read_file("/proc/self/maps");
  CHECK(maps.find("libdpro_learned_torch") != std::string::npos);
  CHECK(mentions_torch(maps));
  const auto model = LearnedModel::load(dpro::test::source_path("data/costmodel/model.dpcm"));
  const auto op = dpro::test::make_op(OpFamily::kBmm, {64, 1024, 1024, 1024});
  const auto ms = model.predict_ms(std::vector<PredictQuery>{{&op, &dpro::test::catalog().get("A100-SXM4-80GB")}});
  REQUIRE(ms.size() == 1);
  CHECK(std::isfinite(ms[0]));
  CHECK(ms[0] > 0.0);
  // An InputError thrown inside the plugin reaches the caller's handler as an InputError.
  CHECK_THROWS_AS(LearnedModel::load(dpro::test::source_path("README.md")), dpro::InputError);
}

TEST_CASE("a missing or broken plugin file is one line naming where it was looked for") {
  const auto missing = learned::open_plugin({"/nonexistent/a/libdpro_learned_torch.so", "/nonexistent/b/libdpro_learned_torch.so"});
  CHECK(missing.plugin == nullptr);
  CHECK_THAT(missing.error, Catch::Contains("plugin was not found") &&
                                Catch::Contains("/nonexistent/a/libdpro_learned_torch.so") &&
                                Catch::Contains("/nonexistent/b/libdpro_learned_torch.so"));
  CHECK(missing.error.find('\n') == std::string::npos);
  // A file that is there but is no shared library: an error naming it, not the next candidate.
  const std::string text = dpro::test::source_path("README.md");
  const auto broken = learned::open_plugin({text, "/nonexistent/libdpro_learned_torch.so"});
  CHECK(broken.plugin == nullptr);
  CHECK_THAT(broken.error, Catch::StartsWith("cannot load the learned cost model's LibTorch plugin " + text));
}
