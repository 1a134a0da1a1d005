#pragma once
// CudaDevice: executor::Device on the CUDA runtime (internal to dpro_executor_cuda; users call
// open_cuda_device). Handle tables sit behind one mutex; the work of a launch (cuBLASLt, NVRTC,
// kernel launches) runs outside it, so host threads issue in parallel as the recorded CPU
// threads did. Handles count from 1 (0 is never handed out).
#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "executor/cuda/elementwise_jit.h"
#include "executor/cuda/gemm_lt.h"
#include "executor/device.h"
#include "kernels/standin_plan.h"

namespace dpro::executor::cuda {

// This device's member of a communicator (nccl_fabric.cpp): runs a collective of the group on
// `stream` over `buffer` (c.bytes of device memory). Kept behind this interface so that the device
// compiles without NCCL's headers.
class CommMember {
 public:
  virtual ~CommMember() = default;
  virtual void run(cudaStream_t stream, const CollectiveCall& c, void* buffer) = 0;
};

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(int ordinal);
  ~CudaDevice() override;

  std::string name() const override { return name_; }
  StreamHandle create_stream() override;
  EventHandle create_event() override;
  BufferHandle allocate(std::uint64_t bytes) override;
  void free(BufferHandle buffer) override;
  void launch(StreamHandle stream, const Launch& launch) override;
  void record(EventHandle event, StreamHandle stream) override;
  void wait(StreamHandle stream, EventHandle event) override;
  void synchronize(EventHandle event) override;
  void synchronize() override;
  Nanos elapsed(EventHandle from, EventHandle to) override;
  Nanos host_now() override;
  void host_spin(Nanos duration) override;

  // cuda_upload / cuda_download.
  void copy_host(const Span& span, void* host, bool to_device);
  int ordinal() const { return ordinal_; }
  // The fabric that opened communicator `comm` over this device (nccl_fabric.cpp); shared so that
  // it lives as long as either.
  void join(CommHandle comm, std::shared_ptr<CommMember> member);

 private:
  struct Buffer {
    void* ptr = nullptr;
    std::uint64_t bytes = 0;
  };

  void use_device() const;
  cudaStream_t stream_of(StreamHandle h);
  cudaEvent_t event_of(EventHandle h);
  // The device address of `span`, which must lie in its buffer and hold at least `need` bytes.
  void* resolve(const Span& span, std::uint64_t need, const char* what);
  void* staging(std::uint64_t bytes);
  int blocks_per_sm(std::uint32_t threads);
  void calibrate_standin();

  void run(cudaStream_t s, const StandinKernel& k);
  void run(cudaStream_t s, const GemmCall& g);
  void run(cudaStream_t s, const ElementwiseChain& c);
  void run(cudaStream_t s, const CastCall& c);
  void run(cudaStream_t s, const CompressCall& c);
  void run(cudaStream_t s, const CopyCall& c);
  void run(cudaStream_t s, const MemsetCall& m);
  void run(cudaStream_t s, const CollectiveCall& c);

  int ordinal_;
  std::string name_;
  int sm_count_ = 0;
  std::unique_ptr<LtGemm> gemm_;
  std::unique_ptr<ElementwiseJit> jit_;
  kernels::StandinCalibration calibration_;

  std::mutex mutex_;  // guards everything below
  std::vector<cudaStream_t> streams_;  // handle h is streams_[h - 1]
  std::vector<cudaEvent_t> events_;
  std::unordered_map<BufferHandle, Buffer> buffers_;
  BufferHandle next_buffer_ = 1;
  std::map<std::uint32_t, int> occupancy_;  // stand-in threads per block -> resident blocks per SM
  std::vector<void*> staging_;  // pinned host memory; the last is the current, older ones kept until the end
  std::uint64_t staging_bytes_ = 0;
  std::map<CommHandle, std::shared_ptr<CommMember>> comms_;
};

}  // namespace dpro::executor::cuda
