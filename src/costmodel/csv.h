#pragma once
// Minimal RFC-4180 CSV: quoted fields with "" escapes and embedded commas/newlines. A leading
// UTF-8 byte order mark (Excel's "CSV UTF-8") is skipped.
#include <string>
#include <vector>

namespace dpro::costmodel {

struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  // Index of a header column, or -1.
  int column(const std::string& name) const;
};

// Throws InputError naming `file` on an unterminated quote, a header naming a column twice, or
// a row with a different field count than the header.
CsvTable parse_csv(const std::string& text, const std::string& file);
// parse_csv of the file at `path` (plain or gzip); a directory is an InputError too.
CsvTable read_csv_file(const std::string& path);
std::string format_csv_row(const std::vector<std::string>& fields);

}  // namespace dpro::costmodel
