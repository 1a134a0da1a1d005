// Fuzz target: the learned cost model's file without its networks (costmodel/model_file.h:
// magic, JSON header, payload sections), the part of loading a model that needs no LibTorch.
// The networks' weights inside the payload are LibTorch archives that only the torch plugin
// reads (learned_model_torch.cpp); they are not fuzzed here (docs/fuzzing.md says why).
// Each input is tried as it is and, when its header line is a JSON object, once more with its
// checksums and sizes made right, so that mutations reach the checks behind the hashes.
// Oracles: a file the parser accepts has its fields within the header's bounds and is written
// back by format_model_file to a file that reads back the same; bad input is an InputError,
// never another exception, a crash or a hang.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/json_fields.h"
#include "costmodel/model_file.h"
#include "fuzz_support.h"

namespace {

using namespace dpro::costmodel;

constexpr const char* kMagic = "DPROCM01\n";

bool same(const ModelFileHeader& a, const ModelFileHeader& b) {
  return a.token_hidden == b.token_hidden && a.head_hidden == b.head_hidden && a.provenance == b.provenance &&
         a.known_devices == b.known_devices && a.known_features == b.known_features &&
         a.unseen_floor_ms == b.unseen_floor_ms && a.overhead_ms == b.overhead_ms;
}

void check(const std::string& bytes) {
  ModelPayload payload;
  ModelFileHeader h;
  try {
    h = parse_model_file(bytes, "fuzz.dpcm", payload);
  } catch (const dpro::InputError& e) {
    dpro::fuzz::note(e.what());
    return;
  }
  dpro::fuzz::note("accepted");
  DPRO_FUZZ_CHECK(h.token_hidden >= 1 && h.token_hidden <= kMaxLayerWidth, "token_hidden");
  DPRO_FUZZ_CHECK(h.head_hidden >= 1 && h.head_hidden <= kMaxLayerWidth, "head_hidden");
  DPRO_FUZZ_CHECK(!h.known_devices.empty() && h.known_features.size() == h.known_devices.size(), "devices");
  for (const auto& [family, ms] : h.unseen_floor_ms) DPRO_FUZZ_CHECK(ms >= kMinFloorMs && ms <= kMaxFloorMs, "floor");
  for (const auto& [name, ms] : h.overhead_ms) DPRO_FUZZ_CHECK(ms >= 0 && ms <= kMaxOverheadMs, name);
  const std::string written = format_model_file(h, payload);
  ModelPayload payload_back;
  const ModelFileHeader back = parse_model_file(written, "written.dpcm", payload_back);
  DPRO_FUZZ_CHECK(same(h, back), written.substr(0, written.find('\n', 9)));
  DPRO_FUZZ_CHECK(payload_back == payload, "payload");
}

// The input with its payload size and hash, section sizes (the payload split as the input's
// sizes say, the rest in the last section) and header hash made right.
std::string restamped(const std::string& bytes) {
  const std::string magic = kMagic;
  const auto eol = bytes.find('\n', magic.size());
  if (bytes.compare(0, magic.size(), magic) != 0 || eol == std::string::npos) return {};
  nlohmann::json header = nlohmann::json::parse(bytes.substr(magic.size(), eol - magic.size()), nullptr, false);
  if (!header.is_object()) return {};
  const std::string payload = bytes.substr(eol + 1);
  header["payload_bytes"] = payload.size();
  header["payload_fnv1a"] = std::to_string(fnv1a(payload));
  header.erase("header_fnv1a");
  std::string line;
  try {
    line = dpro::dump_output_json(header, -1);
  } catch (const nlohmann::json::exception&) {
    return {};
  }
  header["header_fnv1a"] = std::to_string(fnv1a(line));
  return magic + dpro::dump_output_json(header, -1) + '\n' + payload;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  check(bytes);
  if (const std::string fixed = restamped(bytes); !fixed.empty()) check(fixed);
  return 0;
}
