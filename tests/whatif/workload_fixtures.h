#pragma once
// What the what-if library tests build on: a bundled trace (or a trace given as text) loaded as a
// Workload, and the options of a device re-timing with the tree's own cost model and GPU specs.
#include <memory>
#include <string>

#include "costmodel/paths.h"
#include "test_paths.h"
#include "trace_fixtures.h"
#include "whatif/workload.h"
#include "whatif/device_retime.h"

namespace dpro::test {

inline whatif::Workload load_workload(const std::string& path) {
  Logger quiet(LogLevel::kQuiet);
  auto traces = std::make_shared<const trace::TraceSet>(load({source_path(path)}, quiet));
  graph::BuiltGraph built = graph::build_graph(*traces, graph::BuildOptions{}, quiet);
  return {traces, std::move(built)};
}

// A workload of one Kineto trace given as text, written to a fresh test directory first.
inline whatif::Workload workload_of_text(const std::string& dir_name, const std::string& json) {
  const std::string path = fresh_dir(dir_name) + "/trace.json";
  write_text(path, json);
  Logger quiet(LogLevel::kQuiet);
  auto traces = std::make_shared<const trace::TraceSet>(load({path}, quiet));
  graph::BuiltGraph built = graph::build_graph(*traces, graph::BuildOptions{}, quiet);
  return {std::move(traces), std::move(built)};
}

inline whatif::DeviceRetime device(const std::string& name) {
  whatif::DeviceRetime d;
  d.device = name;
  d.model_path = costmodel::default_model_path();
  d.device_dir = costmodel::default_device_dir();
  return d;
}

}  // namespace dpro::test
