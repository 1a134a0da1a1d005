#include "trace/event.h"

#include "core/strings.h"

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

std::int64_t element_bytes(std::string_view dtype) {
  std::string d = ascii_lower(dtype);
  for (const std::string_view prefix : {"nccl", "c10::", "at::", "torch."}) {
    if (d.starts_with(prefix)) d.erase(0, prefix.size());
  }
  if (d == "float" || d == "float32" || d == "int" || d == "int32" || d == "uint32" || d == "unsigned int")
    return 4;
  if (d == "half" || d == "float16" || d == "bfloat16" || d == "short" || d == "short int" || d == "int16" ||
      d == "uint16")
    return 2;
  if (d == "double" || d == "float64" || d == "long" || d == "long int" || d == "long long" || d == "int64" ||
      d == "uint64" || d == "unsigned long" || d == "complex<float>")
    return 8;
  if (d == "byte" || d == "char" || d == "signed char" || d == "unsigned char" || d == "bool" || d == "int8" ||
      d == "uint8" || d.starts_with("float8"))
    return 1;
  if (d == "complex<double>") return 16;
  return 0;
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
