#include "executor/cuda/cuda_device.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

#include "executor/cuda/cuda_check.h"
#include "executor/cuda/cuda_device_impl.h"
#include "kernels/cuda_kernels.h"

namespace dpro::executor::cuda {

void CudaDevice::use_device() const { check(cudaSetDevice(ordinal_), "cudaSetDevice"); }

CudaDevice::CudaDevice(int ordinal) : ordinal_(ordinal) {
  use_device();
  cudaDeviceProp props{};
  check(cudaGetDeviceProperties(&props, ordinal), "cudaGetDeviceProperties");
  name_ = props.name;
  sm_count_ = props.multiProcessorCount;
  // GEMM workspaces and compression scratch come from the stream-ordered pool per call; the pool
  // keeps what it has (no release at each synchronisation), so a launch's time is the kernels'
  // and not the driver's mapping of fresh memory.
  cudaMemPool_t pool = nullptr;
  check(cudaDeviceGetDefaultMemPool(&pool, ordinal), "cudaDeviceGetDefaultMemPool");
  std::uint64_t keep_all = ~std::uint64_t{0};
  check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all), "cudaMemPoolSetAttribute");
  gemm_ = std::make_unique<LtGemm>();
  jit_ = std::make_unique<ElementwiseJit>(props.major, props.minor, sm_count_);
  calibrate_standin();
}

CudaDevice::~CudaDevice() {
  cudaSetDevice(ordinal_);
  cudaDeviceSynchronize();
  jit_.reset();
  gemm_.reset();
  for (auto& [handle, buffer] : buffers_) cudaFree(buffer.ptr);
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
  for (cudaStream_t s : streams_) cudaStreamDestroy(s);
  for (void* p : staging_) cudaFreeHost(p);
}

StreamHandle CudaDevice::create_stream() {
  use_device();
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  std::lock_guard<std::mutex> lock(mutex_);
  streams_.push_back(s);
  return static_cast<StreamHandle>(streams_.size());
}

EventHandle CudaDevice::create_event() {
  use_device();
  cudaEvent_t e = nullptr;
  check(cudaEventCreate(&e), "cudaEventCreate");
  std::lock_guard<std::mutex> lock(mutex_);
  events_.push_back(e);
  return static_cast<EventHandle>(events_.size());
}

BufferHandle CudaDevice::allocate(std::uint64_t bytes) {
  use_device();
  void* p = nullptr;
  check(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc");
  std::lock_guard<std::mutex> lock(mutex_);
  buffers_[next_buffer_] = {p, bytes};
  return next_buffer_++;
}

void CudaDevice::free(BufferHandle buffer) {
  use_device();
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = buffers_.find(buffer);
    if (it == buffers_.end()) throw std::invalid_argument("free: unknown buffer " + std::to_string(buffer));
    p = it->second.ptr;
    buffers_.erase(it);
  }
  check(cudaFree(p), "cudaFree");
}

cudaStream_t CudaDevice::stream_of(StreamHandle h) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (h == 0 || h > streams_.size()) throw std::invalid_argument("unknown stream " + std::to_string(h));
  return streams_[h - 1];
}

cudaEvent_t CudaDevice::event_of(EventHandle h) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (h == 0 || h > events_.size()) throw std::invalid_argument("unknown event " + std::to_string(h));
  return events_[h - 1];
}

void* CudaDevice::resolve(const Span& span, std::uint64_t need, const char* what) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = buffers_.find(span.buffer);
  if (it == buffers_.end()) {
    throw std::invalid_argument(std::string(what) + ": unknown buffer " + std::to_string(span.buffer));
  }
  const Buffer& b = it->second;
  if (span.bytes < need || span.offset > b.bytes || span.bytes > b.bytes - span.offset) {
    throw std::out_of_range(std::string(what) + ": span [" + std::to_string(span.offset) + ", +" +
                            std::to_string(span.bytes) + ") of buffer " + std::to_string(span.buffer) + " (" +
                            std::to_string(b.bytes) + " bytes) does not hold the " + std::to_string(need) + " bytes needed");
  }
  return static_cast<char*>(b.ptr) + span.offset;
}

void* CudaDevice::staging(std::uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (bytes > staging_bytes_) {
    std::uint64_t size = std::max(bytes, 2 * staging_bytes_);
    void* p = nullptr;
    check(cudaHostAlloc(&p, size, cudaHostAllocPortable), "cudaHostAlloc (copy staging)");
    staging_.push_back(p);  // older staging may still be read by copies in flight: kept
    staging_bytes_ = size;
  }
  return staging_.back();
}

int CudaDevice::blocks_per_sm(std::uint32_t threads) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = occupancy_.find(threads);
    if (it != occupancy_.end()) return it->second;
  }
  int blocks = 0;
  check(kernels::cuda::standin_blocks_per_sm(static_cast<int>(threads), &blocks), "stand-in occupancy");
  std::lock_guard<std::mutex> lock(mutex_);
  occupancy_[threads] = blocks;
  return blocks;
}

void CudaDevice::record(EventHandle event, StreamHandle stream) {
  use_device();
  check(cudaEventRecord(event_of(event), stream_of(stream)), "cudaEventRecord");
}

void CudaDevice::wait(StreamHandle stream, EventHandle event) {
  use_device();
  check(cudaStreamWaitEvent(stream_of(stream), event_of(event), 0), "cudaStreamWaitEvent");
}

void CudaDevice::synchronize(EventHandle event) {
  use_device();
  check(cudaEventSynchronize(event_of(event)), "cudaEventSynchronize");
}

void CudaDevice::synchronize() {
  use_device();
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

Nanos CudaDevice::elapsed(EventHandle from, EventHandle to) {
  use_device();
  float ms = 0;
  check(cudaEventElapsedTime(&ms, event_of(from), event_of(to)), "cudaEventElapsedTime");
  return static_cast<Nanos>(static_cast<double>(ms) * 1e6);
}

Nanos CudaDevice::host_now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void CudaDevice::host_spin(Nanos duration) {
  Nanos until = host_now() + duration;
  while (host_now() < until) {
  }
}

void CudaDevice::copy_host(const Span& span, void* host, bool to_device) {
  use_device();
  void* device = resolve(span, span.bytes, to_device ? "upload" : "download");
  check(to_device ? cudaMemcpy(device, host, span.bytes, cudaMemcpyHostToDevice)
                  : cudaMemcpy(host, device, span.bytes, cudaMemcpyDeviceToHost),
        "cudaMemcpy");
}

namespace {

CudaDevice& as_cuda(Device& device) {
  auto* cuda = dynamic_cast<CudaDevice*>(&device);
  if (!cuda) throw std::invalid_argument("cuda_upload/cuda_download: '" + device.name() + "' is no CUDA device");
  return *cuda;
}

}  // namespace
}  // namespace dpro::executor::cuda

namespace dpro::executor {

void cuda_upload(Device& device, const Span& dst, const void* host) {
  cuda::as_cuda(device).copy_host(dst, const_cast<void*>(host), true);
}

void cuda_download(Device& device, const Span& src, void* host) { cuda::as_cuda(device).copy_host(src, host, false); }

std::unique_ptr<Device> open_cuda_device(int gpu_ordinal) {
  int count = 0;
  cuda::check(cudaGetDeviceCount(&count), "no usable GPU: cudaGetDeviceCount");
  if (gpu_ordinal < 0 || gpu_ordinal >= count) {
    throw std::runtime_error("no usable GPU: ordinal " + std::to_string(gpu_ordinal) + " of " + std::to_string(count) +
                             " CUDA device(s)");
  }
  return std::make_unique<cuda::CudaDevice>(gpu_ordinal);
}

}  // namespace dpro::executor
