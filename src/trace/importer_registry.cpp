#include "trace/importer.h"
#include "trace/kineto_importer.h"
#include "trace/native/native_importer.h"

namespace dpro::trace {

std::vector<std::unique_ptr<Importer>> make_importers() {
  std::vector<std::unique_ptr<Importer>> importers;
  importers.push_back(make_native_importer());  // sniffs its magic bytes: before the JSON sniffer
  importers.push_back(make_kineto_importer());
  return importers;
}

}  // namespace dpro::trace
