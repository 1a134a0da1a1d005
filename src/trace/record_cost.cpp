#include "trace/record_cost.h"

#include <cmath>

#include "core/error.h"
#include "core/strings.h"

namespace dpro::trace {
namespace {

constexpr const char* kNames[kRecordClassCount] = {"runtime", "driver", "kernel", "memcpy",
                                                   "memset",  "sync",   "cpu_op"};

// "2.1us" -> 2100; nullopt (with `why`) when it is no value with a unit.
std::optional<Nanos> parse_value(std::string_view text, std::string& why) {
  struct Unit { std::string_view suffix; double ns; };
  static constexpr Unit kUnits[] = {{"ns", 1.0}, {"us", 1e3}, {"ms", 1e6}};
  for (const Unit& u : kUnits) {
    if (text.size() <= u.suffix.size() || !text.ends_with(u.suffix)) continue;
    double v = 0;
    if (!parse_decimal(text.substr(0, text.size() - u.suffix.size()), v) || !std::isfinite(v)) break;
    if (v < 0) {
      why = "a record cannot cost less than nothing";
      return std::nullopt;
    }
    const double ns = v * u.ns;
    if (ns > static_cast<double>(kMaxRecordCost)) {
      why = "over " + format_duration(kMaxRecordCost) + " per record: no profiler's record costs that";
      return std::nullopt;
    }
    return static_cast<Nanos>(std::llround(ns));
  }
  why = std::string(text);
  why += " is no time per record: a number with its unit (ns, us or ms), e.g. 2.1us";
  return std::nullopt;
}

}  // namespace

const char* to_string(RecordClass c) { return kNames[static_cast<int>(c)]; }

std::optional<RecordClass> record_class_named(std::string_view name) {
  for (int i = 0; i < kRecordClassCount; ++i)
    if (name == kNames[i]) return static_cast<RecordClass>(i);
  return std::nullopt;
}

std::string record_class_names() {
  std::string out;
  for (const char* n : kNames) out.append(out.empty() ? "" : ", ").append(n);
  return out;
}

bool RecordCosts::empty() const {
  for (const auto& v : ns)
    if (v) return false;
  return true;
}

RecordCosts RecordCosts::overridden_by(const RecordCosts& over) const {
  RecordCosts out = *this;
  for (int i = 0; i < kRecordClassCount; ++i)
    if (over.ns[i]) out.ns[i] = over.ns[i];
  return out;
}

RecordCosts parse_record_costs(std::string_view text, const std::string& option, std::vector<std::string>* unknown) {
  auto fail = [&](const std::string& why) { return OptionError(option, std::string(text), why); };
  if (text.empty()) throw fail("empty: give CLASS=TIME pairs, e.g. runtime=2.1us,kernel=1.9us");
  RecordCosts costs;
  for (std::size_t from = 0; from <= text.size();) {
    const std::size_t comma = std::min(text.find(',', from), text.size());
    const std::string_view item = text.substr(from, comma - from);
    from = comma + 1;
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      throw fail("'" + std::string(item) + "' is no CLASS=TIME pair (classes: " + record_class_names() + ")");
    const std::string_view name = item.substr(0, eq);
    const auto cls = record_class_named(name);
    if (!cls) {
      if (!unknown) throw fail("unknown record class '" + std::string(name) + "' (known: " + record_class_names() + ")");
      unknown->emplace_back(name);
      continue;
    }
    if (costs.of(*cls)) throw fail("record class '" + std::string(name) + "' given twice");
    std::string why;
    const auto ns = parse_value(item.substr(eq + 1), why);
    if (!ns) throw fail(std::string(name) + ": " + why);
    costs.set(*cls, *ns);
  }
  return costs;
}

std::string format_record_costs(const RecordCosts& costs) {
  std::string out;
  for (int i = 0; i < kRecordClassCount; ++i)
    if (costs.ns[i]) out.append(out.empty() ? "" : ",").append(kNames[i]).append("=").append(std::to_string(*costs.ns[i])).append("ns");
  return out;
}

}  // namespace dpro::trace
