#pragma once
// The CUDA implementation of executor::Device (built only where the toolkit is found; target
// dpro_executor_cuda). Streams, events, buffers and copies are the CUDA runtime's; launches run
// the kernels of kernels/ (stand-ins, fused elementwise chains compiled with NVRTC, casts,
// compression), GEMMs run through cuBLASLt. Collectives run as stand-ins on their stream: NCCL
// across several GPUs is not wired in yet.
#include <memory>

#include "executor/device.h"

namespace dpro::executor {

// Opens GPU `gpu_ordinal`, calibrates the stand-in kernel on it (a few ms) and returns the
// device. Throws std::runtime_error with the CUDA error text when there is no usable GPU (no
// driver, no device, ordinal out of range).
std::unique_ptr<Device> open_cuda_device(int gpu_ordinal);

// Host bytes into / out of a span of a device that open_cuda_device returned, synchronously
// (span.bytes of them; `host` holds as many). For tests and the GPU validation, which compare
// kernel output with the CPU references; the executor itself feeds no data. Throws
// std::invalid_argument for another kind of Device.
void cuda_upload(Device& device, const Span& dst, const void* host);
void cuda_download(Device& device, const Span& src, void* host);

}  // namespace dpro::executor
