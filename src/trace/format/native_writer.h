#pragma once
// Writing the native trace format. Producers (the CUPTI buffer thread, NCCL plugin threads)
// each own a RecordEncoder that turns typed records into bytes in an EncodedBatch; batches are
// merged in time order (merge_in_time_order) and appended to the NativeFileWriter, which
// streams them to disk. Strings are interned once per file through the shared StringInterner;
// a string's definition record travels in the batch of the producer that first used it.
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trace/format/native_records.h"

namespace dpro::native {

struct TransparentStringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using StringIdMap = std::unordered_map<std::string, std::uint32_t, TransparentStringHash, std::equal_to<>>;

// Thread-safe; id 0 is the empty string and is never defined in the file.
class StringInterner {
 public:
  // Returns the id and whether this call created it (the caller then emits the definition).
  std::pair<std::uint32_t, bool> intern(std::string_view text);

 private:
  std::mutex mutex_;
  StringIdMap ids_;
};

// Encoded records plus, per record, its sort key (start time; 0 for untimed records) and
// byte range, so that batches can be merged in time order.
struct EncodedBatch {
  struct Entry {
    std::uint64_t key;
    std::uint32_t begin, end;
  };
  std::string bytes;
  std::vector<Entry> index;
  std::uint64_t activity = 0;  // records of what ran (API calls onward), not strings/metadata/devices
  void clear() {
    bytes.clear();
    index.clear();
    activity = 0;
  }
};

// Not thread-safe: one per producer. Encodes straight into its batch buffer (no per-record
// allocation) and keeps two caches in front of the shared interner: a small table keyed by
// the string's address (checked against the cached text, so a reused address cannot return
// a wrong id) and a map by content. The shared interner's lock is taken only for strings this
// encoder has never seen.
class RecordEncoder {
 public:
  RecordEncoder(StringInterner& strings, std::int64_t base_time);

  void add(const DeviceRecord& r);
  void add(const ApiRecord& r);
  void add(const KernelRecord& r);
  void add(const MemcpyRecord& r);
  void add(const MemsetRecord& r);
  void add(const SyncRecord& r);
  void add(const CudaEventRecord& r);
  void add(const ExternalCorrelationRecord& r);
  void add(const MarkerRecord& r);
  void add(const DroppedRecord& r);
  void add(const NcclCommRecord& r);
  void add(const NcclApiRecord& r);
  void add(const NcclLaunchRecord& r);
  void add(const NcclCollRecord& r);
  void add(const NcclKernelChRecord& r);
  void add_metadata(std::string_view key, std::string_view value);

  bool empty() const { return index_.empty(); }
  // Moves the encoded records out, leaving the encoder empty (its string caches stay).
  EncodedBatch take();

 private:
  static constexpr std::size_t kMaxFixedPayload = 256;  // every record without inline text
  void begin(RecordType type, std::uint64_t key, std::size_t inline_bytes = 0);
  void end();
  void u(std::uint64_t v) { used_ += put_varint(buf_.data() + used_, v); }
  void z(std::int64_t v) { u(zigzag(v)); }
  void time(std::uint64_t t) { z(static_cast<std::int64_t>(t) - base_time_); }
  void span(std::uint64_t start, std::uint64_t end) {
    time(start);
    u(end > start ? end - start : 0);
  }
  void inline_string(std::string_view s);
  std::uint32_t string_id(std::string_view s);
  // The id of s and the encoder's own copy of it (a key of local_, stable while it lives).
  std::pair<std::string_view, std::uint32_t> string_id_slow(std::string_view s);
  void emit_string_definition(std::uint32_t id, std::string_view s);
  void reserve(std::size_t bytes);

  StringInterner* strings_;
  std::int64_t base_time_;
  std::string buf_;        // capacity-managed; [0, used_) holds encoded records
  std::size_t used_ = 0;
  std::vector<EncodedBatch::Entry> index_;
  std::uint64_t activity_ = 0;
  std::size_t record_begin_ = 0;
  std::uint64_t key_ = 0;
  struct PointerCacheEntry {
    const char* ptr = nullptr;
    std::string_view text;  // our copy (a key of local_)
    std::uint32_t id = 0;
  };
  std::vector<PointerCacheEntry> by_pointer_;
  StringIdMap local_;
};

// Concatenates the records of several batches ordered by (key, batch order, record order).
// Keeps its scratch memory between calls (flushes), so steady-state merging allocates
// nothing. The returned view is valid until the next merge.
class TimeOrderMerger {
 public:
  std::string_view merge(std::span<const EncodedBatch> batches);

 private:
  std::vector<std::uint64_t> order_, scratch_;
  std::vector<std::size_t> first_record_;  // per batch, its first global record number
  std::string out_;
};

// One-off form of TimeOrderMerger::merge.
std::string merge_in_time_order(std::span<const EncodedBatch> batches);

// Encodes the file preamble and the header record.
std::string encode_preamble(const Header& header);
std::string encode_footer(const FooterRecord& footer);

// Appends bytes to one trace file. Thread-safe. Writes go to the kernel (write(2)) at every
// flush, so a killed process loses only what was not yet flushed. Only the process that
// opened the file writes to it: after fork() the child's copy discards everything.
//
// A full disk (ENOSPC, EDQUOT) is waited out: what could not be written stays buffered, in
// order, and the next flush writes it first, so a disk that was full for a while loses
// nothing. Past kMaxStalledBytes buffered, or on any other write error, the writer stops for
// good: the file then ends at its last written byte (a reader keeps every complete record
// before it), never with records missing from its middle.
class NativeFileWriter {
 public:
  // write(2) or a stand-in with its contract (tests: a disk that fills and empties).
  using WriteCall = long (*)(int fd, const void* data, std::size_t size);
  static constexpr std::size_t kMaxStalledBytes = std::size_t{256} << 20;

  // Creates `path` (exclusively, not through a link; when something is there already,
  // "<stem>.<n><ext>" for the first free n >= 2: path() says which) and writes the preamble.
  // Throws std::runtime_error on failure.
  NativeFileWriter(const std::string& path, const Header& header, WriteCall write_call = nullptr);
  ~NativeFileWriter();
  NativeFileWriter(const NativeFileWriter&) = delete;
  NativeFileWriter& operator=(const NativeFileWriter&) = delete;

  // Buffers records until the next flush.
  void append(std::string_view records, std::uint64_t record_count);
  // Writes anything buffered, then records, now (no copy).
  void write_now(std::string_view records, std::uint64_t record_count);
  void flush();
  // Writes the footer, flushes and closes. Later calls do nothing.
  void close(std::uint64_t dropped_records);
  // Drops buffered bytes and closes the descriptor without writing (a forked child's copy).
  void abandon();

  const std::string& path() const { return path_; }
  std::uint64_t bytes_written() const { return bytes_written_; }
  std::uint64_t records() const { return records_; }
  // The disk was full at the last write: bytes wait in the buffer for the next flush.
  bool stalled() const;
  // Nothing more will be written (a write error, or the disk full for too long): why, or "".
  std::string stopped_because() const;

 private:
  bool owned_by_this_process() const;
  // Writes `bytes` after anything still waiting in buffer_; what the disk does not take now
  // waits in buffer_. The caller holds mutex_.
  void write_locked(std::string_view bytes);
  // Writes what it can of `bytes`; returns how much was written.
  std::size_t write_some(std::string_view bytes);
  void stop(const std::string& why);
  // Stops when the disk has been full for more than kMaxStalledBytes of trace.
  void stop_if_stalled_too_long();

  mutable std::mutex mutex_;
  std::string path_;
  int fd_ = -1;
  long owner_pid_ = 0;
  WriteCall write_call_;
  std::string buffer_;      // appended records, then (after a full disk) bytes not yet written
  bool stalled_ = false;
  std::string stopped_because_;
  std::uint64_t bytes_written_ = 0;
  std::uint64_t records_ = 0;
};

}  // namespace dpro::native
