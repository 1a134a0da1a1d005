#include "executor/calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <iterator>
#include <utility>

#include "core/error.h"
#include "core/stats.h"

namespace dpro::executor {
namespace {

// The stand-in that holds the stream before a timed run lasts this much longer than twice the
// host's time to issue the run, so the GPU never waits for the host inside the run.
constexpr Nanos kHoldSlack = 20 * kNanosPerMicro;
// Host time per launch assumed until the launch cost is measured (generous: a slow host).
constexpr double kHostLaunchGuessNs = 20'000;
constexpr std::uint64_t kSeed = 0x5eed;

// A device buffer freed when it goes out of scope.
class ScopedBuffer {
 public:
  ScopedBuffer(Device& device, std::uint64_t bytes) : device_(device), span_{device.allocate(bytes), 0, bytes} {}
  ~ScopedBuffer() { device_.free(span_.buffer); }
  ScopedBuffer(const ScopedBuffer&) = delete;
  ScopedBuffer& operator=(const ScopedBuffer&) = delete;
  Span span(std::uint64_t bytes) const { return {span_.buffer, 0, bytes}; }

 private:
  Device& device_;
  Span span_;
};

std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// PowerSGD views n elements as rows x (n / rows): the largest divisor of n not above sqrt(n).
std::int64_t powersgd_rows(std::int64_t n) {
  auto rows = static_cast<std::int64_t>(std::sqrt(static_cast<double>(n)));
  while (rows > 1 && n % rows != 0) --rows;
  return std::max<std::int64_t>(rows, 1);
}

// The cast and compression kernels calibrate() measures, as they appear in the profile.
struct KernelKind {
  const char* name;
  bool cast;
  DType to;                // casts
  CompressMethod method;   // compression
};
constexpr KernelKind kKernelKinds[] = {
    {"cast_fp32_bf16", true, DType::kBF16, CompressMethod::kTopK},
    {"cast_fp32_fp16", true, DType::kF16, CompressMethod::kTopK},
    {"topk", false, DType::kF32, CompressMethod::kTopK},
    {"randomk", false, DType::kF32, CompressMethod::kRandomK},
    {"signpack", false, DType::kF32, CompressMethod::kSignPack},
    {"powersgd", false, DType::kF32, CompressMethod::kPowerSgd},
};

class Calibrator {
 public:
  Calibrator(Device& device, const CalibrationOptions& options, const CalibrationProgress& progress)
      : device_(device), options_(options), progress_(progress) {
    total_ = 2 + 3 * static_cast<int>(options.copy_bytes.size()) +
             static_cast<int>(options.gemm_variants.size() * options.gemm_shapes.size()) +
             static_cast<int>(std::size(kKernelKinds) * options.kernel_elements.size()) +
             static_cast<int>(options.standin_footprints.size() * options.standin_durations.size());
  }

  DeviceProfile run() {
    stream_ = device_.create_stream();
    begin_ = device_.create_event();
    end_ = device_.create_event();
    DeviceProfile p;
    p.device = device_.name();
    p.date = options_.date.empty() ? utc_now() : options_.date;
    p.repetitions = options_.repetitions;
    p.warmup = options_.warmup;
    p.launch = launch_cost();
    for (CopyKind kind : {CopyKind::kHostToDevice, CopyKind::kDeviceToHost, CopyKind::kDeviceToDevice}) {
      if (!options_.copy_bytes.empty()) p.copies.push_back(copy_curve(kind));
    }
    for (const GemmVariant& v : options_.gemm_variants) {
      for (const GemmShape& s : options_.gemm_shapes) p.gemms.push_back(gemm(v, s));
    }
    for (const KernelKind& kind : kKernelKinds) {
      if (!options_.kernel_elements.empty()) p.kernels.push_back(kernel_curve(kind));
    }
    for (const StandinFootprint& f : options_.standin_footprints) {
      for (Nanos d : options_.standin_durations) p.standin.push_back(standin_error(f, d));
    }
    return p;
  }

 private:
  void step(std::string what) {
    if (progress_) progress_({std::move(what), index_, total_});
    ++index_;
  }

  static Launch empty_kernel() { return StandinKernel{{1, 1, 1}, {32, 1, 1}, 0}; }

  struct Run {
    Nanos gpu = 0;   // events' elapsed time over the run
    Nanos host = 0;  // the host's time to issue the run's calls
  };

  // `count` back-to-back calls between two events, issued behind a stand-in that holds the
  // stream until the host has issued them all (at `host_per_call` ns each, with a margin).
  Run timed_run(const Launch& call, int count, double host_per_call) {
    const double hold = 2.0 * count * host_per_call + static_cast<double>(kHoldSlack);
    device_.launch(stream_, StandinKernel{{1, 1, 1}, {32, 1, 1}, static_cast<Nanos>(hold)});
    device_.record(begin_, stream_);
    const Nanos issued = device_.host_now();
    for (int i = 0; i < count; ++i) device_.launch(stream_, call);
    Run run;
    run.host = device_.host_now() - issued;
    device_.record(end_, stream_);
    device_.synchronize(end_);
    run.gpu = device_.elapsed(begin_, end_);
    return run;
  }

  // Median GPU time per call, ns. count 0: as many calls per run as make about target_run_ns.
  // A call that costs the host more than an empty launch (cuBLASLt, top-k's several kernels)
  // holds the stream longer: the hold follows the host time of a first timed call.
  double time_per_call(const Launch& call, int count = 0) {
    for (int i = 0; i < options_.warmup; ++i) device_.launch(stream_, call);
    device_.synchronize();
    double host_per_call = host_ns_per_launch_;
    if (count == 0) {
      const Run once = timed_run(call, 1, host_per_call);
      host_per_call = std::max(host_per_call, static_cast<double>(once.host));
      const double want = std::ceil(static_cast<double>(options_.target_run_ns) /
                                    std::max(static_cast<double>(once.gpu), 1.0));
      count = static_cast<int>(std::clamp(want, 1.0, static_cast<double>(options_.launches)));
    }
    std::vector<double> per_call;
    for (int r = 0; r < options_.repetitions; ++r) {
      per_call.push_back(static_cast<double>(timed_run(call, count, host_per_call).gpu) / count);
    }
    return median(per_call);
  }

  LaunchCost launch_cost() {
    const int n = options_.launches;
    step(fmt::format("launch: host time of {} empty kernels", n));
    device_.synchronize();
    std::vector<double> host;
    for (int r = 0; r < options_.warmup + options_.repetitions; ++r) {
      const Nanos t0 = device_.host_now();
      for (int i = 0; i < n; ++i) device_.launch(stream_, empty_kernel());
      const Nanos t1 = device_.host_now();
      device_.synchronize();
      if (r >= options_.warmup) host.push_back(static_cast<double>(t1 - t0) / n);
    }
    LaunchCost cost;
    cost.launches = n;
    cost.host_ns_per_launch = median(host);
    host_ns_per_launch_ = cost.host_ns_per_launch;
    step(fmt::format("launch: GPU time of {} empty kernels back to back", n));
    cost.gpu_ns_per_launch = time_per_call(empty_kernel(), n);
    return cost;
  }

  CopyCurve copy_curve(CopyKind kind) {
    const std::uint64_t most = *std::max_element(options_.copy_bytes.begin(), options_.copy_bytes.end());
    ScopedBuffer a(device_, most), b(device_, most);
    CopyCurve curve;
    curve.kind = profile_direction(kind);
    std::vector<double> x, y;
    for (std::uint64_t bytes : options_.copy_bytes) {
      step(fmt::format("copy {} {} bytes", copy_kind_name(kind), bytes));
      // The host side of a host copy is the device's staging memory: only its offset counts.
      CopyCall call{kind, bytes, a.span(bytes), b.span(bytes)};
      if (kind == CopyKind::kHostToDevice) call.src = Span{0, 0, bytes};
      if (kind == CopyKind::kDeviceToHost) call.dst = Span{0, 0, bytes};
      const double ns = time_per_call(call);
      curve.samples.push_back({bytes, static_cast<Nanos>(std::llround(ns))});
      x.push_back(static_cast<double>(bytes));
      y.push_back(ns);
    }
    const LinearFit fit = fit_line(x, y);
    curve.latency_ns = fit.fixed;
    curve.bandwidth_gbps = fit.slope > 0 ? 1.0 / fit.slope : 0.0;  // bytes per ns = GB/s
    return curve;
  }

  GemmSample gemm(const GemmVariant& v, const GemmShape& s) {
    step(fmt::format("gemm {} {} {}x{}x{}x{}", to_string(v.dtype), math_mode_name(v.math), s.m, s.n, s.k, s.batch));
    const std::uint64_t width = dtype_bytes(v.dtype);
    const auto bytes = [&](std::int64_t rows, std::int64_t cols) {
      return static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(cols) *
             static_cast<std::uint64_t>(s.batch) * width;
    };
    ScopedBuffer a(device_, bytes(s.m, s.k)), b(device_, bytes(s.k, s.n)), c(device_, bytes(s.m, s.n));
    const GemmCall call{.m = s.m,
                        .n = s.n,
                        .k = s.k,
                        .batch = s.batch,
                        .dtype = v.dtype,
                        .math = v.math,
                        .a = a.span(bytes(s.m, s.k)),
                        .b = b.span(bytes(s.k, s.n)),
                        .c = c.span(bytes(s.m, s.n)),
                        .epilogue = GemmEpilogue::kNone,
                        .bias = {},
                        .aux = {}};
    const double ns = time_per_call(call);
    const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k) *
                         static_cast<double>(s.batch);
    return {s.m, s.n, s.k, s.batch, profile_dtype(v.dtype), profile_math(v.math), static_cast<Nanos>(std::llround(ns)), flops / ns / 1e3};
  }

  Launch kernel_call(const KernelKind& kind, std::int64_t n, const Span& src, const Span& dst, const Span& residual) {
    if (kind.cast) return CastCall{DType::kF32, kind.to, n, src, dst};
    CompressCall call;
    call.method = kind.method;
    call.param = kind.method == CompressMethod::kPowerSgd ? options_.powersgd_rank : options_.sparsity_density;
    if (kind.method == CompressMethod::kSignPack) call.param = 0;
    call.elements = n;
    call.rows = powersgd_rows(n);
    call.src = src, call.dst = dst, call.residual = residual;
    call.seed = kSeed;
    return call;
  }

  // Casts and compression (with error feedback, as training uses them) over a constant byte
  // pattern (0x3c: every fp32 value about 0.0115), which keeps NaNs out of the sort.
  KernelCurve kernel_curve(const KernelKind& kind) {
    const std::int64_t most = *std::max_element(options_.kernel_elements.begin(), options_.kernel_elements.end());
    const std::uint64_t gradient = 4ull * static_cast<std::uint64_t>(most);
    // Every payload fits 8 n bytes: top-k's 8 k, sign packing's about n / 8, PowerSGD's
    // 4 rank (rows + cols) with rank <= rows <= sqrt(n) (the kernel holds rank to min(rows, cols)).
    ScopedBuffer src(device_, gradient), dst(device_, 2 * gradient), residual(device_, gradient);
    device_.launch(stream_, MemsetCall{src.span(gradient), 0x3c});
    device_.launch(stream_, MemsetCall{residual.span(gradient), 0});
    KernelCurve curve;
    curve.kernel = kind.name;
    std::vector<double> x, y;
    for (std::int64_t n : options_.kernel_elements) {
      step(fmt::format("{} {} elements", kind.name, n));
      const std::uint64_t bytes = 4ull * static_cast<std::uint64_t>(n);
      const Launch call = kernel_call(kind, n, src.span(bytes), dst.span(2 * bytes), residual.span(bytes));
      if (const auto* compress = std::get_if<CompressCall>(&call)) curve.param = compress->param;
      const double ns = time_per_call(call);
      curve.samples.push_back({n, static_cast<Nanos>(std::llround(ns))});
      x.push_back(static_cast<double>(n));
      y.push_back(ns);
    }
    const LinearFit fit = fit_line(x, y);
    curve.latency_ns = fit.fixed;
    curve.ns_per_element = fit.slope;
    return curve;
  }

  StandinError standin_error(const StandinFootprint& f, Nanos requested) {
    step(fmt::format("stand-in {} x {} threads, {} ns", f.blocks, f.threads, requested));
    const Launch call = StandinKernel{{f.blocks, 1, 1}, {f.threads, 1, 1}, requested};
    const auto measured = static_cast<Nanos>(std::llround(time_per_call(call, 1)));
    StandinError e{f.blocks, f.threads, requested, measured, measured - requested, 0};
    e.error_pct = requested > 0 ? 100.0 * static_cast<double>(e.error_ns) / static_cast<double>(requested) : 0.0;
    return e;
  }

  Device& device_;
  const CalibrationOptions& options_;
  const CalibrationProgress& progress_;
  StreamHandle stream_ = 0;
  EventHandle begin_ = 0, end_ = 0;
  double host_ns_per_launch_ = kHostLaunchGuessNs;
  int index_ = 0, total_ = 0;
};

template <typename T, typename Bad>
void check_each(const std::vector<T>& values, const char* option, Bad bad, const char* message) {
  for (const T& v : values) {
    if (bad(v)) throw OptionError(option, fmt::format("{}", v), message);
  }
}

}  // namespace

std::vector<GemmShape> default_gemm_shapes() {
  return {{1024, 1024, 1024, 1},  {4096, 4096, 4096, 1},  {8192, 8192, 8192, 1}, {2304, 8192, 768, 1},
          {3072, 8192, 768, 1},   {768, 8192, 3072, 1},   {4096, 8192, 4096, 1}, {11008, 8192, 4096, 1},
          {1024, 1024, 64, 96}};
}

void validate(const CalibrationOptions& o) {
  if (o.repetitions < 1 || o.repetitions > 1000)
    throw OptionError("repetitions", std::to_string(o.repetitions), "must be a whole number from 1 to 1000");
  if (o.warmup < 0 || o.warmup > 1000)
    throw OptionError("warmup", std::to_string(o.warmup), "must be a whole number from 0 to 1000");
  // The CUDA launch queue holds about 1024 launches; a run of more would time the host's wait.
  if (o.launches < 1 || o.launches > 1000)
    throw OptionError("launches", std::to_string(o.launches), "must be a whole number from 1 to 1000");
  if (o.target_run_ns < 1 || o.target_run_ns > kNanosPerSecond)
    throw OptionError("target_run_ns", std::to_string(o.target_run_ns), "must be from 1 ns to 1 s");
  check_each(o.copy_bytes, "copy_bytes", [](std::uint64_t b) { return b < 1 || b > (16ull << 30); },
             "must be from 1 byte to 16 GiB");
  check_each(o.kernel_elements, "kernel_elements", [](std::int64_t n) { return n < 1024 || n >= (1ll << 31); },
             "must be from 1024 to 2^31 - 1 elements");
  check_each(o.standin_durations, "standin_durations", [](Nanos d) { return d < 0 || d > 10 * kNanosPerSecond; },
             "must be from 0 to 10 s");
  for (const GemmShape& s : o.gemm_shapes) {
    if (s.m < 1 || s.n < 1 || s.k < 1 || s.batch < 1)
      throw OptionError("gemm_shapes", fmt::format("{}x{}x{}x{}", s.m, s.n, s.k, s.batch), "every extent must be >= 1");
  }
  for (const StandinFootprint& f : o.standin_footprints) {
    if (f.blocks < 1 || f.threads < 1 || f.threads > 1024)
      throw OptionError("standin_footprints", fmt::format("{}x{}", f.blocks, f.threads),
                        "blocks must be >= 1 and threads from 1 to 1024");
  }
  if (!(o.sparsity_density > 0 && o.sparsity_density <= 0.5))
    throw OptionError("sparsity_density", fmt::format("{}", o.sparsity_density), "must be in (0, 0.5]");
  if (o.powersgd_rank < 1 || o.powersgd_rank > 16)
    throw OptionError("powersgd_rank", std::to_string(o.powersgd_rank), "must be a whole number from 1 to 16");
}

DeviceProfile calibrate(Device& device, const CalibrationOptions& options, const CalibrationProgress& progress) {
  validate(options);
  return Calibrator(device, options, progress).run();
}

LinearFit fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  DPRO_CHECK(x.size() == y.size());
  const auto n = static_cast<double>(x.size());
  if (x.empty()) return {};
  double sx = 0, sy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) sx += x[i], sy += y[i];
  const double mx = sx / n, my = sy / n;
  double sxx = 0, sxy = 0, xx0 = 0, xy0 = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxx += (x[i] - mx) * (x[i] - mx), sxy += (x[i] - mx) * (y[i] - my);
    xx0 += x[i] * x[i], xy0 += x[i] * y[i];
  }
  if (sxx <= 0) return {my, 0};
  const double slope = sxy / sxx;
  if (slope < 0) return {my, 0};
  const double fixed = my - slope * mx;
  if (fixed < 0) return {0, xy0 / xx0};
  return {fixed, slope};
}

}  // namespace dpro::executor
