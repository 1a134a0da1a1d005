#pragma once
// GEMMs through cuBLASLt at the call's shape, dtype, math mode (TF32 as the fp32 compute
// type CUBLAS_COMPUTE_32F_FAST_TF32) and epilogue (CUBLASLT_MATMUL_DESC_EPILOGUE). Column-major, C = alpha op(A) op(B) + beta C, `batch`
// strided products. The algorithm chosen by cuBLASLt's heuristic is cached per shape, dtype,
// math mode and pointer alignment; the workspace is taken from the stream-ordered pool for each
// call, so calls from several threads and streams do not share one. Thread-safe.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

#include "executor/device.h"

namespace dpro::executor::cuda {

struct GemmArgs {
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  bool transpose_a = false, transpose_b = false;
  DType dtype = DType::kF32;
  MathMode math = MathMode::kDefault;
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
  double alpha = 1, beta = 0;
  // CUBLASLT_MATMUL_DESC_EPILOGUE and its buffers (device.h, GemmEpilogue): `bias` m values of
  // `dtype` a product (read, or written by the _bgrad forms), `aux` gemm_aux_bytes a product.
  GemmEpilogue epilogue = GemmEpilogue::kNone;
  void* bias = nullptr;
  void* aux = nullptr;
};

class LtGemm {
 public:
  LtGemm();
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // Throws std::invalid_argument for an unsupported dtype or empty shape, std::runtime_error for
  // a cuBLASLt failure (no algorithm for the shape included).
  void run(const GemmArgs& g, cudaStream_t stream);

 private:
  using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, int, int, int, int, int, int>;
  cublasLtHandle_t handle_ = nullptr;
  std::mutex mutex_;
  std::map<Key, cublasLtMatmulHeuristicResult_t> algorithms_;
};

}  // namespace dpro::executor::cuda
