#pragma once
// Decoding a native trace file into its records (no interpretation: see native_importer.h).
// A file that ends inside a record (job killed mid-write) or holds a malformed record yields
// every complete record before it plus one warning; a bad magic or a major version newer than
// kVersionMajor is an InputError.
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/log.h"
#include "trace/format/native_records.h"

namespace dpro::native {

// Records as stored: string fields are ids into NativeCapture::strings.
struct StoredApi {
  ApiKind kind;
  std::uint32_t cbid;
  std::int64_t start, dur;
  std::uint32_t pid, tid, correlation, name;
};
struct StoredKernel {
  std::int64_t start, dur;
  std::uint32_t device, context, stream, correlation, name;
  std::array<std::int32_t, 3> grid, block;
  std::uint32_t registers, shared_mem;
};
struct StoredCopy {  // memcpy and memset
  bool memset;
  std::int64_t start, dur;
  std::uint32_t device, context, stream, correlation;
  std::uint64_t bytes;
  std::uint32_t copy_kind;
};
struct StoredSync {
  std::int64_t start, dur;
  std::uint32_t type, context;
  std::uint64_t stream;
  std::uint32_t event_id, correlation;
};
struct StoredMarker {
  std::uint32_t flags;
  std::int64_t timestamp;
  std::uint32_t id, pid, tid, name, domain;
};
struct StoredNcclApi {
  std::int64_t start, dur;
  std::uint32_t pid, tid;
  std::uint64_t comm_hash;
  std::uint32_t func, datatype;
  std::uint64_t count;
};
struct StoredNcclLaunch {
  std::uint64_t launch_id, comm_hash, group_id;
  std::int64_t start, dur;
  std::uint32_t pid, tid;
};
struct StoredNcclColl {
  std::uint64_t id, comm_hash, group_id;
  std::uint32_t flags;
  std::int32_t rank;
  std::uint32_t func, datatype, algo, proto;
  std::uint64_t sequence, count;
  std::uint32_t channels;
  std::int32_t root_or_peer;
  std::int64_t start, dur;
  std::uint32_t pid, tid;
};
struct StoredNcclComm {
  std::uint64_t comm_hash;
  std::string name;
  std::int32_t nranks, rank, nnodes;
};
struct StoredDevice {
  std::uint32_t id;
  std::string name;
  std::uint64_t total_global_mem;
  std::uint32_t compute_major, compute_minor, num_sms;
};

struct NativeCapture {
  std::string path;
  std::uint16_t version_major = 0, version_minor = 0;
  Header header;
  std::unordered_map<std::string, std::string> metadata;
  std::vector<StoredDevice> devices;
  std::vector<StoredApi> apis;
  std::vector<StoredKernel> kernels;
  std::vector<StoredCopy> copies;
  std::vector<StoredSync> syncs;
  std::vector<CudaEventRecord> cuda_events;
  std::vector<ExternalCorrelationRecord> external_correlations;
  std::vector<StoredMarker> markers;
  std::vector<StoredNcclComm> nccl_comms;
  std::vector<StoredNcclApi> nccl_apis;
  std::vector<StoredNcclLaunch> nccl_launches;
  std::vector<StoredNcclColl> nccl_colls;
  std::vector<NcclKernelChRecord> nccl_kernel_channels;
  std::uint64_t dropped_records = 0;  // sum of Dropped records
  std::uint64_t record_count = 0;     // complete records read
  bool has_footer = false;            // false: the writer did not close the file
  bool truncated = false;             // ended inside a record, or a record was malformed

  // Text of a string id; "" for 0, "<string N>" when its definition was lost.
  std::string_view str(std::uint32_t id) const;
  std::vector<std::string> strings;  // index = id; defined ones non-empty
  // Ids far beyond the definitions read so far (ids are given out densely, so only a corrupt
  // trace has them) are kept here: a huge id costs one entry, not a table up to it.
  std::map<std::uint32_t, std::string> sparse_strings;
};

// True when head starts with the native magic.
bool has_native_magic(std::string_view head);

NativeCapture read_native_capture(const std::string& path, Logger& log);
// The same decoding of a trace held in memory (`path` names it in errors), fed to the decoder
// `chunk_bytes` at a time as a file's chunks are: the result does not depend on the chunking.
NativeCapture parse_native_capture(std::string_view bytes, const std::string& path, Logger& log,
                                   std::size_t chunk_bytes = std::size_t{1} << 20);

}  // namespace dpro::native
