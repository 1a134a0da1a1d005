// open_nccl_fabric (cuda_device.h): NCCL communicators over this process's CUDA devices, one per
// GPU, opened together by ncclCommInitAll; a device's collectives go through its CommMember.
// Compiled with DPRO_HAVE_NCCL where NCCL was found, else open_nccl_fabric says there is none.
#include "executor/cuda/cuda_device.h"

#if DPRO_HAVE_NCCL
#include <nccl.h>

#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "executor/cuda/cuda_check.h"
#include "executor/cuda/cuda_device_impl.h"

namespace dpro::executor::cuda {

namespace {

void check_nccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess && r != ncclInProgress)
    throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(r));
}

ncclDataType_t nccl_dtype(DType t) {
  switch (t) {
    case DType::kF32: return ncclFloat32;
    case DType::kF16: return ncclFloat16;
    case DType::kBF16: return ncclBfloat16;
    case DType::kF64: return ncclFloat64;
    case DType::kI32: return ncclInt32;
    case DType::kI64: return ncclInt64;
    case DType::kU8: return ncclUint8;
  }
  return ncclUint8;
}

// One device's member of one communicator. The data is synthetic: in-place operations, and an
// all-to-all that receives into the buffer it sends from, cost what the recorded ones did.
class NcclMember final : public CommMember {
 public:
  NcclMember(ncclComm_t comm, int rank, int size) : comm_(comm), rank_(rank), size_(size) {}

  void run(cudaStream_t s, const CollectiveCall& c, void* buffer) override {
    auto* base = static_cast<char*>(buffer);
    const std::size_t width = dtype_bytes(c.dtype);
    const std::size_t count = c.bytes / width;
    const std::size_t part = count / static_cast<std::size_t>(size_);  // of all_gather / reduce_scatter
    const ncclDataType_t t = nccl_dtype(c.dtype);
    if (c.op == "all_reduce") {
      check_nccl(ncclAllReduce(base, base, count, t, ncclSum, comm_, s), "ncclAllReduce");
    } else if (c.op == "all_gather") {
      check_nccl(ncclAllGather(base + rank_ * part * width, base, part, t, comm_, s), "ncclAllGather");
    } else if (c.op == "reduce_scatter") {
      check_nccl(ncclReduceScatter(base, base + rank_ * part * width, part, t, ncclSum, comm_, s), "ncclReduceScatter");
    } else if (c.op == "broadcast") {
      check_nccl(ncclBroadcast(base, base, count, t, 0, comm_, s), "ncclBroadcast");
    } else if (c.op == "all_to_all") {
      const std::size_t chunk = c.bytes / static_cast<std::size_t>(size_);
      check_nccl(ncclGroupStart(), "ncclGroupStart");
      for (int p = 0; p < size_; ++p) {
        check_nccl(ncclSend(base + p * chunk, chunk, ncclUint8, p, comm_, s), "ncclSend");
        check_nccl(ncclRecv(base + p * chunk, chunk, ncclUint8, p, comm_, s), "ncclRecv");
      }
      check_nccl(ncclGroupEnd(), "ncclGroupEnd");
    } else {
      throw std::runtime_error("collective " + c.op + " has no NCCL call here (send/recv run as stand-ins)");
    }
  }

 private:
  ncclComm_t comm_;
  int rank_, size_;
};

class NcclFabric final : public CollectiveFabric {
 public:
  ~NcclFabric() override {
    for (ncclComm_t c : comms_) ncclCommDestroy(c);  // none left after abort()
  }
  std::string name() const override { return "nccl"; }

  CommHandle open(const std::vector<Device*>& members) override {
    std::vector<CudaDevice*> devices;
    std::vector<int> ordinals;
    std::set<int> seen;
    for (Device* d : members) {
      auto* cd = dynamic_cast<CudaDevice*>(d);
      if (!cd) throw std::invalid_argument("NCCL communicator: a member is not a CUDA device");
      if (!seen.insert(cd->ordinal()).second)
        throw std::runtime_error("NCCL communicator: two ranks on GPU " + std::to_string(cd->ordinal()) +
                                 " (NCCL needs one GPU per rank)");
      devices.push_back(cd);
      ordinals.push_back(cd->ordinal());
    }
    std::vector<ncclComm_t> comms(members.size());
    check_nccl(ncclCommInitAll(comms.data(), static_cast<int>(comms.size()), ordinals.data()), "ncclCommInitAll");
    std::lock_guard lock(mutex_);
    const auto handle = static_cast<CommHandle>(++opened_);
    for (std::size_t i = 0; i < devices.size(); ++i) {
      comms_.push_back(comms[i]);
      devices[i]->join(handle, std::make_shared<NcclMember>(comms[i], static_cast<int>(i), static_cast<int>(comms.size())));
    }
    return handle;
  }

  // Kernels waiting for a rank that failed never end otherwise: ncclCommAbort ends them.
  void abort() override {
    std::lock_guard lock(mutex_);
    if (aborted_) return;
    aborted_ = true;
    for (ncclComm_t c : comms_) ncclCommAbort(c);
    comms_.clear();
  }

 private:
  std::mutex mutex_;
  std::vector<ncclComm_t> comms_;
  std::uint32_t opened_ = 0;
  bool aborted_ = false;
};

}  // namespace

}  // namespace dpro::executor::cuda

namespace dpro::executor {
std::unique_ptr<CollectiveFabric> open_nccl_fabric() { return std::make_unique<cuda::NcclFabric>(); }
}  // namespace dpro::executor

#else

namespace dpro::executor {
std::unique_ptr<CollectiveFabric> open_nccl_fabric() { return nullptr; }
}  // namespace dpro::executor

#endif
