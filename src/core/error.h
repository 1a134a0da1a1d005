#pragma once
// Errors at input boundaries. An InputError names the file and, where it applies, the
// offending item (an event, a record, a key); the CLI prints what() on one line and exits 2.
// Library code throws; it never calls exit().
#include <stdexcept>
#include <string>

namespace dpro {

class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string item, const std::string& message)
      : std::runtime_error(compose(file, item, message)),
        file_(std::move(file)),
        item_(std::move(item)) {}

  const std::string& file() const { return file_; }
  const std::string& item() const { return item_; }

 private:
  // One line, whatever the input held: control characters are escaped.
  static std::string compose(const std::string& file, const std::string& item,
                             const std::string& message) {
    std::string text = file.empty() ? std::string() : file + ": ";
    if (!item.empty()) text += item + ": ";
    text += message;
    std::string line;
    line.reserve(text.size());
    for (char c : text) {
      if (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f) {
        line += c;
      } else {
        static const char* kHex = "0123456789abcdef";
        line += c == '\n' ? std::string("\\n") : std::string("\\x") + kHex[(c >> 4) & 0xf] + kHex[c & 0xf];
      }
    }
    return line;
  }
  std::string file_;
  std::string item_;
};

// A bad value of a library option. Libraries name an option by their own name for it
// (`option`: "ranks", "bucket_mb", "device"), never by a command-line flag; a CLI maps that
// name to its flag and rethrows (InputError::item then reads "--ranks 20"). what() names the
// option as the library does, for callers without a CLI.
class OptionError : public InputError {
 public:
  OptionError(std::string option, std::string value, const std::string& message, std::string file = "")
      : InputError(file, value.empty() ? option : option + " " + value, message),
        option_(std::move(option)),
        value_(std::move(value)),
        message_(message) {}

  const std::string& option() const { return option_; }
  const std::string& value() const { return value_; }
  const std::string& message() const { return message_; }

 private:
  std::string option_;
  std::string value_;
  std::string message_;
};

// A broken internal invariant: a bug in dpro, not in the user's input.
[[noreturn]] void fail_invariant(const char* condition, const char* file, int line);

#define DPRO_CHECK(cond) \
  ((cond) ? static_cast<void>(0) : ::dpro::fail_invariant(#cond, __FILE__, __LINE__))

}  // namespace dpro
