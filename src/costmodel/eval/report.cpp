#include "costmodel/eval/report.h"

#include <cmath>

#include <fmt/format.h>

namespace dpro::costmodel {

std::string render_markdown(const EvalReport& report) {
  std::string out;
  for (const auto& t : report.tables) {
    out += "### " + t.title + "\n\n| " + t.row_label + " | rows |";
    for (const auto& c : t.columns) out += " " + c + " |";
    out += "\n|---|---:|";
    for (size_t i = 0; i < t.columns.size(); ++i) out += "---:|";
    out += "\n";
    for (const auto& [name, cells] : t.rows) {
      const std::size_t n = cells.empty() ? 0 : cells[0].count;  // column 0: one per row
      out += "| " + name + " | " + std::to_string(n) + " |";
      for (const auto& c : cells) out += c.count ? fmt::format(" {:.1f} |", c.mape_percent()) : " - |";
      out += "\n";
    }
    out += "| **mean of the rows above** | |";  // each row weighs the same, not a pooled MAPE
    for (double a : t.row_average()) out += std::isnan(a) ? std::string(" - |") : fmt::format(" **{:.1f}** |", a);
    out += "\n\n";
  }
  for (const auto& n : report.notes) out += "- " + n + "\n";
  return out;
}

nlohmann::json to_json(const EvalReport& report) {
  nlohmann::json j;
  for (const auto& t : report.tables) {
    nlohmann::json table = {{"title", t.title}, {"row_label", t.row_label}, {"columns", t.columns}};
    for (const auto& [name, cells] : t.rows) {
      nlohmann::json row = {{"name", name}};
      for (size_t c = 0; c < cells.size(); ++c)
        row["mape_percent"].push_back(cells[c].count ? nlohmann::json(cells[c].mape_percent()) : nlohmann::json());
      table["rows"].push_back(row);
    }
    table["average"] = t.row_average();
    j["tables"].push_back(table);
  }
  j["notes"] = report.notes;
  return j;
}

}  // namespace dpro::costmodel
