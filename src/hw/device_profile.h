#pragma once
// A device profile: what `dpro-exec calibrate` (executor/calibration.h) measured on one GPU, and
// its JSON file. The format lives here, below both the executor that writes it and the what-ifs
// that price with it (hw/device_rates.h).
//
// File format (JSON object; every time in ns, every size in bytes or elements as the key says):
//   "format": "dpro-device-profile", "version": 1,
//   "device": "NVIDIA H100 80GB HBM3",        the device's name (a catalog name or alias for a GPU)
//   "date": "2026-11-26T15:00:00Z",           UTC, when the calibration ran
//   "repetitions": 7, "warmup": 2,            timed runs per figure (their median) and untimed runs first
//   "launch": {"gpu_ns_per_launch": 2100,     GPU time per empty kernel (a 0 ns stand-in), back to back
//              "host_ns_per_launch": 2500,    host time per launch call
//              "launches": 200},              launches per timed run
//   "copies": [{"kind": "h2d" | "d2h" | "d2d",
//               "latency_ns": 1800, "bandwidth_gbps": 24.5,   fit: ns = latency + bytes / bandwidth
//               "samples": [{"bytes": 4096, "ns": 1950}, ...]}],  median per size
//   "gemms": [{"m", "n", "k", "batch",         the product's shape
//              "dtype": "fp32" | "fp16" | "bf16" | "fp64", "math": "default" | "tf32",
//              "ns": 1234,                     median per call
//              "tflops": 610.2}],              2 m n k batch / ns / 1000
//   "kernels": [{"kernel": "cast_fp32_bf16" | "cast_fp32_fp16" | "topk" | "randomk" | "signpack" | "powersgd",
//                "param": 0.01,                density (top-k, random-k), rank (PowerSGD), 0 otherwise
//                "latency_ns": 2500, "ns_per_element": 0.004,  fit: ns = latency + elements * ns_per_element
//                "samples": [{"elements": 65536, "ns": 2700}, ...]}],
//   "standin": [{"blocks": 2000, "threads": 256,   the stand-in's grid x block (x dimensions)
//                "requested_ns": 5000, "measured_ns": 5300,
//                "error_ns": 300, "error_pct": 6.0}]   measured - requested; error_pct = 100 error / requested
// A reader ignores keys it does not know (later versions add tables) and refuses a file of another
// format or of a later version.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/time.h"
#include "hw/device_spec.h"

namespace dpro::hw {

enum class CopyDirection : std::uint8_t { kHostToDevice, kDeviceToHost, kDeviceToDevice };
// A GEMM's math mode: kTF32 runs fp32 operands on TF32 tensor cores.
enum class GemmMath : std::uint8_t { kDefault, kTF32 };

const char* to_string(CopyDirection direction);  // "h2d", "d2h", "d2d"
const char* to_string(GemmMath math);            // "default", "tf32"

// Kernel names of the "kernels" table.
inline constexpr const char* kCastToBf16Kernel = "cast_fp32_bf16";
inline constexpr const char* kCastToFp16Kernel = "cast_fp32_fp16";

// y = fixed + slope x, fitted by least squares.
struct LinearFit {
  double fixed = 0;  // ns
  double slope = 0;  // ns per byte or per element
};

struct LaunchCost {
  double gpu_ns_per_launch = 0;
  double host_ns_per_launch = 0;
  int launches = 0;
};

struct CopySample {
  std::uint64_t bytes = 0;
  Nanos ns = 0;
};
struct CopyCurve {
  CopyDirection kind = CopyDirection::kHostToDevice;
  double latency_ns = 0;
  double bandwidth_gbps = 0;  // bytes per ns; 0 when the fit found no positive slope
  std::vector<CopySample> samples;
};

struct GemmSample {
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  DType dtype = DType::kFloat32;  // fp32, fp16, bf16 or fp64: the operands' type
  GemmMath math = GemmMath::kDefault;
  Nanos ns = 0;
  double tflops = 0;
};

struct KernelSample {
  std::int64_t elements = 0;
  Nanos ns = 0;
};
struct KernelCurve {
  std::string kernel;  // see the format above
  double param = 0;
  double latency_ns = 0;
  double ns_per_element = 0;
  std::vector<KernelSample> samples;
};

struct StandinError {
  std::uint32_t blocks = 1, threads = 1;
  Nanos requested_ns = 0;
  Nanos measured_ns = 0;
  Nanos error_ns = 0;      // measured - requested
  double error_pct = 0;    // 100 error / requested
};

struct DeviceProfile {
  std::string device;
  std::string date;  // ISO 8601 UTC
  int repetitions = 0;
  int warmup = 0;
  LaunchCost launch;
  std::vector<CopyCurve> copies;
  std::vector<GemmSample> gemms;
  std::vector<KernelCurve> kernels;
  std::vector<StandinError> standin;
};

// The profile as the JSON text above (indented, one trailing newline).
std::string device_profile_json(const DeviceProfile& profile);

// Writes the profile to `path` ("-" = standard output) by core/output_file.h's rules (never over
// an input; over an existing file only with `replace`). Throws InputError on I/O failure.
void write_device_profile(const std::string& path, const DeviceProfile& profile, bool replace);

// Parses the JSON text above. Throws InputError naming `file` and the offending key
// ("copies[1].bandwidth_gbps") for text that is not such a profile.
DeviceProfile parse_device_profile(const std::string& text, const std::string& file);

// Reads a profile file (gzip or not). Throws InputError naming the file (and the key) when it
// cannot be read or is not such a profile.
DeviceProfile read_device_profile(const std::string& path);

// ---- Whether a profile applies to the GPU being priced: the one rule every reader follows ----
// (what-ifs: precision, compression's rate meter, op fusion, device re-timing, through
// load_device_rates in hw/device_rates.h; the roofline-share cost model's --device-profile,
// costmodel/share_profile.h.)
//
// The GPU being priced is `--device`'s when one is named (the work is re-timed for it), else every
// GPU the trace recorded (trace::TraceSet::gpu_names(): each rank's device list). A profile applies
// when its `device` and each priced GPU name the same catalog entry: DeviceCatalog::find, i.e. the
// canonical name or an alias ("NVIDIA H100 80GB HBM3" is H100-SXM5-80GB), case, spaces, '-' and
// '_' ignored. So it does not apply when the profile names no GPU or one the catalog does not
// know, when a priced GPU is another entry or unknown to the catalog, or when there is no priced
// GPU (no --device and a trace that records none): the catalog is what says two names are one GPU.
// A profile that does not apply is an error, never a silent prior: the reason is one line,
//   profiled on <P>, but the work is priced on <G> (<where G comes from>): calibrate that GPU, or
//   leave out --device-profile
// thrown as InputError(profile file, "device", reason).
struct PricedGpu {
  std::string device;                   // --device's name or alias ("": none named)
  std::vector<std::string> trace_gpus;  // the trace's recorded GPU names (read only without `device`)
};

// The reason `profile` does not apply to `priced` (the line above), or nullopt when it does.
// Throws OptionError (option "device", listing the catalog) for a `priced.device` the catalog does
// not know, as every --device reader does.
std::optional<std::string> profile_mismatch(const DeviceProfile& profile, const PricedGpu& priced,
                                            const DeviceCatalog& catalog);

// The catalog's entry of the GPU the profile applies to; throws InputError(path, "device", the
// reason) when it does not apply (and OptionError as profile_mismatch does).
const DeviceSpec& require_profile_applies(const std::string& path, const DeviceProfile& profile,
                                          const PricedGpu& priced, const DeviceCatalog& catalog);

}  // namespace dpro::hw
