// Casts, error feedback, random-k, sign packing and PowerSGD's orthogonalisation (top-k, which
// needs CUB's radix sort, is in topk.cu). Layouts: compression_layout.h.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/compression_layout.h"
#include "kernels/cuda_kernels.h"
#include "kernels/launch_grid.cuh"

namespace dpro::kernels::cuda {
namespace {

using executor::DType;

__device__ __forceinline__ float load_as_float(const void* p, DType t, std::int64_t i) {
  if (t == DType::kF32) return static_cast<const float*>(p)[i];
  if (t == DType::kF16) return __half2float(static_cast<const __half*>(p)[i]);
  return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
}

__device__ __forceinline__ void store_from_float(void* p, DType t, std::int64_t i, float v) {
  if (t == DType::kF32) static_cast<float*>(p)[i] = v;
  else if (t == DType::kF16) static_cast<__half*>(p)[i] = __float2half_rn(v);
  else static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
}

__global__ void cast_kernel(DType from, DType to, const void* src, void* dst, std::int64_t n) {
  DPRO_GRID_STRIDE(i, n) store_from_float(dst, to, i, load_as_float(src, from, i));
}

__global__ void add_into_kernel(float* acc, const float* add, std::int64_t n) {
  DPRO_GRID_STRIDE(i, n) acc[i] += add[i];
}

__global__ void randomk_gather_kernel(const float* c, std::int64_t n, std::int64_t k, std::uint64_t seed,
                                      float* payload, float* residual) {
  DPRO_GRID_STRIDE(j, k) {
    std::int64_t i = random_k_index(seed, j, n, k);
    payload[j] = c[i];
    if (residual) residual[i] = 0.0f;  // sent exactly: nothing left over
  }
}

__global__ void randomk_scatter_kernel(const float* payload, std::int64_t n, std::int64_t k, std::uint64_t seed,
                                       float* out) {
  DPRO_GRID_STRIDE(j, k) out[random_k_index(seed, j, n, k)] = payload[j];
}

__global__ void abs_sum_kernel(const float* c, std::int64_t n, float* sum) {
  __shared__ float partial[kThreads];
  float local = 0.0f;
  DPRO_GRID_STRIDE(i, n) local += fabsf(c[i]);
  partial[threadIdx.x] = local;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(sum, partial[0]);
}

// One thread per 32-bit word; the residual keeps what +-scale missed.
__global__ void sign_pack_kernel(const float* c, std::int64_t n, const float* sum, float* payload, float* residual) {
  float scale = n > 0 ? *sum / static_cast<float>(n) : 0.0f;
  std::uint32_t* words = reinterpret_cast<std::uint32_t*>(payload + 1);
  std::int64_t word_count = sign_words(n);
  DPRO_GRID_STRIDE(w, word_count) {
    std::uint32_t bits = 0;
    for (int b = 0; b < 32 && w * 32 + b < n; ++b) {
      float v = c[w * 32 + b];
      if (v >= 0) bits |= 1u << b;
      if (residual) residual[w * 32 + b] = v - (v >= 0 ? scale : -scale);
    }
    words[w] = bits;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) payload[0] = scale;
}

__global__ void sign_unpack_kernel(const float* payload, std::int64_t n, float* out) {
  float scale = payload[0];
  const std::uint32_t* words = reinterpret_cast<const std::uint32_t*>(payload + 1);
  DPRO_GRID_STRIDE(i, n) out[i] = (words[i / 32] >> (i % 32)) & 1u ? scale : -scale;
}

__global__ void half_residual_kernel(const void* payload, DType half, std::int64_t n, float* residual) {
  DPRO_GRID_STRIDE(i, n) residual[i] -= load_as_float(payload, half, i);
}

__global__ void q0_kernel(float* q, std::int64_t count, std::uint64_t seed) {
  DPRO_GRID_STRIDE(e, count) q[e] = powersgd_q0(seed, e);
}

// Sum of x over the block, in double (as the CPU reference accumulates); all threads get it.
__device__ double block_sum(double x, double* shared) {
  shared[threadIdx.x] = x;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) shared[threadIdx.x] += shared[threadIdx.x + half];
    __syncthreads();
  }
  double total = shared[0];
  __syncthreads();
  return total;
}

__global__ void orthogonalize_kernel(float* a, std::int64_t rows, std::int64_t cols) {
  __shared__ double shared[1024];
  for (std::int64_t j = 0; j < cols; ++j) {
    float* col = a + j * rows;
    for (std::int64_t prev = 0; prev < j; ++prev) {
      const float* other = a + prev * rows;
      double dot = 0;
      for (std::int64_t i = threadIdx.x; i < rows; i += blockDim.x) dot += static_cast<double>(col[i]) * other[i];
      float d = static_cast<float>(block_sum(dot, shared));
      for (std::int64_t i = threadIdx.x; i < rows; i += blockDim.x) col[i] -= d * other[i];
      __syncthreads();
    }
    double norm = 0;
    for (std::int64_t i = threadIdx.x; i < rows; i += blockDim.x) norm += static_cast<double>(col[i]) * col[i];
    float divisor = static_cast<float>(sqrt(block_sum(norm, shared))) + 1e-8f;
    for (std::int64_t i = threadIdx.x; i < rows; i += blockDim.x) col[i] /= divisor;
    __syncthreads();
  }
}

bool castable(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

}  // namespace

cudaError_t launch_cast(DType from, DType to, const void* src, void* dst, std::int64_t n, cudaStream_t stream) {
  if (!castable(from) || !castable(to)) return cudaErrorInvalidValue;
  if (n > 0) cast_kernel<<<grid_for(n), kThreads, 0, stream>>>(from, to, src, dst, n);
  return cudaGetLastError();
}

cudaError_t launch_add_into(float* acc, const float* add, std::int64_t n, cudaStream_t stream) {
  if (n > 0) add_into_kernel<<<grid_for(n), kThreads, 0, stream>>>(acc, add, n);
  return cudaGetLastError();
}

cudaError_t launch_randomk_compress(const float* c, std::int64_t n, std::int64_t k, std::uint64_t seed,
                                    float* payload, float* residual, cudaStream_t stream) {
  if (k > 0) randomk_gather_kernel<<<grid_for(k), kThreads, 0, stream>>>(c, n, k, seed, payload, residual);
  return cudaGetLastError();
}

cudaError_t launch_randomk_decompress(const float* payload, std::int64_t n, std::int64_t k, std::uint64_t seed,
                                      float* out, cudaStream_t stream) {
  cudaError_t e = cudaMemsetAsync(out, 0, static_cast<std::size_t>(n) * sizeof(float), stream);
  if (e != cudaSuccess) return e;
  if (k > 0) randomk_scatter_kernel<<<grid_for(k), kThreads, 0, stream>>>(payload, n, k, seed, out);
  return cudaGetLastError();
}

cudaError_t launch_sign_compress(const float* c, std::int64_t n, void* payload, float* scratch, float* residual,
                                 cudaStream_t stream) {
  cudaError_t e = cudaMemsetAsync(scratch, 0, sizeof(float), stream);
  if (e != cudaSuccess) return e;
  if (n > 0) abs_sum_kernel<<<grid_for(n), kThreads, 0, stream>>>(c, n, scratch);
  sign_pack_kernel<<<grid_for(sign_words(n)), kThreads, 0, stream>>>(c, n, scratch, static_cast<float*>(payload),
                                                                     residual);
  return cudaGetLastError();
}

cudaError_t launch_sign_decompress(const void* payload, std::int64_t n, float* out, cudaStream_t stream) {
  if (n > 0) sign_unpack_kernel<<<grid_for(n), kThreads, 0, stream>>>(static_cast<const float*>(payload), n, out);
  return cudaGetLastError();
}

cudaError_t launch_half_residual(const void* payload, DType half, std::int64_t n, float* residual,
                                 cudaStream_t stream) {
  if (half != DType::kF16 && half != DType::kBF16) return cudaErrorInvalidValue;
  if (n > 0) half_residual_kernel<<<grid_for(n), kThreads, 0, stream>>>(payload, half, n, residual);
  return cudaGetLastError();
}

cudaError_t launch_powersgd_q0(float* q, std::int64_t count, std::uint64_t seed, cudaStream_t stream) {
  if (count > 0) q0_kernel<<<grid_for(count), kThreads, 0, stream>>>(q, count, seed);
  return cudaGetLastError();
}

cudaError_t launch_orthogonalize(float* a, std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  if (rows > 0 && cols > 0) orthogonalize_kernel<<<1, 1024, 0, stream>>>(a, rows, cols);
  return cudaGetLastError();
}

}  // namespace dpro::kernels::cuda
