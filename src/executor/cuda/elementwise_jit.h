#pragma once
// Fused elementwise chains as kernels compiled at run time: kernels/elementwise_codegen.h's
// source, compiled with NVRTC for the device's architecture into a cubin, loaded with
// cudaLibraryLoadData and cached by the chain's signature (one compile per distinct chain; the
// first launch of a chain pays it). Thread-safe.
#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "executor/device.h"

namespace dpro::executor::cuda {

// The chain's generated source compiled by NVRTC into a cubin for sm_<major><minor>; needs no
// GPU. Throws std::runtime_error with NVRTC's log when it does not compile.
std::vector<char> compile_chain_cubin(const ElementwiseChain& chain, int arch_major, int arch_minor);

class ElementwiseJit {
 public:
  ElementwiseJit(int arch_major, int arch_minor, int sm_count);
  ~ElementwiseJit();
  ElementwiseJit(const ElementwiseJit&) = delete;
  ElementwiseJit& operator=(const ElementwiseJit&) = delete;

  // Enqueues the chain over device pointers (`inputs` as chain.inputs, `outputs` the written
  // ones: kernels::chain_written_outputs). Throws std::runtime_error with NVRTC's log when the
  // generated source does not compile.
  void launch(const ElementwiseChain& chain, const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
              cudaStream_t stream);

  std::size_t compiled() const;  // distinct chains compiled so far

 private:
  cudaKernel_t kernel_for(const ElementwiseChain& chain);

  int arch_major_, arch_minor_, sm_count_;
  mutable std::mutex mutex_;
  std::map<std::string, cudaKernel_t> kernels_;
  std::vector<cudaLibrary_t> libraries_;
};

}  // namespace dpro::executor::cuda
