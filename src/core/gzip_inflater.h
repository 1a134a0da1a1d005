#pragma once
// One decoder of gzip data (RFC 1952), fed by its caller in pieces: ByteSource's engine. Two
// implementations: zlib (always built) and Intel ISA-L's igzip (built when CMake finds it, about
// three times zlib's speed on trace JSON here: see docs/benchmarks.md). Both stream: memory is
// the decoder's own state (tens of KiB), whatever the size of the data.
#include <cstddef>
#include <memory>
#include <string>

namespace dpro {

class GzipInflater {
 public:
  virtual ~GzipInflater() = default;

  struct Step {
    std::size_t consumed = 0;  // bytes of `in` used
    std::size_t produced = 0;  // bytes written to `out`
    bool member_end = false;   // a gzip member ended (its trailer read and checked)
  };
  // Inflates from `in` into `out` until either is used up or a member ends. After a member's end
  // the next call starts a new member (concatenated members are legal gzip). Corrupt data throws
  // std::runtime_error with a short reason ("invalid block type", "incorrect data check"), which
  // ByteSource turns into an InputError naming the file.
  virtual Step inflate(const unsigned char* in, std::size_t in_size, unsigned char* out, std::size_t out_size) = 0;
  virtual const char* name() const = 0;
};

std::unique_ptr<GzipInflater> make_zlib_inflater();
// nullptr when this build has no ISA-L (CMake option DPRO_WITH_ISAL).
std::unique_ptr<GzipInflater> make_isal_inflater();

}  // namespace dpro
