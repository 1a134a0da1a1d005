#pragma once
// Builds small native trace files for tests, through the real encoder and file writer.
#include <string>

#include "trace/format/native_writer.h"

namespace dpro::test {

class NativeTraceBuilder {
 public:
  explicit NativeTraceBuilder(native::Header header)
      : header_(std::move(header)), encoder_(strings_, header_.base_time) {}
  native::RecordEncoder& add() { return encoder_; }
  template <class Record>
  NativeTraceBuilder& add(const Record& r) {
    encoder_.add(r);
    return *this;
  }
  // Writes the file (closed with a footer unless close is false).
  void write(const std::string& path, bool close = true) {
    auto batch = encoder_.take();
    native::NativeFileWriter writer(path, header_);
    writer.append(native::merge_in_time_order({&batch, 1}), batch.index.size());
    writer.flush();
    if (close) writer.close(0);
  }

 private:
  native::Header header_;
  native::StringInterner strings_;
  native::RecordEncoder encoder_;
};

inline native::Header header_for(int rank, const std::string& host, int world = 8,
                                 std::int64_t base = 1'700'000'000'000'000'000) {
  native::Header h;
  h.host = host;
  h.rank = rank;
  h.local_rank = rank % 8;
  h.world_size = world;
  h.pid = 1000 + static_cast<std::uint64_t>(rank);
  h.base_time = base;
  return h;
}

}  // namespace dpro::test
