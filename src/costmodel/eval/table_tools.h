#pragma once
// Evaluation helpers over a table in the shared-data schema: which rows to measure on a new GPU
// (`costmodel pick`), and how predictions compare with the table's own Latency column
// (`costmodel predict`'s note).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "costmodel/csv.h"
#include "costmodel/eval/evaluate.h"
#include "costmodel/table_prices.h"

namespace dpro::costmodel {

// `count` rows spread over the table's op configurations (k-means over op_cluster_features, one
// row per configuration: measuring an op twice tells nothing new), in table order.
struct PickedRows {
  std::vector<std::size_t> rows;   // indices into table.rows
  std::size_t not_describable = 0;
  std::size_t repeats = 0;         // describable rows repeating an earlier row's configuration
  std::size_t configurations = 0;  // distinct describable configurations
};
// Throws InputError naming `file` for a table without an OPName column or without a describable row.
PickedRows pick_rows(const CsvTable& table, const std::string& file, int count, std::uint64_t seed);

// The predictions' error against the rows' own Latency where the table measured them on the GPU
// priced (TablePrices::on_device; every row when the table has no Device column): MAPE over those
// rows and per op family; rows whose Latency is not a time are left out and counted. nullopt when
// the table has no Latency column.
struct LatencyError {
  MapeCell all;
  std::map<std::string, MapeCell> by_family;
  std::size_t not_a_time = 0;
};
std::optional<LatencyError> error_against_latency(const CsvTable& table, const TablePrices& prices);
// The kernel times (TablePrices::kernel_ms) against the rows' Kernel Time the same way; empty
// cells are not a time. nullopt when the table has no Kernel Time column.
std::optional<LatencyError> error_against_kernel_time(const CsvTable& table, const TablePrices& prices);

}  // namespace dpro::costmodel
