// The stand-in kernel: occupies its grid for a requested time without touching memory.
#include "kernels/cuda_kernels.h"

namespace dpro::kernels::cuda {
namespace {

__device__ __forceinline__ unsigned long long global_timer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Every thread spins, so the block holds its warps' issue slots as a real kernel's would.
__global__ void standin_kernel(unsigned long long spin_ns) {
  unsigned long long start = global_timer_ns();
  while (global_timer_ns() - start < spin_ns) {
  }
}

}  // namespace

cudaError_t standin_blocks_per_sm(int threads_per_block, int* blocks) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, standin_kernel, threads_per_block, 0);
}

cudaError_t launch_standin(const executor::Dim3& grid, const executor::Dim3& block, Nanos spin_per_block,
                           cudaStream_t stream) {
  standin_kernel<<<dim3(grid[0], grid[1], grid[2]), dim3(block[0], block[1], block[2]), 0, stream>>>(
      static_cast<unsigned long long>(spin_per_block > 0 ? spin_per_block : 0));
  return cudaGetLastError();
}

}  // namespace dpro::kernels::cuda
