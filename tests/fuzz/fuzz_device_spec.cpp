// Fuzz target: a GPU spec (configs/devices/*.json, hw/device_spec.h). Oracles: a spec the
// parser accepts has positive, finite figures, a peak for every dtype, and is found in a
// catalog by its name and each alias; bad input is an InputError, never another exception, a
// crash or a hang.
#include <cmath>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "fuzz_support.h"
#include "hw/device_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using dpro::hw::DType;
  const std::string text(reinterpret_cast<const char*>(data), size);
  dpro::hw::DeviceSpec spec;
  try {
    spec = dpro::hw::parse_device_spec(text, "fuzz-device.json");
  } catch (const dpro::InputError& e) {
    dpro::fuzz::note(e.what());
    return 0;
  }
  dpro::fuzz::note("accepted");
  DPRO_FUZZ_CHECK(!spec.name.empty(), text);
  DPRO_FUZZ_CHECK(std::isfinite(spec.memory_bandwidth_gbs) && spec.memory_bandwidth_gbs > 0, text);
  DPRO_FUZZ_CHECK(spec.sms > 0, text);
  for (DType d : {DType::kFloat32, DType::kTensorFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64,
                  DType::kInt8, DType::kFloat8}) {
    const double peak = spec.peak_flops(d);
    DPRO_FUZZ_CHECK(std::isfinite(peak) && peak > 0, std::string(dpro::hw::to_string(d)) + " in " + text);
  }
  (void)spec.model_family();
  try {
    dpro::hw::DeviceCatalog catalog;
    catalog.add(spec);
    DPRO_FUZZ_CHECK(catalog.find(spec.name) != nullptr, spec.name);
  } catch (const dpro::InputError&) {
  }
  return 0;
}
