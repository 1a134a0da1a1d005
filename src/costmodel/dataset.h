#pragma once
// Measured operator latencies in the shared-data schema (one CSV per op and GPU, columns
// OPName, Latency [ms], Device, Kernel Name, Grid x/y/z, Block x/y/z, then the family's dims).
#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "costmodel/csv.h"
#include "costmodel/hw.h"
#include "costmodel/op_desc.h"

namespace dpro::costmodel {

struct Measurement {
  OpDesc op;
  const DeviceSpec* device = nullptr;  // points into the catalog passed to the loader
  double latency_ms = 0;
  // GPU time of the op's kernels (ms), from a "Kernel Time" column (tools/gpu/measure_ops.py
  // writes one; the shared data have none): 0 where the table has none or the cell is empty.
  double kernel_ms = 0;
};

// The dim column names of a family, in OpDesc::dims order.
std::vector<std::string> dim_columns(OpFamily family);

// Largest dimension a row may give (2^40), and largest total of an op's tensors (2^50 bytes,
// a pebibyte): beyond any GPU, so a row beyond them is a mistake, not an op to price.
inline constexpr std::int64_t kMaxDimension = std::int64_t{1} << 40;
inline constexpr double kMaxOpBytes = 1125899906842624.0;
// Range of a measured Latency (ms) a row may give: a nanosecond to a thousand seconds. A Latency
// cell is read with parse_decimal (core/strings.h), then checked with this.
inline constexpr double kMinLatencyMs = 1e-6, kMaxLatencyMs = 1e6;
inline bool is_latency_ms(double ms) { return ms >= kMinLatencyMs && ms <= kMaxLatencyMs; }  // NaN: false

// How errors name table row `r` (0-based): "row r+2", its line in the file (the header is line 1).
std::string row_label(std::size_t r);

// Reads the ops of one table's rows (its columns are looked up once, not per row).
class OpRowReader {
 public:
  // `file` names the table in errors.
  OpRowReader(const CsvTable& table, std::string file);
  // Whether the table has an OPName column (without one, every op is undescribable).
  bool has_names() const { return name_col_ >= 0; }
  // Throws InputError naming the file's header when it has no OPName column (a command that
  // prices or picks ops has nothing to read without it).
  void require_names() const;
  // OpDesc of table row `r` (0-based; errors name it by row_label): family
  // from OPName, dims from the family's columns (a missing column or an empty value leaves it
  // undescribable). A value that is not a whole number from 0 to kMaxDimension, or an op whose
  // tensors exceed kMaxOpBytes, or a dtype cell parse_dtype cannot read (empty: fp32), throws
  // InputError naming the file, the row and the column. Latency and Device are not read.
  OpDesc read(std::size_t r) const;

 private:
  const CsvTable& table_;
  std::string file_;
  int name_col_, dtype_col_, kernel_name_col_, kernels_col_;
  std::vector<int> dim_cols_;                            // the dims' columns (-1: absent) of every family, in order
  std::array<std::size_t, kOpFamilyCount + 1> family_at_{};  // family f's columns: dim_cols_[family_at_[f], family_at_[f+1])
  std::array<int, 3> grid_cols_{}, block_cols_{};
};

// Every *.csv / *.csv.gz under `path` (a file or a directory, searched recursively, sorted).
// Rows whose device is not in the catalog or whose op is not describable throw InputError.
std::vector<Measurement> load_measurements(const std::string& path, const DeviceCatalog& catalog);

// load_measurements for the few-shot samples of one GPU: a row measured on another GPU is
// an InputError naming its file and row (row_label), and so is `path` without any row.
std::vector<Measurement> load_samples_of(const std::string& path, const DeviceCatalog& catalog,
                                         const DeviceSpec& device);

// The files load_measurements reads.
std::vector<std::string> measurement_files(const std::string& path);

}  // namespace dpro::costmodel
