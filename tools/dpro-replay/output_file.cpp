#include "output_file.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "core/error.h"

namespace dpro::cli {
namespace fs = std::filesystem;
namespace {

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

// A std::streambuf over a gzip file: what is written to it arrives compressed.
class GzipFileBuf final : public std::streambuf {
 public:
  GzipFileBuf(const fs::path& file, bool append) : gz_(gzopen(file.c_str(), append ? "ab6" : "wb6")) {
    setp(buffer_, buffer_ + sizeof buffer_);
  }
  ~GzipFileBuf() override {
    if (gz_) gzclose(gz_);
  }
  GzipFileBuf(const GzipFileBuf&) = delete;
  GzipFileBuf& operator=(const GzipFileBuf&) = delete;

  bool is_open() const { return gz_ != nullptr; }
  // Compresses what is buffered and closes the file; false if any write failed.
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

// Writes `file` (plain, or gzip-compressed), from its start or appended to what it holds;
// `shown` is the name the user gave, for messages.
void write_file(const fs::path& file, const std::string& shown, bool gzip, bool append,
                const std::function<void(std::ostream&)>& write) {
  errno = 0;
  if (gzip) {
    GzipFileBuf buffer(file, append);
    if (!buffer.is_open()) throw InputError(shown, "", "cannot open for writing: " + reason());
    std::ostream out(&buffer);
    write(out);
    const bool closed = buffer.close();
    if (!out || !closed) throw InputError(shown, "", "write failed: " + reason());
    return;
  }
  std::ofstream out(file, std::ios::binary | (append ? std::ios::app : std::ios::trunc));
  if (!out) throw InputError(shown, "", "cannot open for writing: " + reason());
  write(out);
  out.close();
  if (!out) throw InputError(shown, "", "write failed: " + reason());
}

// Removes a temporary file unless the write that made it was finished.
class PartialFile {
 public:
  explicit PartialFile(fs::path file) : file_(std::move(file)) {}
  ~PartialFile() {
    std::error_code ec;
    if (!kept_) fs::remove(file_, ec);
  }
  PartialFile(const PartialFile&) = delete;
  PartialFile& operator=(const PartialFile&) = delete;
  void keep() { kept_ = true; }

 private:
  fs::path file_;
  bool kept_ = false;
};

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

std::vector<std::string> command_line_values(const CLI::App& command, const std::vector<std::string>& outputs) {
  std::vector<std::string> values;
  for (const CLI::Option* option : command.get_options()) {
    if (std::any_of(outputs.begin(), outputs.end(), [&](const std::string& o) { return option->check_name(o); }))
      continue;
    if (option->count() > 0) values.insert(values.end(), option->results().begin(), option->results().end());
    else if (!option->get_default_str().empty()) values.push_back(option->get_default_str());
  }
  return values;
}

void write_output(const std::string& path, const std::function<void(std::ostream&)>& write) {
  if (path == "-") {
    write(std::cout);
    flush_stdout();
    return;
  }
  const Target target = resolve(path);
  const bool gzip = path.ends_with(".gz");
  if (target.descriptor || target.type == fs::file_type::fifo || target.type == fs::file_type::character) {
    write_file(target.file, path, gzip, target.descriptor, write);
    return;
  }
  const fs::path temporary = target.file.string() + ".partial";
  PartialFile partial(temporary);
  write_file(temporary, path, gzip, false, write);
  std::error_code ec;
  fs::rename(temporary, target.file, ec);
  if (ec) throw InputError(path, "", "cannot rename the finished output into place: " + ec.message());
  partial.keep();
}

void flush_stdout() {
  errno = 0;
  std::cout.flush();
  if (!std::cout) throw InputError("", "", "cannot write to standard output: " + reason());
}

}  // namespace dpro::cli
