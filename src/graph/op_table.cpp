#include "graph/op_table.h"

#include "core/error.h"

namespace dpro::graph {

OpTable::OpTable() {
  names_.emplace_back();
  name_index_.emplace(std::string(), 0);
}

OpId OpTable::add(OpDesc desc) {
  DPRO_CHECK(ops_.size() < 0xffffffffu);
  ops_.push_back(std::move(desc));
  return OpId{static_cast<std::uint32_t>(ops_.size() - 1)};
}

NameId OpTable::intern(std::string_view text) {
  auto [it, inserted] = name_index_.try_emplace(std::string(text), static_cast<std::uint32_t>(names_.size()));
  if (inserted) names_.emplace_back(text);
  return NameId{it->second};
}

}  // namespace dpro::graph
