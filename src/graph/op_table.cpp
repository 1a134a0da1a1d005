#include "graph/op_table.h"

#include <algorithm>

#include <nlohmann/json.hpp>

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

std::vector<std::vector<std::int64_t>> parse_input_dims(std::string_view text) {
  std::vector<std::vector<std::int64_t>> shapes;
  if (text.empty()) return shapes;
  const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array()) return shapes;
  for (const auto& entry : j) {
    std::vector<std::int64_t> s;
    if (entry.is_array())
      for (const auto& d : entry)
        if (d.is_number_integer()) s.push_back(d.get<std::int64_t>());
    shapes.push_back(std::move(s));
  }
  return shapes;
}

std::vector<TensorDesc> parse_inputs(std::string_view dims_text, std::string_view types_text, OpTable& table) {
  std::vector<TensorDesc> inputs;
  std::vector<std::vector<std::int64_t>> shapes = parse_input_dims(dims_text);
  const auto types = nlohmann::json::parse(types_text.empty() ? std::string_view("[]") : types_text, nullptr,
                                           /*allow_exceptions=*/false);
  const std::size_t n_types = types.is_array() ? types.size() : 0;
  inputs.resize(std::max(shapes.size(), n_types));
  for (std::size_t i = 0; i < shapes.size(); ++i) inputs[i].shape = std::move(shapes[i]);
  for (std::size_t i = 0; i < n_types; ++i) {
    if (types[i].is_string()) inputs[i].dtype = table.intern(types[i].get<std::string>());
  }
  return inputs;
}

NameId OpTable::intern(std::string_view text) {
  auto [it, inserted] = name_index_.try_emplace(std::string(text), static_cast<std::uint32_t>(names_.size()));
  if (inserted) names_.emplace_back(text);
  return NameId{it->second};
}

}  // namespace dpro::graph
