#pragma once
// The launch shape the elementwise-style kernels of kernels/*.cu share: 256 threads, at most
// 8192 blocks, each thread striding over the range.
#include <cstdint>

namespace dpro::kernels::cuda {

constexpr int kThreads = 256;

inline unsigned grid_for(std::int64_t n) {
  std::int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 8192 ? 8192 : blocks));
}

}  // namespace dpro::kernels::cuda

#define DPRO_GRID_STRIDE(i, n)                                                                         \
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
