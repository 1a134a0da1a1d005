#pragma once
// The Importer for dpro native traces (written by dpro-profile; docs/native-format.md).
// Registered in importer_registry.cpp.
#include <memory>

#include "trace/importer.h"

namespace dpro::trace {

// Iterations (ProfilerStep#N) are found by the loader, for every importer.
std::unique_ptr<Importer> make_native_importer();

}  // namespace dpro::trace
