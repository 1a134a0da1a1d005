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
  DPRO_CHECK(size() < 0xffffffffu);
  ops_.push_back(std::move(desc));
  return OpId{static_cast<std::uint32_t>(size() - 1)};
}

void OpTable::share() {
  if (ops_.empty() && names_.empty()) return;
  auto all = std::make_shared<Shared>();
  if (shared_) *all = *shared_;
  for (OpDesc& d : ops_) all->ops.push_back(std::move(d));
  for (std::string& n : names_) all->names.push_back(std::move(n));
  for (auto& [text, id] : name_index_) all->name_index.emplace(text, id);
  ops_.clear();
  names_.clear();
  name_index_.clear();
  shared_ops_ = static_cast<std::uint32_t>(all->ops.size());
  shared_names_ = static_cast<std::uint32_t>(all->names.size());
  shared_ = std::move(all);
}

std::vector<std::vector<std::int64_t>> parse_input_dims(std::string_view text) {
  std::vector<std::vector<std::int64_t>> shapes;
  if (text.empty()) return shapes;
  const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array()) return shapes;
  // No real tensor has a negative dimension or more than 2^48 elements: such a shape (a corrupt
  // trace) is taken as unknown, so that products of its dimensions (element counts, FLOPs) never
  // overflow.
  constexpr std::int64_t kMaxElements = std::int64_t{1} << 48;
  for (const auto& entry : j) {
    std::vector<std::int64_t> s;
    std::int64_t elements = 1;
    bool plausible = true;
    if (entry.is_array())
      for (const auto& d : entry) {
        if (!d.is_number_integer()) continue;
        const std::int64_t dim = d.get<std::int64_t>();
        plausible = plausible && dim >= 0 && dim <= kMaxElements && (dim == 0 || elements <= kMaxElements / dim);
        if (plausible) elements *= dim;
        s.push_back(dim);
      }
    if (!plausible) s.clear();
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
  if (shared_) {
    const auto found = shared_->name_index.find(std::string(text));
    if (found != shared_->name_index.end()) return NameId{found->second};
  }
  auto [it, inserted] = name_index_.try_emplace(std::string(text), static_cast<std::uint32_t>(name_count()));
  if (inserted) names_.emplace_back(text);
  return NameId{it->second};
}

}  // namespace dpro::graph
