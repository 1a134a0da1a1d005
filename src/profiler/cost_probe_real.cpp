#include "profiler/cost_probe_real.h"

#include <cupti.h>
#include <dlfcn.h>

#include <ctime>

namespace dpro::profiler {
namespace {

// The two entry points, declared here rather than through the CUDA headers: only their C
// signatures matter (int is the size of cudaError_t and CUresult).
using GetDevice = int (*)(int*);       // cudaGetDevice
using DeviceGetCount = int (*)(int*);  // cuDeviceGetCount

void* already_loaded(std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (void* h = dlopen(n, RTLD_NOW | RTLD_NOLOAD)) return h;
  return nullptr;
}

std::int64_t clock_ns(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

class RealCostProbe final : public CostProbe {
 public:
  RealCostProbe() {
    if (void* cudart = already_loaded({"libcudart.so.13", "libcudart.so.12", "libcudart.so"}))
      get_device_ = reinterpret_cast<GetDevice>(dlsym(cudart, "cudaGetDevice"));
    if (void* cuda = already_loaded({"libcuda.so.1", "libcuda.so"}))
      device_count_ = reinterpret_cast<DeviceGetCount>(dlsym(cuda, "cuDeviceGetCount"));
    if (get_device_)
      calls_.push_back({"runtime", native::ApiKind::kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, "cudaGetDevice"});
    if (device_count_)
      calls_.push_back({"driver", native::ApiKind::kDriver, CUPTI_DRIVER_TRACE_CBID_cuDeviceGetCount, "cuDeviceGetCount"});
  }

  const std::vector<ProbeCall>& calls() const override { return calls_; }

  bool ready() override {
    int n = 0;
    return device_count_ && device_count_(&n) == 0;
  }

  void call(std::size_t index, int n) override {
    int out = 0;
    if (calls_[index].kind == native::ApiKind::kRuntime) {
      for (int i = 0; i < n; ++i) get_device_(&out);
    } else {
      for (int i = 0; i < n; ++i) device_count_(&out);
    }
  }

  std::int64_t now_ns() override { return clock_ns(CLOCK_MONOTONIC); }
  std::int64_t trace_clock_ns() override { return clock_ns(CLOCK_REALTIME); }

 private:
  GetDevice get_device_ = nullptr;
  DeviceGetCount device_count_ = nullptr;
  std::vector<ProbeCall> calls_;
};

}  // namespace

std::unique_ptr<CostProbe> make_real_cost_probe() { return std::make_unique<RealCostProbe>(); }

}  // namespace dpro::profiler
