#pragma once
// Interned strings: each distinct name is stored once and referred to by a StringId; and
// small string helpers.
// Views returned by StringTable::view stay valid for the table's lifetime.
#include <charconv>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <vector>

namespace dpro {

// `text` with ASCII letters in lower case.
inline std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// "1 row", "2 rows": a count and its noun, plural with an 's' unless the count is one.
inline std::string count_of(std::size_t n, std::string_view noun) {
  std::string out = std::to_string(n) + " " + std::string(noun);
  if (n != 1) out += 's';
  return out;
}

// `text` as a whole decimal number and nothing else (optional '-', digits; no spaces, no '+', no
// trailing text); nullopt if it is not one or does not fit 64 bits. Inline: the profiler side,
// which links nothing of dpro_core, uses it too.
inline std::optional<std::int64_t> parse_integer(std::string_view text) {
  std::int64_t n = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size()) return std::nullopt;
  return n;
}

// `text` as a decimal number and nothing else: spaces and tabs around it allowed; no hex, no
// leading '+', no trailing text ("0.1abc", "0.1 ms", "0x10" are refused), nothing out of double's
// range ("1e400"). False if it is not one; `out` is then unspecified.
bool parse_decimal(std::string_view text, double& out);

struct StringId {
  std::uint32_t value = 0;  // 0 is the empty string
  friend bool operator==(StringId a, StringId b) = default;
  friend auto operator<=>(StringId a, StringId b) = default;
};

class StringTable {
 public:
  StringTable();
  StringTable(const StringTable&) = delete;
  StringTable& operator=(const StringTable&) = delete;
  StringTable(StringTable&&) = default;
  StringTable& operator=(StringTable&&) = default;

  StringId intern(std::string_view text);
  std::string_view view(StringId id) const { return *by_id_[id.value]; }
  std::string str(StringId id) const { return std::string(view(id)); }
  std::size_t size() const { return by_id_.size(); }

 private:
  std::deque<std::string> storage_;  // deque: element addresses are stable
  std::vector<const std::string*> by_id_;
  std::unordered_map<std::string_view, std::uint32_t> index_;
};

}  // namespace dpro

template <>
struct std::hash<dpro::StringId> {
  std::size_t operator()(dpro::StringId id) const noexcept { return id.value; }
};
