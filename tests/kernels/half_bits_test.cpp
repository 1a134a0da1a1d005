#include "kernels/half_bits.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>

using namespace dpro::kernels;

TEST_CASE("fp16: known values round to nearest even", "[kernels][half]") {
  CHECK(float_to_half(1.0f) == 0x3c00);
  CHECK(float_to_half(-2.0f) == 0xc000);
  CHECK(float_to_half(65504.0f) == 0x7bff);
  CHECK(float_to_half(65520.0f) == 0x7c00);                 // rounds past the largest finite: inf
  CHECK(float_to_half(1.0f + 0x1p-11f) == 0x3c00);          // a tie: to the even 1.0
  CHECK(float_to_half(1.0f + 3 * 0x1p-11f) == 0x3c02);      // a tie: to the even 1 + 2^-9
  CHECK(float_to_half(0x1p-24f) == 0x0001);                 // the smallest subnormal
  CHECK(float_to_half(0x1p-25f) == 0x0000);                 // half of it: a tie, to even zero
  CHECK(float_to_half(0x1.8p-25f) == 0x0001);
  CHECK(float_to_half(0x1p-14f) == 0x0400);                 // the smallest normal
  CHECK(float_to_half(std::nanf("")) >= 0x7c01);
  CHECK(half_to_float(0x3555) == Approx(0.333251953125f));
  CHECK(half_to_float(0x0001) == 0x1p-24f);
  CHECK(std::isinf(half_to_float(0xfc00)));
}

TEST_CASE("fp16: every finite pattern survives float and back", "[kernels][half]") {
  int mismatches = 0;
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue;  // NaN payloads are not kept
    if (float_to_half(half_to_float(static_cast<std::uint16_t>(h))) != h) ++mismatches;
  }
  CHECK(mismatches == 0);
}

TEST_CASE("bf16: known values round to nearest even", "[kernels][half]") {
  CHECK(float_to_bf16(1.0f) == 0x3f80);
  CHECK(float_to_bf16(1.0f + 0x1p-8f) == 0x3f80);       // a tie: to even
  CHECK(float_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3f82);   // a tie: to even
  CHECK(float_to_bf16(1.0f + 0x1.8p-8f) == 0x3f81);     // above the tie
  CHECK(bf16_to_float(0xc040) == -3.0f);
  std::uint16_t nan = float_to_bf16(std::nanf(""));
  CHECK(std::isnan(bf16_to_float(nan)));
  int mismatches = 0;
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7f80) == 0x7f80 && (h & 0x7f)) continue;
    if (float_to_bf16(bf16_to_float(static_cast<std::uint16_t>(h))) != h) ++mismatches;
  }
  CHECK(mismatches == 0);
}
