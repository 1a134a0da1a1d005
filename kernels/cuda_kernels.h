#pragma once
// Host-side launchers of the CUDA kernels in kernels/*.cu. Each enqueues its kernels on `stream`
// and returns; errors of the launch come back as the cudaError_t (cudaGetLastError). Pointers
// are device pointers; counts are elements. Only the CUDA targets include this header.
//
// Compression kernels follow compression_layout.h's payloads. Error feedback is split the same
// way everywhere: the caller first adds the gradient into the residual (add_into), passes the
// residual as `c` (the value to compress) and as `residual`, and the kernel leaves
// residual = c - decompress(payload).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/time.h"
#include "executor/device.h"

namespace dpro::kernels::cuda {

// Stand-in (standin.cu): every thread of grid x block spins spin_cycles SM clock cycles when that
// is > 0, else spin_per_block on %globaltimer.
cudaError_t standin_blocks_per_sm(int threads_per_block, int* blocks);
cudaError_t launch_standin(const executor::Dim3& grid, const executor::Dim3& block, Nanos spin_per_block,
                           std::uint64_t spin_cycles, cudaStream_t stream);
// One thread spins `spin` on %globaltimer and writes {timer ns, clock64 cycles} elapsed to the
// two device words at `out`: the calibration's cycles per ns.
cudaError_t launch_clock_probe(unsigned long long* out, Nanos spin, cudaStream_t stream);

// Casts between fp32, fp16 and bf16 (round to nearest even); cudaErrorInvalidValue for others.
cudaError_t launch_cast(executor::DType from, executor::DType to, const void* src, void* dst, std::int64_t n,
                        cudaStream_t stream);
// acc[i] += add[i].
cudaError_t launch_add_into(float* acc, const float* add, std::int64_t n, cudaStream_t stream);

// Top-k (topk.cu). Scratch: topk_scratch_bytes(n) device bytes; n < 2^31.
std::size_t topk_scratch_bytes(std::int64_t n);
cudaError_t launch_topk_compress(const float* c, std::int64_t n, std::int64_t k, void* payload, void* scratch,
                                 float* residual, cudaStream_t stream);
cudaError_t launch_topk_decompress(const void* payload, std::int64_t n, std::int64_t k, float* out,
                                   cudaStream_t stream);

// Random-k.
cudaError_t launch_randomk_compress(const float* c, std::int64_t n, std::int64_t k, std::uint64_t seed,
                                    float* payload, float* residual, cudaStream_t stream);
cudaError_t launch_randomk_decompress(const float* payload, std::int64_t n, std::int64_t k, std::uint64_t seed,
                                      float* out, cudaStream_t stream);

// Sign packing with scale (EF-SignSGD); scratch: one float (the |c| sum).
cudaError_t launch_sign_compress(const float* c, std::int64_t n, void* payload, float* scratch, float* residual,
                                 cudaStream_t stream);
cudaError_t launch_sign_decompress(const void* payload, std::int64_t n, float* out, cudaStream_t stream);

// Cast compression's error feedback: residual[i] -= float(payload[i]) (fp16 or bf16 bits).
cudaError_t launch_half_residual(const void* payload, executor::DType half, std::int64_t n, float* residual,
                                 cudaStream_t stream);

// PowerSGD's pieces; the GEMMs are the caller's (cuBLASLt).
cudaError_t launch_powersgd_q0(float* q, std::int64_t count, std::uint64_t seed, cudaStream_t stream);
// Modified Gram-Schmidt on the `cols` columns of column-major rows x cols `a` (one block).
cudaError_t launch_orthogonalize(float* a, std::int64_t rows, std::int64_t cols, cudaStream_t stream);

}  // namespace dpro::kernels::cuda
