#include <isa-l/igzip_lib.h>

#include <limits>
#include <stdexcept>

#include "core/gzip_inflater.h"

namespace dpro {
namespace {

// The reasons zlib gives for the same faults, so that messages do not depend on the build.
const char* reason(int rc) {
  switch (rc) {
    case ISAL_INVALID_BLOCK: return "invalid block type";
    case ISAL_INVALID_SYMBOL: return "invalid code";
    case ISAL_INVALID_LOOKBACK: return "invalid distance too far back";
    case ISAL_INVALID_WRAPPER: return "incorrect header check";
    case ISAL_UNSUPPORTED_METHOD: return "unknown compression method";
    case ISAL_INCORRECT_CHECKSUM: return "incorrect data check";
    default: return "inflate failed";
  }
}

class IsalInflater final : public GzipInflater {
 public:
  IsalInflater() { start_member(); }

  Step inflate(const unsigned char* in, std::size_t in_size, unsigned char* out, std::size_t out_size) override {
    if (state_.block_state == ISAL_BLOCK_FINISH) start_member();
    constexpr std::size_t kMax = std::numeric_limits<std::uint32_t>::max();
    state_.next_in = const_cast<std::uint8_t*>(in);
    state_.avail_in = static_cast<std::uint32_t>(std::min(in_size, kMax));
    state_.next_out = out;
    state_.avail_out = static_cast<std::uint32_t>(std::min(out_size, kMax));
    const std::uint32_t in_given = state_.avail_in, out_given = state_.avail_out;
    const int rc = isal_inflate(&state_);
    if (rc < 0) throw std::runtime_error(reason(rc));
    // The decoder may hold input bytes in its bit buffer; at a member's end it has handed back
    // those past the trailer (next_in points just after it), so the next member starts there.
    return Step{in_given - state_.avail_in, out_given - state_.avail_out, state_.block_state == ISAL_BLOCK_FINISH};
  }
  const char* name() const override { return "isa-l"; }

 private:
  void start_member() {
    isal_inflate_init(&state_);
    state_.crc_flag = ISAL_GZIP;  // parse the gzip header, check CRC-32 and ISIZE in the trailer
  }
  inflate_state state_{};
};

}  // namespace

std::unique_ptr<GzipInflater> make_isal_inflater() { return std::make_unique<IsalInflater>(); }

}  // namespace dpro
