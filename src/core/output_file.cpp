#include "core/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <random>
#include <set>
#include <utility>

#include "core/error.h"

namespace dpro {
namespace fs = std::filesystem;
namespace {

// Files this process opened to read, by (device, inode).
class OpenedInputs {
 public:
  void add(const struct stat& st) {
    std::lock_guard lock(mutex_);
    files_.emplace(st.st_dev, st.st_ino);
  }
  void clear() {
    std::lock_guard lock(mutex_);
    files_.clear();
  }
  bool contains(const struct stat& st) const {
    std::lock_guard lock(mutex_);
    return files_.contains({st.st_dev, st.st_ino});
  }

 private:
  mutable std::mutex mutex_;
  std::set<std::pair<dev_t, ino_t>> files_;
};

OpenedInputs& opened_inputs() {
  static OpenedInputs inputs;
  return inputs;
}

// The file a write to `path` lands in, and what it is now (not_found: to be created).
struct Target {
  fs::path file;
  fs::file_type type = fs::file_type::not_found;
  bool descriptor = false;  // an open file of this process (/dev/stdout): appended to, never replaced
};

bool names_descriptor(const fs::path& file) {
  const std::string s = file.string();
  return s.starts_with("/proc/self/fd/") || s.starts_with("/dev/fd/");
}

// Follows `path`'s symbolic links; a dangling link gives the path it points to.
Target resolve(const std::string& path) {
  Target t{path};
  std::error_code ec;
  for (int hops = 0; fs::is_symlink(fs::symlink_status(t.file, ec)); ++hops) {
    if (names_descriptor(t.file)) {
      t.descriptor = true;
      break;
    }
    const fs::path to = fs::read_symlink(t.file, ec);
    if (ec || hops == 40) throw InputError(path, "", "cannot follow its symbolic links");
    t.file = to.is_absolute() ? to : t.file.parent_path() / to;
  }
  t.type = fs::status(t.file, ec).type();
  return t;
}

// Why the last system call failed, for a message.
std::string reason() { return errno != 0 ? std::strerror(errno) : "I/O error"; }

// The input that `file` (an existing regular file) is, or lies inside; empty if none.
std::string input_holding(const fs::path& file, const std::vector<std::string>& inputs) {
  std::error_code ec;
  const fs::path canonical = fs::canonical(file, ec);
  for (const std::string& input : inputs) {
    if (input.empty() || input == "-") continue;
    const fs::file_status s = fs::status(input, ec);
    if (fs::is_directory(s)) {
      const fs::path dir = fs::canonical(input, ec);
      if (ec) continue;
      for (fs::path p = canonical.parent_path(); !p.empty(); p = p.parent_path()) {
        if (p == dir) return input;
        if (p == p.parent_path()) break;
      }
    } else if (fs::exists(s) && fs::equivalent(input, file, ec)) {
      return input;
    }
  }
  return {};
}

void check_one(const NamedOutput& output, const std::vector<std::string>& inputs, bool force) {
  const Target t = resolve(output.path);
  const std::string shown =
      t.file == fs::path(output.path) ? output.path : output.path + " (a link to " + t.file.string() + ")";
  if (t.descriptor) return;
  switch (t.type) {
    case fs::file_type::fifo:
    case fs::file_type::character:
      return;  // written straight into: nothing on disk is replaced
    case fs::file_type::directory:
      throw InputError(shown, "", "is a directory; name a file to write " + output.option + " to");
    case fs::file_type::not_found:
    case fs::file_type::regular:
      break;
    default:
      throw InputError(shown, "", "is neither a regular file, a FIFO nor a character device; refusing to write into it");
  }
  if (t.type == fs::file_type::regular) {
    const std::string input = input_holding(t.file, inputs);
    std::error_code ec;
    if (!input.empty())
      throw InputError(shown, "",
                       "refusing to write an output over " +
                           (fs::is_directory(input, ec) ? "a file of the input directory " : std::string("the input ")) + input);
    if (!force) throw InputError(shown, "", "exists; pass --force to overwrite it");
  }
  std::error_code ec;
  const fs::path parent = t.file.parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec)) throw InputError(shown, "", "its directory does not exist");
}

// Two outputs write the same file: both exist and are one file, or their paths resolve alike.
bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  const fs::path fa = resolve(a).file, fb = resolve(b).file;
  if (fs::exists(fa, ec) && fs::exists(fb, ec)) return fs::equivalent(fa, fb, ec);
  return fs::weakly_canonical(fs::absolute(fa, ec), ec) == fs::weakly_canonical(fs::absolute(fb, ec), ec);
}

// A std::streambuf over an open file descriptor through zlib's gz* calls: compressed for a .gz
// name, stored as is otherwise (zlib's transparent mode), so both kinds share one error path.
class FileBuf final : public std::streambuf {
 public:
  FileBuf(int fd, bool gzip) : gz_(gzdopen(fd, gzip ? "wb6" : "wbT")) {
    if (!gz_) ::close(fd);  // gzdopen owns fd only when it succeeds
    setp(buffer_, buffer_ + sizeof buffer_);
  }
  ~FileBuf() override {
    if (gz_) gzclose(gz_);
  }
  FileBuf(const FileBuf&) = delete;
  FileBuf& operator=(const FileBuf&) = delete;

  bool is_open() const { return gz_ != nullptr; }
  // Writes what is buffered and closes the file; false if any write failed.
  bool close() {
    const bool drained = drain();
    const int rc = gzclose(gz_);
    gz_ = nullptr;
    return drained && rc == Z_OK;
  }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  bool drain() {
    const int n = static_cast<int>(pptr() - pbase());
    if (n > 0 && gzwrite(gz_, pbase(), static_cast<unsigned>(n)) != n) ok_ = false;
    setp(buffer_, buffer_ + sizeof buffer_);
    return ok_;
  }
  gzFile gz_;
  bool ok_ = true;
  char buffer_[1 << 16];
};

// Writes through `fd` (taken over and closed); `shown` is the name the user gave, for messages.
void write_fd(int fd, const std::string& shown, bool gzip, const std::function<void(std::ostream&)>& write) {
  errno = 0;
  FileBuf buffer(fd, gzip);
  if (!buffer.is_open()) throw InputError(shown, "", "cannot open for writing: " + reason());
  std::ostream out(&buffer);
  write(out);
  const bool closed = buffer.close();
  if (!out || !closed) throw InputError(shown, "", "write failed: " + reason());
}

// A temporary file beside the output, created exclusively under a random name (O_EXCL and
// O_NOFOLLOW: a planted file or link of that name is never opened) with the mode a new file
// gets; removed unless the write that made it was finished and put in place.
class TemporaryFile {
 public:
  TemporaryFile(const fs::path& target, const std::string& shown) {
    const fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
    std::random_device entropy;
    std::mt19937_64 random(entropy());
    for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
      char suffix[20];
      std::snprintf(suffix, sizeof suffix, "%012llx", static_cast<unsigned long long>(random() & 0xffffffffffffULL));
      std::string name(1, '.');  // built by appends: GCC 12 warns falsely about "." + string
      name.append(target.filename().string()).append(1, '.').append(suffix).append(".tmp");
      file_ = dir / name;
      errno = 0;
      fd_ = ::open(file_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
      if (fd_ < 0 && errno != EEXIST) break;
    }
    if (fd_ < 0) throw InputError(shown, "", "cannot create a temporary file in " + dir.string() + ": " + reason());
  }
  ~TemporaryFile() {
    if (!kept_) ::unlink(file_.c_str());
  }
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;

  // The descriptor, handed over once.
  int release_fd() { return std::exchange(fd_, -1); }
  const fs::path& file() const { return file_; }
  void keep() { kept_ = true; }

 private:
  fs::path file_;
  int fd_ = -1;
  bool kept_ = false;
};

// Renames the finished `temporary` to `target`: over an existing file only when `replace`, and
// never over a file this process read.
void put_in_place(TemporaryFile& temporary, const fs::path& target, bool replace, const std::string& shown) {
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0 && opened_inputs().contains(st))
    throw InputError(shown, "", "refusing to write an output over a file this command read");
  const char* from = temporary.file().c_str();
  errno = 0;
  if (replace ? ::rename(from, target.c_str()) == 0
              : ::renameat2(AT_FDCWD, from, AT_FDCWD, target.c_str(), RENAME_NOREPLACE) == 0) {
    temporary.keep();
    return;
  }
  if (!replace && (errno == EINVAL || errno == ENOSYS)) {  // a file system without RENAME_NOREPLACE
    if (::link(from, target.c_str()) == 0) return;       // the temporary is unlinked on scope exit
  }
  if (errno == EEXIST)
    throw InputError(shown, "", "appeared while this command ran (another run writing it?); pass --force to overwrite it");
  throw InputError(shown, "", "cannot rename the finished output into place: " + reason());
}

}  // namespace

void check_output_paths(const std::vector<NamedOutput>& outputs, const std::vector<std::string>& inputs, bool force) {
  std::vector<const NamedOutput*> given;
  for (const NamedOutput& o : outputs)
    if (!o.path.empty()) given.push_back(&o);
  for (std::size_t i = 0; i < given.size(); ++i) {
    const NamedOutput& o = *given[i];
    if (o.path != "-") check_one(o, inputs, force);
    for (std::size_t j = 0; j < i; ++j) {
      const NamedOutput& earlier = *given[j];
      if (o.path == "-" && earlier.path == "-")
        throw InputError("", "", earlier.option + " - and " + o.option + " -: only one output can go to standard output");
      if (o.path != "-" && earlier.path != "-" && same_file(o.path, earlier.path))
        throw InputError(o.path, "", o.option + " names the file of " + earlier.option + " " + earlier.path +
                                         "; give each output a file of its own");
    }
  }
}

void check_output_path(const std::string& path, const std::vector<std::string>& inputs, bool force) {
  check_output_paths({{"the output", path}}, inputs, force);
}

void write_output(const std::string& path, const std::function<void(std::ostream&)>& write, bool replace) {
  if (path == "-") {
    // An output larger than stdout's buffer fails inside write(): its errno is read here, before
    // flush_stdout (which starts from errno 0) would find the stream already failed and no reason.
    errno = 0;
    write(std::cout);
    if (!std::cout) throw InputError("", "", "cannot write to standard output: " + reason());
    flush_stdout();
    return;
  }
  const Target target = resolve(path);
  const bool gzip = path.ends_with(".gz");
  if (target.descriptor || target.type == fs::file_type::fifo || target.type == fs::file_type::character) {
    errno = 0;
    const int fd = ::open(target.file.c_str(), O_WRONLY | O_CLOEXEC | (target.descriptor ? O_APPEND : 0));
    if (fd < 0) throw InputError(path, "", "cannot open for writing: " + reason());
    write_fd(fd, path, gzip, write);
    return;
  }
  TemporaryFile temporary(target.file, path);
  write_fd(temporary.release_fd(), path, gzip, write);
  put_in_place(temporary, target.file, replace, path);
}

void flush_stdout() {
  errno = 0;
  std::cout.flush();
  if (!std::cout) throw InputError("", "", "cannot write to standard output: " + reason());
}

void note_opened_input(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) opened_inputs().add(st);
}

void note_opened_input(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) == 0) opened_inputs().add(st);
}

void forget_opened_inputs() { opened_inputs().clear(); }

}  // namespace dpro
