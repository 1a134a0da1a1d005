#pragma once
// Prices the ops of a table in the shared-data schema (OPName, the family's dims, dtype, Device,
// optionally Kernel Name and geometry) on one GPU: the learned model where it describes the op
// (a row's kernel features only when the row was measured on that very GPU and the model prices
// it with its identity), corrected by samples measured on the GPU where the model did not use the
// row's own kernel; the roofline for a described op without a learned price; nothing otherwise.
// What `costmodel predict` writes.
#include <cstddef>
#include <string>
#include <vector>

#include "costmodel/csv.h"
#include "costmodel/dataset.h"
#include "costmodel/hw.h"
#include "costmodel/learned_model.h"
#include "costmodel/roofline_share.h"

namespace dpro::costmodel {

struct TablePrices {
  std::vector<OpDesc> ops;         // per row
  std::vector<double> ms;          // per row; NaN where nothing prices it
  // Per row: the op's kernel time on the GPU alone, no host (the learned model's latency less the
  // overhead its predictions carry, kept at a quarter of the latency or more; the roofline as it
  // is; the roofline-share model's kernel part); NaN where nothing prices it.
  std::vector<double> kernel_ms;
  std::vector<bool> on_device;     // per row: its Device is the GPU asked
  bool has_device_column = false;
  std::size_t learned = 0, roofline = 0, none = 0;
  std::size_t by_shares = 0;       // priced by the roofline-share model (price_table_by_shares)
  std::size_t corrected_by = 0;    // samples of the correction (0: none)
};

// `model` may be null (no learned model). `samples_path` ("": none) needs a model. Throws
// InputError naming `file` (a table without an OPName column, a bad row) or the samples file.
TablePrices price_table(const CsvTable& table, const std::string& file, const DeviceCatalog& catalog,
                        const DeviceSpec& device, const LearnedModel* model, const std::string& samples_path);

// The same rows priced by the roofline-share model: `ms` its host-timed latency, `kernel_ms` its
// kernel time; NaN (counted in `none`) where it has no price.
TablePrices price_table_by_shares(const CsvTable& table, const std::string& file, const DeviceCatalog& catalog,
                                  const DeviceSpec& device, const ShareTable& shares);

}  // namespace dpro::costmodel
