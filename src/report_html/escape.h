#pragma once
// Text from traces (op, kernel and file names) placed into HTML: it may hold markup characters,
// quotes and bytes that are not UTF-8 (a trace is whatever the profiler wrote).
#include <string>
#include <string_view>

namespace dpro::report_html {

// `text` safe as HTML element content and as a quoted attribute value: & < > " ' become entities,
// and each byte that does not begin a valid UTF-8 sequence (stray continuation bytes, overlong
// forms, surrogates, truncated sequences, code points above U+10FFFF) becomes U+FFFD, so the
// document stays valid UTF-8. Control characters other than tab and newline become U+FFFD too.
// The result is also valid XML 1.0 character data and attribute content (the JUnit file of
// `compare` uses it for that).
std::string escape_html(std::string_view text);

}  // namespace dpro::report_html
