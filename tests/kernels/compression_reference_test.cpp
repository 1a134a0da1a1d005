#include "kernels/compression_reference.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <set>
#include <stdexcept>

using namespace dpro::kernels;

namespace {

std::vector<float> gradient(std::size_t n) {
  std::vector<float> g(n);
  for (std::size_t i = 0; i < n; ++i) g[i] = static_cast<float>(std::sin(1.3 * static_cast<double>(i)) * (1 + i % 7));
  return g;
}

CompressionParams params(PayloadKind kind, double param, std::int64_t rows = 0) {
  CompressionParams p;
  p.kind = kind;
  p.param = param;
  p.rows = rows;
  p.seed = 42;
  return p;
}

}  // namespace

TEST_CASE("compression: k is ceil(density * n), between 1 and n", "[kernels][compression]") {
  CHECK(compressed_k(1000, 0.01) == 10);
  CHECK(compressed_k(1001, 0.01) == 11);
  CHECK(compressed_k(10, 1e-9) == 1);
  CHECK(compressed_k(10, 5.0) == 10);
  CHECK(compressed_k(0, 0.1) == 0);
  CHECK_THROWS_AS(compressed_k(10, 0.0), std::invalid_argument);
}

TEST_CASE("compression: payload sizes match what the reference writes", "[kernels][compression]") {
  std::vector<float> g = gradient(1000), none;
  for (auto [kind, param, rows] : {std::tuple{PayloadKind::kTopK, 0.01, 0}, {PayloadKind::kRandomK, 0.05, 0},
                                   {PayloadKind::kSignPack, 0.0, 0}, {PayloadKind::kPowerSgd, 4.0, 40},
                                   {PayloadKind::kHalf, 0.0, 0}}) {
    CompressionParams p = params(kind, param, rows);
    CHECK(compress_reference(p, g, none).size() == payload_bytes(kind, 1000, param, rows));
  }
  CHECK(payload_bytes(PayloadKind::kTopK, 1000, 0.01, 0) == 80);
  CHECK(payload_bytes(PayloadKind::kSignPack, 1000, 0, 0) == 4 + 4 * 32);
  CHECK(payload_bytes(PayloadKind::kPowerSgd, 1000, 4, 40) == 4 * (40 + 25) * 4);
}

TEST_CASE("top-k: the largest magnitudes, ties by lower index, and exact error feedback", "[kernels][compression]") {
  std::vector<float> c{0.5f, -3.0f, 2.0f, 3.0f, -2.0f, 0.1f};
  CHECK(top_k_indices(c, 3) == std::vector<std::uint32_t>{1, 3, 2});
  std::vector<float> residual{0, 0, 0, 0, 0, 1.0f};
  CompressionParams p = params(PayloadKind::kTopK, 0.5);  // k = 3 of 6
  auto payload = compress_reference(p, c, residual);
  std::vector<std::uint32_t> idx(3);
  std::vector<float> values(3);
  std::memcpy(idx.data(), payload.data(), 12);
  std::memcpy(values.data(), payload.data() + 12, 12);
  CHECK(idx == std::vector<std::uint32_t>{1, 3, 2});
  CHECK(values == std::vector<float>{-3.0f, 3.0f, 2.0f});
  // What was not sent stays in the residual; c[5] + old residual = 1.1.
  CHECK(residual == std::vector<float>{0.5f, 0, 0, 0, -2.0f, 1.1f});
}

TEST_CASE("random-k: k distinct ascending indices, one per stratum, drawn from the seed", "[kernels][compression]") {
  const std::int64_t n = 1000, k = compressed_k(n, 0.03);
  std::vector<std::int64_t> a, b;
  for (std::int64_t j = 0; j < k; ++j) {
    a.push_back(random_k_index(7, j, n, k));
    b.push_back(random_k_index(8, j, n, k));
    CHECK(a.back() >= j * n / k);
    CHECK(a.back() < (j + 1) * n / k);
  }
  CHECK(std::set<std::int64_t>(a.begin(), a.end()).size() == static_cast<std::size_t>(k));
  CHECK(a != b);
  std::vector<float> g = gradient(n), residual(n, 0.0f);
  auto payload = compress_reference(params(PayloadKind::kRandomK, 0.03), g, residual);
  std::vector<float> back = decompress_reference(params(PayloadKind::kRandomK, 0.03), payload, n);
  for (std::int64_t i = 0; i < n; ++i) CHECK(back[i] + residual[i] == g[i]);  // exact split
}

TEST_CASE("sign packing: bit i%32 of word i/32 is the sign, the scale is mean |c|", "[kernels][compression]") {
  std::vector<float> c(40, 1.0f), none;
  c[0] = -3.0f;
  c[33] = -1.0f;
  auto payload = compress_reference(params(PayloadKind::kSignPack, 0), c, none);
  REQUIRE(payload.size() == 12);
  float scale;
  std::uint32_t w0, w1;
  std::memcpy(&scale, payload.data(), 4);
  std::memcpy(&w0, payload.data() + 4, 4);
  std::memcpy(&w1, payload.data() + 8, 4);
  CHECK(scale == Approx(42.0f / 40));
  CHECK(w0 == 0xfffffffeu);
  CHECK(w1 == 0xfdu);  // elements 32..39: all but 33 non-negative
  std::vector<float> back = decompress_reference(params(PayloadKind::kSignPack, 0), payload, 40);
  CHECK(back[0] == -scale);
  CHECK(back[39] == scale);
}

TEST_CASE("PowerSGD: shapes, orthonormal P, and a rank-1 gradient recovered", "[kernels][compression]") {
  PowerSgdShape s = powersgd_shape(600, 20, 4);
  CHECK((s.rows == 20 && s.cols == 30 && s.rank == 4));
  CHECK(powersgd_shape(600, 20, 100).rank == 20);
  CHECK_THROWS_AS(powersgd_shape(600, 7, 4), std::invalid_argument);

  std::vector<float> m(600);  // u v^T, column-major 20 x 30
  for (int j = 0; j < 30; ++j)
    for (int i = 0; i < 20; ++i) m[i + 20 * j] = static_cast<float>((i + 1) * std::cos(0.3 * j));
  std::vector<float> residual(600, 0.0f);
  CompressionParams p = params(PayloadKind::kPowerSgd, 1, 20);
  auto payload = compress_reference(p, m, residual);
  for (float r : residual) CHECK(std::fabs(r) < 1e-3f);

  std::vector<float> g = gradient(600), none;
  payload = compress_reference(params(PayloadKind::kPowerSgd, 3, 20), g, none);
  std::vector<float> pm(60);
  std::memcpy(pm.data(), payload.data(), 240);
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b) {
      double dot = 0;
      for (int i = 0; i < 20; ++i) dot += pm[i + 20 * a] * pm[i + 20 * b];
      CHECK(dot == Approx(a == b ? 1.0 : 0.0).margin(1e-5));
    }
}

TEST_CASE("cast compression: the residual keeps the rounding error", "[kernels][compression]") {
  std::vector<float> g{1.0f + 0x1p-9f, -3.0f, 1e-3f}, residual(3, 0.0f);
  CompressionParams p = params(PayloadKind::kHalf, 0);
  p.half = HalfKind::kBF16;
  auto payload = compress_reference(p, g, residual);
  CHECK(residual[0] == 0x1p-9f);
  CHECK(residual[1] == 0.0f);
  std::vector<float> back = decompress_reference(p, payload, 3);
  CHECK(back[2] + residual[2] == 1e-3f);
}
