#include "executor/cuda/gemm_lt.h"

#include <cstdint>
#include <stdexcept>
#include <string>

#include "executor/cuda/cuda_check.h"

namespace dpro::executor::cuda {
namespace {

constexpr std::uint64_t kMaxWorkspace = 32ull << 20;

struct Types {
  cudaDataType_t data;
  cublasComputeType_t compute;
  cudaDataType_t scale;
};

Types types_of(DType t, MathMode math) {
  switch (t) {
    case DType::kF32:
      return {CUDA_R_32F, math == MathMode::kTF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUDA_R_32F};
    case DType::kF16: return {CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F};
    case DType::kBF16: return {CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F};
    case DType::kF64: return {CUDA_R_64F, CUBLAS_COMPUTE_64F, CUDA_R_64F};
    default: throw std::invalid_argument(std::string("GEMM: dtype ") + to_string(t) + " (fp32, fp16, bf16, fp64 only)");
  }
}

// The largest power of two (up to 256) dividing the address: what cuBLASLt may assume.
std::uint32_t alignment(const void* p) {
  auto address = reinterpret_cast<std::uintptr_t>(p);
  std::uint32_t a = 256;
  while (a > 1 && address % a) a /= 2;
  return a;
}

struct Desc {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~Desc() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

void make_layout(cublasLtMatrixLayout_t* layout, cudaDataType_t type, std::int64_t rows, std::int64_t cols,
                 std::int64_t batch) {
  check(cublasLtMatrixLayoutCreate(layout, type, static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(cols), rows),
        "cublasLtMatrixLayoutCreate");
  if (batch > 1) {
    auto count = static_cast<std::int32_t>(batch);
    std::int64_t stride = rows * cols;
    check(cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count), "batch count");
    check(cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride),
          "batch stride");
  }
}

cublasLtEpilogue_t lt_epilogue(GemmEpilogue e) {
  switch (e) {
    case GemmEpilogue::kNone: return CUBLASLT_EPILOGUE_DEFAULT;
    case GemmEpilogue::kBias: return CUBLASLT_EPILOGUE_BIAS;
    case GemmEpilogue::kRelu: return CUBLASLT_EPILOGUE_RELU;
    case GemmEpilogue::kGelu: return CUBLASLT_EPILOGUE_GELU;
    case GemmEpilogue::kBiasRelu: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case GemmEpilogue::kBiasGelu: return CUBLASLT_EPILOGUE_GELU_BIAS;
    case GemmEpilogue::kDRelu: return CUBLASLT_EPILOGUE_DRELU;
    case GemmEpilogue::kDGelu: return CUBLASLT_EPILOGUE_DGELU;
    case GemmEpilogue::kDReluBGrad: return CUBLASLT_EPILOGUE_DRELU_BGRAD;
    case GemmEpilogue::kDGeluBGrad: return CUBLASLT_EPILOGUE_DGELU_BGRAD;
  }
  throw std::invalid_argument("GEMM: unknown epilogue");
}

// The epilogue and its buffers: a bias of m values a product (batch stride m), an aux matrix of
// gemm_aux_ld(m) x n a product (the drelu mask in bits).
void set_epilogue(const GemmArgs& g, cublasLtMatmulDesc_t op) {
  if (g.epilogue == GemmEpilogue::kNone) return;
  const bool bias = epilogue_reads_bias(g.epilogue) || epilogue_writes_bias(g.epilogue);
  if (bias && !g.bias) throw std::invalid_argument(std::string("GEMM: epilogue ") + to_string(g.epilogue) + " without a bias buffer");
  if (epilogue_reads_aux(g.epilogue) && !g.aux)
    throw std::invalid_argument(std::string("GEMM: epilogue ") + to_string(g.epilogue) + " without an aux buffer");
  const cublasLtEpilogue_t e = lt_epilogue(g.epilogue);
  check(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e), "epilogue");
  if (bias) {
    check(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof g.bias), "bias pointer");
    if (g.batch > 1) {
      std::int64_t stride = g.m;
      check(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &stride, sizeof stride), "bias stride");
    }
  }
  if (epilogue_reads_aux(g.epilogue)) {
    check(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &g.aux, sizeof g.aux), "aux pointer");
    std::int64_t ld = gemm_aux_ld(g.epilogue, g.m);
    check(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld), "aux ld");
    if (g.batch > 1) {
      std::int64_t stride = ld * g.n;
      check(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, &stride, sizeof stride),
            "aux stride");
    }
  }
}

void describe(const GemmArgs& g, const Types& t, Desc& d) {
  check(cublasLtMatmulDescCreate(&d.op, t.compute, t.scale), "cublasLtMatmulDescCreate");
  cublasOperation_t ta = g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  check(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "transa");
  check(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "transb");
  set_epilogue(g, d.op);
  make_layout(&d.a, t.data, g.transpose_a ? g.k : g.m, g.transpose_a ? g.m : g.k, g.batch);
  make_layout(&d.b, t.data, g.transpose_b ? g.n : g.k, g.transpose_b ? g.k : g.n, g.batch);
  make_layout(&d.c, t.data, g.m, g.n, g.batch);
  check(cublasLtMatmulPreferenceCreate(&d.pref), "cublasLtMatmulPreferenceCreate");
  std::uint64_t workspace = kMaxWorkspace;
  check(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace),
        "workspace");
  std::uint32_t align_a = alignment(g.a), align_b = alignment(g.b), align_c = alignment(g.c);
  check(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a, sizeof align_a), "align a");
  check(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b, sizeof align_b), "align b");
  check(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c, sizeof align_c), "align c");
  check(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_c, sizeof align_c), "align d");
}

}  // namespace

LtGemm::LtGemm() { check(cublasLtCreate(&handle_), "cublasLtCreate"); }

LtGemm::~LtGemm() {
  if (handle_) cublasLtDestroy(handle_);
}

void LtGemm::run(const GemmArgs& g, cudaStream_t stream) {
  if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.batch <= 0 || g.batch > 0x7fffffff) {
    throw std::invalid_argument("GEMM: empty or oversized shape");
  }
  Types t = types_of(g.dtype, g.math);
  Desc d;
  describe(g, t, d);
  Key key{g.m, g.n, g.k, g.batch, g.transpose_a * 2 + g.transpose_b, static_cast<int>(g.dtype), static_cast<int>(g.math),
          static_cast<int>(alignment(g.a) * 1000 + alignment(g.b)), static_cast<int>(alignment(g.c)),
          static_cast<int>(g.epilogue) * 1000000 + static_cast<int>(alignment(g.bias) * 1000 + alignment(g.aux))};
  cublasLtMatmulHeuristicResult_t choice{};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = algorithms_.find(key);
    if (it == algorithms_.end()) {
      int found = 0;
      check(cublasLtMatmulAlgoGetHeuristic(handle_, d.op, d.a, d.b, d.c, d.c, d.pref, 1, &choice, &found),
            "cublasLtMatmulAlgoGetHeuristic");
      if (found == 0) throw std::runtime_error("cuBLASLt: no algorithm for this GEMM shape and dtype");
      it = algorithms_.emplace(key, choice).first;
    }
    choice = it->second;
  }
  float alpha32 = static_cast<float>(g.alpha), beta32 = static_cast<float>(g.beta);
  const void* alpha = t.scale == CUDA_R_64F ? static_cast<const void*>(&g.alpha) : &alpha32;
  const void* beta = t.scale == CUDA_R_64F ? static_cast<const void*>(&g.beta) : &beta32;
  void* workspace = nullptr;
  if (choice.workspaceSize) check(cudaMallocAsync(&workspace, choice.workspaceSize, stream), "GEMM workspace");
  cublasStatus_t status = cublasLtMatmul(handle_, d.op, alpha, g.a, d.a, g.b, d.b, beta, g.c, d.c, g.c, d.c, &choice.algo,
                                         workspace, choice.workspaceSize, stream);
  if (workspace) cudaFreeAsync(workspace, stream);
  check(status, "cublasLtMatmul");
}

}  // namespace dpro::executor::cuda
