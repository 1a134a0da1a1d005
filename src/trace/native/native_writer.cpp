#include "trace/native/native_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace dpro::native {

std::pair<std::uint32_t, bool> StringInterner::intern(std::string_view text) {
  if (text.empty()) return {0, false};
  std::lock_guard lock(mutex_);
  if (auto it = ids_.find(text); it != ids_.end()) return {it->second, false};
  auto id = static_cast<std::uint32_t>(ids_.size() + 1);
  ids_.emplace(std::string(text), id);
  return {id, true};
}

void RecordEncoder::u(std::uint64_t v) {
  char tmp[10];
  payload_.append(tmp, put_varint(tmp, v));
}

void RecordEncoder::inline_string(std::string_view s) {
  u(s.size());
  payload_.append(s);
}

std::uint32_t RecordEncoder::string_id(std::string_view s) {
  if (s.empty()) return 0;
  if (auto it = local_.find(s); it != local_.end()) return it->second;
  auto [id, created] = strings_->intern(s);
  local_.emplace(std::string(s), id);
  if (created) {
    // The definition goes into this batch ahead of the record being built; it is emitted
    // directly (outside payload_) with key 0 so that merging keeps it first.
    std::string def;
    char tmp[10];
    def.push_back(static_cast<char>(RecordType::kString));
    std::string body;
    body.append(tmp, put_varint(tmp, id));
    body.append(tmp, put_varint(tmp, s.size()));
    body.append(s);
    def.append(tmp, put_varint(tmp, body.size()));
    def += body;
    auto begin = static_cast<std::uint32_t>(batch_.bytes.size());
    batch_.bytes += def;
    batch_.index.push_back({0, begin, static_cast<std::uint32_t>(batch_.bytes.size())});
  }
  return id;
}

void RecordEncoder::str(std::string_view s) { u(string_id(s)); }

void RecordEncoder::begin(RecordType type, std::uint64_t key) {
  type_ = type;
  key_ = key;
  payload_.clear();
}

void RecordEncoder::end() {
  auto begin = static_cast<std::uint32_t>(batch_.bytes.size());
  char tmp[10];
  batch_.bytes.push_back(static_cast<char>(type_));
  batch_.bytes.append(tmp, put_varint(tmp, payload_.size()));
  batch_.bytes += payload_;
  batch_.index.push_back({key_, begin, static_cast<std::uint32_t>(batch_.bytes.size())});
}

// Interned strings are resolved before begin() so their definitions precede the record.
void RecordEncoder::add(const DeviceRecord& r) {
  begin(RecordType::kDevice, 0);
  u(r.id);
  inline_string(r.name);
  u(r.total_global_mem);
  u(r.compute_major);
  u(r.compute_minor);
  u(r.num_sms);
  end();
}

void RecordEncoder::add(const ApiRecord& r) {
  std::uint32_t name = string_id(r.name);
  begin(RecordType::kApi, r.start);
  u(static_cast<std::uint32_t>(r.kind));
  u(r.cbid);
  span(r.start, r.end);
  u(r.pid);
  u(r.tid);
  u(r.correlation);
  u(name);
  end();
}

void RecordEncoder::add(const KernelRecord& r) {
  std::uint32_t name = string_id(r.name);
  begin(RecordType::kKernel, r.start);
  span(r.start, r.end);
  u(r.device);
  u(r.context);
  u(r.stream);
  u(r.correlation);
  u(name);
  for (int v : r.grid) z(v);
  for (int v : r.block) z(v);
  u(r.registers);
  u(r.shared_mem);
  end();
}

void RecordEncoder::add(const MemcpyRecord& r) {
  begin(RecordType::kMemcpy, r.start);
  span(r.start, r.end);
  u(r.device);
  u(r.context);
  u(r.stream);
  u(r.correlation);
  u(r.bytes);
  u(r.copy_kind);
  u(r.src_kind);
  u(r.dst_kind);
  u(r.src_device);
  u(r.dst_device);
  end();
}

void RecordEncoder::add(const MemsetRecord& r) {
  begin(RecordType::kMemset, r.start);
  span(r.start, r.end);
  u(r.device);
  u(r.context);
  u(r.stream);
  u(r.correlation);
  u(r.bytes);
  u(r.value);
  end();
}

void RecordEncoder::add(const SyncRecord& r) {
  begin(RecordType::kSync, r.start);
  span(r.start, r.end);
  u(r.type);
  u(r.context);
  u(r.stream);
  u(r.event_id);
  u(r.correlation);
  end();
}

void RecordEncoder::add(const CudaEventRecord& r) {
  begin(RecordType::kCudaEvent, 0);
  u(r.correlation);
  u(r.event_id);
  u(r.stream);
  u(r.device);
  u(r.context);
  end();
}

void RecordEncoder::add(const ExternalCorrelationRecord& r) {
  begin(RecordType::kExternalCorrelation, 0);
  u(r.kind);
  u(r.external_id);
  u(r.correlation);
  end();
}

void RecordEncoder::add(const MarkerRecord& r) {
  std::uint32_t name = string_id(r.name);
  std::uint32_t domain = string_id(r.domain);
  begin(RecordType::kMarker, r.timestamp);
  u(r.flags);
  time(r.timestamp);
  u(r.id);
  u(r.pid);
  u(r.tid);
  u(name);
  u(domain);
  end();
}

void RecordEncoder::add(const DroppedRecord& r) {
  begin(RecordType::kDropped, 0);
  u(r.count);
  u(r.context);
  u(r.stream);
  end();
}

void RecordEncoder::add(const NcclCommRecord& r) {
  begin(RecordType::kNcclComm, 0);
  u(r.comm_hash);
  inline_string(r.name);
  z(r.nranks);
  z(r.rank);
  z(r.nnodes);
  end();
}

void RecordEncoder::add(const NcclApiRecord& r) {
  std::uint32_t func = string_id(r.func);
  std::uint32_t dtype = string_id(r.datatype);
  begin(RecordType::kNcclApi, r.start);
  span(r.start, r.end);
  u(r.pid);
  u(r.tid);
  u(r.comm_hash);
  u(func);
  u(dtype);
  u(r.count);
  end();
}

void RecordEncoder::add(const NcclLaunchRecord& r) {
  begin(RecordType::kNcclLaunch, r.start);
  u(r.launch_id);
  u(r.comm_hash);
  u(r.group_id);
  span(r.start, r.end);
  u(r.pid);
  u(r.tid);
  end();
}

void RecordEncoder::add(const NcclCollRecord& r) {
  std::uint32_t ids[4] = {string_id(r.func), string_id(r.datatype), string_id(r.algo),
                          string_id(r.proto)};
  begin(RecordType::kNcclColl, r.start);
  u(r.id);
  u(r.comm_hash);
  u(r.group_id);
  u(r.flags);
  z(r.rank);
  for (auto id : ids) u(id);
  u(r.sequence);
  u(r.count);
  u(r.channels);
  z(r.root_or_peer);
  span(r.start, r.end);
  u(r.pid);
  u(r.tid);
  end();
}

void RecordEncoder::add(const NcclKernelChRecord& r) {
  begin(RecordType::kNcclKernelCh, 0);
  u(r.coll_id);
  u(r.channel);
  u(r.gpu_start);
  u(r.gpu_stop);
  end();
}

void RecordEncoder::add_metadata(std::string_view key, std::string_view value) {
  begin(RecordType::kMetadata, 0);
  inline_string(key);
  inline_string(value);
  end();
}

EncodedBatch RecordEncoder::take() {
  EncodedBatch out = std::move(batch_);
  batch_ = EncodedBatch{};
  return out;
}

std::string merge_in_time_order(std::span<const EncodedBatch> batches) {
  struct Ref {
    std::uint64_t key;
    const EncodedBatch* batch;
    std::uint32_t entry;
  };
  std::vector<Ref> refs;
  std::size_t total = 0;
  for (const auto& b : batches) {
    total += b.bytes.size();
    for (std::uint32_t i = 0; i < b.index.size(); ++i) refs.push_back({b.index[i].key, &b, i});
  }
  // Untimed records (key 0: strings, correlations) keep their place ahead of what follows.
  std::stable_sort(refs.begin(), refs.end(),
                   [](const Ref& a, const Ref& b) { return a.key < b.key; });
  std::string out;
  out.reserve(total);
  for (const auto& r : refs) {
    const auto& e = r.batch->index[r.entry];
    out.append(r.batch->bytes, e.begin, e.end - e.begin);
  }
  return out;
}

namespace {

std::string frame(RecordType type, const std::string& payload) {
  std::string out;
  char tmp[10];
  out.push_back(static_cast<char>(type));
  out.append(tmp, put_varint(tmp, payload.size()));
  return out + payload;
}

void put_u(std::string& s, std::uint64_t v) {
  char tmp[10];
  s.append(tmp, put_varint(tmp, v));
}

void put_s(std::string& s, std::string_view text) {
  put_u(s, text.size());
  s.append(text);
}

}  // namespace

std::string encode_preamble(const Header& h) {
  std::string out(kMagic, sizeof kMagic);
  for (std::uint16_t v : {kVersionMajor, kVersionMinor}) {
    out.push_back(static_cast<char>(v & 0xff));
    out.push_back(static_cast<char>(v >> 8));
  }
  std::string p;
  put_s(p, h.host);
  put_u(p, zigzag(h.rank));
  put_u(p, zigzag(h.local_rank));
  put_u(p, zigzag(h.world_size));
  put_u(p, h.pid);
  put_s(p, h.clock_domain);
  put_u(p, h.cupti_version);
  put_u(p, h.nccl_version);
  put_u(p, zigzag(h.base_time));
  return out + frame(RecordType::kHeader, p);
}

std::string encode_footer(const FooterRecord& f) {
  std::string p;
  put_u(p, f.records);
  put_u(p, f.dropped);
  return frame(RecordType::kFooter, p);
}

NativeFileWriter::NativeFileWriter(const std::string& path, const Header& header)
    : path_(path), owner_pid_(static_cast<long>(::getpid())) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error(path + ": cannot create: " + std::strerror(errno));
  write_all(encode_preamble(header));
}

NativeFileWriter::~NativeFileWriter() {
  if (fd_ >= 0) ::close(fd_);
}

bool NativeFileWriter::owned_by_this_process() const {
  return static_cast<long>(::getpid()) == owner_pid_;
}

void NativeFileWriter::write_all(std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // disk full or closed: the trace ends here, the job goes on
    bytes_written_ += static_cast<std::uint64_t>(n);
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

void NativeFileWriter::append(std::string_view records, std::uint64_t record_count) {
  std::lock_guard lock(mutex_);
  if (fd_ < 0 || !owned_by_this_process()) return;
  buffer_.append(records);
  records_ += record_count;
}

void NativeFileWriter::flush() {
  std::lock_guard lock(mutex_);
  if (fd_ < 0 || !owned_by_this_process()) return;
  write_all(buffer_);
  buffer_.clear();
}

void NativeFileWriter::close(std::uint64_t dropped_records) {
  std::lock_guard lock(mutex_);
  if (fd_ < 0 || !owned_by_this_process()) return;
  buffer_ += encode_footer({records_, dropped_records});
  write_all(buffer_);
  buffer_.clear();
  ::close(fd_);
  fd_ = -1;
}

void NativeFileWriter::abandon() {
  // Called in a forked child: the mutex may have been held by a parent thread at fork time,
  // so it is not taken; the child is single-threaded here.
  buffer_.clear();
  buffer_.shrink_to_fit();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace dpro::native
