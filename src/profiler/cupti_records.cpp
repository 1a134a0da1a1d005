#include "profiler/cupti_records.h"

#include <cupti.h>

namespace dpro::profiler {
namespace {

// Prefix layouts we rely on: CUDA 13.0 record sizes (checked against cupti_activity.h).
static_assert(sizeof(CUpti_ActivityKernel10) == 216);
static_assert(sizeof(CUpti_ActivityAPI) == 40);
static_assert(sizeof(CUpti_ActivityMemcpy6) == 96);
static_assert(sizeof(CUpti_ActivityMarker2) == 56);
static_assert(sizeof(CUpti_ActivityExternalCorrelation) == 24);

void encode_kernel(const CUpti_ActivityKernel10& k, native::RecordEncoder& out) {
  native::KernelRecord r;
  r.start = k.start;
  r.end = k.end;
  r.device = k.deviceId;
  r.context = k.contextId;
  r.stream = k.streamId;
  r.correlation = k.correlationId;
  r.name = k.name ? std::string_view(k.name) : std::string_view("<unnamed kernel>");
  r.grid = {k.gridX, k.gridY, k.gridZ};
  r.block = {k.blockX, k.blockY, k.blockZ};
  r.registers = k.registersPerThread;
  r.shared_mem = static_cast<std::uint32_t>(k.staticSharedMemory + k.dynamicSharedMemory);
  out.add(r);
}

void encode_api(const CUpti_ActivityAPI& a, bool driver, native::RecordEncoder& out,
                CallbackNames& names) {
  native::ApiRecord r;
  r.kind = driver ? native::ApiKind::kDriver : native::ApiKind::kRuntime;
  r.cbid = a.cbid;
  r.start = a.start;
  r.end = a.end;
  r.pid = a.processId;
  r.tid = a.threadId;
  r.correlation = a.correlationId;
  r.name = driver ? names.driver(a.cbid) : names.runtime(a.cbid);
  out.add(r);
}

void encode_memcpy(const CUpti_ActivityMemcpy6& m, native::RecordEncoder& out) {
  out.add(native::MemcpyRecord{m.start, m.end, m.deviceId, m.contextId, m.streamId,
                               m.correlationId, m.bytes, m.copyKind, m.srcKind, m.dstKind, 0, 0});
}

void encode_peer_copy(const CUpti_ActivityMemcpyPtoP4& m, native::RecordEncoder& out) {
  out.add(native::MemcpyRecord{m.start, m.end, m.deviceId, m.contextId, m.streamId,
                               m.correlationId, m.bytes, m.copyKind, m.srcKind, m.dstKind,
                               m.srcDeviceId, m.dstDeviceId});
}

void encode_marker(const CUpti_ActivityMarker2& m, native::RecordEncoder& out) {
  native::MarkerRecord r;
  r.flags = m.flags;
  r.timestamp = m.timestamp;
  r.id = m.id;
  if (m.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || m.objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS) {
    r.pid = m.objectId.pt.processId;
    r.tid = m.objectId.pt.threadId;
  }
  if (m.name) r.name = m.name;
  if (m.domain) r.domain = m.domain;
  out.add(r);
}

void encode_device(const CUpti_ActivityDevice5& d, native::RecordEncoder& out) {
  out.add(native::DeviceRecord{d.id, d.name ? d.name : "", d.globalMemorySize,
                               d.computeCapabilityMajor, d.computeCapabilityMinor,
                               d.numMultiprocessors});
}

// Whether `rec` is an API record of the calibration's own calls.
bool is_probe_record(const CUpti_Activity* rec, const ProbeRecordFilter* skip) {
  if (!skip || (rec->kind != CUPTI_ACTIVITY_KIND_RUNTIME && rec->kind != CUPTI_ACTIVITY_KIND_DRIVER)) return false;
  const auto& a = *reinterpret_cast<const CUpti_ActivityAPI*>(rec);
  return skip->drops(rec->kind == CUPTI_ACTIVITY_KIND_DRIVER ? native::ApiKind::kDriver : native::ApiKind::kRuntime,
                     a.cbid, static_cast<std::int64_t>(a.start));
}

// One record; false when its kind is not kept.
bool encode_record(const CUpti_Activity* rec, native::RecordEncoder& out, CallbackNames& names) {
  switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      encode_kernel(*reinterpret_cast<const CUpti_ActivityKernel10*>(rec), out);
      return true;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
      encode_api(*reinterpret_cast<const CUpti_ActivityAPI*>(rec),
                 rec->kind == CUPTI_ACTIVITY_KIND_DRIVER, out, names);
      return true;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      encode_memcpy(*reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec), out);
      return true;
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      encode_peer_copy(*reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(rec), out);
      return true;
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto& m = *reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
      out.add(native::MemsetRecord{m.start, m.end, m.deviceId, m.contextId, m.streamId,
                                   m.correlationId, m.bytes, m.value});
      return true;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto& s = *reinterpret_cast<const CUpti_ActivitySynchronization2*>(rec);
      out.add(native::SyncRecord{s.start, s.end, static_cast<std::uint32_t>(s.type), s.contextId,
                                 s.streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? native::kNoStream : s.streamId,
                                 s.cudaEventId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? 0 : s.cudaEventId,
                                 s.correlationId});
      return true;
    }
    case CUPTI_ACTIVITY_KIND_CUDA_EVENT: {
      const auto& e = *reinterpret_cast<const CUpti_ActivityCudaEvent2*>(rec);
      out.add(native::CudaEventRecord{e.correlationId, e.eventId, e.streamId, e.deviceId, e.contextId});
      return true;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto& e = *reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(rec);
      out.add(native::ExternalCorrelationRecord{static_cast<std::uint32_t>(e.externalKind),
                                                e.externalId, e.correlationId});
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MARKER:
      encode_marker(*reinterpret_cast<const CUpti_ActivityMarker2*>(rec), out);
      return true;
    case CUPTI_ACTIVITY_KIND_DEVICE:
      encode_device(*reinterpret_cast<const CUpti_ActivityDevice5*>(rec), out);
      return true;
    default:
      return false;
  }
}

}  // namespace

std::string cupti_callback_name(int domain, std::uint32_t cbid) {
  const char* text = nullptr;
  if (cuptiGetCallbackName(static_cast<CUpti_CallbackDomain>(domain), cbid, &text) != CUPTI_SUCCESS || !text) return {};
  return text;
}

std::string_view CallbackNames::lookup(std::vector<std::string>& table, int domain, std::uint32_t cbid) {
  if (cbid >= 100000) return "<bad cbid>";
  if (table.size() <= cbid) table.resize(cbid + 1);
  std::string& name = table[cbid];
  if (name.empty()) {
    name = cupti_callback_name(domain, cbid);
    if (name.empty())
      name = (domain == CUPTI_CB_DOMAIN_DRIVER_API ? "driver_cbid_" : "runtime_cbid_") + std::to_string(cbid);
  }
  return name;
}

BufferParseResult encode_activity_buffer(const std::uint8_t* buffer, std::size_t valid_size,
                                         native::RecordEncoder& out, CallbackNames& names,
                                         const ProbeRecordFilter* skip) {
  BufferParseResult result;
  CUpti_Activity* rec = nullptr;
  auto* bytes = const_cast<std::uint8_t*>(buffer);  // CUPTI's signature is not const-correct
  while (cuptiActivityGetNextRecord(bytes, valid_size, &rec) == CUPTI_SUCCESS) {
    if (!is_probe_record(rec, skip) && encode_record(rec, out, names)) ++result.records;
    else ++result.ignored;
  }
  return result;
}

}  // namespace dpro::profiler
