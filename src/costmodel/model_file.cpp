#include "costmodel/model_file.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_fields.h"
#include "costmodel/compact_ast.h"
#include "costmodel/features.h"

namespace dpro::costmodel {

namespace {

constexpr const char* kMagic = "DPROCM01\n";
constexpr int kFormatVersion = 6;        // written
constexpr int kUnhashedHeaderVersion = 5;  // read: the version before the header hash
const char* const kSectionFields[kModelSections] = {"weights_bytes", "unseen_weights_bytes", "memory_kernel_bytes",
                                                    "memory_plain_bytes", "memory_unseen_bytes"};

// The hash of a header: of its one-line dump without the hash field.
std::string header_hash(nlohmann::json header) {
  header.erase("header_fnv1a");
  return std::to_string(fnv1a(dump_output_json(header, -1)));
}

// Reads the header's fields; `path` and the field name every error.
class HeaderReader {
 public:
  HeaderReader(const nlohmann::json& header, const std::string& path) : h_(header), path_(path) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw InputError(path_, field, "corrupted cost model header: " + what);
  }
  const nlohmann::json& at(const std::string& field, bool (nlohmann::json::*is)() const noexcept,
                           const char* kind) const {
    if (!h_.contains(field)) fail(field, "missing");
    const nlohmann::json& v = h_.at(field);
    if (!(v.*is)()) fail(field, std::string("must be ") + kind + ", got " + v.dump());
    return v;
  }
  int whole(const std::string& field, double lo, double hi) const {
    return static_cast<int>(json_field::required_number(h_, field, {lo, hi, true}, path_, field));
  }
  std::size_t bytes(const std::string& field) const {
    return static_cast<std::size_t>(json_field::required_number(h_, field, {0, 1e15, true}, path_, field));
  }
  std::string text(const std::string& field) const {
    return at(field, &nlohmann::json::is_string, "a string").get<std::string>();
  }
  const nlohmann::json& object(const std::string& field) const {
    return at(field, &nlohmann::json::is_object, "an object");
  }
  // A figure of an object field: `field`.`key`, a number in [lo, hi] ms.
  double ms(const std::string& field, const std::string& key, const nlohmann::json& value, double lo,
            double hi) const {
    const json_field::Range range{lo, hi, false, "ms"};
    if (!value.is_number() || !json_field::in_range(range, value.get<double>()))
      fail(field + "." + key, "must be " + json_field::describe(range) + ", got " + value.dump());
    return value.get<double>();
  }

 private:
  const nlohmann::json& h_;
  const std::string& path_;
};

void read_devices(const HeaderReader& r, ModelFileHeader& out) {
  const auto& devices = r.at("known_devices", &nlohmann::json::is_array, "a list of GPU names");
  for (const auto& name : devices) {
    if (!name.is_string() || name.get<std::string>().empty())
      r.fail("known_devices", "a GPU name must be a non-empty string, got " + name.dump());
    if (!out.known_devices.insert(name.get<std::string>()).second)
      r.fail("known_devices", name.dump() + " is listed twice");
  }
  if (out.known_devices.empty()) r.fail("known_devices", "empty (a model is trained on at least one GPU)");
  for (const auto& [name, f] : r.object("known_device_features").items()) {
    const std::string field = "known_device_features." + name;
    if (!out.known_devices.count(name)) r.fail(field, "not one of known_devices");
    if (!f.is_array() || f.size() != static_cast<std::size_t>(kDeviceIdentityFeatures))
      r.fail(field, "must be a list of " + std::to_string(kDeviceIdentityFeatures) + " numbers, got " + f.dump());
    std::vector<float> features;
    // They are log2 of datasheet figures: small numbers (checked as double, before narrowing).
    for (const auto& x : f) {
      if (!x.is_number() || !std::isfinite(x.get<double>()) || std::abs(x.get<double>()) >= 1e3)
        r.fail(field, "a device feature out of range: " + x.dump());
      features.push_back(static_cast<float>(x.get<double>()));
    }
    out.known_features[name] = std::move(features);
  }
  for (const auto& name : out.known_devices)
    if (!out.known_features.count(name)) r.fail("known_device_features", "missing for " + name);
}

void read_figures(const HeaderReader& r, ModelFileHeader& out) {
  for (const auto& [name, ms] : r.object("unseen_floor_ms").items()) {
    const OpFamily family = family_from_name(name);
    if (family == OpFamily::kUnknown || name != to_string(family))
      r.fail("unseen_floor_ms." + name, "not an op family");
    out.unseen_floor_ms[family] = r.ms("unseen_floor_ms", name, ms, kMinFloorMs, kMaxFloorMs);
  }
  for (const auto& [name, ms] : r.object("measurement_overhead_ms").items()) {
    if (!out.known_devices.count(name)) r.fail("measurement_overhead_ms." + name, "not one of known_devices");
    out.overhead_ms[name] = r.ms("measurement_overhead_ms", name, ms, 0.0, kMaxOverheadMs);
  }
}

}  // namespace

std::uint64_t fnv1a(const std::string& bytes) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) { h ^= c; h *= 1099511628211ull; }
  return h;
}

std::string format_model_file(const ModelFileHeader& h, const ModelPayload& payload) {
  std::string joined;
  for (const auto& section : payload) joined += section;
  nlohmann::json floors = nlohmann::json::object();
  for (const auto& [family, ms] : h.unseen_floor_ms) floors[to_string(family)] = ms;
  nlohmann::json header = {
      {"format", "dpro-costmodel"}, {"version", kFormatVersion},
      {"token_features", kTokenFeatures}, {"global_features", kGlobalFeatures},
      {"max_tokens", kMaxAstTokens}, {"token_hidden", h.token_hidden},
      {"head_hidden", h.head_hidden}, {"provenance", h.provenance},
      {"known_devices", h.known_devices}, {"known_device_features", h.known_features},
      {"unseen_floor_ms", floors}, {"measurement_overhead_ms", h.overhead_ms},
      {"payload_bytes", joined.size()}, {"payload_fnv1a", std::to_string(fnv1a(joined))}};
  for (int i = 0; i < kModelSections; ++i) header[kSectionFields[i]] = payload[i].size();
  header["header_fnv1a"] = header_hash(header);
  return kMagic + dump_output_json(header, -1) + '\n' + joined;
}

ModelFileHeader parse_model_file(const std::string& bytes, const std::string& path, ModelPayload& payload) {
  const std::string magic = kMagic;
  if (bytes.compare(0, magic.size(), magic) != 0) throw InputError(path, "", "not a dpro cost model file (bad magic)");
  const auto eol = bytes.find('\n', magic.size());
  if (eol == std::string::npos) throw InputError(path, "header", "truncated cost model file");
  nlohmann::json header = json_field::parse_json(std::string_view(bytes).substr(magic.size(), eol - magic.size()), path,
                                                       "header", "corrupted cost model header");
  if (!header.is_object()) throw InputError(path, "header", "corrupted cost model header: not a JSON object");
  const HeaderReader r(header, path);
  if (header.contains("format") && header.at("format") != "dpro-costmodel")
    throw InputError(path, "format", "not a dpro cost model file (format " + header.at("format").dump() + ")");
  const int version = r.whole("version", 0, 1e9);
  if (version != kFormatVersion && version != kUnhashedHeaderVersion)
    throw InputError(path, "version",
                     "unsupported cost model version " + std::to_string(version) + " (this build reads " +
                         std::to_string(kUnhashedHeaderVersion) + " and " + std::to_string(kFormatVersion) +
                         "; retrain it: tools/costmodel/train.sh)");
  ModelFileHeader out;
  if (header.contains("header_fnv1a")) {
    if (r.text("header_fnv1a") != header_hash(header))
      throw InputError(path, "header", "corrupted cost model header (checksum mismatch)");
  } else if (version >= kFormatVersion) {
    r.fail("header_fnv1a", "missing (a version " + std::to_string(version) + " file has one)");
  }
  if (r.whole("token_features", 0, 1e9) != kTokenFeatures || r.whole("global_features", 0, 1e9) != kGlobalFeatures ||
      r.whole("max_tokens", 0, 1e9) != kMaxAstTokens)
    throw InputError(path, "header", "model was trained with different features; retrain it");
  const std::string joined = bytes.substr(eol + 1);
  if (r.bytes("payload_bytes") != joined.size())
    throw InputError(path, "payload", "truncated or padded cost model file (size mismatch)");
  if (r.text("payload_fnv1a") != std::to_string(fnv1a(joined)))
    throw InputError(path, "payload", "corrupted cost model file (checksum mismatch)");
  out.token_hidden = r.whole("token_hidden", 1, kMaxLayerWidth);
  out.head_hidden = r.whole("head_hidden", 1, kMaxLayerWidth);
  if (header.contains("provenance")) out.provenance = r.text("provenance");
  read_devices(r, out);
  read_figures(r, out);
  std::size_t at = 0;
  for (int i = 0; i < kModelSections; ++i) {
    const std::size_t n = r.bytes(kSectionFields[i]);
    if (n > joined.size() - at) r.fail(kSectionFields[i], "section sizes do not add up to payload_bytes");
    payload[i] = joined.substr(at, n);
    at += n;
  }
  if (at != joined.size()) r.fail("payload_bytes", "section sizes do not add up to payload_bytes");
  return out;
}

}  // namespace dpro::costmodel
