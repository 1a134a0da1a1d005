#pragma once
// CPU reference of the GEMMs the executor runs through cuBLASLt (executor/device.h, GemmCall;
// executor/cuda/gemm_lt.cpp), epilogue included: what the GPU's output must be, as the
// compression references are for the compression kernels. Plain C++, built and tested everywhere;
// the CUDA device's test (tests/kernels/cuda_device_test.cpp) compares cuBLASLt's output with it
// on a GPU.
//
// The call as the executor makes it: column-major, C = epilogue(op(A) op(B)) (alpha 1, beta 0),
// `batch` products strided by their sizes; A is m x k (k x m stored when transpose_a), B is k x n
// (n x k stored when transpose_b). Arithmetic in double on the operands' values (fp16 / bf16 /
// fp32 values are exact in double): the reference is the exact product, the GPU's rounding is
// the comparison's tolerance.
//
// Epilogues, per cublasLt.h (CUDA 13, cublasLtEpilogue_t and CUBLASLT_MATMUL_DESC_*; docs/kernels.md
// says which parts are documented there and which are this model's reading):
//   bias          D[i,j] = acc[i,j] + bias[i]      (bias: m values a product, broadcast over the n columns)
//   relu / gelu   D = max(acc, 0) / gelu_tanh(acc)
//   bias_relu / bias_gelu   the activation of acc + bias
//   drelu         D = acc where the mask bit of (i, j) is set, else 0
//   dgelu         D = acc * gelu_tanh'(x[i,j]), x the forward pre-activation (aux)
//   _bgrad forms  also bias_grad[i] = sum over j of D[i,j] (the gradient after the derivative)
// The drelu mask: bit i + j * ld of a product's mask (ld = gemm_aux_ld, a multiple of 128 bits),
// byte (bit / 8), bit (bit % 8) from the least significant, set where the forward pre-activation
// was > 0. The dgelu aux: x[i + j * ld], ld = gemm_aux_ld (m rounded up to 8).
#include <cstdint>
#include <vector>

#include "executor/device.h"

namespace dpro::kernels {

// The shape, transposes and epilogue of a GemmCall (its spans and dtype are not used).
struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  bool transpose_a = false, transpose_b = false;
  executor::GemmEpilogue epilogue = executor::GemmEpilogue::kNone;
};
GemmShape gemm_shape_of(const executor::GemmCall& g);

struct GemmOperands {
  std::vector<double> a, b;                // batch * m * k, batch * k * n values as stored
  std::vector<double> bias;                // epilogue_reads_bias: batch * m
  std::vector<std::uint8_t> relu_mask;     // drelu forms: gemm_aux_bytes (ld bits a column)
  std::vector<double> gelu_input;          // dgelu forms: batch * gemm_aux_ld * n values
};

struct GemmResult {
  std::vector<double> c;          // batch * m * n, column-major
  std::vector<double> bias_grad;  // _bgrad forms: batch * m; empty otherwise
};

// Throws std::invalid_argument when an operand's size does not match the shape and epilogue (an
// operand the epilogue does not use must be empty) or the shape is empty.
GemmResult gemm_reference(const GemmShape& s, const GemmOperands& in);

// GELU as cuBLASLt's epilogue is taken to compute it: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
// and its derivative in x.
double gelu_tanh(double x);
double gelu_tanh_derivative(double x);
// The erf form (aten::gelu's default), to tell the two apart in tests.
double gelu_erf(double x);

// The drelu mask for a forward pre-activation x (batch * m * n values, column-major): what
// CUBLASLT_EPILOGUE_RELU_AUX is taken to store, in the layout above (gemm_aux_bytes of kDRelu).
std::vector<std::uint8_t> relu_mask_of(const std::vector<double>& x, std::int64_t m, std::int64_t n, std::int64_t batch);
// The dgelu aux for x: each column padded to gemm_aux_ld(kDGelu, m) values (padding 0).
std::vector<double> gelu_aux_of(const std::vector<double>& x, std::int64_t m, std::int64_t n, std::int64_t batch);

}  // namespace dpro::kernels
