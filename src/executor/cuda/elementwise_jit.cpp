#include "executor/cuda/elementwise_jit.h"

#include <nvrtc.h>

#include <algorithm>
#include <stdexcept>

#include "executor/cuda/cuda_check.h"
#include "kernels/elementwise_codegen.h"

namespace dpro::executor::cuda {
namespace {

std::vector<char> compile_cubin(const std::string& source, const std::string& name, int major, int minor) {
  nvrtcProgram program = nullptr;
  check(nvrtcCreateProgram(&program, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr), "nvrtcCreateProgram");
  std::string arch = "--gpu-architecture=sm_" + std::to_string(major * 10 + minor);
  const char* options[] = {arch.c_str(), "--std=c++17"};
  nvrtcResult result = nvrtcCompileProgram(program, 2, options);
  if (result != NVRTC_SUCCESS) {
    std::size_t size = 0;
    nvrtcGetProgramLogSize(program, &size);
    std::string log(size, '\0');
    nvrtcGetProgramLog(program, log.data());
    nvrtcDestroyProgram(&program);
    throw std::runtime_error("NVRTC could not compile fused chain " + name + ": " + nvrtcGetErrorString(result) + "\n" + log);
  }
  std::size_t size = 0;
  std::vector<char> cubin;
  nvrtcResult got = nvrtcGetCUBINSize(program, &size);
  if (got == NVRTC_SUCCESS) {
    cubin.resize(size);
    got = nvrtcGetCUBIN(program, cubin.data());
  }
  nvrtcDestroyProgram(&program);
  check(got, "nvrtcGetCUBIN");
  return cubin;
}

}  // namespace

std::vector<char> compile_chain_cubin(const ElementwiseChain& chain, int arch_major, int arch_minor) {
  return compile_cubin(kernels::elementwise_source(chain), kernels::chain_kernel_name(chain), arch_major, arch_minor);
}

ElementwiseJit::ElementwiseJit(int arch_major, int arch_minor, int sm_count)
    : arch_major_(arch_major), arch_minor_(arch_minor), sm_count_(sm_count) {}

ElementwiseJit::~ElementwiseJit() {
  for (cudaLibrary_t library : libraries_) cudaLibraryUnload(library);
}

std::size_t ElementwiseJit::compiled() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return kernels_.size();
}

cudaKernel_t ElementwiseJit::kernel_for(const ElementwiseChain& chain) {
  std::string signature = kernels::chain_signature(chain);
  std::lock_guard<std::mutex> lock(mutex_);  // held through a compile: one compile per chain
  auto it = kernels_.find(signature);
  if (it != kernels_.end()) return it->second;
  std::string name = kernels::chain_kernel_name(chain);
  std::vector<char> cubin = compile_chain_cubin(chain, arch_major_, arch_minor_);
  cudaLibrary_t library = nullptr;
  check(cudaLibraryLoadData(&library, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0), "cudaLibraryLoadData");
  libraries_.push_back(library);
  cudaKernel_t kernel = nullptr;
  check(cudaLibraryGetKernel(&kernel, library, name.c_str()), "cudaLibraryGetKernel");
  kernels_.emplace(signature, kernel);
  return kernel;
}

void ElementwiseJit::launch(const ElementwiseChain& chain, const std::vector<const void*>& inputs,
                            const std::vector<void*>& outputs, cudaStream_t stream) {
  kernels::validate_chain(chain);
  if (inputs.size() != chain.inputs.size() || outputs.size() != kernels::chain_written_outputs(chain)) {
    throw std::invalid_argument("fused chain: pointer counts differ from the chain's inputs and written outputs");
  }
  if (chain.elements <= 0) return;
  cudaKernel_t kernel = kernel_for(chain);
  long long n = chain.elements;
  std::vector<const void*> pointers(inputs);
  pointers.insert(pointers.end(), outputs.begin(), outputs.end());
  std::vector<void*> args{&n};
  for (const void*& p : pointers) args.push_back(&p);
  constexpr unsigned kThreads = 256;
  long long blocks = std::min<long long>((n + kThreads - 1) / kThreads, 32LL * sm_count_);
  check(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(static_cast<unsigned>(blocks)), dim3(kThreads),
                         args.data(), 0, stream),
        "fused chain launch");
}

}  // namespace dpro::executor::cuda
