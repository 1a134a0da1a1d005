#pragma once
// Packs real CUPTI activity record structs back to back into an 8-byte aligned buffer, the
// way CUPTI fills its activity buffers, for tests and the benchmark.
#include <cupti.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace dpro::test {

class ActivityBufferBuilder {
 public:
  template <class Record>
  ActivityBufferBuilder& add(const Record& r) {
    std::size_t at = bytes_.size();
    bytes_.resize(at + sizeof(Record));
    std::memcpy(bytes_.data() + at, &r, sizeof(Record));
    return *this;
  }
  const std::uint8_t* data() const { return reinterpret_cast<const std::uint8_t*>(bytes_.data()); }
  std::size_t bytes() const { return bytes_.size(); }

 private:
  std::vector<std::uint8_t> bytes_;  // operator new storage: 16-byte aligned
};

inline CUpti_ActivityAPI api_record(bool driver, std::uint32_t cbid, std::uint64_t start,
                                    std::uint64_t end, std::uint32_t corr, std::uint32_t tid = 11) {
  CUpti_ActivityAPI a{};
  a.kind = driver ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME;
  a.cbid = cbid;
  a.start = start;
  a.end = end;
  a.processId = 10;
  a.threadId = tid;
  a.correlationId = corr;
  return a;
}

inline CUpti_ActivityKernel10 kernel_record(const char* name, std::uint64_t start, std::uint64_t end,
                                            std::uint32_t corr, std::uint32_t stream = 7) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start;
  k.end = end;
  k.deviceId = 0;
  k.contextId = 1;
  k.streamId = stream;
  k.gridX = 80;
  k.gridY = 1;
  k.gridZ = 1;
  k.blockX = 256;
  k.blockY = 1;
  k.blockZ = 1;
  k.registersPerThread = 64;
  k.correlationId = corr;
  k.name = name;
  return k;
}

inline CUpti_ActivityMemcpy6 memcpy_record(std::uint64_t start, std::uint64_t end, std::uint32_t corr,
                                           std::uint64_t bytes) {
  CUpti_ActivityMemcpy6 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  m.bytes = bytes;
  m.start = start;
  m.end = end;
  m.deviceId = 0;
  m.contextId = 1;
  m.streamId = 7;
  m.correlationId = corr;
  return m;
}

inline CUpti_ActivityExternalCorrelation external_record(std::uint64_t external, std::uint32_t corr) {
  CUpti_ActivityExternalCorrelation e{};
  e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;
  e.externalId = external;
  e.correlationId = corr;
  return e;
}

inline CUpti_ActivityMarker2 marker_record(CUpti_ActivityFlag flags, std::uint64_t t, std::uint32_t id,
                                           const char* name) {
  CUpti_ActivityMarker2 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MARKER;
  m.flags = flags;
  m.timestamp = t;
  m.id = id;
  m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  m.objectId.pt.processId = 10;
  m.objectId.pt.threadId = 11;
  m.name = name;
  m.domain = nullptr;
  return m;
}

}  // namespace dpro::test
