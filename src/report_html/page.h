#pragma once
// The frame every HTML page of dpro shares: one style sheet and one sorting script, both inline, so
// that each page is a single file that fetches nothing.
#include <string>

namespace dpro::report_html {

// "<!DOCTYPE html>...<body>" with `title` (plain text) as the document's title.
std::string page_head(const std::string& title);
// The sorting script (a click on a header of a `table.sortable` sorts by that column, numbers by
// their data-v value) and "</body></html>".
std::string page_tail();

}  // namespace dpro::report_html
