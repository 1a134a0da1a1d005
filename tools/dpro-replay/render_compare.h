#pragma once
// `compare`'s summaries for CI systems: JUnit XML (one testcase per check: the job's step time,
// each rank's, the same job; CI servers show them as tests) and a Markdown table for a pull-request
// comment. File and op names are escaped (XML entities; Markdown's table and emphasis characters).
#include <string>

#include "replayer/compare.h"

namespace dpro::cli {

std::string compare_junit(const replayer::Comparison& c);
std::string compare_markdown(const replayer::Comparison& c, std::size_t top_ops);

}  // namespace dpro::cli
