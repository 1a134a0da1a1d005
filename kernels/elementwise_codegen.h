#pragma once
// CUDA source for a fused elementwise chain (executor::ElementwiseChain), compiled at run time
// with NVRTC by the CUDA device and cached by the chain's signature. Plain C++.
//
// The generated translation unit compiles two ways: under NVRTC (__CUDACC__) it defines the
// kernel `extern "C" __global__ void <name>(long long n, const T* in0.., T* out0..)`; with a host
// C++ compiler (include path: the repository root) it defines
// `extern "C" void <name>_host(long long n, const void* const* in, void* const* out)`, the same
// per-element code run in a loop, which tests compile and compare with evaluate_chain_reference.
// T is float (fp32) or unsigned short (fp16 / bf16 bits); arithmetic is in fp32 in both.
#include <string>

#include "executor/device.h"

namespace dpro::kernels {

// Throws std::invalid_argument naming the problem: a dtype other than fp32/fp16/bf16, no input,
// a binary step whose input is out of range, a non-finite scalar, or outputs that do not match
// store_intermediates (steps.size() outputs with it, at least one without).
void validate_chain(const executor::ElementwiseChain& chain);

// What the generated code depends on (dtype, inputs, outputs written, steps and exact scalars):
// chains with equal signatures share one compiled kernel.
std::string chain_signature(const executor::ElementwiseChain& chain);
// "dpro_ew_" + 16 hex digits of the signature's hash.
std::string chain_kernel_name(const executor::ElementwiseChain& chain);
// Outputs the kernel writes: steps.size() with store_intermediates, else 1 (outputs.back()).
std::size_t chain_written_outputs(const executor::ElementwiseChain& chain);

std::string elementwise_source(const executor::ElementwiseChain& chain);

// The CPU reference: the chain interpreted element by element. `inputs` and `outputs` point at
// `chain.elements` values of chain.dtype (outputs: the chain_written_outputs() written ones).
void evaluate_chain_reference(const executor::ElementwiseChain& chain, const std::vector<const void*>& inputs,
                              const std::vector<void*>& outputs);

}  // namespace dpro::kernels
