#include "executor/cuda/compression_runner.h"

#include <stdexcept>

#include "executor/cuda/cuda_check.h"
#include "kernels/compression_layout.h"
#include "kernels/cuda_kernels.h"

namespace dpro::executor::cuda {
namespace {

namespace kc = kernels::cuda;
using kernels::PayloadKind;

PayloadKind kind_of(CompressMethod m) {
  switch (m) {
    case CompressMethod::kTopK: return PayloadKind::kTopK;
    case CompressMethod::kRandomK: return PayloadKind::kRandomK;
    case CompressMethod::kSignPack: return PayloadKind::kSignPack;
    case CompressMethod::kPowerSgd: return PayloadKind::kPowerSgd;
    case CompressMethod::kCastF16:
    case CompressMethod::kCastBF16: return PayloadKind::kHalf;
  }
  throw std::invalid_argument("compression: unknown method");
}

std::uint64_t payload_of(const CompressCall& c) { return kernels::payload_bytes(kind_of(c.method), c.elements, c.param, c.rows); }
std::uint64_t gradient_of(const CompressCall& c) { return 4ull * static_cast<std::uint64_t>(c.elements); }

// Scratch from the stream-ordered pool, returned to it when the stream gets past its use.
class StreamScratch {
 public:
  StreamScratch(std::size_t bytes, cudaStream_t stream) : stream_(stream) {
    check(cudaMallocAsync(&ptr_, bytes, stream), "compression scratch");
  }
  ~StreamScratch() { cudaFreeAsync(ptr_, stream_); }
  void* get() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
  cudaStream_t stream_;
};

void powersgd_compress(const CompressCall& call, const float* m, float* payload, float* residual, LtGemm& gemm,
                       cudaStream_t stream) {
  kernels::PowerSgdShape s = kernels::powersgd_shape(call.elements, call.rows, call.param);
  float* p = payload;
  float* q = payload + s.rows * s.rank;
  check(kc::launch_powersgd_q0(q, s.cols * s.rank, call.seed, stream), "PowerSGD Q0");
  gemm.run({s.rows, s.rank, s.cols, 1, false, false, DType::kF32, MathMode::kDefault, m, q, p}, stream);  // P = M Q
  check(kc::launch_orthogonalize(p, s.rows, s.rank, stream), "PowerSGD orthogonalisation");
  gemm.run({s.cols, s.rank, s.rows, 1, true, false, DType::kF32, MathMode::kDefault, m, p, q}, stream);  // Q = M^T P
  if (residual) {  // residual (= M) -= P Q^T
    gemm.run({s.rows, s.cols, s.rank, 1, false, true, DType::kF32, MathMode::kDefault, p, q, residual, -1.0, 1.0}, stream);
  }
}

void compress(const CompressCall& call, const CompressPointers& ptr, LtGemm& gemm, cudaStream_t stream) {
  std::int64_t n = call.elements;
  const float* c = static_cast<const float*>(ptr.src);
  if (ptr.residual) {
    check(kc::launch_add_into(ptr.residual, c, n, stream), "error feedback");
    c = ptr.residual;
  }
  switch (call.method) {
    case CompressMethod::kTopK: {
      if (n > 0x7fffffff) throw std::invalid_argument("top-k: more than 2^31 - 1 elements");
      StreamScratch scratch(kc::topk_scratch_bytes(n), stream);
      check(kc::launch_topk_compress(c, n, kernels::compressed_k(n, call.param), ptr.dst, scratch.get(), ptr.residual, stream),
            "top-k");
      break;
    }
    case CompressMethod::kRandomK:
      check(kc::launch_randomk_compress(c, n, kernels::compressed_k(n, call.param), call.seed, static_cast<float*>(ptr.dst),
                                        ptr.residual, stream),
            "random-k");
      break;
    case CompressMethod::kSignPack: {
      StreamScratch scratch(sizeof(float), stream);
      check(kc::launch_sign_compress(c, n, ptr.dst, static_cast<float*>(scratch.get()), ptr.residual, stream), "sign packing");
      break;
    }
    case CompressMethod::kCastF16:
    case CompressMethod::kCastBF16: {
      DType half = call.method == CompressMethod::kCastF16 ? DType::kF16 : DType::kBF16;
      check(kc::launch_cast(DType::kF32, half, c, ptr.dst, n, stream), "cast compression");
      if (ptr.residual) check(kc::launch_half_residual(ptr.dst, half, n, ptr.residual, stream), "cast error feedback");
      break;
    }
    case CompressMethod::kPowerSgd:
      powersgd_compress(call, c, static_cast<float*>(ptr.dst), ptr.residual, gemm, stream);
      break;
  }
}

void decompress(const CompressCall& call, const CompressPointers& ptr, LtGemm& gemm, cudaStream_t stream) {
  std::int64_t n = call.elements;
  auto* out = static_cast<float*>(ptr.dst);
  switch (call.method) {
    case CompressMethod::kTopK:
      check(kc::launch_topk_decompress(ptr.src, n, kernels::compressed_k(n, call.param), out, stream), "top-k decompress");
      break;
    case CompressMethod::kRandomK:
      check(kc::launch_randomk_decompress(static_cast<const float*>(ptr.src), n, kernels::compressed_k(n, call.param),
                                          call.seed, out, stream),
            "random-k decompress");
      break;
    case CompressMethod::kSignPack: check(kc::launch_sign_decompress(ptr.src, n, out, stream), "sign unpacking"); break;
    case CompressMethod::kCastF16:
    case CompressMethod::kCastBF16:
      check(kc::launch_cast(call.method == CompressMethod::kCastF16 ? DType::kF16 : DType::kBF16, DType::kF32, ptr.src, out,
                            n, stream),
            "cast decompress");
      break;
    case CompressMethod::kPowerSgd: {
      kernels::PowerSgdShape s = kernels::powersgd_shape(n, call.rows, call.param);
      const float* p = static_cast<const float*>(ptr.src);
      gemm.run({s.rows, s.cols, s.rank, 1, false, true, DType::kF32, MathMode::kDefault, p, p + s.rows * s.rank, out}, stream);
      break;
    }
  }
}

}  // namespace

std::uint64_t compress_src_bytes(const CompressCall& call) { return call.decompress ? payload_of(call) : gradient_of(call); }
std::uint64_t compress_dst_bytes(const CompressCall& call) { return call.decompress ? gradient_of(call) : payload_of(call); }

void run_compress(const CompressCall& call, const CompressPointers& p, LtGemm& gemm, cudaStream_t stream) {
  if (call.elements < 0) throw std::invalid_argument("compression: negative element count");
  if (call.decompress) decompress(call, p, gemm, stream);
  else compress(call, p, gemm, stream);
}

}  // namespace dpro::executor::cuda
