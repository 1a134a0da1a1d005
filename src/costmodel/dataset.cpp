#include "costmodel/dataset.h"

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <limits>
#include <sstream>

#include "core/error.h"
#include "core/strings.h"

namespace dpro::costmodel {

std::vector<std::string> dim_columns(OpFamily f) {
  switch (f) {
    case OpFamily::kUnknown: return {};
    case OpFamily::kBmm:
    case OpFamily::kLinear: return {"B", "M", "N", "K"};
    case OpFamily::kConv2d:
      return {"B", "Input_Channel", "Output_Channel", "Kernel_Szie", "Input_Size", "Stride", "Padding"};
    default: return {"B", "H"};
  }
}

namespace {
int column_any(const CsvTable& t, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (int c = t.column(n); c >= 0) return c;
  return -1;
}
}  // namespace

std::string row_label(std::size_t r) { return "row " + std::to_string(r + 2); }

OpRowReader::OpRowReader(const CsvTable& table, std::string file)
    : table_(table),
      file_(std::move(file)),
      name_col_(table.column("OPName")),
      dtype_col_(column_any(table, {"dtype", "Dtype", "DType"})),
      kernel_name_col_(table.column("Kernel Name")),
      kernels_col_(table.column("Kernels")) {
  for (int f = 0; f < kOpFamilyCount; ++f) {
    family_at_[f] = dim_cols_.size();
    for (const auto& col : dim_columns(static_cast<OpFamily>(f)))
      dim_cols_.push_back(col == "Kernel_Szie" ? column_any(table, {"Kernel_Szie", "Kernel_Size"}) : table.column(col));
  }
  family_at_[kOpFamilyCount] = dim_cols_.size();
  const char* axes[] = {"x", "y", "z"};
  for (int i = 0; i < 3; ++i) {
    grid_cols_[i] = table.column(std::string("Grid ") + axes[i]);
    block_cols_[i] = table.column(std::string("Block ") + axes[i]);
  }
}

void OpRowReader::require_names() const {
  if (!has_names()) throw InputError(file_, "header", "needs an OPName column");
}

OpDesc OpRowReader::read(std::size_t r) const {
  OpDesc op;
  if (name_col_ < 0) return op;
  const std::vector<std::string>& row = table_.rows.at(r);
  op.name = row[name_col_];
  op.family = family_from_name(op.name);
  // A dimension may be absent (a column missing or empty: the op is then not describable), but
  // a value that is there must be a whole number in range, or the row is wrong.
  bool complete = true;
  const auto f = static_cast<std::size_t>(op.family);
  for (std::size_t i = family_at_[f]; i < family_at_[f + 1]; ++i) {
    const int c = dim_cols_[i];
    if (c < 0 || row[c].empty()) { complete = false; continue; }
    const auto v = parse_integer(row[c]);
    if (!v || *v < 0 || *v > kMaxDimension)
      throw InputError(file_, row_label(r) + ", column " + table_.header[c],
                       "'" + row[c] + "' is not a dimension (a whole number from 0 to 2^40)");
    op.dims.push_back(*v);
  }
  if (!complete) op.dims.clear();
  if (op.describable() && !(op.bytes() <= kMaxOpBytes)) {
    std::ostringstream why;
    why << "the op's tensors would take " << std::setprecision(3) << op.bytes()
        << " bytes, beyond any GPU (at most 2^50): check its dimensions";
    throw InputError(file_, row_label(r), why.str());
  }
  // An empty dtype cell is fp32, the dtype of the shared data (which have no such column); a
  // value the cost models cannot read would be priced as fp32 too, silently: an error.
  bool dtype_recorded = false;
  if (dtype_col_ >= 0 && !row[dtype_col_].empty()) {
    const auto d = parse_dtype(row[dtype_col_]);
    if (!d)
      throw InputError(file_, row_label(r) + ", column " + table_.header[dtype_col_],
                       "'" + row[dtype_col_] + "' is not a dtype the cost models know (" + kKnownDtypes + ")");
    op.dtype = *d;
    dtype_recorded = true;
  }
  if (kernel_name_col_ >= 0) op.kernel_name = row[kernel_name_col_];
  op.take_kernel_math(dtype_recorded);
  if (kernels_col_ >= 0) op.kernel_list = row[kernels_col_];
  // The launch geometry is optional: kept only when all six values are there and plausible.
  std::array<int, 3> g{}, b{};
  bool ok = true;
  for (int i = 0; i < 3; ++i) {
    const int gc = grid_cols_[i], bc = block_cols_[i];
    // 0 where a value is missing or not a number: not plausible either.
    const std::int64_t gv = gc >= 0 ? parse_integer(row[gc]).value_or(0) : 0;
    const std::int64_t bv = bc >= 0 ? parse_integer(row[bc]).value_or(0) : 0;
    ok = gv > 0 && bv > 0 && gv <= std::numeric_limits<int>::max() && bv <= 1024;
    if (!ok) break;
    g[i] = static_cast<int>(gv);
    b[i] = static_cast<int>(bv);
  }
  if (ok) { op.grid = g; op.block = b; }
  return op;
}

std::vector<std::string> measurement_files(const std::string& path) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  auto wanted = [](const std::string& p) {
    return p.ends_with(".csv") || p.ends_with(".csv.gz");
  };
  if (fs::is_directory(path)) {
    for (const auto& e : fs::recursive_directory_iterator(path))
      if (e.is_regular_file() && wanted(e.path().string())) files.push_back(e.path().string());
  } else if (fs::exists(path)) {
    files.push_back(path);
  } else {
    throw InputError(path, "", "no such file or directory");
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) throw InputError(path, "", "no .csv or .csv.gz files");
  return files;
}

namespace {
// load_measurements; `only`: the GPU every row must have been measured on (nullptr: any).
std::vector<Measurement> load_rows(const std::string& path, const DeviceCatalog& catalog, const DeviceSpec* only) {
  std::vector<Measurement> out;
  for (const auto& file : measurement_files(path)) {
    const CsvTable table = read_csv_file(file);
    const int lat = table.column("Latency"), dev = table.column("Device"), kernel = table.column("Kernel Time");
    if (lat < 0 || dev < 0) throw InputError(file, "header", "needs Latency and Device columns");
    const OpRowReader reader(table, file);
    for (size_t r = 0; r < table.rows.size(); ++r) {
      const auto& row = table.rows[r];
      Measurement m;
      m.op = reader.read(r);
      if (!m.op.describable()) throw InputError(file, row_label(r), "op '" + m.op.name + "' has no usable dimensions");
      m.device = catalog.find(row[dev]);
      if (!m.device) throw InputError(file, row_label(r), "device '" + row[dev] + "' is not in the catalog");
      if (only && m.device != only)
        throw InputError(file, row_label(r), "measured on " + m.device->name + ", not on " + only->name);
      if (!parse_decimal(row[lat], m.latency_ms))
        throw InputError(file, row_label(r), "Latency '" + row[lat] + "' is not a number");
      // A nanosecond to a thousand seconds: beyond that a latency is a unit mistake or garbage,
      // and one such sample would scale every corrected prediction (1e300 ms did).
      if (!is_latency_ms(m.latency_ms))
        throw InputError(file, row_label(r), "Latency '" + row[lat] + "' is not a time in milliseconds from 1e-6 to 1e6");
      if (kernel >= 0 && !row[kernel].empty() &&
          (!parse_decimal(row[kernel], m.kernel_ms) || !is_latency_ms(m.kernel_ms)))
        throw InputError(file, row_label(r),
                         "Kernel Time '" + row[kernel] + "' is not a time in milliseconds from 1e-6 to 1e6");
      out.push_back(std::move(m));
    }
  }
  return out;
}

}  // namespace

std::vector<Measurement> load_measurements(const std::string& path, const DeviceCatalog& catalog) {
  return load_rows(path, catalog, nullptr);
}

std::vector<Measurement> load_samples_of(const std::string& path, const DeviceCatalog& catalog,
                                         const DeviceSpec& device) {
  auto samples = load_rows(path, catalog, &device);
  // A header without rows would correct nothing while the command said it had been given samples.
  if (samples.empty()) throw InputError(path, "", "no rows: no samples of " + device.name);
  return samples;
}

}  // namespace dpro::costmodel
