#include "kernels/gemm_reference.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace dpro::kernels {
namespace {

using executor::GemmEpilogue;

constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2 / pi)
constexpr double kGeluCubic = 0.044715;

bool is_gelu_forward(GemmEpilogue e) { return e == GemmEpilogue::kGelu || e == GemmEpilogue::kBiasGelu; }
bool is_relu_forward(GemmEpilogue e) { return e == GemmEpilogue::kRelu || e == GemmEpilogue::kBiasRelu; }
bool is_drelu(GemmEpilogue e) { return e == GemmEpilogue::kDRelu || e == GemmEpilogue::kDReluBGrad; }
bool is_dgelu(GemmEpilogue e) { return e == GemmEpilogue::kDGelu || e == GemmEpilogue::kDGeluBGrad; }

void expect_size(const char* what, std::size_t got, std::uint64_t want, GemmEpilogue e) {
  if (got != want)
    throw std::invalid_argument(std::string("GEMM reference: ") + what + " has " + std::to_string(got) + " values, epilogue " +
                                executor::to_string(e) + " needs " + std::to_string(want));
}

}  // namespace

GemmShape gemm_shape_of(const executor::GemmCall& g) {
  return {g.m, g.n, g.k, g.batch, g.transpose_a, g.transpose_b, g.epilogue};
}

double gelu_tanh(double x) { return 0.5 * x * (1 + std::tanh(kSqrt2OverPi * (x + kGeluCubic * x * x * x))); }

double gelu_tanh_derivative(double x) {
  const double t = std::tanh(kSqrt2OverPi * (x + kGeluCubic * x * x * x));
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * kSqrt2OverPi * (1 + 3 * kGeluCubic * x * x);
}

double gelu_erf(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }

GemmResult gemm_reference(const GemmShape& s, const GemmOperands& in) {
  if (s.m <= 0 || s.n <= 0 || s.k <= 0 || s.batch <= 0) throw std::invalid_argument("GEMM reference: empty shape");
  const GemmEpilogue e = s.epilogue;
  const auto m = static_cast<std::uint64_t>(s.m), n = static_cast<std::uint64_t>(s.n), k = static_cast<std::uint64_t>(s.k),
             batch = static_cast<std::uint64_t>(s.batch);
  expect_size("A", in.a.size(), batch * m * k, e);
  expect_size("B", in.b.size(), batch * k * n, e);
  expect_size("bias", in.bias.size(), executor::epilogue_reads_bias(e) ? batch * m : 0, e);
  const auto ld = static_cast<std::uint64_t>(executor::gemm_aux_ld(e, s.m));
  expect_size("relu mask", in.relu_mask.size(), is_drelu(e) ? executor::gemm_aux_bytes(e, s.m, s.n, s.batch, executor::DType::kF32) : 0, e);
  expect_size("gelu input", in.gelu_input.size(), is_dgelu(e) ? batch * ld * n : 0, e);

  GemmResult out;
  out.c.assign(batch * m * n, 0.0);
  if (executor::epilogue_writes_bias(e)) out.bias_grad.assign(batch * m, 0.0);
  for (std::uint64_t q = 0; q < batch; ++q) {
    const double* a = in.a.data() + q * m * k;
    const double* b = in.b.data() + q * k * n;
    for (std::uint64_t j = 0; j < n; ++j) {
      for (std::uint64_t i = 0; i < m; ++i) {
        double acc = 0;
        for (std::uint64_t t = 0; t < k; ++t) {
          const double av = s.transpose_a ? a[t + i * k] : a[i + t * m];
          const double bv = s.transpose_b ? b[j + t * n] : b[t + j * k];
          acc += av * bv;
        }
        if (executor::epilogue_reads_bias(e)) acc += in.bias[q * m + i];
        if (is_relu_forward(e)) {
          acc = acc > 0 ? acc : 0;
        } else if (is_gelu_forward(e)) {
          acc = gelu_tanh(acc);
        } else if (is_drelu(e)) {
          const std::uint64_t bit = q * ld * n + j * ld + i;
          if (!((in.relu_mask[bit / 8] >> (bit % 8)) & 1u)) acc = 0;
        } else if (is_dgelu(e)) {
          acc *= gelu_tanh_derivative(in.gelu_input[q * ld * n + j * ld + i]);
        }
        out.c[q * m * n + j * m + i] = acc;
        if (!out.bias_grad.empty()) out.bias_grad[q * m + i] += acc;
      }
    }
  }
  return out;
}

std::vector<std::uint8_t> relu_mask_of(const std::vector<double>& x, std::int64_t m, std::int64_t n, std::int64_t batch) {
  if (m <= 0 || n <= 0 || batch <= 0 || x.size() != static_cast<std::uint64_t>(m * n * batch))
    throw std::invalid_argument("relu mask: pre-activation size does not match the shape");
  const auto ld = static_cast<std::uint64_t>(executor::gemm_aux_ld(GemmEpilogue::kDRelu, m));
  std::vector<std::uint8_t> mask(executor::gemm_aux_bytes(GemmEpilogue::kDRelu, m, n, batch, executor::DType::kF32), 0);
  const auto um = static_cast<std::uint64_t>(m), un = static_cast<std::uint64_t>(n);
  for (std::uint64_t q = 0; q < static_cast<std::uint64_t>(batch); ++q)
    for (std::uint64_t j = 0; j < un; ++j)
      for (std::uint64_t i = 0; i < um; ++i) {
        if (!(x[q * um * un + j * um + i] > 0)) continue;
        const std::uint64_t bit = q * ld * un + j * ld + i;
        mask[bit / 8] = static_cast<std::uint8_t>(mask[bit / 8] | (1u << (bit % 8)));
      }
  return mask;
}

std::vector<double> gelu_aux_of(const std::vector<double>& x, std::int64_t m, std::int64_t n, std::int64_t batch) {
  if (m <= 0 || n <= 0 || batch <= 0 || x.size() != static_cast<std::uint64_t>(m * n * batch))
    throw std::invalid_argument("gelu aux: pre-activation size does not match the shape");
  const auto ld = static_cast<std::uint64_t>(executor::gemm_aux_ld(GemmEpilogue::kDGelu, m));
  const auto um = static_cast<std::uint64_t>(m), un = static_cast<std::uint64_t>(n);
  std::vector<double> aux(static_cast<std::uint64_t>(batch) * ld * un, 0.0);
  for (std::uint64_t q = 0; q < static_cast<std::uint64_t>(batch); ++q)
    for (std::uint64_t j = 0; j < un; ++j)
      for (std::uint64_t i = 0; i < um; ++i) aux[q * ld * un + j * ld + i] = x[q * um * un + j * um + i];
  return aux;
}

}  // namespace dpro::kernels
