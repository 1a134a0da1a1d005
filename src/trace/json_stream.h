#pragma once
// Streaming reader for Chrome-trace JSON files, the container Kineto writes:
//   {"schemaVersion": 1, ..., "traceEvents": [ {...}, {...} ], ..., "baseTimeNanoseconds": N}
// or a bare array of events. It hands each element of "traceEvents" to a callback as the raw
// text of one JSON value, and each other top-level member as (key, raw value text). Memory is
// one read chunk plus the largest single value (at most kMaxValueBytes), whatever the file size.
//
// The raw text passed to callbacks is followed by at least `kPadding` readable bytes, so it
// can be handed to simdjson without copying. It is valid only during the callback.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/byte_source.h"

namespace dpro::trace {

class JsonEventStream {
 public:
  static constexpr std::size_t kPadding = 64;
  // The longest single value (one event, or one top-level member) read: a longer one is an
  // InputError. Real events are bytes to kilobytes; the largest argument lists a few MiB.
  static constexpr std::size_t kMaxValueBytes = std::size_t{64} << 20;
  using EventCallback = std::function<void(std::string_view raw_event, std::uint64_t index)>;
  using MemberCallback = std::function<void(std::string_view key, std::string_view raw_value)>;
  // Offered each event where it starts, with the input buffered from there (the event may not be
  // complete in it): returns the bytes the event spans when it read it, or 0 to have it passed to
  // the EventCallback whole instead.
  using DirectEventCallback = std::function<std::size_t(std::string_view available, std::uint64_t index)>;

  explicit JsonEventStream(ByteSource& source) : source_(source) {}

  // Reads the whole stream. Throws InputError (file, "byte N") on malformed or truncated JSON.
  void run(const MemberCallback& on_member, const EventCallback& on_event,
           const DirectEventCallback& try_event = nullptr);

  std::uint64_t bytes_consumed() const { return consumed_before_buffer_ + pos_; }
  std::uint64_t events_seen() const { return events_; }

 private:
  bool fill();  // appends more input; false at end of input
  void grow(std::size_t capacity);  // a buffer of `capacity` bytes holding [0, len_)
  void skip_ws();
  char peek();  // next non-space byte, filling as needed; '\0' at end of input
  std::string_view take_value(std::size_t* padded_capacity);
  std::string take_key();
  [[noreturn]] void fail(const std::string& what) const;

  ByteSource& source_;
  std::unique_ptr<ReadAhead> ahead_;  // gzip input: inflated in a second thread
  // [0, len_) valid data, then >= kPadding readable bytes of cap_ (zeroed by each read that
  // adds data). Not a std::string: growing one zero-fills all the new room, and under ASan a
  // large zeroed block is a fresh mmap per file.
  std::unique_ptr<char[]> buf_;
  std::size_t cap_ = 0;
  std::size_t len_ = 0;
  std::size_t pos_ = 0;
  // Bytes the next fill asks for: 64 KiB first, doubling to 1 MiB, so that a small file gets a
  // small buffer (a fuzzer's input, a test's trace: a 1 MiB zero-filled buffer per file was most
  // of their import under ASan) and a large one soon reads in full chunks. A fill whose buffer
  // has a quarter of a chunk free reads into that room instead of growing: the read that finds
  // the end of a small file does not enlarge its buffer.
  std::size_t chunk_ = std::size_t{64} << 10;
  std::uint64_t consumed_before_buffer_ = 0;
  std::uint64_t events_ = 0;
  bool eof_ = false;
};

}  // namespace dpro::trace
