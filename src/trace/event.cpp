#include "trace/event.h"

namespace dpro::trace {

const char* to_string(EventKind kind) {
  switch (kind) {
    case EventKind::kCpuOp: return "cpu_op";
    case EventKind::kUserAnnotation: return "user_annotation";
    case EventKind::kPythonFunction: return "python_function";
    case EventKind::kRuntimeCall: return "cuda_runtime";
    case EventKind::kDriverCall: return "cuda_driver";
    case EventKind::kKernel: return "kernel";
    case EventKind::kCollective: return "kernel";
    case EventKind::kMemcpy: return "gpu_memcpy";
    case EventKind::kMemset: return "gpu_memset";
    case EventKind::kSync: return "cuda_sync";
    case EventKind::kGpuAnnotation: return "gpu_user_annotation";
    case EventKind::kMarker: return "marker";
  }
  return "unknown";
}

bool is_gpu_work(EventKind kind) {
  return kind == EventKind::kKernel || kind == EventKind::kCollective || kind == EventKind::kMemcpy ||
         kind == EventKind::kMemset;
}

bool is_cpu_side(EventKind kind) {
  return kind == EventKind::kCpuOp || kind == EventKind::kUserAnnotation ||
         kind == EventKind::kPythonFunction || kind == EventKind::kRuntimeCall ||
         kind == EventKind::kDriverCall;
}

ResourceId TraceRank::intern_resource(ResourceKind kind, std::int64_t pid, std::int64_t tid) {
  // Ranks have few resources (threads and streams): a linear scan beats hashing here.
  for (ResourceId i = 0; i < resources.size(); ++i) {
    const Resource& r = resources[i];
    if (r.kind == kind && r.pid == pid && r.tid == tid) return i;
  }
  resources.push_back(Resource{kind, pid, tid, {}});
  return static_cast<ResourceId>(resources.size() - 1);
}

const TraceRank* TraceSet::find_rank(int rank) const {
  for (const TraceRank& r : ranks) {
    if (r.rank == rank) return &r;
  }
  return nullptr;
}

std::vector<std::string> TraceSet::gpu_names() const {
  std::vector<std::string> names;
  for (const TraceRank& r : ranks)
    for (const DeviceProperties& d : r.devices) names.push_back(d.name);
  return names;
}

}  // namespace dpro::trace
