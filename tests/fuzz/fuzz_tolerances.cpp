// Fuzz target: a per-layer tolerances file (optimizer/tolerances.h), a user's `optimize
// --tolerances FILE`. The bytes are parsed as read_tolerances does (json_field::read_json_file:
// every nlohmann exception, a syntax error or a number beyond a double, refuses the file), then
// parse_tolerances. Oracles: an accepted rule is what the header documents: a non-empty match of
// the kind its text says ("*", gemm/conv, gemm@N/conv@N, bucket:N, else a kernel-name substring),
// only the fields that kind may take and at least one, known dtypes and methods, a finite
// max_risk >= 0; "as recorded" (as_recorded, no compression, no fusion) is never forbidden; a
// dtype a class rule does not list, a method a bucket rule does not list and a chain with a kernel
// a "fusion": false rule names are forbidden; the rules as canonical JSON (rules_json, what the
// plan file records) read back give the same rules and fingerprint. Bad input is an InputError naming the file,
// never another exception, a crash or a hang.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/json_fields.h"
#include "fuzz_support.h"
#include "optimizer/space.h"
#include "optimizer/tolerances.h"

namespace {

namespace opt = dpro::optimizer;
using Kind = opt::ToleranceRule::Kind;

const std::vector<std::string> kDtypes = {"as_recorded", "fp32", "tf32", "bf16", "fp16", "fp8"};

// A layer part's match: "gemm#..." or "conv#..." (whatif::names_part_of, written out here so that
// the oracle does not take the reader's word for it).
bool names_a_layer(const std::string& match) { return match.rfind("gemm#", 0) == 0 || match.rfind("conv#", 0) == 0; }

bool listed(const std::vector<std::string>& list, const std::string& x) {
  return std::find(list.begin(), list.end(), x) != list.end();
}

void check_rule(const opt::Tolerances& t, const opt::ToleranceRule& r, std::size_t i) {
  const std::string at = "rules[" + std::to_string(i) + "] " + r.match;
  DPRO_FUZZ_CHECK(!r.match.empty(), at);
  DPRO_FUZZ_CHECK(r.max_risk || r.precision || r.compression || r.fusion, at + ": limits nothing");
  switch (r.kind) {
    case Kind::kAll: DPRO_FUZZ_CHECK(r.match == "*", at); break;
    case Kind::kOpClass: DPRO_FUZZ_CHECK(r.match == "gemm" || r.match == "conv", at); break;
    case Kind::kOpPart:  // positions (conv@0,-1) or layers (conv#0,-1), never a rest (conv@^0)
      DPRO_FUZZ_CHECK((r.match.find('@') != std::string::npos || names_a_layer(r.match)) && !r.part.complement &&
                          !r.part.positions.empty() && r.part.layers == names_a_layer(r.match),
                      at);
      break;
    case Kind::kBucket:  // bucket:N, N decimal digits ("bucket:02" is bucket 2)
      DPRO_FUZZ_CHECK(r.match.size() > 7 && r.match.rfind("bucket:", 0) == 0 &&
                          r.match.find_first_not_of("0123456789", 7) == std::string::npos &&
                          std::stoul(r.match.substr(7)) == r.bucket,
                      at);
      break;
    case Kind::kKernel:
      DPRO_FUZZ_CHECK(r.match != "*" && r.match != "gemm" && r.match != "conv" &&
                          r.match.find('@') == std::string::npos && !names_a_layer(r.match) &&
                          r.match.rfind("bucket:", 0) != 0,
                      at);
      break;
  }
  if (r.precision) {
    DPRO_FUZZ_CHECK(r.kind == Kind::kAll || r.kind == Kind::kOpClass || r.kind == Kind::kOpPart, at);
    for (const std::string& d : *r.precision) DPRO_FUZZ_CHECK(listed(kDtypes, d), at + ": dtype " + d);
  }
  if (r.compression) DPRO_FUZZ_CHECK(r.kind == Kind::kAll || r.kind == Kind::kBucket, at);
  if (r.fusion) DPRO_FUZZ_CHECK(r.kind == Kind::kAll || r.kind == Kind::kKernel, at);
  if (r.max_risk) DPRO_FUZZ_CHECK(r.kind != Kind::kKernel && std::isfinite(*r.max_risk) && *r.max_risk >= 0, at);
  // What the rule forbids is forbidden (several rules that match one decision all apply).
  if (r.precision && r.kind == Kind::kOpClass)
    for (const std::string& d : kDtypes)
      if (d != "as_recorded" && !listed(*r.precision, d))
        DPRO_FUZZ_CHECK(!opt::precision_allowed(t, r.match, d), at + ": " + d + " allowed");
  if (r.compression && r.kind == Kind::kBucket)
    for (const std::string& m : opt::compression_values())
      if (m != "none" && !listed(*r.compression, m) && !listed(*r.compression, m.substr(0, m.find(':'))))
        DPRO_FUZZ_CHECK(!opt::compression_allowed(t, r.bucket, m), at + ": " + m + " allowed");
  if (r.fusion == false && r.kind == Kind::kKernel)
    DPRO_FUZZ_CHECK(!opt::fusion_allowed(t, {"k_" + r.match + "_k", "other"}), at + ": chain allowed");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  opt::Tolerances t;
  try {
    // Parsed as read_tolerances parses the file (json_field::read_json_file).
    t = opt::parse_tolerances(dpro::json_field::parse_json(text, "fuzz-tolerances.json"), "fuzz-tolerances.json");
  } catch (const dpro::InputError& e) {
    dpro::fuzz::note(e.what());
    // One line naming the file (an OptionError names a command-line option instead: not this file's).
    DPRO_FUZZ_CHECK(e.file() == "fuzz-tolerances.json", e.what());
    return 0;
  }
  dpro::fuzz::note("accepted");
  for (std::size_t i = 0; i < t.rules.size(); ++i) check_rule(t, t.rules[i], i);
  // "As recorded" is never forbidden: the empty plan stays reachable.
  for (const char* cls : {"gemm", "conv", "conv@0,-1", "gemm@^3"})
    DPRO_FUZZ_CHECK(opt::precision_allowed(t, cls, "as_recorded"), cls);
  for (std::size_t p : {0UL, 1UL, 7UL, 999999UL}) DPRO_FUZZ_CHECK(opt::compression_allowed(t, p, "none"), "none");
  DPRO_FUZZ_CHECK(opt::compression_value_allowed(t, "none,none,none", 3), "none per bucket");
  // Every probe answers without throwing.
  for (const std::string& d : kDtypes)
    for (const char* cls : {"gemm", "conv", "all", "conv@0,-1", "gemm@^3"}) (void)opt::precision_allowed(t, cls, d);
  for (const std::string& m : opt::compression_values()) (void)opt::compression_value_allowed(t, m, 4);
  (void)opt::fusion_allowed(t, {"gemm_kernel", "layer_norm_kernel"});
  // The rules as the plan file records them read back the same.
  const nlohmann::json once = opt::rules_json(t);
  nlohmann::json recorded;
  recorded["rules"] = once;
  opt::Tolerances back;
  try {
    back = opt::parse_tolerances(recorded, "fuzz-tolerances-recorded.json");
  } catch (const dpro::InputError& e) {
    DPRO_FUZZ_CHECK(false, std::string("its own rules refused: ") + e.what());
  }
  DPRO_FUZZ_CHECK(opt::rules_json(back) == once && back.fingerprint == t.fingerprint, once.dump());
  return 0;
}
