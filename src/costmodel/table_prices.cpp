#include "costmodel/table_prices.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "costmodel/residual_correction.h"
#include "costmodel/roofline.h"

namespace dpro::costmodel {

namespace {

// Kernel times of the learned model's latencies `prices.ms`: less the measurement overhead its
// predictions for `device` carry (kernel_time.h), kept at a quarter of the latency or more.
std::vector<double> learned_kernel_ms(const TablePrices& prices, const LearnedModel& model, const DeviceSpec& device) {
  const double overhead = model.measurement_overhead_ms(device, true);
  std::vector<double> out;
  for (double ms : prices.ms) out.push_back(std::max(ms - overhead, 0.25 * ms));
  return out;
}

}  // namespace

TablePrices price_table(const CsvTable& table, const std::string& file, const DeviceCatalog& catalog,
                        const DeviceSpec& device, const LearnedModel* model, const std::string& samples_path) {
  const OpRowReader reader(table, file);
  reader.require_names();
  TablePrices p;
  for (std::size_t r = 0; r < table.rows.size(); ++r) p.ops.push_back(reader.read(r));
  // A row's kernel name and geometry describe the kernel that ran on its Device; the model
  // uses them only when that is the GPU asked for and it prices that GPU with its identity
  // (a GPU outside the data is priced without kernels, so its rows take the correction below).
  const int device_col = table.column("Device");
  p.has_device_column = device_col >= 0;
  const bool kernels_usable = model && model->pricing_of(device).kind != DevicePricing::kUnseen;
  std::vector<PredictQuery> queries;
  p.on_device.assign(p.ops.size(), false);
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    p.on_device[i] = device_col >= 0 && catalog.find(table.rows[i][device_col]) == &device;
    queries.push_back({&p.ops[i], &device, true, p.on_device[i] && kernels_usable});
  }
  p.ms.assign(p.ops.size(), std::nan(""));
  if (model) p.ms = model->predict_ms(queries);
  if (!samples_path.empty()) {
    if (!model) throw OptionError("samples", "", "needs the learned cost model (LibTorch)", samples_path);
    const auto correction = correction_from_samples(*model, load_samples_of(samples_path, catalog, device), device);
    p.corrected_by = correction.size();
    for (std::size_t i = 0; i < p.ops.size(); ++i)
      if (std::isfinite(p.ms[i]) && !queries[i].allow_kernel) p.ms[i] *= correction.factor(p.ops[i]);
  }
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    if (std::isfinite(p.ms[i])) ++p.learned;
    else if (p.ops[i].describable()) { p.ms[i] = roofline_ms(p.ops[i], device); ++p.roofline; }
    else ++p.none;
  }
  // Without the learned model every price is the roofline's: no host in it.
  p.kernel_ms = model ? learned_kernel_ms(p, *model, device) : p.ms;
  return p;
}

TablePrices price_table_by_shares(const CsvTable& table, const std::string& file, const DeviceCatalog& catalog,
                                  const DeviceSpec& device, const ShareTable& shares) {
  const OpRowReader reader(table, file);
  reader.require_names();
  TablePrices p;
  const int device_col = table.column("Device");
  p.has_device_column = device_col >= 0;
  for (std::size_t r = 0; r < table.rows.size(); ++r) {
    p.ops.push_back(reader.read(r));
    p.on_device.push_back(device_col >= 0 && catalog.find(table.rows[r][device_col]) == &device);
    const auto kernel = shares.kernel_ms(p.ops.back(), device);
    p.kernel_ms.push_back(kernel ? *kernel : std::nan(""));
    p.ms.push_back(kernel ? shares.latency_around(p.ops.back().family, *kernel) : std::nan(""));
    ++(kernel ? p.by_shares : p.none);
  }
  return p;
}

}  // namespace dpro::costmodel
