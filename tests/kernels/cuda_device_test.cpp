// The CUDA device against the CPU references, on a GPU. Where no GPU answers (CI, this
// project's build machines) every case prints "no usable GPU" and returns; ctest counts it as
// skipped (SKIP_REGULAR_EXPRESSION in CMakeLists.txt). Issue 33 runs it on a GPU machine.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "executor/cuda/cuda_device.h"
#include "executor/cuda/compression_runner.h"
#include "executor/cuda/elementwise_jit.h"
#include "kernels/compression_reference.h"
#include "kernels/elementwise_codegen.h"
#include "kernels/gemm_reference.h"
#include "kernels/half_bits.h"

using namespace dpro::executor;
using dpro::Nanos;
namespace k = dpro::kernels;

namespace {

// The device, or null (after printing why) where open_cuda_device finds no usable GPU; any
// other failure of opening one fails the test.
std::unique_ptr<Device> gpu() {
  try {
    return open_cuda_device(0);
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).rfind("no usable GPU", 0) != 0) throw;
    std::cout << e.what() << "\n";
    return nullptr;
  }
}

template <typename T>
Span upload(Device& d, const std::vector<T>& host) {
  Span s{d.allocate(host.size() * sizeof(T)), 0, host.size() * sizeof(T)};
  cuda_upload(d, s, host.data());
  return s;
}

template <typename T>
std::vector<T> download(Device& d, const Span& s) {
  std::vector<T> host(s.bytes / sizeof(T));
  d.synchronize();
  cuda_download(d, s, host.data());
  return host;
}

std::vector<float> values(std::size_t n, double phase) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(std::sin(0.7 * i + phase) * (1 + i % 5));
  return v;
}

double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff += (a[i] - b[i]) * double(a[i] - b[i]), norm += double(b[i]) * b[i];
  return std::sqrt(diff / std::max(norm, 1e-30));
}

// Values of `t` (fp32, fp16, bf16) as the device stores them, and back.
std::vector<std::uint8_t> encode(const std::vector<double>& v, DType t) {
  std::vector<std::uint8_t> bytes(v.size() * dtype_bytes(t));
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto f = static_cast<float>(v[i]);
    if (t == DType::kF32) {
      std::memcpy(bytes.data() + 4 * i, &f, 4);
    } else {
      const std::uint16_t h = t == DType::kF16 ? k::float_to_half(f) : k::float_to_bf16(f);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
  }
  return bytes;
}

std::vector<double> decode(const std::vector<std::uint8_t>& bytes, DType t) {
  std::vector<double> v(bytes.size() / dtype_bytes(t));
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (t == DType::kF32) {
      float f;
      std::memcpy(&f, bytes.data() + 4 * i, 4);
      v[i] = f;
    } else {
      std::uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      v[i] = t == DType::kF16 ? k::half_to_float(h) : k::bf16_to_float(h);
    }
  }
  return v;
}

// v rounded to `t`'s values.
std::vector<double> rounded(const std::vector<double>& v, DType t) { return decode(encode(v, t), t); }

std::vector<double> scaled(std::size_t n, double phase, double scale) {
  std::vector<double> v;
  for (float f : values(n, phase)) v.push_back(f * scale);
  return v;
}

// The largest |got - want| / max(|want|, 1).
double max_error(const std::vector<double>& got, const std::vector<double>& want) {
  double worst = got.size() == want.size() ? 0 : 1e300;
  for (std::size_t i = 0; i < got.size() && i < want.size(); ++i)
    worst = std::max(worst, std::abs(got[i] - want[i]) / std::max(std::abs(want[i]), 1.0));
  return worst;
}

}  // namespace

TEST_CASE("cuda device: a stand-in occupies the GPU for the requested time", "[cuda]") {
  auto d = gpu();
  if (!d) return;
  StreamHandle s = d->create_stream();
  EventHandle a = d->create_event(), b = d->create_event();
  for (Nanos want : {Nanos{50'000}, Nanos{500'000}, Nanos{2'000'000}}) {
    d->record(a, s);
    d->launch(s, StandinKernel{{2000, 1, 1}, {256, 1, 1}, want});
    d->record(b, s);
    d->synchronize(b);
    Nanos got = d->elapsed(a, b);
    INFO("requested " << want << " ns, measured " << got << " ns");
    CHECK(std::abs(got - want) < want / 10 + 5'000);
  }
}

TEST_CASE("cuda device: fused chains match the CPU interpreter", "[cuda]") {
  auto d = gpu();
  if (!d) return;
  StreamHandle s = d->create_stream();
  const std::size_t n = 10'000;
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    ElementwiseChain c;
    c.steps = {{ElementwiseOp::kMul, 1, 0}, {ElementwiseOp::kGelu, -1, 0}, {ElementwiseOp::kAddScalar, -1, 0.25f},
               {ElementwiseOp::kSilu, -1, 0}, {ElementwiseOp::kTanh, -1, 0}, {ElementwiseOp::kMax, 1, 0},
               {ElementwiseOp::kAbs, -1, 0}, {ElementwiseOp::kSqrt, -1, 0}, {ElementwiseOp::kLog, -1, 0}};
    c.elements = n;
    c.dtype = dtype;
    std::vector<std::vector<std::uint16_t>> halves;
    std::vector<std::vector<float>> floats{values(n, 0), values(n, 1)};
    std::vector<const void*> host_in;
    for (auto& f : floats) {
      if (dtype == DType::kF32) {
        c.inputs.push_back(upload(*d, f));
        host_in.push_back(f.data());
      } else {
        halves.push_back(k::cast_to_half(f, dtype == DType::kF16 ? k::HalfKind::kF16 : k::HalfKind::kBF16));
      }
    }
    for (auto& h : halves) c.inputs.push_back(upload(*d, h)), host_in.push_back(h.data());
    Span out{d->allocate(n * dtype_bytes(dtype)), 0, n * dtype_bytes(dtype)};
    c.outputs = {out};
    d->launch(s, c);
    std::vector<std::uint8_t> want(out.bytes);
    k::evaluate_chain_reference(c, host_in, {want.data()});
    std::vector<std::uint8_t> got = download<std::uint8_t>(*d, out);
    auto as_float = [&](const std::vector<std::uint8_t>& bytes) {
      std::vector<float> f(n);
      for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t h;
        if (dtype == DType::kF32) std::memcpy(&f[i], bytes.data() + 4 * i, 4);
        else std::memcpy(&h, bytes.data() + 2 * i, 2), f[i] = dtype == DType::kF16 ? k::half_to_float(h) : k::bf16_to_float(h);
      }
      return f;
    };
    INFO(to_string(dtype));
    CHECK(relative_error(as_float(got), as_float(want)) < (dtype == DType::kF32 ? 1e-6 : 1e-2));
  }
}

TEST_CASE("cuda device: casts round as the CPU reference does", "[cuda]") {
  auto d = gpu();
  if (!d) return;
  StreamHandle s = d->create_stream();
  std::vector<float> f = values(4099, 0.3);
  Span src = upload(*d, f);
  for (auto [dtype, kind] : {std::pair{DType::kF16, k::HalfKind::kF16}, {DType::kBF16, k::HalfKind::kBF16}}) {
    Span dst{d->allocate(f.size() * 2), 0, f.size() * 2};
    d->launch(s, CastCall{DType::kF32, dtype, static_cast<std::int64_t>(f.size()), src, dst});
    CHECK(download<std::uint16_t>(*d, dst) == k::cast_to_half(f, kind));
  }
}

TEST_CASE("cuda device: compression payloads and residuals match the CPU references", "[cuda]") {
  auto d = gpu();
  if (!d) return;
  StreamHandle s = d->create_stream();
  const std::int64_t n = 6000;
  struct M { CompressMethod method; k::PayloadKind kind; double param; std::int64_t rows; bool exact; };
  for (M m : {M{CompressMethod::kTopK, k::PayloadKind::kTopK, 0.01, 0, true}, M{CompressMethod::kRandomK, k::PayloadKind::kRandomK, 0.02, 0, true},
              M{CompressMethod::kSignPack, k::PayloadKind::kSignPack, 0, 0, false}, M{CompressMethod::kCastBF16, k::PayloadKind::kHalf, 0, 0, true},
              M{CompressMethod::kPowerSgd, k::PayloadKind::kPowerSgd, 4, 60, false}}) {
    k::CompressionParams p{m.kind, m.param, m.rows, 9, k::HalfKind::kBF16};
    std::vector<float> g = values(n, 2), residual = values(n, 5), want_residual = residual;
    for (float& r : residual) r *= 0.01f;
    want_residual = residual;
    std::vector<std::uint8_t> want = k::compress_reference(p, g, want_residual);
    CompressCall call{m.method, false, m.param, n, m.rows, upload(*d, g), {}, upload(*d, residual), 9};
    call.dst = Span{d->allocate(want.size()), 0, want.size()};
    d->launch(s, call);
    std::vector<std::uint8_t> got = download<std::uint8_t>(*d, call.dst);
    std::vector<float> got_residual = download<float>(*d, call.residual);
    INFO("method " << int(m.method));
    if (m.exact) CHECK(got == want);
    CHECK(relative_error(got_residual, want_residual) < (m.exact ? 1e-7 : 1e-3));
    CompressCall back{m.method, true, m.param, n, m.rows, call.dst, Span{d->allocate(4 * n), 0, std::uint64_t(4 * n)}, {}, 9};
    d->launch(s, back);
    CHECK(relative_error(download<float>(*d, back.dst), k::decompress_reference(p, want, n)) < (m.exact ? 1e-7 : 1e-3));
  }
}

TEST_CASE("cuda device: GEMMs through cuBLASLt match a CPU product", "[cuda]") {
  auto d = gpu();
  if (!d) return;
  StreamHandle s = d->create_stream();
  const std::int64_t m = 64, n = 48, kk = 80, batch = 2;
  std::vector<float> a = values(m * kk * batch, 0), b = values(kk * n * batch, 1);
  std::vector<float> want(m * n * batch);
  for (std::int64_t q = 0; q < batch; ++q)  // C = A^T B with A stored k x m
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i) {
        double sum = 0;
        for (std::int64_t t = 0; t < kk; ++t) sum += double(a[q * m * kk + t + i * kk]) * b[q * kk * n + t + j * kk];
        want[q * m * n + i + j * m] = static_cast<float>(sum);
      }
  for (MathMode math : {MathMode::kDefault, MathMode::kTF32}) {
    GemmCall g{m, n, kk, batch, true, false, DType::kF32, math, upload(*d, a), upload(*d, b), {}, GemmEpilogue::kNone, {}, {}};
    g.c = Span{d->allocate(want.size() * 4), 0, want.size() * 4};
    d->launch(s, g);
    CHECK(relative_error(download<float>(*d, g.c), want) < (math == MathMode::kTF32 ? 3e-3 : 1e-6));
  }
}

// Every GemmEpilogue through cuBLASLt against kernels/gemm_reference.h, at the layout the executor
// lowers a fused GEMM to (no transposes, m = the output features), one product and a batch of two,
// fp32 / fp16 / bf16. Operands are O(1) so that the pre-activations fall where relu and gelu bend
// (|x| < 4). Tolerance, of |got - want| / max(|want|, 1): fp32 1e-4 (fp32 arithmetic, and room for
// an approximate tanh in the epilogue), fp16 2e-3 and bf16 1.6e-2 (a few roundings of the output).
// GELU forms in fp32 must also be nearer the tanh form than the erf form. The bias gradient's
// error is measured against the row sums of |D| (a sum of rounded values). A combination cuBLASLt
// refuses is warned about; every epilogue must run for at least one dtype and batch.
TEST_CASE("cuda device: GEMM epilogues through cuBLASLt match the CPU reference", "[cuda]") {
  auto d = gpu();
  if (!d) return;
  StreamHandle s = d->create_stream();
  const std::int64_t m = 64, n = 48, kk = 80;
  std::vector<std::string> ran;
  for (std::int64_t batch : {std::int64_t{1}, std::int64_t{2}}) {
    for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
      const double tolerance = dtype == DType::kF32 ? 1e-4 : dtype == DType::kF16 ? 2e-3 : 1.6e-2;
      const std::vector<double> a = rounded(scaled(m * kk * batch, 0, 0.15), dtype);
      const std::vector<double> b = rounded(scaled(kk * n * batch, 1, 0.15), dtype);
      const std::vector<double> bias = rounded(scaled(m * batch, 2, 0.3), dtype);
      const std::vector<double> x = rounded(scaled(m * n * batch, 3, 0.6), dtype);  // forward pre-activations
      for (int e = 0; e <= static_cast<int>(GemmEpilogue::kDGeluBGrad); ++e) {
        const auto epilogue = static_cast<GemmEpilogue>(e);
        INFO(to_string(dtype) << ", batch " << batch << ", epilogue " << to_string(epilogue));
        k::GemmShape shape{m, n, kk, batch, false, false, epilogue};
        k::GemmOperands in;
        in.a = a;
        in.b = b;
        const std::uint64_t c_bytes = static_cast<std::uint64_t>(m * n * batch) * dtype_bytes(dtype);
        GemmCall g{m, n, kk, batch, false, false, dtype, MathMode::kDefault, upload(*d, encode(a, dtype)),
                   upload(*d, encode(b, dtype)), Span{d->allocate(c_bytes), 0, c_bytes}, epilogue, {}, {}};
        if (epilogue_reads_bias(epilogue)) in.bias = bias, g.bias = upload(*d, encode(bias, dtype));
        if (epilogue_writes_bias(epilogue)) g.bias = Span{d->allocate(m * batch * dtype_bytes(dtype)), 0, m * batch * dtype_bytes(dtype)};
        const bool drelu = epilogue == GemmEpilogue::kDRelu || epilogue == GemmEpilogue::kDReluBGrad;
        const bool dgelu = epilogue == GemmEpilogue::kDGelu || epilogue == GemmEpilogue::kDGeluBGrad;
        if (drelu) in.relu_mask = k::relu_mask_of(x, m, n, batch), g.aux = upload(*d, in.relu_mask);
        if (dgelu) in.gelu_input = k::gelu_aux_of(x, m, n, batch), g.aux = upload(*d, encode(in.gelu_input, dtype));
        const k::GemmResult want = k::gemm_reference(shape, in);
        try {
          d->launch(s, g);
          d->synchronize();
        } catch (const std::runtime_error& err) {
          // cuBLASLt may support no algorithm for some epilogue, dtype and layout (no heuristic
          // result, or CUBLAS_STATUS_NOT_SUPPORTED): said, and counted below.
          WARN("not run: " << to_string(dtype) << ", batch " << batch << ", " << to_string(epilogue) << ": " << err.what());
          continue;
        }
        ran.push_back(to_string(epilogue));
        const std::vector<double> got = decode(download<std::uint8_t>(*d, g.c), dtype);
        const double error = max_error(got, want.c);
        INFO("max error " << error);
        CHECK(error < tolerance);
        if ((epilogue == GemmEpilogue::kGelu || epilogue == GemmEpilogue::kBiasGelu) && dtype == DType::kF32) {
          // The same call with the erf form: cuBLASLt's output must lie nearer the tanh form.
          k::GemmOperands plain = in;
          plain.bias.clear();
          std::vector<double> erf_form = k::gemm_reference({m, n, kk, batch, false, false, GemmEpilogue::kNone}, plain).c;
          const auto rows = static_cast<std::size_t>(m), cells = static_cast<std::size_t>(m * n);
          for (std::size_t i = 0; i < erf_form.size(); ++i)  // product i / cells, row i % rows
            erf_form[i] = k::gelu_erf(erf_form[i] + (in.bias.empty() ? 0.0 : in.bias[i / cells * rows + i % rows]));
          INFO("max error against the erf form " << max_error(got, erf_form));
          CHECK(error < max_error(got, erf_form));
        }
        if (epilogue_writes_bias(epilogue)) {
          const std::vector<double> grad = decode(download<std::uint8_t>(*d, g.bias), dtype);
          REQUIRE(grad.size() == want.bias_grad.size());
          double worst = 0, worst_before = 0;  // against the sums after / before the derivative
          const std::vector<double> product =
              k::gemm_reference({m, n, kk, batch, false, false, GemmEpilogue::kNone}, k::GemmOperands{a, b, {}, {}, {}}).c;
          for (std::size_t r = 0; r < grad.size(); ++r) {
            double magnitude = 1, before = 0;
            const std::size_t q = r / m, i = r % m;
            for (std::int64_t j = 0; j < n; ++j) {
              magnitude += std::abs(want.c[q * m * n + j * m + i]);
              before += product[q * m * n + j * m + i];
            }
            worst = std::max(worst, std::abs(grad[r] - want.bias_grad[r]) / magnitude);
            worst_before = std::max(worst_before, std::abs(grad[r] - before) / magnitude);
          }
          INFO("bias gradient: max error " << worst << " (" << worst_before << " against the sums before the derivative)");
          CHECK(worst < tolerance);
        }
      }
    }
  }
  // Every epilogue ran for at least one dtype and batch.
  for (int e = 0; e <= static_cast<int>(GemmEpilogue::kDGeluBGrad); ++e) {
    const std::string name = to_string(static_cast<GemmEpilogue>(e));
    INFO("epilogue " << name);
    CHECK(std::find(ran.begin(), ran.end(), name) != ran.end());
  }
}

TEST_CASE("cuda device: copies, memsets and a collective stand-in", "[cuda]") {
  auto d = gpu();
  if (!d) return;
  StreamHandle s = d->create_stream();
  Span a{d->allocate(4096), 0, 4096}, b{d->allocate(4096), 0, 4096};
  d->launch(s, MemsetCall{a, 0x5a});
  d->launch(s, CopyCall{CopyKind::kDeviceToDevice, 4096, a, b});
  d->launch(s, CopyCall{CopyKind::kDeviceToHost, 4096, b, Span{0, 0, 4096}});
  d->launch(s, CollectiveCall{"all_reduce", 4096, DType::kF32, b, -1, 20'000});
  std::vector<std::uint8_t> got = download<std::uint8_t>(*d, b);
  CHECK(got == std::vector<std::uint8_t>(4096, 0x5a));
  CHECK_THROWS_AS(d->launch(s, MemsetCall{Span{a.buffer, 4000, 200}, 0}), std::out_of_range);
}

TEST_CASE("cuda kernels: every op's generated chain compiles with NVRTC for sm_80 and sm_90 (no GPU needed)", "[cuda][nvrtc]") {
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    ElementwiseChain c;
    for (int op = 0; op <= static_cast<int>(dpro::executor::kLastElementwiseOp); ++op) {
      auto e = static_cast<ElementwiseOp>(op);
      bool binary = dpro::executor::elementwise_op_is_binary(e);
      c.steps.push_back({e, binary ? 1 : -1, -0.75f});
    }
    c.inputs.resize(2);
    c.outputs.resize(c.steps.size());
    c.store_intermediates = true;
    c.dtype = dtype;
    for (int arch : {80, 90}) {
      INFO(to_string(dtype) << " sm_" << arch);
      std::vector<char> cubin = dpro::executor::cuda::compile_chain_cubin(c, arch / 10, arch % 10);
      REQUIRE(cubin.size() > 4);
      CHECK(std::memcmp(cubin.data(), "\x7f" "ELF", 4) == 0);
      std::string name = k::chain_kernel_name(c);
      CHECK(std::search(cubin.begin(), cubin.end(), name.begin(), name.end()) != cubin.end());
    }
  }
}

TEST_CASE("cuda device: compression spans are sized by direction (no GPU needed)", "[cuda]") {
  CompressCall c;
  c.method = CompressMethod::kTopK;
  c.param = 0.01;
  c.elements = 1000;
  CHECK(dpro::executor::cuda::compress_src_bytes(c) == 4000);
  CHECK(dpro::executor::cuda::compress_dst_bytes(c) == 80);
  c.decompress = true;
  CHECK(dpro::executor::cuda::compress_src_bytes(c) == 80);
  CHECK(dpro::executor::cuda::compress_dst_bytes(c) == 4000);
  c.method = CompressMethod::kPowerSgd;
  c.param = 4;
  c.rows = 7;  // does not divide 1000
  CHECK_THROWS_AS(dpro::executor::cuda::compress_src_bytes(c), std::invalid_argument);
}
