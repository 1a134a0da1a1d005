#include "trace/native/native_reader.h"

#include <cstdlib>
#include <cstring>

#include "core/byte_source.h"
#include "core/error.h"
#include "trace/event.h"

namespace dpro::native {
namespace {

// Reads fields of one record payload; ok() turns false at the first field past the end.
class Cursor {
 public:
  Cursor(const char* pos, const char* end) : pos_(pos), end_(end) {}
  std::uint64_t u() {
    auto v = get_varint(pos_, end_);
    if (!v) ok_ = false;
    return v.value_or(0);
  }
  std::uint32_t u32() { return static_cast<std::uint32_t>(u()); }
  std::int64_t z() { return unzigzag(u()); }
  std::int32_t z32() { return static_cast<std::int32_t>(z()); }
  std::string text() {
    std::uint64_t n = u();
    if (!ok_ || n > static_cast<std::uint64_t>(end_ - pos_)) {
      ok_ = false;
      return {};
    }
    std::string s(pos_, n);
    pos_ += n;
    return s;
  }
  bool ok() const { return ok_; }
  void fail() { ok_ = false; }

 private:
  const char* pos_;
  const char* end_;
  bool ok_ = true;
};

class Decoder {
 public:
  explicit Decoder(NativeCapture& out) : out_(out) {}
  // Decodes one record payload; false when malformed.
  bool decode(RecordType type, Cursor& c);

 private:
  // An absolute time (an offset from the header's base time) and a duration, each within the
  // bound every trace is held to (trace/event.h); beyond it the record is malformed. Both terms
  // are bounded before the sum is formed, so it cannot overflow.
  static std::int64_t time(Cursor& c, std::int64_t base) {
    const std::int64_t offset = c.z();
    const auto within = [](std::int64_t t) { return t >= -trace::kMaxTraceNanos && t <= trace::kMaxTraceNanos; };
    if (!within(offset) || !within(base) || !within(offset + base)) {
      c.fail();
      return 0;
    }
    return offset + base;
  }
  std::int64_t time(Cursor& c) const { return time(c, out_.header.base_time); }
  static std::int64_t duration(Cursor& c) {
    const std::uint64_t d = c.u();
    if (d > static_cast<std::uint64_t>(trace::kMaxTraceNanos)) {
      c.fail();
      return 0;
    }
    return static_cast<std::int64_t>(d);
  }
  void header(Cursor& c);
  void api(Cursor& c);
  void kernel(Cursor& c);
  void copy(Cursor& c, bool memset);
  void nccl_coll(Cursor& c);
  void string_definition(Cursor& c);
  void metadata(Cursor& c);
  void device(Cursor& c);
  void sync(Cursor& c);
  void cuda_event(Cursor& c);
  void external_correlation(Cursor& c);
  void marker(Cursor& c);
  void dropped(Cursor& c);
  void nccl_comm(Cursor& c);
  void nccl_api(Cursor& c);
  void nccl_launch(Cursor& c);
  void nccl_kernel_channel(Cursor& c);
  NativeCapture& out_;
  bool ok_ = true;  // false when a record's content is invalid though its fields parsed
};

void Decoder::header(Cursor& c) {
  auto& h = out_.header;
  h.host = c.text();
  h.rank = c.z();
  h.local_rank = c.z();
  h.world_size = c.z();
  h.pid = c.u();
  h.clock_domain = c.text();
  h.cupti_version = c.u();
  h.nccl_version = c.u();
  h.base_time = c.z();
}

void Decoder::api(Cursor& c) {
  StoredApi a{};
  a.kind = c.u() == 1 ? ApiKind::kDriver : ApiKind::kRuntime;
  a.cbid = c.u32();
  a.start = time(c);
  a.dur = duration(c);
  a.pid = c.u32();
  a.tid = c.u32();
  a.correlation = c.u32();
  a.name = c.u32();
  if (c.ok()) out_.apis.push_back(a);
}

void Decoder::kernel(Cursor& c) {
  StoredKernel k{};
  k.start = time(c);
  k.dur = duration(c);
  k.device = c.u32();
  k.context = c.u32();
  k.stream = c.u32();
  k.correlation = c.u32();
  k.name = c.u32();
  for (auto& v : k.grid) v = c.z32();
  for (auto& v : k.block) v = c.z32();
  k.registers = c.u32();
  k.shared_mem = c.u32();
  if (c.ok()) out_.kernels.push_back(k);
}

void Decoder::copy(Cursor& c, bool memset) {
  StoredCopy m{};
  m.memset = memset;
  m.start = time(c);
  m.dur = duration(c);
  m.device = c.u32();
  m.context = c.u32();
  m.stream = c.u32();
  m.correlation = c.u32();
  m.bytes = c.u();
  m.copy_kind = memset ? 0 : c.u32();
  if (c.ok()) out_.copies.push_back(m);
}

void Decoder::nccl_coll(Cursor& c) {
  StoredNcclColl n{};
  n.id = c.u();
  n.comm_hash = c.u();
  n.group_id = c.u();
  n.flags = c.u32();
  n.rank = c.z32();
  n.func = c.u32();
  n.datatype = c.u32();
  n.algo = c.u32();
  n.proto = c.u32();
  n.sequence = c.u();
  n.count = c.u();
  n.channels = c.u32();
  n.root_or_peer = c.z32();
  n.start = time(c);
  n.dur = duration(c);
  n.pid = c.u32();
  n.tid = c.u32();
  if (c.ok()) out_.nccl_colls.push_back(n);
}

void Decoder::string_definition(Cursor& c) {
  std::uint64_t id = c.u();
  std::string text = c.text();
  if (!c.ok() || id == 0 || id > (1u << 30)) {
    ok_ = false;
    return;
  }
  // Definitions may arrive out of id order (threads' batches), never far out of it.
  const std::uint64_t dense_limit = 2 * out_.record_count + (1u << 16);
  if (id >= dense_limit) {
    out_.sparse_strings[static_cast<std::uint32_t>(id)] = std::move(text);
    return;
  }
  if (out_.strings.size() <= id) out_.strings.resize(id + 1);
  out_.strings[id] = std::move(text);
}

void Decoder::metadata(Cursor& c) {
  std::string key = c.text();
  std::string value = c.text();
  if (c.ok()) out_.metadata[key] = std::move(value);
}

void Decoder::device(Cursor& c) {
  StoredDevice d{};
  d.id = c.u32();
  d.name = c.text();
  d.total_global_mem = c.u();
  d.compute_major = c.u32();
  d.compute_minor = c.u32();
  d.num_sms = c.u32();
  if (c.ok()) out_.devices.push_back(d);
}

void Decoder::sync(Cursor& c) {
  StoredSync s{};
  s.start = time(c);
  s.dur = duration(c);
  s.type = c.u32();
  s.context = c.u32();
  s.stream = c.u();
  s.event_id = c.u32();
  s.correlation = c.u32();
  if (c.ok()) out_.syncs.push_back(s);
}

void Decoder::cuda_event(Cursor& c) {
  CudaEventRecord e{};
  e.correlation = c.u32();
  e.event_id = c.u32();
  e.stream = c.u32();
  e.device = c.u32();
  e.context = c.u32();
  if (c.ok()) out_.cuda_events.push_back(e);
}

void Decoder::external_correlation(Cursor& c) {
  ExternalCorrelationRecord e{};
  e.kind = c.u32();
  e.external_id = c.u();
  e.correlation = c.u32();
  if (c.ok()) out_.external_correlations.push_back(e);
}

void Decoder::marker(Cursor& c) {
  StoredMarker m{};
  m.flags = c.u32();
  m.timestamp = time(c);
  m.id = c.u32();
  m.pid = c.u32();
  m.tid = c.u32();
  m.name = c.u32();
  m.domain = c.u32();
  if (c.ok()) out_.markers.push_back(m);
}

void Decoder::dropped(Cursor& c) {
  std::uint64_t n = c.u();
  if (c.ok()) out_.dropped_records += n;
}

void Decoder::nccl_comm(Cursor& c) {
  StoredNcclComm n{};
  n.comm_hash = c.u();
  n.name = c.text();
  n.nranks = c.z32();
  n.rank = c.z32();
  n.nnodes = c.z32();
  if (c.ok()) out_.nccl_comms.push_back(n);
}

void Decoder::nccl_api(Cursor& c) {
  StoredNcclApi n{};
  n.start = time(c);
  n.dur = duration(c);
  n.pid = c.u32();
  n.tid = c.u32();
  n.comm_hash = c.u();
  n.func = c.u32();
  n.datatype = c.u32();
  n.count = c.u();
  if (c.ok()) out_.nccl_apis.push_back(n);
}

void Decoder::nccl_launch(Cursor& c) {
  StoredNcclLaunch n{};
  n.launch_id = c.u();
  n.comm_hash = c.u();
  n.group_id = c.u();
  n.start = time(c);
  n.dur = duration(c);
  n.pid = c.u32();
  n.tid = c.u32();
  if (c.ok()) out_.nccl_launches.push_back(n);
}

void Decoder::nccl_kernel_channel(Cursor& c) {
  NcclKernelChRecord k{};
  k.coll_id = c.u();
  k.channel = c.u32();
  k.gpu_start = c.u();
  k.gpu_stop = c.u();
  if (c.ok()) out_.nccl_kernel_channels.push_back(k);
}

bool Decoder::decode(RecordType type, Cursor& c) {
  ok_ = true;
  switch (type) {
    case RecordType::kHeader: header(c); break;
    case RecordType::kString: string_definition(c); break;
    case RecordType::kMetadata: metadata(c); break;
    case RecordType::kDevice: device(c); break;
    case RecordType::kApi: api(c); break;
    case RecordType::kKernel: kernel(c); break;
    case RecordType::kMemcpy: copy(c, false); break;
    case RecordType::kMemset: copy(c, true); break;
    case RecordType::kSync: sync(c); break;
    case RecordType::kCudaEvent: cuda_event(c); break;
    case RecordType::kExternalCorrelation: external_correlation(c); break;
    case RecordType::kMarker: marker(c); break;
    case RecordType::kDropped: dropped(c); break;
    case RecordType::kNcclComm: nccl_comm(c); break;
    case RecordType::kNcclApi: nccl_api(c); break;
    case RecordType::kNcclLaunch: nccl_launch(c); break;
    case RecordType::kNcclColl: nccl_coll(c); break;
    case RecordType::kNcclKernelCh: nccl_kernel_channel(c); break;
    case RecordType::kFooter: out_.has_footer = true; break;
    default: break;  // a record type from a newer minor version: skipped
  }
  return ok_ && c.ok();
}

void check_preamble(const std::string& path, const std::string& data, NativeCapture& out) {
  if (data.size() < kPreambleSize || !has_native_magic(data))
    throw InputError(path, "preamble", "not a dpro native trace (bad magic)");
  auto le16 = [&](std::size_t at) {
    return static_cast<std::uint16_t>(static_cast<std::uint8_t>(data[at]) |
                                      (static_cast<std::uint8_t>(data[at + 1]) << 8));
  };
  out.version_major = le16(8);
  out.version_minor = le16(10);
  if (out.version_major > kVersionMajor)
    throw InputError(path, "version",
                     "format version " + std::to_string(out.version_major) + "." +
                         std::to_string(out.version_minor) +
                         " is newer than this dpro supports (" + std::to_string(kVersionMajor) +
                         ".x); upgrade dpro to read it");
  if (out.version_major == 0) throw InputError(path, "version", "invalid format version 0");
}

// The longest record the reader buffers (a string or metadata record: kernel names run to a few
// KB): a length beyond it is a corrupt record, not a reason to hold gigabytes of the stream.
constexpr std::uint64_t kMaxRecordBytes = 64ull << 20;

// Parses the complete records at the front of data; returns the bytes consumed, or npos when
// a record is malformed.
std::size_t parse_records(const std::string& data, std::size_t pos, Decoder& decoder,
                          NativeCapture& out, bool& malformed) {
  const char* base = data.data();
  const char* end = base + data.size();
  while (true) {
    const char* p = base + pos;
    if (p >= end) return pos;
    auto type = static_cast<RecordType>(static_cast<std::uint8_t>(*p++));
    auto len = get_varint(p, end);
    if (len && *len > kMaxRecordBytes) {  // no record is that long: a corrupt length, not one to buffer
      malformed = true;
      return pos;
    }
    if (!len || *len > static_cast<std::uint64_t>(end - p)) {
      if (!len && end - p >= 10) malformed = true;
      return pos;  // incomplete: wait for more bytes
    }
    if (out.record_count == 0 && type != RecordType::kHeader) {
      malformed = true;
      return pos;
    }
    Cursor cursor(p, p + *len);
    if (!decoder.decode(type, cursor)) {
      malformed = true;
      return pos;
    }
    ++out.record_count;
    pos = static_cast<std::size_t>(p + *len - base);
  }
}

}  // namespace

bool has_native_magic(std::string_view head) {
  return head.size() >= sizeof kMagic && std::memcmp(head.data(), kMagic, sizeof kMagic) == 0;
}

std::string_view NativeCapture::str(std::uint32_t id) const {
  if (id == 0) return {};
  if (id < strings.size() && !strings[id].empty()) return strings[id];
  if (const auto it = sparse_strings.find(id); it != sparse_strings.end()) return it->second;
  static const std::string kLost = "<lost string>";
  return kLost;
}

namespace {

// Decodes a native trace from chunks of its bytes as they arrive: the records complete so far
// are decoded at once, so memory is the unfinished record plus one chunk.
class NativeStream {
 public:
  NativeStream(const std::string& path, Logger& log) : log_(log), decoder_(out_) { out_.path = path; }
  // False once a malformed record ends the decoding (the rest of the input is not needed).
  bool feed(std::string_view chunk) {
    if (malformed_) return false;
    data_.erase(0, pos_);
    pos_ = 0;
    data_.append(chunk);
    if (!preamble_checked_) {
      if (data_.size() < kPreambleSize) return true;
      check_preamble(out_.path, data_, out_);
      pos_ = kPreambleSize;
      preamble_checked_ = true;
    }
    pos_ = parse_records(data_, pos_, decoder_, out_, malformed_);
    return !malformed_;
  }
  NativeCapture finish();

 private:
  Logger& log_;
  NativeCapture out_;
  Decoder decoder_;
  std::string data_;  // bytes from the first unfinished record on (from pos_)
  std::size_t pos_ = 0;
  bool preamble_checked_ = false;
  bool malformed_ = false;
};

NativeCapture NativeStream::finish() {
  const std::string& path = out_.path;
  if (!preamble_checked_) check_preamble(path, data_, out_);
  if (out_.record_count == 0) throw InputError(path, "header", "no complete header record");
  // Versions learnt after the header was written arrive as metadata.
  auto version_from = [&](const char* key, std::uint64_t& field) {
    auto it = out_.metadata.find(key);
    if (field == 0 && it != out_.metadata.end()) field = std::strtoull(it->second.c_str(), nullptr, 10);
  };
  version_from("cupti_version", out_.header.cupti_version);
  version_from("nccl_version", out_.header.nccl_version);
  // Rank -1 and a world size of -1 (or 0) are "not known"; otherwise a rank of the job.
  const auto& h = out_.header;
  if (h.rank < -1 || h.rank > trace::kMaxRank || h.world_size < -1 || h.world_size > trace::kMaxRank ||
      (h.rank >= 0 && h.world_size > 0 && h.rank >= h.world_size))
    throw InputError(path, "header", "rank " + std::to_string(h.rank) + " of a " + std::to_string(h.world_size) +
                                         "-rank job is not a rank (from 0 to 2^20, below the world size)");
  if (malformed_ || pos_ < data_.size()) {
    out_.truncated = true;
    log_.warn(path + ": " + (malformed_ ? "malformed" : "truncated") + " record after " +
              std::to_string(out_.record_count) +
              " complete records (job killed mid-write?); loading what precedes it");
  } else if (!out_.has_footer) {
    log_.warn(path + ": trace has no end record (the job did not exit cleanly); " +
              std::to_string(out_.record_count) + " records loaded");
  }
  return std::move(out_);
}

}  // namespace

NativeCapture read_native_capture(const std::string& path, Logger& log) {
  ByteSource source(path);
  NativeStream stream(path, log);
  std::string chunk(1 << 20, '\0');
  while (true) {
    const std::size_t n = source.read(chunk.data(), chunk.size());
    if (n == 0 || !stream.feed(std::string_view(chunk.data(), n))) break;
  }
  return stream.finish();
}

NativeCapture parse_native_capture(std::string_view bytes, const std::string& path, Logger& log,
                                   std::size_t chunk_bytes) {
  NativeStream stream(path, log);
  if (chunk_bytes == 0) chunk_bytes = 1;
  for (std::size_t at = 0; at < bytes.size(); at += chunk_bytes)
    if (!stream.feed(bytes.substr(at, chunk_bytes))) break;
  return stream.finish();
}

}  // namespace dpro::native
