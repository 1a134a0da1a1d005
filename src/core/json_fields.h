#pragma once
// Typed fields of the JSON objects users write (cluster files, device specs): each is checked
// where it is read, and a value that is missing, of another type or out of range is one
// InputError naming the file and the item ("intra_node.bandwidth_gbps"), never a JSON type
// error from deep inside a parser. And dump_output_json, the one way JSON outputs are written.
#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace dpro::json_field {

// The allowed range of a number, and how it is described in messages.
struct Range {
  double lo = 0, hi = 0;
  bool whole = false;     // a whole number
  const char* unit = "";  // "GB/s": appended to the range in messages
};

// Whether x lies in the range (NaN never does).
bool in_range(const Range& range, double x);

// "" when absent; present with another type: InputError "must be a string, got 7".
std::string optional_string(const nlohmann::json& obj, const std::string& key, const std::string& file,
                            const std::string& item);

// The number at `key`, nullopt when absent. Present but not a number in `range` (NaN and
// infinities never are): InputError "must be a number from 0.001 to 1e6 GB/s, got -5".
std::optional<double> number(const nlohmann::json& obj, const std::string& key, const Range& range,
                             const std::string& file, const std::string& item);

// As `number`, but absent is an error too ("missing: a number from ...").
double required_number(const nlohmann::json& obj, const std::string& key, const Range& range, const std::string& file,
                       const std::string& item);

// The deepest nesting of arrays and objects a JSON input of dpro may have: far above what any of
// its files nests (a few levels), far below where writing a value into a message overflows the
// stack (nlohmann's dump recurses: about 10^5 levels).
inline constexpr std::size_t kMaxJsonDepth = 256;

// Throws InputError(file, "", "nests arrays and objects deeper than 256 levels") when `j` does;
// walks it without recursion. Every reader calls it right after parsing, before it reads a value.
void check_json_depth(const nlohmann::json& j, const std::string& file);

// `text` parsed as JSON, the way every reader of a user's JSON does: any error of the parser (a
// syntax error, a number beyond a double's range) is InputError(file, item, what + ": " + its
// message), and so is nesting deeper than kMaxJsonDepth (check_json_depth).
nlohmann::json parse_json(std::string_view text, const std::string& file, const std::string& item = "",
                          const std::string& what = "not valid JSON");

// A JSON file a user gave (a plan, a tolerances file): refuses a directory (`expected` says what
// was expected there), records the file as an input (never overwritten, output_file.h) and
// parses it; unreadable, not JSON or nested too deep (check_json_depth) is one InputError naming
// the file.
nlohmann::json read_json_file(const std::string& path, const std::string& expected);

// How a range is written in messages: "a whole number from 1 to 1024", "a number from 0 to 1e6 us".
std::string describe(const Range& range);

}  // namespace dpro::json_field

namespace dpro {

// The text of `j` for an output (a report, a timeline, a model header): a string that is not
// valid UTF-8 (a name from a native capture or a hand-edited file) is written with U+FFFD in
// place of its bad bytes instead of failing the write at the end of a run. indent -1: one line.
std::string dump_output_json(const nlohmann::json& j, int indent);

}  // namespace dpro
