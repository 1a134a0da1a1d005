#pragma once
// One importer per trace format, behind this interface; the loader picks the first whose
// sniff() accepts a file. Adding a format = one importer folder/file + one line in
// importer_registry.cpp.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/log.h"
#include "core/strings.h"
#include "trace/event.h"

namespace dpro::trace {

struct ImportOptions {
  bool keep_python_functions = false;  // python_function events are many and rarely useful
};

class Importer {
 public:
  virtual ~Importer() = default;
  virtual std::string_view format() const = 0;
  // `head` holds the first bytes of the (inflated) file.
  virtual bool sniff(std::string_view head) const = 0;
  // Reads one rank's file. Throws InputError naming the file and the offending event.
  // Events are returned sorted by (start, longer first).
  virtual TraceRank read(const std::string& path, StringTable& strings, const ImportOptions& options,
                         Logger& log) const = 0;
};

// All importers known to this build, in sniffing order.
std::vector<std::unique_ptr<Importer>> make_importers();

}  // namespace dpro::trace
