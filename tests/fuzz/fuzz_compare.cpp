// Fuzz target: the report JSON that `dpro-replay compare` reads (replayer/compare.h).
// Oracles: a report compare accepts compared with itself changes nothing and is no regression;
// its comparison renders as text and as JSON that parses back to the same value; the report
// rebuilt from the summary's job times is read back to the same times and median. Bad input is
// an InputError, never another exception, a crash or a hang.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "core/error.h"
#include "fuzz_support.h"
#include "replayer/compare.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using dpro::replayer::ReportSummary;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  ReportSummary s;
  try {
    s = dpro::replayer::parse_report_summary(bytes, "fuzz-report.json");
  } catch (const dpro::InputError& e) {
    dpro::fuzz::note(e.what());
    return 0;
  }
  dpro::fuzz::note("accepted");
  DPRO_FUZZ_CHECK(!s.job_ns.empty(), "a summary without iterations");
  const auto c = dpro::replayer::compare_reports(s, s, 0.0, 10);
  DPRO_FUZZ_CHECK(c.change == 0.0, std::to_string(c.change));
  DPRO_FUZZ_CHECK(!c.regression(), "a report is a regression against itself");
  DPRO_FUZZ_CHECK(!c.failed(), "a report fails a check against itself");
  DPRO_FUZZ_CHECK(c.ops.empty(), "a report's ops change against itself");
  DPRO_FUZZ_CHECK(!dpro::replayer::render_text(c).empty(), "empty rendering");
  const nlohmann::json out = dpro::replayer::to_json(c);
  const std::string dumped = out.dump();  // throws on invalid UTF-8: a finding
  DPRO_FUZZ_CHECK(nlohmann::json::parse(dumped) == out, dumped);

  nlohmann::json iterations = nlohmann::json::array();
  for (const auto ns : s.job_ns)
    iterations.push_back({{"job", {{s.whatif ? "predicted_ns" : "measured_ns", ns},
                                   {"critical_path", nlohmann::json::object()},
                                   {"top_ops", nlohmann::json::array()}}}});
  nlohmann::json report = {{"iterations", iterations}};
  if (s.whatif) report = {{"whatif", report}};
  const ReportSummary back = dpro::replayer::parse_report_summary(report.dump(), "rebuilt.json");
  DPRO_FUZZ_CHECK(back.job_ns == s.job_ns && back.median_job_ns == s.median_job_ns && back.whatif == s.whatif,
                  report.dump());
  return 0;
}
