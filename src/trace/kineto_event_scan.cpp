#include "trace/kineto_event_scan.h"

#include <simdjson.h>

#include <array>
#include <charconv>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/strings.h"
#include "trace/json_bytes.h"
#include "trace/kineto_importer.h"

namespace dpro::trace {

EventKey event_key(std::string_view k) {
  switch (k.size()) {
    case 2:
      if (k == "ph") return EventKey::kPh;
      if (k == "ts") return EventKey::kTs;
      if (k == "id") return EventKey::kId;
      break;
    case 3:
      switch (k[0]) {
        case 'c': if (k == "cat") return EventKey::kCat; break;
        case 'd': if (k == "dur") return EventKey::kDur; break;
        case 'p': if (k == "pid") return EventKey::kPid; break;
        case 't': if (k == "tid") return EventKey::kTid; break;
        default: break;
      }
      break;
    case 4:
      if (k == "name") return EventKey::kName;
      if (k == "args") return EventKey::kArgs;
      break;
    default: break;
  }
  return EventKey::kOther;
}

ArgKey arg_key(std::string_view k) {
  switch (k.size()) {
    case 4:
      if (k == "cbid") return ArgKey::kCbid;
      if (k == "grid") return ArgKey::kGrid;
      break;
    case 5:
      if (k == "bytes") return ArgKey::kBytes;
      if (k == "block") return ArgKey::kBlock;
      if (k == "dtype") return ArgKey::kDtype;
      break;
    case 6:
      if (k == "device") return ArgKey::kDevice;
      if (k == "stream") return ArgKey::kStream;
      break;
    case 10:
      if (k[0] == 'G') { if (k == "Group size") return ArgKey::kGroupSize; break; }
      if (k == "Input Dims") return ArgKey::kInputDims;
      if (k == "Input type") return ArgKey::kInputTypes;
      break;
    case 11:
      if (k[0] == 'c') { if (k == "correlation") return ArgKey::kCorrelation; break; }
      if (k == "External id") return ArgKey::kExternalId;
      if (k == "Device Type") return ArgKey::kDeviceType;
      if (k == "In msg size") return ArgKey::kInNelems;
      break;
    case 12:
      if (k == "Out msg size") return ArgKey::kOutNelems;
      if (k == "warps per SM") return ArgKey::kWarpsPerSm;
      break;
    case 13:
      if (k == "Fwd thread id") return ArgKey::kFwdThreadId;
      if (k == "blocks per SM") return ArgKey::kBlocksPerSm;
      if (k == "In msg nelems") return ArgKey::kInNelems;
      break;
    case 14:
      if (k[0] == 'O') { if (k == "Out msg nelems") return ArgKey::kOutNelems; break; }
      if (k == "cuda_sync_kind") return ArgKey::kSyncKind;
      if (k == "wait_on_stream") return ArgKey::kWaitOnStream;
      if (k == "Total Reserved") return ArgKey::kTotalReserved;
      break;
    case 15:
      if (k == "Sequence number") return ArgKey::kSequenceNumber;
      if (k == "Collective name") return ArgKey::kCollectiveName;
      if (k == "Total Allocated") return ArgKey::kTotalAllocated;
      break;
    case 17:
      if (k == "Global rank start") return ArgKey::kRankStart;
      break;
    case 18:
      if (k == "Global rank stride") return ArgKey::kRankStride;
      if (k == "Process Group Name") return ArgKey::kPgName;
      break;
    case 19:
      if (k == "Process Group Ranks") return ArgKey::kPgRanks;
      break;
    case 25:
      if (k == "Process Group Description") return ArgKey::kPgDesc;
      if (k == "est. achieved occupancy %") return ArgKey::kOccupancy;
      break;
    case 33:
      if (k == "wait_on_cuda_event_record_corr_id") return ArgKey::kWaitOnEventRecordCorr;
      break;
    default: break;
  }
  return ArgKey::kOther;
}

std::optional<std::int64_t>* int_arg(RawArgs& a, ArgKey key) {
  switch (key) {
    case ArgKey::kCorrelation: return &a.correlation;
    case ArgKey::kExternalId: return &a.external_id;
    case ArgKey::kDevice: return &a.device;
    case ArgKey::kStream: return &a.stream;
    case ArgKey::kBytes: return &a.bytes;
    case ArgKey::kCbid: return &a.cbid;
    case ArgKey::kSequenceNumber: return &a.sequence_number;
    case ArgKey::kFwdThreadId: return &a.fwd_thread_id;
    case ArgKey::kInNelems: return &a.in_nelems;
    case ArgKey::kOutNelems: return &a.out_nelems;
    case ArgKey::kGroupSize: return &a.group_size;
    case ArgKey::kRankStart: return &a.rank_start;
    case ArgKey::kRankStride: return &a.rank_stride;
    case ArgKey::kWaitOnStream: return &a.wait_on_stream;
    case ArgKey::kWaitOnEventRecordCorr: return &a.wait_on_event_record_corr;
    case ArgKey::kTotalAllocated: return &a.total_allocated;
    case ArgKey::kTotalReserved: return &a.total_reserved;
    case ArgKey::kDeviceType: return &a.device_type;
    default: return nullptr;
  }
}

std::optional<double>* real_arg(RawArgs& a, ArgKey key) {
  switch (key) {
    case ArgKey::kOccupancy: return &a.occupancy_pct;
    case ArgKey::kBlocksPerSm: return &a.blocks_per_sm;
    case ArgKey::kWarpsPerSm: return &a.warps_per_sm;
    default: return nullptr;
  }
}

std::optional<std::string>* text_arg(RawArgs& a, ArgKey key) {
  switch (key) {
    case ArgKey::kCollectiveName: return &a.collective_name;
    case ArgKey::kDtype: return &a.dtype;
    case ArgKey::kPgName: return &a.pg_name;
    case ArgKey::kPgDesc: return &a.pg_desc;
    case ArgKey::kSyncKind: return &a.sync_kind;
    default: return nullptr;
  }
}

namespace {

constexpr int kMaxDepth = 64;  // deeper values are left to the general reader

// A cursor over one event's text. Every method returns false to decline: the caller then stops
// and the event goes to the general reader.
class Scanner {
 public:
  explicit Scanner(std::string_view text) : begin_(text.data()), p_(text.data()), end_(text.data() + text.size()) {}

  std::size_t offset() const { return static_cast<std::size_t>(p_ - begin_); }
  const char* at() const { return p_; }

  // Skips white space; false at the end of the text (the event is not complete).
  bool ws() {
    while (p_ < end_ && json_bytes::is(*p_, json_bytes::kSpace)) ++p_;
    return p_ < end_;
  }
  bool take(char c) {
    if (!ws() || *p_ != c) return false;
    ++p_;
    return true;
  }
  char next() { return ws() ? *p_ : '\0'; }

  // A string with no escape and no control character; its UTF-8 is checked.
  bool string(std::string_view& out) {
    if (!ws() || *p_ != '"') return false;
    const char* s = ++p_;
    bool ascii = true;
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), low = _mm_set1_epi8(0x20);
    for (; p_ + 16 <= end_; p_ += 16) {
      const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p_));
      // Signed compare: bytes >= 0x80 (non-ASCII) are below 0x20 too.
      const int special = _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(block, quote), _mm_cmpeq_epi8(block, backslash)),
                                                         _mm_cmplt_epi8(block, low)));
      if (special == 0) continue;
      p_ += __builtin_ctz(static_cast<unsigned>(special));
      break;
    }
#endif
    for (; p_ < end_; ++p_) {
      const unsigned char c = static_cast<unsigned char>(*p_);
      if (c == '"') break;
      if (c == '\\') return false;
      if (c < 0x20) return false;
      if (c >= 0x80) ascii = false;
    }
    if (p_ >= end_) return false;
    out = std::string_view(s, static_cast<std::size_t>(p_ - s));
    ++p_;
    return ascii || simdjson::validate_utf8(out.data(), out.size());
  }

  // The characters of a number: [-+.0-9eE]+.
  bool number(std::string_view& token) {
    if (!ws()) return false;
    const char* s = p_;
    while (p_ < end_ && json_bytes::is(*p_, json_bytes::kNumber)) ++p_;
    if (p_ == s || p_ >= end_) return false;  // a number ends before the end of its event
    token = std::string_view(s, static_cast<std::size_t>(p_ - s));
    return true;
  }

  // A whole number as simdjson reads one exactly: optional '-', no leading zero, at most 18 digits.
  bool whole(std::int64_t& out) {
    std::string_view t;
    if (!number(t)) return false;
    return whole_token(t, out);
  }
  static bool whole_token(std::string_view t, std::int64_t& out) {
    const bool negative = !t.empty() && t[0] == '-';
    if (negative) t.remove_prefix(1);
    if (t.empty() || t.size() > 18 || (t[0] == '0' && t.size() > 1)) return false;
    std::int64_t v = 0;
    for (char c : t) {
      if (c < '0' || c > '9') return false;
      v = v * 10 + (c - '0');
    }
    out = negative ? -v : v;
    return true;
  }

  // A JSON number as a double (from_chars reads it exactly as strtod would, without the locale).
  bool real(double& out) {
    std::string_view t;
    if (!number(t) || !number_is_json(t)) return false;
    const auto [end, error] = std::from_chars(t.data(), t.data() + t.size(), out);
    return error == std::errc() && end == t.data() + t.size();
  }

  // Any value, checked and passed over.
  bool skip(int depth = 0) {
    switch (next()) {
      case '"': {
        std::string_view s;
        return string(s);
      }
      case '{': {
        if (depth >= kMaxDepth) return false;
        ++p_;
        if (next() == '}') { ++p_; return true; }
        for (;;) {
          std::string_view key;
          if (!string(key) || !take(':') || !skip(depth + 1)) return false;
          const char c = next();
          ++p_;
          if (c == '}') return true;
          if (c != ',') return false;
        }
      }
      case '[': {
        if (depth >= kMaxDepth) return false;
        ++p_;
        if (next() == ']') { ++p_; return true; }
        for (;;) {
          if (!skip(depth + 1)) return false;
          const char c = next();
          ++p_;
          if (c == ']') return true;
          if (c != ',') return false;
        }
      }
      case 't': return literal("true");
      case 'f': return literal("false");
      case 'n': return literal("null");
      case '\0': return false;
      default: {
        std::string_view t;
        return number(t) && number_is_json(t);
      }
    }
  }

  // An array value, checked; `raw` is its text from '[' to ']'.
  bool raw_array(std::string_view& raw) {
    if (next() != '[') return false;
    const char* s = p_;
    if (!skip()) return false;
    raw = std::string_view(s, static_cast<std::size_t>(p_ - s));
    return true;
  }

 private:
  bool literal(std::string_view word) {
    if (static_cast<std::size_t>(end_ - p_) <= word.size() || std::memcmp(p_, word.data(), word.size()) != 0) return false;
    p_ += word.size();
    const char c = *p_;
    return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\r' || c == '\t';
  }
  // JSON's number grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
  static bool number_is_json(std::string_view t) {
    std::size_t i = 0;
    const auto digits = [&] {
      const std::size_t s = i;
      while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
      return i - s;
    };
    if (i < t.size() && t[i] == '-') ++i;
    const std::size_t lead = i;
    const std::size_t n = digits();
    if (n == 0 || (n > 1 && t[lead] == '0')) return false;
    if (i < t.size() && t[i] == '.') {
      ++i;
      if (digits() == 0) return false;
    }
    if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
      ++i;
      if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
      if (digits() == 0) return false;
    }
    return i == t.size();
  }

  const char* begin_;
  const char* p_;
  const char* end_;
};

// A "grid" or "block": an array of whole numbers, as the importer keeps it.
bool read_dim3(Scanner& s, std::optional<std::array<int, 3>>& out) {
  if (!s.take('[')) return false;
  std::array<int, 3> dims{1, 1, 1};
  std::size_t i = 0;
  if (s.next() == ']') {
    s.take(']');
  } else {
    for (;;) {
      std::int64_t x = 0;
      if (!s.whole(x)) return false;
      if (i < 3) dims[i++] = static_cast<int>(x);
      const char c = s.next();
      if (c == ']') { s.take(']'); break; }
      if (!s.take(',')) return false;
    }
  }
  out = dims;
  return true;
}

bool read_args(Scanner& s, RawArgs& a) {
  if (!s.take('{')) return false;
  if (s.next() == '}') return s.take('}');
  for (;;) {
    std::string_view key;
    if (!s.string(key) || !s.take(':')) return false;
    const ArgKey k = arg_key(key);
    if (auto* field = int_arg(a, k)) {
      if (s.next() == '"') {
        std::string_view text;
        if (!s.string(text)) return false;
        *field = parse_integer(text);
      } else {
        std::int64_t x = 0;
        if (!s.whole(x)) return false;
        *field = x;
      }
    } else if (auto* text_field = text_arg(a, k)) {
      std::string_view text;
      if (!s.string(text)) return false;
      *text_field = std::string(text);
    } else if (auto* real_field = real_arg(a, k)) {
      double x = 0;
      if (!s.real(x)) return false;  // a string or another form: the general reader's case
      *real_field = x;
    } else if (k == ArgKey::kGrid || k == ArgKey::kBlock) {
      if (!read_dim3(s, k == ArgKey::kGrid ? a.grid : a.block)) return false;
    } else if (k == ArgKey::kPgRanks) {
      std::string_view text;
      if (s.next() == '[' ? !s.raw_array(text) : !s.string(text)) return false;
      a.pg_ranks = std::string(text);
    } else if (k == ArgKey::kInputDims || k == ArgKey::kInputTypes) {
      if (s.next() == '[') {
        std::string_view raw;
        if (!s.raw_array(raw)) return false;
        (k == ArgKey::kInputDims ? a.input_dims : a.input_types).assign(raw);
      } else if (!s.skip()) {
        return false;
      }
    } else if (!s.skip()) {
      return false;
    }
    const char c = s.next();
    if (c == '}') return s.take('}');
    if (!s.take(',')) return false;
  }
}

// The args of "thread_name" metadata: the value of "name".
bool read_thread_name(Scanner& s, ParsedEvent& e) {
  if (!s.take('{')) return false;
  if (s.next() == '}') return s.take('}');
  for (;;) {
    std::string_view key;
    if (!s.string(key) || !s.take(':')) return false;
    if (key == "name") {
      std::string_view text;
      if (!s.string(text)) return false;
      e.thread_names.push_back({*e.pid, *e.tid, text});
    } else if (!s.skip()) {
      return false;
    }
    const char c = s.next();
    if (c == '}') return s.take('}');
    if (!s.take(',')) return false;
  }
}

bool read_member(Scanner& s, EventKey key, ParsedEvent& e) {
  switch (key) {
    case EventKey::kPh: return s.string(e.ph);
    case EventKey::kCat: return s.string(e.cat);
    case EventKey::kName: return s.string(e.name);
    case EventKey::kTs:
    case EventKey::kDur: {
      std::string_view token;
      Nanos t = 0;
      if (!s.number(token) || !parse_micros_as_nanos(token, &t)) return false;
      (key == EventKey::kTs ? e.ts : e.dur) = t;
      return true;
    }
    case EventKey::kId:
    case EventKey::kPid:
    case EventKey::kTid: {
      if (s.next() == '"') {  // a text id ("Spans"): not a number, as if absent
        std::string_view text;
        return s.string(text);
      }
      std::int64_t x = 0;
      if (!s.whole(x)) return false;
      (key == EventKey::kId ? e.flow_id : key == EventKey::kPid ? e.pid : e.tid) = x;
      return true;
    }
    case EventKey::kArgs:
      if (s.next() != '{') return s.skip();
      if (e.ph == "M") {
        if (e.pid && e.tid && e.name == "thread_name") return read_thread_name(s, e);
        return s.skip();
      }
      return read_args(s, e.args);
    case EventKey::kOther: return s.skip();
  }
  return false;
}

}  // namespace

std::size_t scan_event(std::string_view text, ParsedEvent& e) {
  Scanner s(text);
  if (!s.take('{')) return 0;
  if (s.next() == '}') {
    s.take('}');
    return s.offset();
  }
  for (;;) {
    std::string_view key;
    if (!s.string(key) || !s.take(':') || !read_member(s, event_key(key), e)) return 0;
    const char c = s.next();
    if (c == '}') {
      s.take('}');
      return s.offset();
    }
    if (!s.take(',')) return 0;
  }
}

}  // namespace dpro::trace
