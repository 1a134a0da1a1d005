#include "kernels/gemm_reference.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

using namespace dpro::kernels;
using dpro::executor::GemmEpilogue;

namespace {

// A = [[1, 2], [3, -4]], B = [[5, -6], [7, -8]] (column-major as stored): A B = [[19, -22], [-13, 14]].
GemmShape two_by_two(GemmEpilogue e) { return {2, 2, 2, 1, false, false, e}; }
GemmOperands two_by_two_operands() {
  GemmOperands in;
  in.a = {1, 3, 2, -4};
  in.b = {5, 7, -6, -8};
  return in;
}

// Values (column-major m x n a product) near each other within `tolerance`.
void check_close(const std::vector<double>& got, const std::vector<double>& want, double tolerance = 1e-12) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    CHECK(std::abs(got[i] - want[i]) <= tolerance);
  }
}

// The plain product op(A) op(B), written as row-major matrices built element by element (not
// the reference's indexing), for the property checks.
std::vector<double> plain_product(const GemmShape& s, const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> c;
  for (std::int64_t q = 0; q < s.batch; ++q) {
    std::vector<std::vector<double>> opa(s.m, std::vector<double>(s.k)), opb(s.k, std::vector<double>(s.n));
    const double* aq = a.data() + q * s.m * s.k;
    const double* bq = b.data() + q * s.k * s.n;
    // A stored m x k (ld m), or k x m (ld k) when transposed; B likewise.
    for (std::int64_t r = 0; r < s.m; ++r)
      for (std::int64_t t = 0; t < s.k; ++t) opa[r][t] = s.transpose_a ? aq[r * s.k + t] : aq[t * s.m + r];
    for (std::int64_t t = 0; t < s.k; ++t)
      for (std::int64_t col = 0; col < s.n; ++col) opb[t][col] = s.transpose_b ? bq[t * s.n + col] : bq[col * s.k + t];
    for (std::int64_t col = 0; col < s.n; ++col)
      for (std::int64_t r = 0; r < s.m; ++r) {
        double sum = 0;
        for (std::int64_t t = 0; t < s.k; ++t) sum += opa[r][t] * opb[t][col];
        c.push_back(sum);
      }
  }
  return c;
}

std::vector<double> pseudo_random(std::size_t n, std::uint32_t seed) {
  std::vector<double> v(n);
  for (auto& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<double>(seed >> 8) / double(1u << 24) * 4 - 2;  // in [-2, 2)
  }
  return v;
}

}  // namespace

TEST_CASE("gemm reference: none and bias on a 2 x 2 product (bias broadcast over the columns)", "[kernels][gemm]") {
  GemmOperands in = two_by_two_operands();
  check_close(gemm_reference(two_by_two(GemmEpilogue::kNone), in).c, {19, -13, -22, 14});
  in.bias = {1, -2};  // one value a row of D (m values)
  GemmResult r = gemm_reference(two_by_two(GemmEpilogue::kBias), in);
  check_close(r.c, {20, -15, -21, 12});
  CHECK(r.bias_grad.empty());
}

TEST_CASE("gemm reference: relu and bias_relu zero the negative pre-activations", "[kernels][gemm]") {
  GemmOperands in = two_by_two_operands();
  check_close(gemm_reference(two_by_two(GemmEpilogue::kRelu), in).c, {19, 0, 0, 14});
  in.bias = {-20, 14};  // pre-activations -1, 1, -42, 28: the bias decides the first two
  check_close(gemm_reference(two_by_two(GemmEpilogue::kBiasRelu), in).c, {0, 1, 0, 28});
}

TEST_CASE("gemm reference: gelu and bias_gelu are the tanh form, not the erf form", "[kernels][gemm]") {
  // A = [0.5, -1.5]^T (2 x 1), B = [1, 2] (1 x 2): pre-activations 0.5, -1.5, 1, -3 (column-major).
  GemmShape s{2, 2, 1, 1, false, false, GemmEpilogue::kGelu};
  GemmOperands in;
  in.a = {0.5, -1.5};
  in.b = {1, 2};
  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) at those x (python3 math, double).
  const std::vector<double> want = {0.34571400982514394, -0.10042842301976707, 0.8411919906082768, -0.0036373920817729943};
  GemmResult r = gemm_reference(s, in);
  check_close(r.c, want, 1e-15);
  // The erf form differs by more than the tolerance above at every one of them.
  const std::vector<double> x = {0.5, -1.5, 1, -3};
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(std::abs(gelu_erf(x[i]) - want[i]) > 1e-5);
  s.epilogue = GemmEpilogue::kBiasGelu;
  in.bias = {1, 0.5};  // pre-activations 1.5, -1, 2, -2.5
  check_close(gemm_reference(s, in).c, {1.3995715769802328, -0.15880800939172324, 1.954597694087775, -0.015084266089998577}, 1e-15);
}

TEST_CASE("gemm reference: drelu keeps the product where the mask bit is set, drelu_bgrad sums the rows", "[kernels][gemm]") {
  GemmOperands in = two_by_two_operands();
  // Forward pre-activations 1, -1, 2, 0 (column-major): bits (0,0) and (0,1) only (0 is not > 0).
  // ld = 128 bits, so column 1 starts at byte 16: bytes 0 and 16 are 0b1, the other 30 zero.
  in.relu_mask = relu_mask_of({1, -1, 2, 0}, 2, 2, 1);
  REQUIRE(in.relu_mask.size() == 32);
  std::vector<std::uint8_t> want_mask(32, 0);
  want_mask[0] = 1;
  want_mask[16] = 1;
  CHECK(in.relu_mask == want_mask);
  GemmResult r = gemm_reference(two_by_two(GemmEpilogue::kDRelu), in);
  check_close(r.c, {19, 0, -22, 0});
  CHECK(r.bias_grad.empty());
  r = gemm_reference(two_by_two(GemmEpilogue::kDReluBGrad), in);
  check_close(r.c, {19, 0, -22, 0});
  check_close(r.bias_grad, {-3, 0});  // 19 + -22, 0 + 0: after the derivative, not before (-3, 1)
  // Only bit 129 (row 1 of column 1: byte 16, bit 1) set in column 1: 14 kept, -22 dropped.
  in.relu_mask[16] = 2;
  check_close(gemm_reference(two_by_two(GemmEpilogue::kDRelu), in).c, {19, 0, 0, 14});
}

TEST_CASE("gemm reference: dgelu multiplies by the tanh-gelu derivative at the aux value", "[kernels][gemm]") {
  GemmOperands in = two_by_two_operands();
  // Pre-activations 0, 1, -1, 2 (column-major) in the aux layout: ld = 8 values a column.
  in.gelu_input = gelu_aux_of({0, 1, -1, 2}, 2, 2, 1);
  REQUIRE(in.gelu_input.size() == 16);
  CHECK(in.gelu_input[8] == -1);
  CHECK(in.gelu_input[9] == 2);
  // d/dx gelu_tanh at 1, -1, 2 (python3 math, double; 0.5 at 0).
  const double d1 = 1.0829640838457826, dm1 = -0.08296408384578255, d2 = 1.0860992566236183;
  GemmResult r = gemm_reference(two_by_two(GemmEpilogue::kDGelu), in);
  check_close(r.c, {9.5, -13 * d1, -22 * dm1, 14 * d2}, 1e-13);
  CHECK(r.bias_grad.empty());
  r = gemm_reference(two_by_two(GemmEpilogue::kDGeluBGrad), in);
  check_close(r.c, {9.5, -13 * d1, -22 * dm1, 14 * d2}, 1e-13);
  check_close(r.bias_grad, {11.325209844607215, 1.1268565027354818}, 1e-13);
  // The derivative against a central difference of gelu_tanh.
  for (double x : {-3.0, -1.2, -0.3, 0.0, 0.7, 2.5}) {
    INFO("x = " << x);
    CHECK(std::abs(gelu_tanh_derivative(x) - (gelu_tanh(x + 1e-6) - gelu_tanh(x - 1e-6)) / 2e-6) < 1e-8);
  }
}

TEST_CASE("gemm reference: epilogue none equals the plain product for every transpose and a batch", "[kernels][gemm]") {
  for (int form = 0; form < 4; ++form) {
    GemmShape s{5, 3, 4, 2, (form & 1) != 0, (form & 2) != 0, GemmEpilogue::kNone};
    INFO("transpose_a " << s.transpose_a << ", transpose_b " << s.transpose_b);
    GemmOperands in;
    in.a = pseudo_random(static_cast<std::size_t>(s.batch * s.m * s.k), 7u + static_cast<std::uint32_t>(form));
    in.b = pseudo_random(static_cast<std::size_t>(s.batch * s.k * s.n), 11u + static_cast<std::uint32_t>(form));
    check_close(gemm_reference(s, in).c, plain_product(s, in.a, in.b), 1e-12);
  }
}

TEST_CASE("gemm reference: every epilogue over a batch, from the plain product (bias, masks and aux strided by product)", "[kernels][gemm]") {
  const std::int64_t m = 9, n = 5, k = 6, batch = 2;
  GemmShape s{m, n, k, batch, false, true, GemmEpilogue::kNone};
  GemmOperands base;
  base.a = pseudo_random(static_cast<std::size_t>(batch * m * k), 3);
  base.b = pseudo_random(static_cast<std::size_t>(batch * k * n), 5);
  const std::vector<double> plain = plain_product(s, base.a, base.b);
  const std::vector<double> bias = pseudo_random(static_cast<std::size_t>(batch * m), 13);
  const std::vector<double> x = pseudo_random(static_cast<std::size_t>(batch * m * n), 17);  // forward pre-activations
  for (int e = 0; e <= static_cast<int>(GemmEpilogue::kDGeluBGrad); ++e) {
    s.epilogue = static_cast<GemmEpilogue>(e);
    INFO("epilogue " << dpro::executor::to_string(s.epilogue));
    GemmOperands in = base;
    const bool reads_bias = dpro::executor::epilogue_reads_bias(s.epilogue);
    const bool drelu = s.epilogue == GemmEpilogue::kDRelu || s.epilogue == GemmEpilogue::kDReluBGrad;
    const bool dgelu = s.epilogue == GemmEpilogue::kDGelu || s.epilogue == GemmEpilogue::kDGeluBGrad;
    if (reads_bias) in.bias = bias;
    if (drelu) in.relu_mask = relu_mask_of(x, m, n, batch);
    if (dgelu) in.gelu_input = gelu_aux_of(x, m, n, batch);
    GemmResult r = gemm_reference(s, in);
    std::vector<double> want(plain.size()), want_grad(static_cast<std::size_t>(batch * m), 0.0);
    for (std::int64_t q = 0; q < batch; ++q)
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t i = 0; i < m; ++i) {
          const std::size_t at = static_cast<std::size_t>(q * m * n + j * m + i);
          double v = plain[at] + (reads_bias ? bias[static_cast<std::size_t>(q * m + i)] : 0.0);
          if (s.epilogue == GemmEpilogue::kRelu || s.epilogue == GemmEpilogue::kBiasRelu) v = std::max(v, 0.0);
          if (s.epilogue == GemmEpilogue::kGelu || s.epilogue == GemmEpilogue::kBiasGelu) v = gelu_tanh(v);
          if (drelu && !(x[at] > 0)) v = 0;
          if (dgelu) v *= gelu_tanh_derivative(x[at]);
          want[at] = v;
          want_grad[static_cast<std::size_t>(q * m + i)] += v;
        }
    check_close(r.c, want, 1e-12);
    if (dpro::executor::epilogue_writes_bias(s.epilogue)) check_close(r.bias_grad, want_grad, 1e-12);
    else CHECK(r.bias_grad.empty());
  }
}

TEST_CASE("gemm reference: operands that do not match the shape and epilogue are refused", "[kernels][gemm]") {
  GemmOperands in = two_by_two_operands();
  CHECK_THROWS_AS(gemm_reference(two_by_two(GemmEpilogue::kBias), in), std::invalid_argument);  // no bias
  in.bias = {1, 2};
  CHECK_THROWS_AS(gemm_reference(two_by_two(GemmEpilogue::kNone), in), std::invalid_argument);  // a bias it does not use
  in.bias.clear();
  in.relu_mask.assign(16, 0);  // 16 bytes: one column's worth, two needed
  CHECK_THROWS_AS(gemm_reference(two_by_two(GemmEpilogue::kDRelu), in), std::invalid_argument);
  in.relu_mask.clear();
  in.gelu_input.assign(4, 0);  // m x n, not ld x n
  CHECK_THROWS_AS(gemm_reference(two_by_two(GemmEpilogue::kDGelu), in), std::invalid_argument);
  in.gelu_input.clear();
  in.a.pop_back();
  CHECK_THROWS_AS(gemm_reference(two_by_two(GemmEpilogue::kNone), in), std::invalid_argument);
  CHECK_THROWS_AS(gemm_reference(GemmShape{0, 2, 2, 1, false, false, GemmEpilogue::kNone}, in), std::invalid_argument);
}
