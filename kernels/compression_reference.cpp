#include "kernels/compression_reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>

#include "kernels/half_bits.h"

namespace dpro::kernels {
namespace {

template <typename T>
void append(std::vector<std::uint8_t>& out, const T* values, std::size_t count) {
  std::size_t at = out.size();
  out.resize(at + count * sizeof(T));
  if (count) std::memcpy(out.data() + at, values, count * sizeof(T));
}

template <typename T>
std::vector<T> read(const std::vector<std::uint8_t>& in, std::size_t byte_offset, std::size_t count) {
  if (byte_offset + count * sizeof(T) > in.size()) throw std::invalid_argument("compressed payload is too short");
  std::vector<T> out(count);
  if (count) std::memcpy(out.data(), in.data() + byte_offset, count * sizeof(T));
  return out;
}

// P = M Q (rows x rank), or Q = M^T P (cols x rank), column-major.
std::vector<float> multiply(const std::vector<float>& m, const std::vector<float>& x, const PowerSgdShape& s,
                            bool transpose_m) {
  std::int64_t out_rows = transpose_m ? s.cols : s.rows, inner = transpose_m ? s.rows : s.cols;
  std::vector<float> out(static_cast<std::size_t>(out_rows * s.rank), 0.0f);
  for (std::int64_t c = 0; c < s.rank; ++c) {
    for (std::int64_t o = 0; o < out_rows; ++o) {
      double sum = 0;
      for (std::int64_t t = 0; t < inner; ++t) {
        float mv = transpose_m ? m[t + o * s.rows] : m[o + t * s.rows];
        sum += static_cast<double>(mv) * x[t + c * inner];
      }
      out[o + c * out_rows] = static_cast<float>(sum);
    }
  }
  return out;
}

std::vector<float> powersgd_product(const std::vector<float>& p, const std::vector<float>& q, const PowerSgdShape& s) {
  std::vector<float> m(static_cast<std::size_t>(s.rows * s.cols), 0.0f);
  for (std::int64_t j = 0; j < s.cols; ++j)
    for (std::int64_t i = 0; i < s.rows; ++i) {
      double sum = 0;
      for (std::int64_t c = 0; c < s.rank; ++c) sum += static_cast<double>(p[i + c * s.rows]) * q[j + c * s.cols];
      m[i + j * s.rows] = static_cast<float>(sum);
    }
  return m;
}

std::vector<std::uint8_t> compress_plain(const CompressionParams& p, const std::vector<float>& c) {
  std::int64_t n = static_cast<std::int64_t>(c.size());
  std::vector<std::uint8_t> out;
  switch (p.kind) {
    case PayloadKind::kTopK: {
      std::vector<std::uint32_t> idx = top_k_indices(c, compressed_k(n, p.param));
      std::vector<float> values;
      for (std::uint32_t i : idx) values.push_back(c[i]);
      append(out, idx.data(), idx.size());
      append(out, values.data(), values.size());
      break;
    }
    case PayloadKind::kRandomK: {
      std::int64_t k = compressed_k(n, p.param);
      std::vector<float> values(static_cast<std::size_t>(k));
      for (std::int64_t j = 0; j < k; ++j) values[j] = c[random_k_index(p.seed, j, n, k)];
      append(out, values.data(), values.size());
      break;
    }
    case PayloadKind::kSignPack: {
      double sum = 0;
      for (float v : c) sum += std::fabs(v);
      float scale = n ? static_cast<float>(sum / static_cast<double>(n)) : 0.0f;
      std::vector<std::uint32_t> words(static_cast<std::size_t>(sign_words(n)), 0u);
      for (std::int64_t i = 0; i < n; ++i)
        if (c[i] >= 0) words[i / 32] |= 1u << (i % 32);
      append(out, &scale, 1);
      append(out, words.data(), words.size());
      break;
    }
    case PayloadKind::kPowerSgd: {
      PowerSgdShape s = powersgd_shape(n, p.rows, p.param);
      std::vector<float> q(static_cast<std::size_t>(s.cols * s.rank));
      for (std::size_t e = 0; e < q.size(); ++e) q[e] = powersgd_q0(p.seed, static_cast<std::int64_t>(e));
      std::vector<float> pm = multiply(c, q, s, false);
      orthogonalize_columns(pm, s.rows, s.rank);
      q = multiply(c, pm, s, true);
      append(out, pm.data(), pm.size());
      append(out, q.data(), q.size());
      break;
    }
    case PayloadKind::kHalf: {
      std::vector<std::uint16_t> h = cast_to_half(c, p.half);
      append(out, h.data(), h.size());
      break;
    }
  }
  return out;
}

}  // namespace

std::vector<std::uint32_t> top_k_indices(const std::vector<float>& c, std::int64_t k) {
  std::vector<std::uint32_t> idx(c.size());
  std::iota(idx.begin(), idx.end(), 0u);
  std::stable_sort(idx.begin(), idx.end(), [&](std::uint32_t a, std::uint32_t b) { return std::fabs(c[a]) > std::fabs(c[b]); });
  idx.resize(static_cast<std::size_t>(std::clamp<std::int64_t>(k, 0, static_cast<std::int64_t>(c.size()))));
  return idx;
}

void orthogonalize_columns(std::vector<float>& a, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t j = 0; j < cols; ++j) {
    float* col = a.data() + j * rows;
    for (std::int64_t prev = 0; prev < j; ++prev) {
      const float* other = a.data() + prev * rows;
      double dot = 0;
      for (std::int64_t i = 0; i < rows; ++i) dot += static_cast<double>(col[i]) * other[i];
      for (std::int64_t i = 0; i < rows; ++i) col[i] -= static_cast<float>(dot) * other[i];
    }
    double norm = 0;
    for (std::int64_t i = 0; i < rows; ++i) norm += static_cast<double>(col[i]) * col[i];
    float divisor = static_cast<float>(std::sqrt(norm)) + 1e-8f;
    for (std::int64_t i = 0; i < rows; ++i) col[i] /= divisor;
  }
}

std::vector<std::uint16_t> cast_to_half(const std::vector<float>& v, HalfKind kind) {
  std::vector<std::uint16_t> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = kind == HalfKind::kF16 ? float_to_half(v[i]) : float_to_bf16(v[i]);
  return out;
}

std::vector<float> cast_from_half(const std::vector<std::uint16_t>& v, HalfKind kind) {
  std::vector<float> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = kind == HalfKind::kF16 ? half_to_float(v[i]) : bf16_to_float(v[i]);
  return out;
}

std::vector<std::uint8_t> compress_reference(const CompressionParams& p, const std::vector<float>& gradient,
                                             std::vector<float>& residual) {
  if (!residual.empty() && residual.size() != gradient.size()) {
    throw std::invalid_argument("error-feedback residual and gradient differ in length");
  }
  std::vector<float> c = gradient;
  for (std::size_t i = 0; i < residual.size(); ++i) c[i] += residual[i];
  std::vector<std::uint8_t> payload = compress_plain(p, c);
  if (!residual.empty()) {
    std::vector<float> sent = decompress_reference(p, payload, static_cast<std::int64_t>(c.size()));
    for (std::size_t i = 0; i < c.size(); ++i) residual[i] = c[i] - sent[i];
  }
  return payload;
}

std::vector<float> decompress_reference(const CompressionParams& p, const std::vector<std::uint8_t>& payload,
                                        std::int64_t n) {
  std::vector<float> out(static_cast<std::size_t>(std::max<std::int64_t>(n, 0)), 0.0f);
  switch (p.kind) {
    case PayloadKind::kTopK: {
      std::size_t k = static_cast<std::size_t>(compressed_k(n, p.param));
      std::vector<std::uint32_t> idx = read<std::uint32_t>(payload, 0, k);
      std::vector<float> values = read<float>(payload, 4 * k, k);
      for (std::size_t j = 0; j < k; ++j) out.at(idx[j]) = values[j];
      break;
    }
    case PayloadKind::kRandomK: {
      std::int64_t k = compressed_k(n, p.param);
      std::vector<float> values = read<float>(payload, 0, static_cast<std::size_t>(k));
      for (std::int64_t j = 0; j < k; ++j) out[random_k_index(p.seed, j, n, k)] = values[j];
      break;
    }
    case PayloadKind::kSignPack: {
      float scale = read<float>(payload, 0, 1)[0];
      std::vector<std::uint32_t> words = read<std::uint32_t>(payload, 4, static_cast<std::size_t>(sign_words(n)));
      for (std::int64_t i = 0; i < n; ++i) out[i] = (words[i / 32] >> (i % 32)) & 1u ? scale : -scale;
      break;
    }
    case PayloadKind::kPowerSgd: {
      PowerSgdShape s = powersgd_shape(n, p.rows, p.param);
      std::vector<float> pm = read<float>(payload, 0, static_cast<std::size_t>(s.rows * s.rank));
      std::vector<float> q = read<float>(payload, 4 * pm.size(), static_cast<std::size_t>(s.cols * s.rank));
      out = powersgd_product(pm, q, s);
      break;
    }
    case PayloadKind::kHalf:
      out = cast_from_half(read<std::uint16_t>(payload, 0, static_cast<std::size_t>(n)), p.half);
      break;
  }
  return out;
}

}  // namespace dpro::kernels
