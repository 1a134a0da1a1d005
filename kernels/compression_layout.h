#pragma once
// The wire layouts of the compression kernels and the pieces of them that the CPU references
// and the CUDA kernels share (k, index draws, bit positions). One definition of each, so that a
// payload written by the GPU can be checked against the CPU reference byte for byte where the
// arithmetic allows.
//
// Payloads (`elements` = n fp32 gradient values, all little-endian):
//   top-k     : k uint32 indices (by |value| descending, ties by lower index), then k fp32 values
//   random-k  : k fp32 values at random_k_index(seed, j, n, k), j = 0..k-1 (indices not sent:
//               the receiver draws them from the seed)
//   sign pack : one fp32 scale (mean |value|), then ceil(n / 32) uint32 words; bit (i % 32) of
//               word (i / 32) is 1 when value i >= 0 (decompressed: +scale, else -scale)
//   PowerSGD  : P (rows x rank, column-major fp32), then Q (cols x rank, column-major fp32);
//               the gradient is the column-major rows x cols matrix M ~ P Q^T
//   cast      : n fp16 or bf16 values
#include <cstdint>

#include "kernels/hd.h"

namespace dpro::kernels {

// k of a top-k / random-k density: ceil(density * n), at least 1 and at most n (0 when n is 0).
std::int64_t compressed_k(std::int64_t elements, double density);

// PowerSGD's rank, held to min(rows, cols); cols = elements / rows.
struct PowerSgdShape {
  std::int64_t rows = 0, cols = 0, rank = 0;
};
// Throws std::invalid_argument unless rows > 0 divides elements and rank >= 1.
PowerSgdShape powersgd_shape(std::int64_t elements, std::int64_t rows, double rank);

enum class PayloadKind : std::uint8_t { kTopK, kRandomK, kSignPack, kPowerSgd, kHalf };
// Bytes of the payload for `elements` values; `param` is the density or the rank, `rows` the
// PowerSGD matrix rows.
std::uint64_t payload_bytes(PayloadKind kind, std::int64_t elements, double param, std::int64_t rows);

// SplitMix64 finaliser of (seed, i): the only source of "randomness" the kernels use, so a
// draw is reproducible and needs no random data on the device.
DPRO_HD std::uint64_t mix_hash(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ull * (i + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Random-k's j-th index: one index drawn (by hash) from each of k equal strata of [0, n), so the
// k indices are distinct and ascending, and index j is computable on its own in parallel.
DPRO_HD std::int64_t random_k_index(std::uint64_t seed, std::int64_t j, std::int64_t n, std::int64_t k) {
  std::int64_t begin = static_cast<std::int64_t>((static_cast<unsigned __int128>(j) * n) / k);
  std::int64_t end = static_cast<std::int64_t>((static_cast<unsigned __int128>(j + 1) * n) / k);
  return begin + static_cast<std::int64_t>(mix_hash(seed, static_cast<std::uint64_t>(j)) %
                                           static_cast<std::uint64_t>(end - begin));
}

// PowerSGD's starting Q (cols x rank), entry e: uniform in [-1, 1) from the hash.
DPRO_HD float powersgd_q0(std::uint64_t seed, std::int64_t e) {
  return static_cast<float>(mix_hash(seed ^ 0x5157u, static_cast<std::uint64_t>(e)) >> 40) * (1.0f / 8388608.0f) - 1.0f;
}

DPRO_HD std::int64_t sign_words(std::int64_t elements) { return (elements + 31) / 32; }

}  // namespace dpro::kernels
