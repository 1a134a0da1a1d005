#include "trace/json_stream.h"

#include <array>
#include <cstring>

#include "core/error.h"

namespace dpro::trace {
namespace {

constexpr std::size_t kChunk = 1 << 20;
constexpr std::size_t kMaxValue = std::size_t{512} << 20;

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// Byte classes for the value scanner: 1 = quote, 2 = open, 3 = close.
constexpr std::array<std::uint8_t, 256> make_classes() {
  std::array<std::uint8_t, 256> t{};
  t['"'] = 1;
  t['{'] = 2;
  t['['] = 2;
  t['}'] = 3;
  t[']'] = 3;
  return t;
}
constexpr auto kClasses = make_classes();

// Returns the offset just past the JSON value starting at text[0], or npos if the value is
// not complete within `text`. Validation is left to the parser that consumes the value.
std::size_t scan_value_end(std::string_view text) {
  const char* p = text.data();
  const char* end = p + text.size();
  if (p == end) return std::string_view::npos;
  if (*p == '"') {
    for (const char* q = p + 1; q < end; ++q) {
      if (*q == '\\') { ++q; continue; }
      if (*q == '"') return static_cast<std::size_t>(q + 1 - p);
    }
    return std::string_view::npos;
  }
  if (*p != '{' && *p != '[') {  // number, true, false, null
    const char* q = p;
    while (q < end && *q != ',' && *q != '}' && *q != ']' && !is_space(*q)) ++q;
    return q < end ? static_cast<std::size_t>(q - p) : std::string_view::npos;
  }
  int depth = 0;
  for (const char* q = p; q < end; ++q) {
    switch (kClasses[static_cast<unsigned char>(*q)]) {
      case 0: break;
      case 1:
        for (++q; q < end && *q != '"'; ++q) {
          if (*q == '\\') ++q;
        }
        if (q >= end) return std::string_view::npos;
        break;
      case 2: ++depth; break;
      case 3:
        if (--depth == 0) return static_cast<std::size_t>(q + 1 - p);
        break;
    }
  }
  return std::string_view::npos;
}

}  // namespace

bool JsonEventStream::fill() {
  if (eof_) return false;
  // Drop consumed bytes, then append a chunk.
  if (pos_ > 0) {
    std::memmove(buf_.data(), buf_.data() + pos_, len_ - pos_);
    consumed_before_buffer_ += pos_;
    len_ -= pos_;
    pos_ = 0;
  }
  if (buf_.size() < len_ + kChunk + kPadding) buf_.resize(len_ + kChunk + kPadding);
  const std::size_t n = source_.read(buf_.data() + len_, kChunk);
  if (n == 0) {
    eof_ = true;
    return false;
  }
  len_ += n;
  return true;
}

void JsonEventStream::skip_ws() {
  for (;;) {
    while (pos_ < len_ && is_space(buf_[pos_])) ++pos_;
    if (pos_ < len_ || !fill()) return;
  }
}

char JsonEventStream::peek() {
  skip_ws();
  return pos_ < len_ ? buf_[pos_] : '\0';
}

void JsonEventStream::fail(const std::string& what) const {
  throw InputError(source_.path(), "byte " + std::to_string(consumed_before_buffer_ + pos_),
                   "malformed JSON: " + what);
}

std::string_view JsonEventStream::take_value(std::size_t* padded_capacity) {
  skip_ws();
  for (;;) {
    const std::size_t n = scan_value_end(std::string_view(buf_.data() + pos_, len_ - pos_));
    if (n != std::string_view::npos) {
      const std::size_t start = pos_;
      pos_ += n;
      if (padded_capacity) *padded_capacity = buf_.size() - start;
      return std::string_view(buf_.data() + start, n);
    }
    if (len_ - pos_ > kMaxValue) fail("a single value larger than 512 MiB");
    if (!fill()) {
      if (pos_ == len_) fail("unexpected end of input (truncated file?)");
      // A bare scalar at the very end of input is complete.
      const char c = buf_[pos_];
      if (c != '{' && c != '[' && c != '"') {
        const std::size_t start = pos_;
        pos_ = len_;
        if (padded_capacity) *padded_capacity = buf_.size() - start;
        return std::string_view(buf_.data() + start, len_ - start);
      }
      fail("unexpected end of input inside a value (truncated file?)");
    }
  }
}

std::string JsonEventStream::take_key() {
  if (peek() != '"') fail("expected a member name");
  std::string_view raw = take_value(nullptr);
  std::string key(raw.substr(1, raw.size() - 2));
  if (peek() != ':') fail("expected ':' after member name \"" + key + "\"");
  ++pos_;
  return key;
}

void JsonEventStream::run(const MemberCallback& on_member, const EventCallback& on_event) {
  const auto read_event_array = [&] {
    ++pos_;  // '['
    if (peek() == ']') { ++pos_; return; }
    for (;;) {
      const char c = peek();
      if (c == '\0') fail("unexpected end of input inside \"traceEvents\" (truncated file?)");
      if (c != '{') fail(std::string("expected an event object, found '") + c + "'");
      std::size_t capacity = 0;
      std::string_view raw = take_value(&capacity);
      on_event(raw, events_++);
      const char sep = peek();
      if (sep == ',') { ++pos_; continue; }
      if (sep == ']') { ++pos_; return; }
      if (sep == '\0') fail("unexpected end of input inside \"traceEvents\" (truncated file?)");
      fail(std::string("expected ',' or ']' between events, found '") + sep + "'");
    }
  };

  const char first = peek();
  if (first == '[') {
    read_event_array();
  } else if (first == '{') {
    ++pos_;
    if (peek() == '}') {
      ++pos_;
    } else {
      for (;;) {
        const std::string key = take_key();
        if (key == "traceEvents" && peek() == '[') {
          read_event_array();
        } else {
          std::string_view raw = take_value(nullptr);
          on_member(key, raw);
        }
        const char sep = peek();
        if (sep == ',') { ++pos_; continue; }
        if (sep == '}') { ++pos_; break; }
        if (sep == '\0') fail("unexpected end of input (truncated file?)");
        fail(std::string("expected ',' or '}' after member \"") + key + "\", found '" + sep + "'");
      }
    }
  } else if (first == '\0') {
    throw InputError(source_.path(), "", "empty file");
  } else {
    fail(std::string("expected '{' or '[' at the start, found '") + first + "'");
  }
  if (peek() != '\0') fail("unexpected data after the end of the JSON document");
}

}  // namespace dpro::trace
