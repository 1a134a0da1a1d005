#pragma once
// The CUDA implementation of executor::Device (built only where the toolkit is found; target
// dpro_executor_cuda). Streams, events, buffers and copies are the CUDA runtime's; launches run
// the kernels of kernels/ (stand-ins, fused elementwise chains compiled with NVRTC, casts,
// compression), GEMMs run through cuBLASLt. Collectives run as NCCL calls on a communicator that
// open_nccl_fabric() opened over several such devices (one rank per GPU), as stand-ins on their
// stream otherwise.
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

// Communicators between devices open_cuda_device returned, each on its own GPU (ncclCommInitAll),
// for run_ranks (multi_rank.h); nullptr when this build has no NCCL (its headers or library were
// not found). open() throws std::runtime_error with NCCL's error text, or for two members on one
// GPU (NCCL refuses several ranks per device).
std::unique_ptr<CollectiveFabric> open_nccl_fabric();

}  // namespace dpro::executor
