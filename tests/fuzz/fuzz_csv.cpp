// Fuzz target: the cost model's CSV reader (costmodel/csv.h) and the op rows read from a
// table (costmodel/dataset.h: OpRowReader, what `costmodel eval/price` read from measured ops).
// Oracles: a table written back with format_csv_row reads back the same; bad input is an
// InputError, never another exception, a crash or a hang.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "costmodel/csv.h"
#include "costmodel/dataset.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using dpro::costmodel::CsvTable;
  const std::string text(reinterpret_cast<const char*>(data), size);
  CsvTable table;
  try {
    table = dpro::costmodel::parse_csv(text, "fuzz.csv");
  } catch (const dpro::InputError& e) {
    dpro::fuzz::note(e.what());
    return 0;
  }
  dpro::fuzz::note("accepted");
  if (!table.header.empty()) {
    std::string written = dpro::costmodel::format_csv_row(table.header) + "\n";
    for (const auto& row : table.rows) written += dpro::costmodel::format_csv_row(row) + "\n";
    const CsvTable back = dpro::costmodel::parse_csv(written, "written.csv");
    DPRO_FUZZ_CHECK(back.header == table.header, written);
    DPRO_FUZZ_CHECK(back.rows == table.rows, written);
  }
  try {
    const dpro::costmodel::OpRowReader reader(table, "fuzz.csv");
    for (std::size_t r = 0; r < table.rows.size(); ++r) {
      try {
        (void)reader.read(r);
      } catch (const dpro::InputError&) {
      }
    }
  } catch (const dpro::InputError&) {
  }
  return 0;
}
