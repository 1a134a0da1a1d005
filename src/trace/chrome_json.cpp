#include "trace/chrome_json.h"

#include <fmt/format.h>

#include <cstdint>

#include <nlohmann/json.hpp>

#include "core/json_fields.h"

namespace dpro::trace {

std::string chrome_string(std::string_view text) { return dump_output_json(nlohmann::json(std::string(text)), -1); }

std::string chrome_micros(Nanos t) {
  const bool negative = t < 0;
  // The magnitude in unsigned arithmetic: -t overflows for the most negative time.
  const std::uint64_t a = negative ? 0 - static_cast<std::uint64_t>(t) : static_cast<std::uint64_t>(t);
  return fmt::format("{}{}.{:03}", negative ? "-" : "", a / 1000, a % 1000);
}

}  // namespace dpro::trace
