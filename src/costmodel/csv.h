#pragma once
// Minimal RFC-4180 CSV: quoted fields with "" escapes and embedded commas/newlines.
#include <string>
#include <vector>

namespace dpro::costmodel {

struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  // Index of a header column, or -1.
  int column(const std::string& name) const;
};

// Throws InputError naming `file` on an unterminated quote or a row with a different field
// count than the header.
CsvTable parse_csv(const std::string& text, const std::string& file);
std::string format_csv_row(const std::vector<std::string>& fields);

}  // namespace dpro::costmodel
