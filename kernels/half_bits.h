#pragma once
// fp16 (IEEE binary16) and bf16 conversions on bit patterns, round to nearest even, as the GPU's
// cvt.rn instructions do. Plain C++ (no CUDA headers): the CPU references use them, and the
// host-compiled form of a generated elementwise chain loads and stores through them.
#include <cstdint>
#include <cstring>

#include "kernels/hd.h"

namespace dpro::kernels {

DPRO_HD std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

DPRO_HD float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

DPRO_HD float bf16_to_float(std::uint16_t h) { return bits_float(static_cast<std::uint32_t>(h) << 16); }

DPRO_HD std::uint16_t float_to_bf16(float f) {
  std::uint32_t u = float_bits(f);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0) {
    return static_cast<std::uint16_t>((u >> 16) | 0x0040u);  // NaN stays a (quiet) NaN
  }
  std::uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>((u + rounding) >> 16);
}

DPRO_HD float half_to_float(std::uint16_t h) {
  std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exponent = (h >> 10) & 0x1fu;
  std::uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return bits_float(sign | 0x7f800000u | (mantissa << 13));  // inf, NaN
  if (exponent == 0) {
    // Subnormal or zero: mantissa * 2^-24, exact in fp32.
    float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }
  return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

DPRO_HD std::uint16_t float_to_half(float f) {
  std::uint32_t u = float_bits(f);
  std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  std::uint32_t abs = u & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN
    return static_cast<std::uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds past 65504
  if (abs < 0x38800000u) {
    // Below the smallest normal (2^-14): a subnormal, rounded to a multiple of 2^-24.
    if (abs < 0x33000000u) return sign;  // below half of the smallest subnormal: zero
    std::uint32_t exponent = abs >> 23;
    std::uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    std::uint32_t shift = 126u - exponent;  // 14 .. 24 : value = mantissa * 2^(exponent-150)
    std::uint32_t result = mantissa >> shift;
    std::uint32_t rest = mantissa & ((1u << shift) - 1u);
    std::uint32_t half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (result & 1u))) ++result;
    return static_cast<std::uint16_t>(sign | result);
  }
  std::uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
  return static_cast<std::uint16_t>(sign | ((rounded - (112u << 23)) >> 13));
}

}  // namespace dpro::kernels
