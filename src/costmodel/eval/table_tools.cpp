#include "costmodel/eval/table_tools.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.h"
#include "core/strings.h"
#include "costmodel/dataset.h"
#include "costmodel/eval/kmeans.h"

namespace dpro::costmodel {

PickedRows pick_rows(const CsvTable& table, const std::string& file, int count, std::uint64_t seed) {
  const OpRowReader reader(table, file);
  reader.require_names();
  std::vector<std::size_t> describable;
  std::vector<std::vector<float>> points;
  std::set<std::string> configurations;
  PickedRows picked;
  for (std::size_t r = 0; r < table.rows.size(); ++r) {
    const OpDesc op = reader.read(r);
    if (!op.describable()) { ++picked.not_describable; continue; }
    if (!configurations.insert(op_key(op)).second) { ++picked.repeats; continue; }
    describable.push_back(r);
    points.push_back(op_cluster_features(op));
  }
  if (describable.empty()) throw InputError(file, "", "no row describes an op the cost models know");
  picked.configurations = describable.size();
  auto chosen = kmeans_select(points, count, seed);
  std::sort(chosen.begin(), chosen.end());
  for (auto i : chosen) picked.rows.push_back(describable[i]);
  return picked;
}

namespace {

// `predicted` (per row of `prices`) against the times in ms of `column`.
std::optional<LatencyError> error_against(const CsvTable& table, const TablePrices& prices,
                                          const std::vector<double>& predicted, const std::string& column) {
  const int lat = table.column(column);
  if (lat < 0) return std::nullopt;
  LatencyError e;
  for (std::size_t i = 0; i < prices.ops.size(); ++i) {
    if (prices.has_device_column && !prices.on_device[i]) continue;
    if (!std::isfinite(predicted[i])) continue;
    double measured = 0;
    if (!parse_decimal(table.rows[i][lat], measured) || !is_latency_ms(measured)) {
      ++e.not_a_time;
      continue;
    }
    e.all.add(predicted[i], measured);
    e.by_family[to_string(prices.ops[i].family)].add(predicted[i], measured);
  }
  return e;
}

}  // namespace

std::optional<LatencyError> error_against_latency(const CsvTable& table, const TablePrices& prices) {
  return error_against(table, prices, prices.ms, "Latency");
}

std::optional<LatencyError> error_against_kernel_time(const CsvTable& table, const TablePrices& prices) {
  return error_against(table, prices, prices.kernel_ms, "Kernel Time");
}

}  // namespace dpro::costmodel
