#pragma once
// GPU device specs (public datasheet figures) loaded from configs/devices/*.json. A spec is
// what the cost models know about a GPU: no measurement of it is needed.
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dpro::hw {

enum class DType { kFloat32, kTensorFloat32, kFloat16, kBFloat16, kFloat64, kInt8, kFloat8 };
const char* to_string(DType dtype);
int dtype_bytes(DType dtype);
// "float", "Float", "fp32", "c10::Half", "bf16", ... -> DType; nullopt when not a float/int8 type.
std::optional<DType> parse_dtype(const std::string& text);
// What parse_dtype reads, for messages.
inline constexpr const char* kKnownDtypes =
    "fp32, tf32, fp16, bf16, fp64, int8, fp8, or PyTorch's names: float, half, bfloat16, double, c10::Half, ...";

struct DeviceSpec {
  std::string name;                  // canonical: "A100-SXM4-80GB"
  std::vector<std::string> aliases;  // e.g. the CUDA device name "NVIDIA A100-SXM4-80GB"
  std::string architecture;          // "ampere"
  double memory_gb = 0;
  double memory_bandwidth_gbs = 0;   // GB/s (1e9 bytes/s)
  int sms = 0;
  int fp32_cores_per_sm = 0;
  double boost_clock_mhz = 0;
  double l2_cache_mb = 0;
  // The board's power limit (W): the datasheet's maximum thermal design power (NVIDIA) or peak
  // board power (AMD). A card that reaches it lowers its clock below boost_clock_mhz, so a
  // low-power card (P4, T4, L4: 70-75 W) sustains a smaller share of its datasheet peaks (docs/
  // costmodel.md, "Power limits"). Absent where no vendor figure is published (A10G). Listed by
  // `costmodel devices`; no cost model reads it (the measured shares do not follow it).
  std::optional<double> power_limit_w;
  std::map<std::string, double> peak_tflops;  // key: to_string(DType), dense peak
  // fp32 FMA rate (TFLOP/s) a GEMM can sustain where the datasheet's fp32 peak counts a second
  // datapath that FP32 shares with INT32 (Ampere GA10x, Ada: half of the 128 "FP32 cores" of an
  // SM), which address and loop arithmetic occupy in a GEMM. Absent: peak_tflops["fp32"] means
  // it. Read by the roofline-share model only; peak_flops() ignores it.
  std::optional<double> sustained_fp32_tflops;

  // Peak FLOP/s for a dtype; falls back to fp32 when the spec lists none for that dtype. The
  // narrower floats (tf32, fp16, bf16, fp8) get at least the fp32 peak: a GPU without fast
  // arithmetic for them runs them in fp32; fp8 where a GPU has none runs in fp16.
  double peak_flops(DType dtype) const;
  // sustained_fp32_tflops where given, else the fp32 peak, in FLOP/s.
  double sustained_fp32_flops() const;
  double bandwidth_bytes_per_s() const { return memory_bandwidth_gbs * 1e9; }
  // "A100" for "A100-SXM4-80GB": the GPU model regardless of memory size and form factor.
  std::string model_family() const;
};

// Parses one spec; throws InputError naming `file` on missing or invalid fields.
DeviceSpec parse_device_spec(const std::string& json_text, const std::string& file);

class DeviceCatalog {
 public:
  // Loads every *.json in `directory` (sorted by name). Throws InputError on a bad file, on a
  // directory without one, and on a name or alias that a second file gives again (naming both
  // files: find() would silently take the first).
  static DeviceCatalog load_directory(const std::string& directory);
  // configs/devices of this source tree (a compiled-in path; a CLI may override it).
  static std::string default_directory();

  void add(DeviceSpec spec);
  // Exact canonical name or alias, case-insensitive, ignoring spaces/underscores/dashes.
  const DeviceSpec* find(const std::string& name) const;
  // As find(), but throws InputError listing the known names when there is no match; with
  // `option` (the option that gave the name, "device") an OptionError names it and the command that
  // describes the known GPUs.
  const DeviceSpec& get(const std::string& name, const std::string& option = "") const;
  std::vector<std::string> names() const;
  const std::vector<DeviceSpec>& devices() const { return devices_; }

 private:
  std::vector<DeviceSpec> devices_;
};

}  // namespace dpro::hw
