#pragma once
// CUDA, cuBLASLt and NVRTC status codes as exceptions: std::runtime_error naming the call and
// the library's error text.
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <nvrtc.h>

#include <stdexcept>
#include <string>

namespace dpro::executor::cuda {

inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
  }
}

inline void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(what) + ": cuBLASLt status " + std::to_string(static_cast<int>(status)));
  }
}

inline void check(nvrtcResult status, const char* what) {
  if (status != NVRTC_SUCCESS) throw std::runtime_error(std::string(what) + ": " + nvrtcGetErrorString(status));
}

}  // namespace dpro::executor::cuda
