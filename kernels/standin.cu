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
__global__ void standin_kernel(unsigned long long spin_ns, unsigned long long spin_cycles) {
  if (spin_cycles > 0) {
    long long start = clock64();
    while (static_cast<unsigned long long>(clock64() - start) < spin_cycles) {
    }
    return;
  }
  unsigned long long start = global_timer_ns();
  while (global_timer_ns() - start < spin_ns) {
  }
}

__global__ void clock_probe_kernel(unsigned long long* out, unsigned long long spin_ns) {
  unsigned long long t0 = global_timer_ns();
  long long c0 = clock64();
  unsigned long long t1 = t0;
  while (t1 - t0 < spin_ns) t1 = global_timer_ns();
  long long c1 = clock64();
  out[0] = t1 - t0;
  out[1] = static_cast<unsigned long long>(c1 - c0);
}

}  // namespace

cudaError_t standin_blocks_per_sm(int threads_per_block, int* blocks) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, standin_kernel, threads_per_block, 0);
}

cudaError_t launch_standin(const executor::Dim3& grid, const executor::Dim3& block, Nanos spin_per_block,
                           std::uint64_t spin_cycles, cudaStream_t stream) {
  standin_kernel<<<dim3(grid[0], grid[1], grid[2]), dim3(block[0], block[1], block[2]), 0, stream>>>(
      static_cast<unsigned long long>(spin_per_block > 0 ? spin_per_block : 0), spin_cycles);
  return cudaGetLastError();
}

cudaError_t launch_clock_probe(unsigned long long* out, Nanos spin, cudaStream_t stream) {
  clock_probe_kernel<<<1, 1, 0, stream>>>(out, static_cast<unsigned long long>(spin > 0 ? spin : 0));
  return cudaGetLastError();
}

}  // namespace dpro::kernels::cuda
