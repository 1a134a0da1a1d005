// Top-k on |c| with CUB's (stable) radix sort: indices by |value| descending, ties by lower
// index, as top_k_indices() in compression_reference.cpp.
#include <cub/device/device_radix_sort.cuh>

#include "kernels/cuda_kernels.h"
#include "kernels/launch_grid.cuh"

namespace dpro::kernels::cuda {
namespace {

__global__ void abs_keys_kernel(const float* c, std::int64_t n, float* keys, std::uint32_t* indices) {
  DPRO_GRID_STRIDE(i, n) {
    keys[i] = fabsf(c[i]);
    indices[i] = static_cast<std::uint32_t>(i);
  }
}

__global__ void topk_gather_kernel(const float* c, const std::uint32_t* sorted, std::int64_t k, std::uint32_t* idx_out,
                                   float* values_out, float* residual) {
  DPRO_GRID_STRIDE(j, k) {
    std::uint32_t i = sorted[j];
    idx_out[j] = i;
    values_out[j] = c[i];
    if (residual) residual[i] = 0.0f;
  }
}

__global__ void topk_scatter_kernel(const std::uint32_t* idx, const float* values, std::int64_t k, float* out) {
  DPRO_GRID_STRIDE(j, k) out[idx[j]] = values[j];
}

struct Scratch {
  float* keys_in;
  float* keys_out;
  std::uint32_t* idx_in;
  std::uint32_t* idx_out;
  void* sort_temp;
  std::size_t sort_bytes;
};

std::size_t align256(std::size_t b) { return (b + 255) / 256 * 256; }

std::size_t sort_temp_bytes(std::int64_t n) {
  std::size_t bytes = 0;
  cub::DeviceRadixSort::SortPairsDescending(nullptr, bytes, static_cast<const float*>(nullptr), static_cast<float*>(nullptr),
                                            static_cast<const std::uint32_t*>(nullptr),
                                            static_cast<std::uint32_t*>(nullptr), static_cast<int>(n));
  return bytes;
}

Scratch carve(void* base, std::int64_t n) {
  auto* p = static_cast<char*>(base);
  std::size_t array = align256(static_cast<std::size_t>(n) * 4);
  return Scratch{reinterpret_cast<float*>(p), reinterpret_cast<float*>(p + array),
                 reinterpret_cast<std::uint32_t*>(p + 2 * array), reinterpret_cast<std::uint32_t*>(p + 3 * array),
                 p + 4 * array, sort_temp_bytes(n)};
}

}  // namespace

std::size_t topk_scratch_bytes(std::int64_t n) {
  return 4 * align256(static_cast<std::size_t>(n) * 4) + align256(sort_temp_bytes(n));
}

cudaError_t launch_topk_compress(const float* c, std::int64_t n, std::int64_t k, void* payload, void* scratch,
                                 float* residual, cudaStream_t stream) {
  if (n <= 0 || k <= 0) return cudaSuccess;
  if (n > 0x7fffffff) return cudaErrorInvalidValue;
  Scratch s = carve(scratch, n);
  abs_keys_kernel<<<grid_for(n), kThreads, 0, stream>>>(c, n, s.keys_in, s.idx_in);
  std::size_t bytes = s.sort_bytes;
  cudaError_t e = cub::DeviceRadixSort::SortPairsDescending(s.sort_temp, bytes, s.keys_in, s.keys_out, s.idx_in,
                                                            s.idx_out, static_cast<int>(n), 0, 32, stream);
  if (e != cudaSuccess) return e;
  auto* idx_out = static_cast<std::uint32_t*>(payload);
  auto* values_out = reinterpret_cast<float*>(idx_out + k);
  topk_gather_kernel<<<grid_for(k), kThreads, 0, stream>>>(c, s.idx_out, k, idx_out, values_out, residual);
  return cudaGetLastError();
}

cudaError_t launch_topk_decompress(const void* payload, std::int64_t n, std::int64_t k, float* out,
                                   cudaStream_t stream) {
  cudaError_t e = cudaMemsetAsync(out, 0, static_cast<std::size_t>(n) * sizeof(float), stream);
  if (e != cudaSuccess || k <= 0) return e;
  const auto* idx = static_cast<const std::uint32_t*>(payload);
  topk_scatter_kernel<<<grid_for(k), kThreads, 0, stream>>>(idx, reinterpret_cast<const float*>(idx + k), k, out);
  return cudaGetLastError();
}

}  // namespace dpro::kernels::cuda
