# Whether to build the executor's CUDA kernels and device (kernels/, src/executor/cuda), from
# DPRO_CUDA: AUTO builds them when the toolkit (nvcc, NVRTC, cuBLASLt) is found, ON requires it,
# OFF skips them. Sets DPRO_KERNELS_CUDA and, when ON, enables the CUDA language here (at the top
# level: targets that link CUDA objects need it in their directory too).
if(NOT DPRO_CUDA MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "DPRO_CUDA must be AUTO, ON or OFF (got '${DPRO_CUDA}')")
endif()
set(DPRO_KERNELS_CUDA OFF)
if(NOT DPRO_CUDA STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND AND CUDAToolkit_NVCC_EXECUTABLE AND TARGET CUDA::nvrtc AND TARGET CUDA::cublasLt)
    set(DPRO_KERNELS_CUDA ON)
  elseif(DPRO_CUDA STREQUAL "ON")
    message(FATAL_ERROR "DPRO_CUDA=ON, but no CUDA toolkit with nvcc, NVRTC and cuBLASLt was found. Point "
                        "CUDAToolkit_ROOT at it (e.g. -DCUDAToolkit_ROOT=/usr/local/cuda) or configure "
                        "with -DDPRO_CUDA=AUTO or OFF.")
  else()
    message(STATUS "dpro kernels: CUDA toolkit (nvcc, NVRTC, cuBLASLt) not found, building their CPU parts only")
  endif()
endif()
if(DPRO_KERNELS_CUDA)
  if(NOT CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_COMPILER ${CUDAToolkit_NVCC_EXECUTABLE})
  endif()
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80 90)
  endif()
  if(CMAKE_CXX_COMPILER_LAUNCHER AND NOT CMAKE_CUDA_COMPILER_LAUNCHER)
    set(CMAKE_CUDA_COMPILER_LAUNCHER ${CMAKE_CXX_COMPILER_LAUNCHER})
  endif()
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
endif()
