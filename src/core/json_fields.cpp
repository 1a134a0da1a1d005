#include "core/json_fields.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/byte_source.h"
#include "core/error.h"
#include "core/output_file.h"

namespace dpro::json_field {

namespace {

// The shortest text of a bound, exponents without sign or padding: 1e6, 1e5, 1024, 0.001, 1e-7.
std::string bound_text(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  std::string t(buf, r.ptr);
  if (const auto e = t.find('e'); e != std::string::npos) {
    std::string exponent = t.substr(e + 1);
    const bool negative = exponent[0] == '-';
    if (exponent[0] == '-' || exponent[0] == '+') exponent.erase(0, 1);
    exponent.erase(0, std::min(exponent.find_first_not_of('0'), exponent.size() - 1));
    t = t.substr(0, e + 1) + (negative ? "-" : "") + exponent;
  }
  return t;
}

}  // namespace

std::string describe(const Range& range) {
  std::string text = std::string(range.whole ? "a whole number" : "a number") + " from " + bound_text(range.lo) +
                     " to " + bound_text(range.hi);
  if (*range.unit) text += std::string(" ") + range.unit;
  return text;
}

bool in_range(const Range& range, double x) {
  return x >= range.lo && x <= range.hi && (!range.whole || x == std::floor(x));
}

std::string optional_string(const nlohmann::json& obj, const std::string& key, const std::string& file,
                            const std::string& item) {
  if (!obj.contains(key)) return "";
  if (!obj[key].is_string()) throw InputError(file, item, "must be a string, got " + obj[key].dump());
  return obj[key].get<std::string>();
}

std::optional<double> number(const nlohmann::json& obj, const std::string& key, const Range& range,
                             const std::string& file, const std::string& item) {
  if (!obj.contains(key)) return std::nullopt;
  const nlohmann::json& v = obj[key];
  const double x = v.is_number() ? v.get<double>() : std::nan("");
  if (!in_range(range, x))
    throw InputError(file, item, "must be " + describe(range) + ", got " + v.dump());
  return x;
}

double required_number(const nlohmann::json& obj, const std::string& key, const Range& range, const std::string& file,
                       const std::string& item) {
  const auto x = number(obj, key, range, file, item);
  if (!x) throw InputError(file, item, "missing: " + describe(range));
  return *x;
}

void check_json_depth(const nlohmann::json& j, const std::string& file) {
  std::vector<std::pair<const nlohmann::json*, std::size_t>> todo = {{&j, 0}};  // a value, its parents
  while (!todo.empty()) {
    const auto [v, parents] = todo.back();
    todo.pop_back();
    if (!v->is_structured()) continue;
    if (parents + 1 > kMaxJsonDepth)
      throw InputError(file, "", "nests arrays and objects deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    for (const nlohmann::json& child : *v) todo.emplace_back(&child, parents + 1);
  }
}

nlohmann::json read_json_file(const std::string& path, const std::string& expected) {
  reject_directory(path, expected);
  const std::string text = read_whole_file(path);  // InputError when it cannot be read
  note_opened_input(path);
  return parse_json(text, path);
}

nlohmann::json parse_json(std::string_view text, const std::string& file, const std::string& item,
                          const std::string& what) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // a syntax error, or a number beyond a double (out_of_range.406)
    throw InputError(file, item, what + ": " + e.what());
  }
  check_json_depth(j, file);
  return j;
}

}  // namespace dpro::json_field

namespace dpro {

std::string dump_output_json(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace dpro
