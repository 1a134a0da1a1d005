#pragma once
// CPU references of the compression kernels (layouts in compression_layout.h). They define what
// the GPU kernels must produce: tests here check the host-side pieces through them (index
// selection, bit packing, k, PowerSGD shapes), and the GPU validation (issue 33) compares the
// kernels' output with them.
//
// Error feedback: with a residual r (same length as g), compression works on c = g + r and leaves
// r = c - decompress(payload); without one (empty vector) it works on g.
#include <cstdint>
#include <vector>

#include "kernels/compression_layout.h"

namespace dpro::kernels {

enum class HalfKind : std::uint8_t { kF16, kBF16 };

struct CompressionParams {
  PayloadKind kind = PayloadKind::kTopK;
  double param = 0;         // density (top-k, random-k) or rank (PowerSGD)
  std::int64_t rows = 0;    // PowerSGD
  std::uint64_t seed = 0;   // random-k, PowerSGD's starting Q
  HalfKind half = HalfKind::kF16;  // kHalf
};

// The payload bytes of `gradient` (updating `residual` when it is not empty).
std::vector<std::uint8_t> compress_reference(const CompressionParams& p, const std::vector<float>& gradient,
                                             std::vector<float>& residual);
// The fp32 gradient of `elements` values a payload stands for.
std::vector<float> decompress_reference(const CompressionParams& p, const std::vector<std::uint8_t>& payload,
                                        std::int64_t elements);

// Top-k's selection: indices of the k largest |c|, ties by lower index, in that order.
std::vector<std::uint32_t> top_k_indices(const std::vector<float>& c, std::int64_t k);

// Modified Gram-Schmidt on the `cols` columns of the column-major rows x cols matrix `a`; each
// column is divided by (its norm + 1e-8), as PowerSGD's reference implementation does.
void orthogonalize_columns(std::vector<float>& a, std::int64_t rows, std::int64_t cols);

// Casts between fp32 and fp16/bf16 bit patterns (round to nearest even).
std::vector<std::uint16_t> cast_to_half(const std::vector<float>& v, HalfKind kind);
std::vector<float> cast_from_half(const std::vector<std::uint16_t>& v, HalfKind kind);

}  // namespace dpro::kernels
