#include "render_compare.h"

#include <fmt/format.h>

#include <cmath>

#include "report_html/escape.h"

namespace dpro::cli {
namespace {

using report_html::escape_html;
using replayer::StepCheck;

std::string check_line(const StepCheck& k) {
  return fmt::format("{} -> {} ({:+.2f}%), noise +-{}: {}", format_duration(k.base_ns), format_duration(k.new_ns),
                     100.0 * k.change, format_duration(k.noise_ns), replayer::to_string(k.outcome));
}

std::string limit_text(const replayer::Comparison& c) {
  return c.max_slowdown ? fmt::format("{}%", 100.0 * *c.max_slowdown) : std::string("none");
}

std::string same_job_line(const replayer::Comparison& c) {
  if (!c.same_job) return "a report does not say which job it recorded (no provenance)";
  if (*c.same_job) return "same ranks, world size and GPUs";
  std::string out = "different recorded jobs:";
  for (const std::string& d : c.job_differences) out += " " + d + ";";
  return out;
}

// Markdown inside a table cell: the characters of emphasis, code, links and cells escaped, then
// HTML's (GitHub renders inline HTML).
std::string markdown_cell(const std::string& text) {
  std::string out;
  for (char ch : text) {
    if (std::string_view("\\`*_[]|").find(ch) != std::string_view::npos) out += '\\';
    out += ch;
  }
  return escape_html(out);
}

std::string signed_ns(double ns) {
  std::string out(ns < 0 ? "-" : "+");  // not `"-" + std::string`: a GCC 12 -Wrestrict false positive
  out += format_duration(static_cast<Nanos>(std::llround(std::abs(ns))));
  return out;
}

}  // namespace

std::string compare_junit(const replayer::Comparison& c) {
  std::string cases;
  std::size_t failures = 0, skipped = 0;
  for (const StepCheck& k : c.checks) {
    cases += fmt::format("    <testcase classname=\"dpro.compare\" name=\"step time: {}\">\n", escape_html(k.name));
    if (k.failed()) {
      ++failures;
      cases += fmt::format("      <failure type=\"regression\" message=\"{:+.2f}% is slower than --max-slowdown {} allows, "
                           "beyond the noise\">{}</failure>\n",
                           100.0 * k.change, limit_text(c), escape_html(check_line(k)));
    }
    cases += fmt::format("      <system-out>{}</system-out>\n    </testcase>\n", escape_html(check_line(k)));
  }
  cases += "    <testcase classname=\"dpro.compare\" name=\"same job\">\n";
  if (!c.same_job) {
    ++skipped;
    cases += fmt::format("      <skipped message=\"{}\"/>\n", escape_html(same_job_line(c)));
  } else if (!*c.same_job && c.max_slowdown) {
    ++failures;
    cases += fmt::format("      <failure type=\"different job\" message=\"{}\"/>\n", escape_html(same_job_line(c)));
  }
  cases += fmt::format("      <system-out>{}</system-out>\n    </testcase>\n", escape_html(same_job_line(c)));
  const std::size_t tests = c.checks.size() + 1;
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<testsuites name=\"dpro-replay compare\" tests=\"{0}\" failures=\"{1}\" skipped=\"{2}\">\n"
      "  <testsuite name=\"{3} vs {4}\" tests=\"{0}\" failures=\"{1}\" skipped=\"{2}\" errors=\"0\">\n"
      "{5}  </testsuite>\n</testsuites>\n",
      tests, failures, skipped, escape_html(c.base.file), escape_html(c.next.file), cases);
}

std::string compare_markdown(const replayer::Comparison& c, std::size_t top_ops) {
  const bool failed = c.failed();
  std::string out = fmt::format("### dpro-replay compare: {}\n\n{} -> {} (--max-slowdown: {})\n\n",
                                failed ? "FAILED" : "ok", markdown_cell(c.base.file), markdown_cell(c.next.file),
                                limit_text(c));
  out += "| check | base | new | change | noise | outcome |\n|---|---:|---:|---:|---:|---|\n";
  for (const StepCheck& k : c.checks) {
    out += fmt::format("| step time: {} | {} | {} | {:+.2f}% | +-{} | {}{} |\n", markdown_cell(k.name),
                       format_duration(k.base_ns), format_duration(k.new_ns), 100.0 * k.change, format_duration(k.noise_ns),
                       k.failed() ? "**" : "", std::string(replayer::to_string(k.outcome)) + (k.failed() ? "**" : ""));
  }
  out += fmt::format("| same job | | | | | {} |\n", markdown_cell(same_job_line(c)));
  if (c.ops.empty() || top_ops == 0) return out;
  out += "\n| critical-path op | category | base | new | change |\n|---|---|---:|---:|---:|\n";
  for (std::size_t i = 0; i < c.ops.size() && i < top_ops; ++i) {
    const replayer::OpChange& op = c.ops[i];
    const auto time = [](const std::optional<double>& ns) {
      return ns ? format_duration(static_cast<Nanos>(std::llround(*ns))) : std::string("?");
    };
    out += fmt::format("| {} | {} | {} | {} | {} |\n", markdown_cell(op.name.substr(0, 120)), markdown_cell(op.category),
                       time(op.base_ns), time(op.new_ns), op.delta() ? signed_ns(*op.delta()) : std::string("?"));
  }
  return out;
}

}  // namespace dpro::cli
