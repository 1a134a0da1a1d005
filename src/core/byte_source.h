#pragma once
// Reads a file in chunks, transparently inflating gzip (detected by magic bytes, not by the
// file name). Memory is one chunk, whatever the file size. Errors (unreadable file,
// truncated or corrupt gzip) are InputErrors naming the file.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace dpro {

// Which decoder inflates gzip input: the fastest this build has (ISA-L when built with it), or
// zlib (tests compare the two).
enum class GzipDecoder { kFastest, kZlib };

class ByteSource {
 public:
  explicit ByteSource(std::string path, GzipDecoder decoder = GzipDecoder::kFastest);
  ~ByteSource();
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;

  // Fills up to `capacity` bytes; returns the count, 0 only at the end of the data.
  std::size_t read(char* out, std::size_t capacity);

  const std::string& path() const { return path_; }
  bool gzipped() const { return gzipped_; }
  std::uint64_t compressed_bytes_read() const { return raw_bytes_; }
  // The size of a gzip file on disk in bytes; 0 for plain input, or when unknown (a pipe).
  std::uint64_t file_bytes() const { return file_bytes_; }
  // The gzip decoder in use ("isa-l", "zlib"); empty for plain input.
  const char* gzip_decoder() const;

 private:
  std::size_t read_gzip(unsigned char* out, std::size_t capacity);
  struct Impl;
  std::string path_;
  bool gzipped_ = false;
  std::uint64_t raw_bytes_ = 0;
  std::uint64_t file_bytes_ = 0;
  std::unique_ptr<Impl> impl_;
};

// Reads a ByteSource ahead of its caller in a second thread (for gzip: inflating while the caller
// parses what was inflated before), a few blocks of 1 MiB at most. An error reading is rethrown
// by read() once the data before it has been handed over, as reading it directly would have.
// The source must outlive this object; the destructor stops and joins the thread. Under a
// ReadAheadInline, or for a small file (under kMinThreadedBytes on disk), it reads on the
// caller's thread instead.
class ReadAhead {
 public:
  // Below this size on disk a gzip file is inflated inline: ISA-L inflates what such a file holds
  // (about 2.5 MB of JSON) in under a millisecond, about what a thread's start and its handoffs
  // cost on a busy machine (a DLRM rank, 53 KB: 1-thread import 45 ms of wall time for 18 ms of
  // CPU with a reader thread at a load average of 4.6, 35 ms for 17 ms inline at 8.8).
  static constexpr std::uint64_t kMinThreadedBytes = std::uint64_t{256} << 10;

  explicit ReadAhead(ByteSource& source);
  ~ReadAhead();
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  // As ByteSource::read.
  std::size_t read(char* out, std::size_t capacity);
  // Whether a thread of its own reads the source (false under a ReadAheadInline).
  bool threaded() const { return shared_ != nullptr; }

 private:
  struct Shared;
  std::unique_ptr<Shared> shared_;  // the reader thread's state; none when reading inline
  ByteSource* direct_ = nullptr;    // reading inline (under a ReadAheadInline): the source
};

// While one lives on a thread, the ReadAheads made on that thread read on it, with no thread of
// their own: for callers that already keep every core busy (the loader reading rank files in
// parallel), where a reader thread per file would only compete with them and add its start and
// its handoffs to each file's cost.
class ReadAheadInline {
 public:
  ReadAheadInline();
  ~ReadAheadInline();
  ReadAheadInline(const ReadAheadInline&) = delete;
  ReadAheadInline& operator=(const ReadAheadInline&) = delete;

 private:
  bool outer_;  // the state before this one, restored by the destructor
};

// Whole (inflated) contents of a small file; for configs and tests, not for traces.
std::string read_whole_file(const std::string& path);

// Throws InputError "<path>: is a directory, expected <expected>" when `path` is a directory
// (reading one fails deep inside the C library with no word of what was wrong).
void reject_directory(const std::string& path, const std::string& expected);

}  // namespace dpro
