#include "trace/json_stream.h"

#include <algorithm>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/error.h"
#include "trace/json_bytes.h"

namespace dpro::trace {
namespace {

constexpr std::size_t kChunk = 1 << 20;
constexpr std::size_t kMaxValue = std::size_t{512} << 20;

bool is_space(char c) { return json_bytes::is(c, json_bytes::kSpace); }

// First byte in [q, end) that is one of the structural bytes of `set`, or end. 16 bytes at a
// time with SSE2 (part of every x86-64 CPU); the tail byte by byte.
template <int N>
const char* find_any(const char* q, const char* end, const char (&set)[N]) {
#if defined(__SSE2__)
  __m128i needles[N];
  for (int k = 0; k < N; ++k) needles[k] = _mm_set1_epi8(set[k]);
  for (; q + 16 <= end; q += 16) {
    const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    __m128i hit = _mm_cmpeq_epi8(block, needles[0]);
    for (int k = 1; k < N; ++k) hit = _mm_or_si128(hit, _mm_cmpeq_epi8(block, needles[k]));
    if (const int mask = _mm_movemask_epi8(hit)) return q + __builtin_ctz(static_cast<unsigned>(mask));
  }
#endif
  for (; q < end; ++q) {
    for (int k = 0; k < N; ++k) {
      if (*q == set[k]) return q;
    }
  }
  return end;
}

constexpr char kStructural[] = {'"', '{', '}', '[', ']'};
constexpr char kStringEnd[] = {'"', '\\'};

// Where a scan of one value stopped, so that it resumes there when more input arrives: every
// byte of a value is examined once, however many chunks it spans (a rescan from the value's
// start at each chunk made one huge value quadratic).
struct ValueScan {
  std::size_t scanned = 0;  // bytes of the value examined (may pass the data by one: an escape)
  int depth = 0;
  bool in_string = false;
};

// Returns the offset just past the JSON value starting at text[0], or npos if the value is
// not complete within `text` (`state` then says where to resume). Validation is left to the
// parser that consumes the value.
std::size_t scan_value_end(std::string_view text, ValueScan& state) {
  const char* p = text.data();
  const char* end = p + text.size();
  if (p == end) return std::string_view::npos;
  const char* q = p + state.scanned;
  if (*p != '{' && *p != '[' && *p != '"') {  // number, true, false, null
    while (q < end && *q != ',' && *q != '}' && *q != ']' && !is_space(*q)) ++q;
    state.scanned = static_cast<std::size_t>(q - p);
    return q < end ? state.scanned : std::string_view::npos;
  }
  for (;;) {
    if (state.in_string) {
      for (;;) {
        if (q >= end) {
          state.scanned = static_cast<std::size_t>(q - p);
          return std::string_view::npos;
        }
        q = find_any(q, end, kStringEnd);
        if (q >= end) continue;
        if (*q == '"') break;
        q += 2;  // an escaped character
      }
      state.in_string = false;
      if (state.depth == 0) return static_cast<std::size_t>(q + 1 - p);  // a bare string value
      ++q;
      continue;
    }
    q = find_any(q, end, kStructural);
    if (q == end) {
      state.scanned = static_cast<std::size_t>(q - p);
      return std::string_view::npos;
    }
    if (*q == '"') {
      state.in_string = true;
    } else if (*q == '{' || *q == '[') {
      ++state.depth;
    } else if (--state.depth == 0) {
      return static_cast<std::size_t>(q + 1 - p);
    }
    ++q;
  }
}

}  // namespace

bool JsonEventStream::fill() {
  if (eof_) return false;
  // Drop consumed bytes, then append a chunk.
  if (pos_ > 0) {
    std::memmove(buf_.get(), buf_.get() + pos_, len_ - pos_);
    consumed_before_buffer_ += pos_;
    len_ -= pos_;
    pos_ = 0;
  }
  // What is left is one value still being read (an event, a top-level member): bounded, so that
  // a corrupt or hostile file cannot make one value take the machine's memory.
  if (len_ > kMaxValueBytes)
    throw InputError(source_.path(), "byte " + std::to_string(consumed_before_buffer_),
                     "one JSON value (an event or a top-level member) longer than " +
                         std::to_string(kMaxValueBytes >> 20) + " MiB: no trace event is that large (a corrupt file?)");
  std::size_t chunk = chunk_;
  chunk_ = std::min(chunk_ * 2, kChunk);
  const std::size_t room = cap_ - std::min(cap_, len_ + kPadding);
  if (room >= chunk / 4) {
    chunk = std::min(room, kChunk);
  } else {
    grow(std::max(len_ + chunk + kPadding, cap_ * 2));  // doubling: a long value is copied O(1) times per byte
  }
  if (!ahead_ && source_.gzipped()) ahead_ = std::make_unique<ReadAhead>(source_);
  const std::size_t n = ahead_ ? ahead_->read(buf_.get() + len_, chunk) : source_.read(buf_.get() + len_, chunk);
  if (n == 0) {
    eof_ = true;
    return false;
  }
  len_ += n;
  std::memset(buf_.get() + len_, 0, kPadding);  // what a parser may read past the data
  return true;
}

void JsonEventStream::grow(std::size_t capacity) {
  // Not zero-filled (new char[] leaves it as it is): only [0, len_) and the padding are read.
  std::unique_ptr<char[]> bigger(new char[capacity]);
  if (len_ > 0) std::memcpy(bigger.get(), buf_.get(), len_);
  buf_ = std::move(bigger);
  cap_ = capacity;
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
  ValueScan scan;  // offsets are from pos_, which fill() keeps at the value's first byte
  for (;;) {
    const std::size_t n = scan_value_end(std::string_view(buf_.get() + pos_, len_ - pos_), scan);
    if (n != std::string_view::npos) {
      const std::size_t start = pos_;
      pos_ += n;
      if (padded_capacity) *padded_capacity = cap_ - start;
      return std::string_view(buf_.get() + start, n);
    }
    if (len_ - pos_ > kMaxValue) fail("a single value larger than 512 MiB");
    if (!fill()) {
      if (pos_ == len_) fail("unexpected end of input (truncated file?)");
      // A bare scalar at the very end of input is complete.
      const char c = buf_[pos_];
      if (c != '{' && c != '[' && c != '"') {
        const std::size_t start = pos_;
        pos_ = len_;
        if (padded_capacity) *padded_capacity = cap_ - start;
        return std::string_view(buf_.get() + start, len_ - start);
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

void JsonEventStream::run(const MemberCallback& on_member, const EventCallback& on_event,
                          const DirectEventCallback& try_event) {
  const auto read_event_array = [&] {
    ++pos_;  // '['
    if (peek() == ']') { ++pos_; return; }
    for (;;) {
      const char c = peek();
      if (c == '\0') fail("unexpected end of input inside \"traceEvents\" (truncated file?)");
      if (c != '{') fail(std::string("expected an event object, found '") + c + "'");
      std::size_t direct = 0;
      if (try_event) direct = try_event(std::string_view(buf_.get() + pos_, len_ - pos_), events_);
      if (direct > 0) {
        pos_ += direct;
        ++events_;
      } else {
        std::size_t capacity = 0;
        std::string_view raw = take_value(&capacity);
        on_event(raw, events_++);
      }
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
