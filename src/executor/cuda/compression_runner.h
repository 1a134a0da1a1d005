#pragma once
// A CompressCall on resolved device pointers: the kernels of kernels/ (top-k, random-k, sign
// packing, casts) and PowerSGD as GEMMs through cuBLASLt around the Gram-Schmidt kernel, with
// error feedback when a residual is given. Payload layouts: kernels/compression_layout.h.
#include <cuda_runtime_api.h>

#include "executor/cuda/gemm_lt.h"
#include "executor/device.h"

namespace dpro::executor::cuda {

struct CompressPointers {
  const void* src = nullptr;
  void* dst = nullptr;
  float* residual = nullptr;  // null: no error feedback
};

// The bytes `src` and `dst` must hold for the call (payload or gradient, by direction).
std::uint64_t compress_src_bytes(const CompressCall& call);
std::uint64_t compress_dst_bytes(const CompressCall& call);

void run_compress(const CompressCall& call, const CompressPointers& p, LtGemm& gemm, cudaStream_t stream);

}  // namespace dpro::executor::cuda
