#include "core/byte_source.h"

#include <zlib.h>

#include <cerrno>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/error.h"
#include "core/output_file.h"

namespace dpro {

struct ByteSource::Impl {
  std::FILE* file = nullptr;
  z_stream zs{};
  bool inflating = false;
  bool stream_end = false;
  unsigned char head[2] = {};                 // the bytes read to tell gzip from plain
  std::size_t pending = 0, pending_at = 0;  // plain input: bytes of head read before the first read()
  // Compressed input waiting for the inflater; allocated for gzip only (a 1 MiB buffer per plain
  // file opened costs more than reading a small file: the loader opens each file twice).
  std::vector<unsigned char> in_buf;
  ~Impl() {
    if (inflating) inflateEnd(&zs);
    if (file) std::fclose(file);
  }
};

ByteSource::ByteSource(std::string path) : path_(std::move(path)), impl_(std::make_unique<Impl>()) {
  impl_->file = std::fopen(path_.c_str(), "rb");
  if (!impl_->file) throw InputError(path_, "", std::string("cannot open: ") + std::strerror(errno));
  note_opened_input(fileno(impl_->file));  // no output of this process may replace it
  // The two bytes read to tell gzip from plain are kept, not re-read by seeking back: a pipe
  // (/dev/stdin, <(...)) cannot seek.
  unsigned char* magic = impl_->head;
  const std::size_t got = std::fread(magic, 1, 2, impl_->file);
  raw_bytes_ += got;
  gzipped_ = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  if (gzipped_) {
    if (inflateInit2(&impl_->zs, 15 + 32) != Z_OK) throw InputError(path_, "", "cannot start gzip decoder");
    impl_->inflating = true;
    impl_->in_buf.resize(1 << 20);
    std::memcpy(impl_->in_buf.data(), magic, got);
    impl_->zs.next_in = impl_->in_buf.data();
    impl_->zs.avail_in = static_cast<uInt>(got);
  } else {
    impl_->pending = got;
  }
}

ByteSource::~ByteSource() = default;

std::size_t ByteSource::read(char* out, std::size_t capacity) {
  if (!gzipped_) {
    std::size_t given = 0;
    while (impl_->pending_at < impl_->pending && given < capacity)
      out[given++] = static_cast<char>(impl_->head[impl_->pending_at++]);
    const std::size_t n = std::fread(out + given, 1, capacity - given, impl_->file);
    if (n == 0 && std::ferror(impl_->file)) throw InputError(path_, "", "read error");
    raw_bytes_ += n;
    return given + n;
  }
  z_stream& zs = impl_->zs;
  zs.next_out = reinterpret_cast<Bytef*>(out);
  zs.avail_out = static_cast<uInt>(capacity);
  while (zs.avail_out > 0) {
    if (impl_->stream_end) {
      // Concatenated gzip members are legal; anything else after the end is ignored.
      if (zs.avail_in == 0) {
        const std::size_t n = std::fread(impl_->in_buf.data(), 1, impl_->in_buf.size(), impl_->file);
        raw_bytes_ += n;
        zs.next_in = impl_->in_buf.data();
        zs.avail_in = static_cast<uInt>(n);
      }
      if (zs.avail_in < 2 || zs.next_in[0] != 0x1f || zs.next_in[1] != 0x8b) break;
      inflateReset(&zs);
      impl_->stream_end = false;
    }
    if (zs.avail_in == 0) {
      const std::size_t n = std::fread(impl_->in_buf.data(), 1, impl_->in_buf.size(), impl_->file);
      if (n == 0) {
        if (std::ferror(impl_->file)) throw InputError(path_, "", "read error");
        throw InputError(path_, "", "truncated gzip data (the file ends inside the compressed stream)");
      }
      raw_bytes_ += n;
      zs.next_in = impl_->in_buf.data();
      zs.avail_in = static_cast<uInt>(n);
    }
    const int rc = inflate(&zs, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      impl_->stream_end = true;
      continue;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      throw InputError(path_, "", std::string("corrupt gzip data: ") + (zs.msg ? zs.msg : "inflate failed"));
    }
  }
  return capacity - zs.avail_out;
}

struct ReadAhead::Shared {
  static constexpr std::size_t kBlock = 1 << 20;
  static constexpr std::size_t kDepth = 4;  // blocks read ahead at most
  struct Block {
    std::vector<char> data;
    std::size_t size = 0;
  };
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<Block> ready;         // read, in order, not yet handed over
  std::vector<std::vector<char>> spare;  // handed over, for reuse
  bool done = false;               // the reader has stopped: end of data, or `error`
  bool stop = false;               // the consumer is gone
  std::exception_ptr error;
  Block current;                   // the block read() hands over now
  std::size_t current_at = 0;
  std::thread reader;

  void run(ByteSource& source) {
    for (;;) {
      std::vector<char> data;
      {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return stop || ready.size() < kDepth; });
        if (stop) return;
        if (!spare.empty()) {
          data = std::move(spare.back());
          spare.pop_back();
        }
      }
      data.resize(kBlock);
      std::size_t n = 0;
      std::exception_ptr failed;
      try {
        n = source.read(data.data(), data.size());
      } catch (...) {
        failed = std::current_exception();
      }
      std::lock_guard lock(mutex);
      if (n > 0) ready.push_back(Block{std::move(data), n});
      if (failed || n == 0) {
        error = failed;
        done = true;
      }
      changed.notify_all();
      if (done) return;
    }
  }
};

ReadAhead::ReadAhead(ByteSource& source) : shared_(std::make_unique<Shared>()) {
  shared_->reader = std::thread([this, &source] { shared_->run(source); });
}

ReadAhead::~ReadAhead() {
  {
    std::lock_guard lock(shared_->mutex);
    shared_->stop = true;
  }
  shared_->changed.notify_all();
  shared_->reader.join();
}

std::size_t ReadAhead::read(char* out, std::size_t capacity) {
  Shared& s = *shared_;
  std::size_t given = 0;
  while (given < capacity) {
    if (s.current_at == s.current.size) {
      std::unique_lock lock(s.mutex);
      if (!s.current.data.empty()) s.spare.push_back(std::move(s.current.data));
      s.current = {};
      s.current_at = 0;
      s.changed.notify_all();
      if (given > 0 && s.ready.empty()) break;  // hand over what there is rather than wait
      s.changed.wait(lock, [&] { return !s.ready.empty() || s.done; });
      if (s.ready.empty()) {
        if (given > 0) break;
        if (s.error) std::rethrow_exception(s.error);
        return 0;
      }
      s.current = std::move(s.ready.front());
      s.ready.pop_front();
    }
    const std::size_t n = std::min(capacity - given, s.current.size - s.current_at);
    std::memcpy(out + given, s.current.data.data() + s.current_at, n);
    s.current_at += n;
    given += n;
  }
  return given;
}

std::string read_whole_file(const std::string& path) {
  ByteSource source(path);
  std::string data;
  std::vector<char> chunk(1 << 16);
  while (const std::size_t n = source.read(chunk.data(), chunk.size())) data.append(chunk.data(), n);
  return data;
}

void reject_directory(const std::string& path, const std::string& expected) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(path, "", "is a directory, expected " + expected);
}

}  // namespace dpro
