#pragma once
// DPRO_HD marks the few functions that the CPU references and the CUDA kernels share (index
// draws, bit layouts, fp16/bf16 rounding): one definition, compiled by the host compiler for the
// references and tests, and by nvcc as __host__ __device__ for the kernels.
#if defined(__CUDACC__)
#define DPRO_HD __host__ __device__ inline
#else
#define DPRO_HD inline
#endif
