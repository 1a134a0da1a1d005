#pragma once
// The Importer for dpro native traces (written by dpro-profile; docs/native-format.md).
// Registered in importer_registry.cpp.
#include <memory>

#include "trace/importer.h"

namespace dpro::trace {

std::unique_ptr<Importer> make_native_importer();

}  // namespace dpro::trace
