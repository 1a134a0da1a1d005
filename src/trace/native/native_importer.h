#pragma once
// The Importer for dpro native traces (written by dpro-profile; docs/native-format.md).
// Registered in importer_registry.cpp.
#include <memory>

#include "trace/importer.h"

namespace dpro::trace {

// Run on each rank after import, e.g. trace::detect_iterations (which lives in dpro_trace,
// a library this one must not depend on): register as make_native_importer(detect_iterations).
using RankPostProcess = void (*)(TraceRank& rank, const StringTable& strings);

std::unique_ptr<Importer> make_native_importer(RankPostProcess post_process = nullptr);

}  // namespace dpro::trace
