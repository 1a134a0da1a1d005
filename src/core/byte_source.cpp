#include "core/byte_source.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "core/error.h"
#include "core/gzip_inflater.h"
#include "core/output_file.h"

namespace dpro {

struct ByteSource::Impl {
  std::FILE* file = nullptr;
  std::unique_ptr<GzipInflater> inflater;  // gzip input only
  bool member_ended = false;                // the last gzip member read is complete
  unsigned char head[2] = {};               // the bytes read to tell gzip from plain
  std::size_t pending = 0, pending_at = 0;  // plain input: bytes of head read before the first read()
  // Compressed input waiting for the inflater, [in_at, in_len); allocated for gzip only, as large
  // as the file up to 1 MiB, and not zero-filled: a small file's read (the loader opens each file
  // twice, and ranks are often small) then does not pay for a 1 MiB buffer's pages.
  std::unique_ptr<unsigned char[]> in_buf;
  std::size_t in_cap = 0, in_at = 0, in_len = 0;
  ~Impl() {
    if (file) std::fclose(file);
  }
  std::size_t available() const { return in_len - in_at; }
  // Moves what is left of the input to the front and appends what the file has; false at its end.
  bool refill(const std::string& path, std::uint64_t& raw_bytes) {
    std::memmove(in_buf.get(), in_buf.get() + in_at, available());
    in_len -= in_at;
    in_at = 0;
    const std::size_t n = std::fread(in_buf.get() + in_len, 1, in_cap - in_len, file);
    if (n == 0 && std::ferror(file)) throw InputError(path, "", "read error");
    raw_bytes += n;
    in_len += n;
    return n > 0;
  }
};

namespace {
std::unique_ptr<GzipInflater> make_inflater(GzipDecoder decoder) {
  if (decoder == GzipDecoder::kFastest)
    if (auto isal = make_isal_inflater()) return isal;
  return make_zlib_inflater();
}
}  // namespace

ByteSource::ByteSource(std::string path, GzipDecoder decoder)
    : path_(std::move(path)), impl_(std::make_unique<Impl>()) {
  impl_->file = std::fopen(path_.c_str(), "rb");
  if (!impl_->file) throw InputError(path_, "", std::string("cannot open: ") + std::strerror(errno));
  // fopen opens a directory for reading on Linux, and its first read fails with EISDIR: said
  // here, not as a "read error".
  if (struct stat st {}; ::fstat(fileno(impl_->file), &st) == 0 && S_ISDIR(st.st_mode))
    throw InputError(path_, "", "is a directory, not a file");
  note_opened_input(fileno(impl_->file));  // no output of this process may replace it
  // The two bytes read to tell gzip from plain are kept, not re-read by seeking back: a pipe
  // (/dev/stdin, <(...)) cannot seek.
  unsigned char* magic = impl_->head;
  const std::size_t got = std::fread(magic, 1, 2, impl_->file);
  raw_bytes_ += got;
  gzipped_ = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  if (gzipped_) {
    try {
      impl_->inflater = make_inflater(decoder);
    } catch (const std::exception& e) {
      throw InputError(path_, "", e.what());
    }
    constexpr std::size_t kMaxInput = std::size_t{1} << 20, kMinInput = std::size_t{4} << 10;
    struct stat st {};
    const bool sized = ::fstat(fileno(impl_->file), &st) == 0 && S_ISREG(st.st_mode);
    if (sized) file_bytes_ = static_cast<std::uint64_t>(st.st_size);
    impl_->in_cap = sized ? std::clamp<std::size_t>(static_cast<std::size_t>(st.st_size), kMinInput, kMaxInput) : kMaxInput;
    impl_->in_buf.reset(new unsigned char[impl_->in_cap]);
    std::memcpy(impl_->in_buf.get(), magic, got);
    impl_->in_len = got;
  } else {
    impl_->pending = got;
  }
}

ByteSource::~ByteSource() = default;

const char* ByteSource::gzip_decoder() const { return impl_->inflater ? impl_->inflater->name() : ""; }

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
  return read_gzip(reinterpret_cast<unsigned char*>(out), capacity);
}

std::size_t ByteSource::read_gzip(unsigned char* out, std::size_t capacity) {
  Impl& m = *impl_;
  std::size_t given = 0;
  while (given < capacity) {
    if (m.member_ended) {
      // Concatenated gzip members are legal; anything else after the end is ignored.
      while (m.available() < 2 && m.refill(path_, raw_bytes_)) {
      }
      const unsigned char* next = m.in_buf.get() + m.in_at;
      if (m.available() < 2 || next[0] != 0x1f || next[1] != 0x8b) break;
      m.member_ended = false;
    }
    if (m.available() == 0 && !m.refill(path_, raw_bytes_))
      throw InputError(path_, "", "truncated gzip data (the file ends inside the compressed stream)");
    GzipInflater::Step step;
    try {
      step = m.inflater->inflate(m.in_buf.get() + m.in_at, m.available(), out + given, capacity - given);
    } catch (const std::runtime_error& e) {
      throw InputError(path_, "", std::string("corrupt gzip data: ") + e.what());
    }
    m.in_at += step.consumed;
    given += step.produced;
    m.member_ended = step.member_end;
    // No progress with input left: the decoder wants more of it at once (a header split by the
    // buffer's end); the next pass appends to what is left.
    if (step.consumed == 0 && step.produced == 0 && !step.member_end && !m.refill(path_, raw_bytes_))
      throw InputError(path_, "", "truncated gzip data (the file ends inside the compressed stream)");
  }
  return given;
}

struct ReadAhead::Shared {
  static constexpr std::size_t kBlock = 1 << 20;
  static constexpr std::size_t kDepth = 4;  // blocks read ahead at most
  struct Block {
    std::unique_ptr<char[]> data;  // kBlock bytes, not zero-filled
    std::size_t size = 0;
  };
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<Block> ready;         // read, in order, not yet handed over
  std::vector<std::unique_ptr<char[]>> spare;  // handed over, for reuse
  bool done = false;               // the reader has stopped: end of data, or `error`
  bool stop = false;               // the consumer is gone
  std::exception_ptr error;
  Block current;                   // the block read() hands over now
  std::size_t current_at = 0;
  std::thread reader;

  void run(ByteSource& source) {
    for (;;) {
      std::unique_ptr<char[]> data;
      {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return stop || ready.size() < kDepth; });
        if (stop) return;
        if (!spare.empty()) {
          data = std::move(spare.back());
          spare.pop_back();
        }
      }
      if (!data) data.reset(new char[kBlock]);
      std::size_t n = 0;
      std::exception_ptr failed;
      try {
        n = source.read(data.get(), kBlock);
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

namespace {
thread_local bool t_read_inline = false;  // a ReadAheadInline lives on this thread
}  // namespace

ReadAheadInline::ReadAheadInline() : outer_(t_read_inline) { t_read_inline = true; }
ReadAheadInline::~ReadAheadInline() { t_read_inline = outer_; }

ReadAhead::ReadAhead(ByteSource& source) {
  if (t_read_inline || (source.file_bytes() > 0 && source.file_bytes() < kMinThreadedBytes)) {
    direct_ = &source;
    return;
  }
  shared_ = std::make_unique<Shared>();
  shared_->reader = std::thread([this, &source] { shared_->run(source); });
}

ReadAhead::~ReadAhead() {
  if (!shared_) return;
  {
    std::lock_guard lock(shared_->mutex);
    shared_->stop = true;
  }
  shared_->changed.notify_all();
  shared_->reader.join();
}

std::size_t ReadAhead::read(char* out, std::size_t capacity) {
  if (direct_) return direct_->read(out, capacity);
  Shared& s = *shared_;
  std::size_t given = 0;
  while (given < capacity) {
    if (s.current_at == s.current.size) {
      std::unique_lock lock(s.mutex);
      if (s.current.data) s.spare.push_back(std::move(s.current.data));
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
    std::memcpy(out + given, s.current.data.get() + s.current_at, n);
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
