#include "core/strings.h"

namespace dpro {

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
