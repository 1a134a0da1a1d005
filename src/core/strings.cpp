#include "core/strings.h"

#include <charconv>
#include <system_error>

namespace dpro {

bool parse_decimal(std::string_view text, double& out) {
  const auto first = text.find_first_not_of(" \t"), last = text.find_last_not_of(" \t");
  if (first == std::string_view::npos) return false;
  // from_chars in general format reads no hex and no leading '+'; all of it must be the number.
  const char* end = text.data() + last + 1;
  const auto r = std::from_chars(text.data() + first, end, out, std::chars_format::general);
  return r.ec == std::errc() && r.ptr == end;
}

StringTable::StringTable() {
  storage_.emplace_back();
  by_id_.push_back(&storage_.back());
  index_.emplace(std::string_view(storage_.back()), 0);
}

StringId StringTable::intern(std::string_view text) {
  if (auto it = index_.find(text); it != index_.end()) return StringId{it->second};
  storage_.emplace_back(text);
  const auto id = static_cast<std::uint32_t>(by_id_.size());
  by_id_.push_back(&storage_.back());
  index_.emplace(std::string_view(storage_.back()), id);
  return StringId{id};
}

}  // namespace dpro
