#pragma once
// The dpro native trace format (docs/native-format.md is the specification): an 8-byte magic,
// a 2+2-byte little-endian version, then a stream of length-prefixed records
// `u8 type, varint payload_length, payload`. Payload integers are LEB128 varints (signed ones
// zigzag-encoded); times are nanoseconds relative to the header's base_time. Readers skip
// record types they do not know (newer minor versions) and stop with a warning at a truncated
// record. This header is shared by the profiler (writer) and the trace importer (reader) and
// depends on nothing but the standard library.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dpro::native {

inline constexpr char kMagic[8] = {'D', 'P', 'R', 'O', 'T', 'R', 'C', '\n'};
inline constexpr std::uint16_t kVersionMajor = 1;
inline constexpr std::uint16_t kVersionMinor = 0;
inline constexpr std::size_t kPreambleSize = 12;  // magic + major + minor

enum class RecordType : std::uint8_t {
  kHeader = 1,
  kString = 2,
  kMetadata = 3,
  kDevice = 4,
  kApi = 5,
  kKernel = 6,
  kMemcpy = 7,
  kMemset = 8,
  kSync = 9,
  kCudaEvent = 10,
  kExternalCorrelation = 11,
  kMarker = 12,
  kDropped = 13,
  kNcclComm = 14,
  kNcclApi = 15,
  kNcclLaunch = 16,
  kNcclColl = 17,
  kNcclKernelCh = 18,
  kFooter = 19,
};

enum class ApiKind : std::uint8_t { kRuntime = 0, kDriver = 1 };

// Marker flags, the same bits as CUPTI_ACTIVITY_FLAG_MARKER_*.
inline constexpr std::uint32_t kMarkerInstant = 1u << 0;
inline constexpr std::uint32_t kMarkerStart = 1u << 1;
inline constexpr std::uint32_t kMarkerEnd = 1u << 2;

// NcclColl flags.
inline constexpr std::uint32_t kCollIsP2p = 1u << 0;
inline constexpr std::uint32_t kCollHasSequence = 1u << 1;

// External correlation kind the profiler pushes around NCCL kernel launches
// (CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2; Kineto uses CUSTOM0/1).
inline constexpr std::uint32_t kNcclExternalKind = 5;

// CUPTI callback ids that delimit user-defined profiling ranges.
inline constexpr std::uint32_t kCbidCudaProfilerStart = 171;  // runtime
inline constexpr std::uint32_t kCbidCudaProfilerStop = 172;
inline constexpr std::uint32_t kCbidCuProfilerStart = 308;    // driver
inline constexpr std::uint32_t kCbidCuProfilerStop = 309;

// Metadata keys of dpro-profile's calibration of what its records cost the job's host
// (docs/native-format.md, "Metadata keys"): the costs ("runtime=2104ns,driver=1876ns"), how they
// were measured (or why not), and the record classes the session recorded without a figure.
inline constexpr char kMetaRecordCost[] = "record_cost";
inline constexpr char kMetaRecordCostCalibration[] = "record_cost.calibration";
inline constexpr char kMetaRecordCostUncalibrated[] = "record_cost.uncalibrated";

// Sync stream field when the sync is not on a stream.
inline constexpr std::uint64_t kNoStream = 0xffffffffu;

inline std::uint64_t zigzag(std::int64_t v) {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
inline std::int64_t unzigzag(std::uint64_t v) {
  return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
}

// Writes v as LEB128 into out (at most 10 bytes); returns the bytes written.
inline std::size_t put_varint(char* out, std::uint64_t v) {
  std::size_t n = 0;
  while (v >= 0x80) {
    out[n++] = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out[n++] = static_cast<char>(v);
  return n;
}

// Reads a varint from [pos, end); nullopt when it runs past end or exceeds 64 bits.
inline std::optional<std::uint64_t> get_varint(const char*& pos, const char* end) {
  std::uint64_t v = 0;
  for (int shift = 0; shift < 64 && pos < end; shift += 7) {
    auto byte = static_cast<std::uint8_t>(*pos++);
    v |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return v;
  }
  return std::nullopt;
}

}  // namespace dpro::native
