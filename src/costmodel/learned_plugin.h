#pragma once
// Finding and opening the learned model's LibTorch plugin (learned_backend.h). Library code
// reads no environment variable: the plugin is looked for at the path the build compiled in
// (the build tree's file), then next to the running executable (an installed layout).
#include <string>
#include <vector>

#include "costmodel/learned_backend.h"

namespace dpro::costmodel::learned {

struct PluginOpen {
  Plugin* plugin = nullptr;  // null: not opened, `error` says why
  std::string error;         // one line naming the files it looked for; empty when opened
};

// Where the plugin is looked for, in order; empty in a build without LibTorch.
std::vector<std::string> plugin_candidates();

// Opens the first of `candidates` that exists (dlopen RTLD_NOW | RTLD_LOCAL) and asks its
// factory for the plugin. A file that exists but does not load (a missing LibTorch library, a
// foreign or stale file) is an error, not a reason to try the next one: the user should learn
// that their file is broken. Not cached; a plugin once opened stays loaded for the process.
PluginOpen open_plugin(const std::vector<std::string>& candidates);

// The process's plugin: open_plugin(plugin_candidates()) on the first call (thread-safe), the
// same result on every later one.
const PluginOpen& process_plugin();

}  // namespace dpro::costmodel::learned
