#include "costmodel/csv.h"

#include <string_view>

#include "core/byte_source.h"
#include "core/error.h"

namespace dpro::costmodel {

int CsvTable::column(const std::string& name) const {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return static_cast<int>(i);
  return -1;
}

namespace {
constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

void check_header(const std::vector<std::string>& header, const std::string& file) {
  for (size_t i = 0; i < header.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (header[i] == header[j])
        throw InputError(file, "header, column " + std::to_string(i + 1),
                         "'" + header[i] + "' names column " + std::to_string(j + 1) + " too");
}
}  // namespace

CsvTable parse_csv(const std::string& text, const std::string& file) {
  CsvTable table;
  std::vector<std::string> row;
  std::string field;
  bool in_quotes = false, any = false;
  size_t line = 1;
  auto end_row = [&] {
    row.push_back(std::move(field));
    field.clear();
    if (table.header.empty()) {
      table.header = std::move(row);
      check_header(table.header, file);
    } else if (!(row.size() == 1 && row[0].empty())) {
      if (row.size() != table.header.size())
        throw InputError(file, "line " + std::to_string(line),
                         "has " + std::to_string(row.size()) + " fields, header has " +
                             std::to_string(table.header.size()));
      table.rows.push_back(std::move(row));
    }
    row.clear();
    any = false;
  };
  for (size_t i = text.starts_with(kByteOrderMark) ? kByteOrderMark.size() : 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_quotes) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') { field += '"'; ++i; }
        else in_quotes = false;
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    switch (c) {
      case '"': in_quotes = true; any = true; break;
      case ',': row.push_back(std::move(field)); field.clear(); any = true; break;
      case '\r': break;
      case '\n': end_row(); ++line; break;
      default: field += c; any = true;
    }
  }
  if (in_quotes) throw InputError(file, "line " + std::to_string(line), "unterminated quoted field");
  if (any || !row.empty()) end_row();
  return table;
}

CsvTable read_csv_file(const std::string& path) {
  reject_directory(path, "a CSV file");
  return parse_csv(read_whole_file(path), path);
}

std::string format_csv_row(const std::vector<std::string>& fields) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) out += ',';
    const auto& f = fields[i];
    // A field starting with a byte order mark is quoted: unquoted at the start of a file, the
    // reader would take it for the file's mark and drop it.
    if (f.find_first_of(",\"\n\r") == std::string::npos && !f.starts_with(kByteOrderMark)) { out += f; continue; }
    out += '"';
    for (char c : f) { if (c == '"') out += '"'; out += c; }
    out += '"';
  }
  return out;
}

}  // namespace dpro::costmodel
