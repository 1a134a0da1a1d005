#pragma once
// Output files: the one way every command (and the library's own savers) writes a file a user
// named. Rules:
// - never over an input: a file the command reads or a file inside a directory it reads
//   (checked on the paths before any work), and never over a file this process has opened to
//   read, whatever path or link led to it (checked again by device and inode when the output is
//   put in place; every reader notes what it opens: note_opened_input);
// - never over an existing file unless the caller allows it (--force); a symbolic link is
//   followed (the rules apply to its target, which is rewritten, and the link kept);
// - a FIFO or character device (/dev/null, a pipe) is written straight into, --force or not,
//   and so is an open file of the process (/dev/stdout, appended to); a directory or any other
//   kind of file is refused;
// - two outputs of one command never name the same file, nor both '-' (standard output).
// A regular file is written to a temporary file of its own, created exclusively (never over a
// planted file or link: its name is random and O_EXCL) in the target's folder, then renamed
// into place; without --force the rename refuses to replace a file that appeared meanwhile
// (another run writing the same output). A failed run leaves neither a half-written output nor
// its temporary, and never touches a user's file that happens to be named like one.
// A name ending in .gz is gzip-compressed.
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace dpro {

// An output option as given: its flag ("--json") and its path ("-" = standard output).
struct NamedOutput {
  std::string option;
  std::string path;
};

// Throws InputError if one of `outputs` may not be written; empty paths are skipped. `inputs`
// are every file or directory the command may read.
void check_output_paths(const std::vector<NamedOutput>& outputs, const std::vector<std::string>& inputs, bool force);
void check_output_path(const std::string& path, const std::vector<std::string>& inputs, bool force);

// Calls write(stream) for `path` ("-" = stdout) by the rules above; `replace` allows replacing
// an existing file (the command's --force). Throws InputError on I/O failure and when the file
// to replace is one this process read.
void write_output(const std::string& path, const std::function<void(std::ostream&)>& write, bool replace);

// Flushes std::cout; throws InputError if anything written to it was lost (a full disk, a
// closed pipe), so that a run whose report went nowhere does not exit 0.
void flush_stdout();

// Notes that this process opened `path` (or the open file `fd`) to read it: no output of the
// process will replace that file. Thread-safe; unknown paths are ignored.
void note_opened_input(const std::string& path);
void note_opened_input(int fd);
// Forgets what was noted: for a process that runs one command after another (tests), before
// each command, so that a file read between two commands does not count as the next one's input.
void forget_opened_inputs();

}  // namespace dpro
