#pragma once
// The Importer for dpro native traces (written by dpro-profile; docs/native-format.md).
// Registered in importer_registry.cpp.
#include <memory>

#include "trace/importer.h"
#include "trace/native/native_reader.h"

namespace dpro::trace {

// Iterations (ProfilerStep#N) are found by the loader, for every importer.
std::unique_ptr<Importer> make_native_importer();

// One rank's events from a decoded capture: what the importer's read() returns for its file
// (before the loader's checks, trace/event_checks.h).
TraceRank build_native_rank(const native::NativeCapture& capture, StringTable& strings, Logger& log);

}  // namespace dpro::trace
