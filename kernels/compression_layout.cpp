#include "kernels/compression_layout.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace dpro::kernels {

std::int64_t compressed_k(std::int64_t elements, double density) {
  if (elements <= 0) return 0;
  if (!(density > 0)) throw std::invalid_argument("compression density must be > 0 (got " + std::to_string(density) + ")");
  double k = std::ceil(density * static_cast<double>(elements));
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(std::min(k, 9.0e18)), 1, elements);
}

PowerSgdShape powersgd_shape(std::int64_t elements, std::int64_t rows, double rank) {
  if (rows <= 0 || elements <= 0 || elements % rows != 0) {
    throw std::invalid_argument("PowerSGD: rows (" + std::to_string(rows) + ") must be > 0 and divide the " +
                                std::to_string(elements) + " elements");
  }
  if (!(rank >= 1)) throw std::invalid_argument("PowerSGD: rank must be >= 1 (got " + std::to_string(rank) + ")");
  PowerSgdShape s;
  s.rows = rows;
  s.cols = elements / rows;
  s.rank = std::min<std::int64_t>(static_cast<std::int64_t>(std::min(rank, 1.0e9)), std::min(s.rows, s.cols));
  return s;
}

std::uint64_t payload_bytes(PayloadKind kind, std::int64_t elements, double param, std::int64_t rows) {
  switch (kind) {
    case PayloadKind::kTopK: return 8ull * static_cast<std::uint64_t>(compressed_k(elements, param));
    case PayloadKind::kRandomK: return 4ull * static_cast<std::uint64_t>(compressed_k(elements, param));
    case PayloadKind::kSignPack: return 4ull + 4ull * static_cast<std::uint64_t>(sign_words(elements));
    case PayloadKind::kPowerSgd: {
      PowerSgdShape s = powersgd_shape(elements, rows, param);
      return 4ull * static_cast<std::uint64_t>((s.rows + s.cols) * s.rank);
    }
    case PayloadKind::kHalf: return 2ull * static_cast<std::uint64_t>(elements);
  }
  return 0;
}

}  // namespace dpro::kernels
