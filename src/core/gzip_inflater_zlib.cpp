#include <zlib.h>

#include <limits>
#include <stdexcept>

#include "core/gzip_inflater.h"

namespace dpro {
namespace {

class ZlibInflater final : public GzipInflater {
 public:
  ZlibInflater() {
    if (inflateInit2(&zs_, 15 + 16) != Z_OK) throw std::runtime_error("cannot start gzip decoder");
  }
  ~ZlibInflater() override { inflateEnd(&zs_); }
  ZlibInflater(const ZlibInflater&) = delete;
  ZlibInflater& operator=(const ZlibInflater&) = delete;

  Step inflate(const unsigned char* in, std::size_t in_size, unsigned char* out, std::size_t out_size) override {
    if (member_ended_) {
      inflateReset(&zs_);
      member_ended_ = false;
    }
    constexpr std::size_t kMax = std::numeric_limits<uInt>::max();
    zs_.next_in = const_cast<Bytef*>(in);
    zs_.avail_in = static_cast<uInt>(std::min(in_size, kMax));
    zs_.next_out = out;
    zs_.avail_out = static_cast<uInt>(std::min(out_size, kMax));
    const uInt in_given = zs_.avail_in, out_given = zs_.avail_out;
    const int rc = ::inflate(&zs_, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
      throw std::runtime_error(zs_.msg ? zs_.msg : "inflate failed");
    member_ended_ = rc == Z_STREAM_END;
    return Step{in_given - zs_.avail_in, out_given - zs_.avail_out, member_ended_};
  }
  const char* name() const override { return "zlib"; }

 private:
  z_stream zs_{};
  bool member_ended_ = false;
};

}  // namespace

std::unique_ptr<GzipInflater> make_zlib_inflater() { return std::make_unique<ZlibInflater>(); }

}  // namespace dpro
