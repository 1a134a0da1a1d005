#pragma once
// Reads a file in chunks, transparently inflating gzip (detected by magic bytes, not by the
// file name). Memory is one chunk, whatever the file size. Errors (unreadable file,
// truncated or corrupt gzip) are InputErrors naming the file.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace dpro {

class ByteSource {
 public:
  explicit ByteSource(std::string path);
  ~ByteSource();
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;

  // Fills up to `capacity` bytes; returns the count, 0 only at the end of the data.
  std::size_t read(char* out, std::size_t capacity);

  const std::string& path() const { return path_; }
  bool gzipped() const { return gzipped_; }
  std::uint64_t compressed_bytes_read() const { return raw_bytes_; }

 private:
  struct Impl;
  std::string path_;
  bool gzipped_ = false;
  std::uint64_t raw_bytes_ = 0;
  std::unique_ptr<Impl> impl_;
};

// Whole (inflated) contents of a small file; for configs and tests, not for traces.
std::string read_whole_file(const std::string& path);

// Throws InputError "<path>: is a directory, expected <expected>" when `path` is a directory
// (reading one fails deep inside the C library with no word of what was wrong).
void reject_directory(const std::string& path, const std::string& expected);

}  // namespace dpro
