#include "trace/format/native_writer.h"

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

RecordEncoder::RecordEncoder(StringInterner& strings, std::int64_t base_time)
    : strings_(&strings), base_time_(base_time), by_pointer_(1024) {
  buf_.resize(64 * 1024);
}

void RecordEncoder::reserve(std::size_t bytes) {
  if (used_ + bytes > buf_.size()) buf_.resize(std::max(buf_.size() * 2, used_ + bytes));
}

void RecordEncoder::inline_string(std::string_view s) {
  u(s.size());
  std::memcpy(buf_.data() + used_, s.data(), s.size());
  used_ += s.size();
}

std::uint32_t RecordEncoder::string_id(std::string_view s) {
  if (s.empty()) return 0;
  auto& slot = by_pointer_[(reinterpret_cast<std::uintptr_t>(s.data()) >> 3) & (by_pointer_.size() - 1)];
  if (slot.ptr == s.data() && slot.text.size() == s.size() &&
      std::memcmp(slot.text.data(), s.data(), s.size()) == 0)
    return slot.id;
  const auto [copy, id] = string_id_slow(s);
  slot = {s.data(), copy, id};
  return id;
}

std::pair<std::string_view, std::uint32_t> RecordEncoder::string_id_slow(std::string_view s) {
  if (auto it = local_.find(s); it != local_.end()) return {it->first, it->second};
  auto [id, created] = strings_->intern(s);
  const auto it = local_.emplace(std::string(s), id).first;
  if (created) emit_string_definition(id, s);
  return {it->first, id};
}

// The definition precedes the record being built; key 0 keeps it first when merging.
void RecordEncoder::emit_string_definition(std::uint32_t id, std::string_view s) {
  begin(RecordType::kString, 0, s.size());
  u(id);
  inline_string(s);
  end();
}

void RecordEncoder::begin(RecordType type, std::uint64_t key, std::size_t inline_bytes) {
  reserve(2 + kMaxFixedPayload + inline_bytes + 10);
  record_begin_ = used_;
  key_ = key;
  if (type >= RecordType::kApi) ++activity_;
  buf_[used_] = static_cast<char>(type);
  used_ += 2;  // one length byte assumed; end() widens it when the payload is longer
}

void RecordEncoder::end() {
  std::size_t payload_begin = record_begin_ + 2;
  std::size_t length = used_ - payload_begin;
  if (length < 0x80) {
    buf_[record_begin_ + 1] = static_cast<char>(length);
  } else {
    char tmp[10];
    std::size_t n = put_varint(tmp, length);
    reserve(n);
    std::memmove(buf_.data() + payload_begin + n - 1, buf_.data() + payload_begin, length);
    std::memcpy(buf_.data() + record_begin_ + 1, tmp, n);
    used_ += n - 1;
  }
  index_.push_back({key_, static_cast<std::uint32_t>(record_begin_), static_cast<std::uint32_t>(used_)});
}

// Interned strings are resolved before begin() so their definitions precede the record.
void RecordEncoder::add(const DeviceRecord& r) {
  begin(RecordType::kDevice, 0, r.name.size());
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
  begin(RecordType::kNcclComm, 0, r.name.size());
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
  begin(RecordType::kMetadata, 0, key.size() + value.size() + 10);
  inline_string(key);
  inline_string(value);
  end();
}

EncodedBatch RecordEncoder::take() {
  EncodedBatch out;
  out.bytes.assign(buf_.data(), used_);
  out.index = std::move(index_);
  out.activity = activity_;
  index_.clear();
  activity_ = 0;
  used_ = 0;
  return out;
}

namespace {

// Sort keys packed as (relative time << kIndexBits) | record number: 8 bytes per record.
constexpr int kIndexBits = 24;  // records per merge; larger merges fall back to stable_sort

// Stable LSD radix sort on the time bits only (the record numbers below them are already in
// order), 11 bits per pass, as many passes as the time range needs (a one-second flush: 3).
// Linear time; a comparison sort was the largest CPU cost of writing.
void radix_sort_by_time(std::vector<std::uint64_t>& refs, std::vector<std::uint64_t>& tmp,
                        std::uint64_t max_time) {
  tmp.resize(refs.size());
  constexpr int kBits = 11;
  constexpr std::uint64_t kMask = (std::uint64_t{1} << kBits) - 1;
  for (int shift = 0; shift < 64 - kIndexBits && (max_time >> shift) != 0; shift += kBits) {
    std::size_t count[kMask + 2] = {};
    for (auto r : refs) ++count[((r >> (kIndexBits + shift)) & kMask) + 1];
    for (std::size_t b = 0; b <= kMask; ++b) count[b + 1] += count[b];
    for (auto r : refs) tmp[count[(r >> (kIndexBits + shift)) & kMask]++] = r;
    refs.swap(tmp);
  }
}

}  // namespace

std::string_view TimeOrderMerger::merge(std::span<const EncodedBatch> batches) {
  std::size_t total = 0, records = 0;
  std::uint64_t min_key = UINT64_MAX, max_key = 0;
  first_record_.clear();
  for (const auto& b : batches) {
    first_record_.push_back(records);
    total += b.bytes.size();
    records += b.index.size();
    for (const auto& e : b.index)
      if (e.key != 0) min_key = std::min(min_key, e.key), max_key = std::max(max_key, e.key);
  }
  // Relative times; untimed records (key 0: strings, correlations) sort first, in place.
  auto relative = [&](std::uint64_t key) { return key == 0 ? 0 : key - min_key + 1; };
  std::uint64_t range = max_key >= min_key ? max_key - min_key + 1 : 0;
  auto entry_of = [&](std::uint64_t global) -> std::pair<const EncodedBatch*, const EncodedBatch::Entry*> {
    auto bi = static_cast<std::size_t>(std::upper_bound(first_record_.begin(), first_record_.end(), global) -
                                       first_record_.begin()) - 1;
    return {&batches[bi], &batches[bi].index[global - first_record_[bi]]};
  };
  order_.clear();
  if (records < (std::size_t{1} << kIndexBits) && range < (std::uint64_t{1} << (64 - kIndexBits))) {
    for (const auto& b : batches)
      for (const auto& e : b.index) order_.push_back((relative(e.key) << kIndexBits) | order_.size());
    radix_sort_by_time(order_, scratch_, range);
    for (auto& o : order_) o &= (std::uint64_t{1} << kIndexBits) - 1;
  } else {
    for (std::size_t i = 0; i < records; ++i) order_.push_back(i);
    std::stable_sort(order_.begin(), order_.end(), [&](std::uint64_t a, std::uint64_t b) {
      return relative(entry_of(a).second->key) < relative(entry_of(b).second->key);
    });
  }
  out_.resize(total);
  char* dst = out_.data();
  for (auto global : order_) {
    auto [batch, e] = entry_of(global);
    std::memcpy(dst, batch->bytes.data() + e->begin, e->end - e->begin);
    dst += e->end - e->begin;
  }
  return out_;
}

std::string merge_in_time_order(std::span<const EncodedBatch> batches) {
  TimeOrderMerger merger;
  return std::string(merger.merge(batches));
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

namespace {
// `path` with ".<n>" before its extension (n >= 2): the name of the n-th trace that wanted it.
std::string numbered_path(const std::string& path, int n) {
  const std::size_t slash = path.rfind('/');
  const std::size_t dot = path.rfind('.');
  const bool has_extension = dot != std::string::npos && (slash == std::string::npos || dot > slash + 1);
  std::string numbered = has_extension ? path.substr(0, dot) : path;
  numbered.append(".").append(std::to_string(n));
  if (has_extension) numbered.append(path, dot, std::string::npos);
  return numbered;
}
}  // namespace

namespace {
long system_write(int fd, const void* data, std::size_t size) { return static_cast<long>(::write(fd, data, size)); }
}  // namespace

NativeFileWriter::NativeFileWriter(const std::string& path, const Header& header, WriteCall write_call)
    : path_(path), owner_pid_(static_cast<long>(::getpid())), write_call_(write_call ? write_call : &system_write) {
  // Created exclusively and without following links: a file or link already there (a planted
  // link in a shared folder, an earlier run's trace under a reused pid) is never written
  // through; the trace takes the next free numbered name instead.
  constexpr int kMaxNames = 1000;
  for (int n = 1; n <= kMaxNames; ++n) {
    path_ = n == 1 ? path : numbered_path(path, n);
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd_ >= 0 || errno != EEXIST) break;
  }
  if (fd_ < 0) throw std::runtime_error(path_ + ": cannot create: " + std::strerror(errno));
  write_locked(encode_preamble(header));
}

NativeFileWriter::~NativeFileWriter() {
  if (fd_ >= 0) ::close(fd_);
}

bool NativeFileWriter::owned_by_this_process() const {
  return static_cast<long>(::getpid()) == owner_pid_;
}

std::size_t NativeFileWriter::write_some(std::string_view bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const long n = write_call_(fd_, bytes.data() + done, bytes.size() - done);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == ENOSPC || errno == EDQUOT)) {
      stalled_ = true;  // the rest waits for the next flush
    } else {
      stop(n < 0 ? std::strerror(errno) : "the file took no bytes");
    }
    break;
  }
  bytes_written_ += done;
  return done;
}

void NativeFileWriter::write_locked(std::string_view bytes) {
  if (!stopped_because_.empty()) return;
  stalled_ = false;
  if (!buffer_.empty()) {
    const std::size_t done = write_some(buffer_);
    buffer_.erase(0, done);
    if (!buffer_.empty() || !stopped_because_.empty()) {  // still full: the new bytes queue behind
      if (stopped_because_.empty()) buffer_.append(bytes);
      stop_if_stalled_too_long();
      return;
    }
  }
  const std::size_t done = write_some(bytes);
  if (done < bytes.size() && stopped_because_.empty()) buffer_.assign(bytes.substr(done));
}

void NativeFileWriter::stop(const std::string& why) {
  stopped_because_ = why;
  stalled_ = false;
  buffer_.clear();
  buffer_.shrink_to_fit();
}

void NativeFileWriter::stop_if_stalled_too_long() {
  if (stalled_ && buffer_.size() > kMaxStalledBytes)
    stop("the disk stayed full (over " + std::to_string(kMaxStalledBytes >> 20) + " MiB of trace waited)");
}

bool NativeFileWriter::stalled() const {
  std::lock_guard lock(mutex_);
  return stalled_;
}

std::string NativeFileWriter::stopped_because() const {
  std::lock_guard lock(mutex_);
  return stopped_because_;
}

void NativeFileWriter::append(std::string_view records, std::uint64_t record_count) {
  std::lock_guard lock(mutex_);
  if (fd_ < 0 || !owned_by_this_process() || !stopped_because_.empty()) return;
  buffer_.append(records);
  records_ += record_count;
  stop_if_stalled_too_long();
}

void NativeFileWriter::write_now(std::string_view records, std::uint64_t record_count) {
  std::lock_guard lock(mutex_);
  if (fd_ < 0 || !owned_by_this_process()) return;
  write_locked(records);
  if (stopped_because_.empty()) records_ += record_count;
}

void NativeFileWriter::flush() {
  std::lock_guard lock(mutex_);
  if (fd_ < 0 || !owned_by_this_process()) return;
  write_locked({});
}

void NativeFileWriter::close(std::uint64_t dropped_records) {
  std::lock_guard lock(mutex_);
  if (fd_ < 0 || !owned_by_this_process()) return;
  // The footer only when everything before it is in the file: a trace the writer stopped ends
  // at its last record, and a reader says it was cut.
  if (stopped_because_.empty()) write_locked(encode_footer({records_, dropped_records}));
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
