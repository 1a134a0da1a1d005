#include "costmodel/learned_plugin.h"

#include <dlfcn.h>

#include <filesystem>

#include "core/install_layout.h"
#include <system_error>

namespace dpro::costmodel::learned {

namespace {

std::string joined(const std::vector<std::string>& paths) {
  std::string text;
  for (std::size_t i = 0; i < paths.size(); ++i)
    text += (i == 0 ? "" : i + 1 == paths.size() ? " and " : ", ") + paths[i];
  return text;
}

}  // namespace

std::vector<std::string> plugin_candidates() {
#ifdef DPRO_LEARNED_PLUGIN_FILE_NAME
  // lib/dpro/ at or above the program's folder (a build tree, an install), else beside the program.
  const std::filesystem::path found = install::find_library(DPRO_LEARNED_PLUGIN_FILE_NAME);
  if (!found.empty()) return {found.string()};
  const std::filesystem::path dir = install::executable_directory();
  return {(dir.empty() ? std::filesystem::path(DPRO_LEARNED_PLUGIN_FILE_NAME)
                       : dir.parent_path() / "lib/dpro" / DPRO_LEARNED_PLUGIN_FILE_NAME).string(),
          (dir / DPRO_LEARNED_PLUGIN_FILE_NAME).string()};
#else
  return {};
#endif
}

PluginOpen open_plugin(const std::vector<std::string>& candidates) {
  if (candidates.empty())
    return {nullptr, "the learned cost model is not available in this build (no LibTorch; configure with "
                     "-DDPRO_TORCH=ON after installing libtorch-dev)"};
  for (const auto& path : candidates) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) continue;
    // RTLD_NOW: a missing symbol fails here, with the loader's message, not in a prediction.
    // RTLD_LOCAL: LibTorch's symbols stay out of the process's global scope.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* why = dlerror();
      return {nullptr, "cannot load the learned cost model's LibTorch plugin " + path + ": " +
                           (why ? why : "unknown dlopen error")};
    }
    auto factory = reinterpret_cast<PluginFactory>(dlsym(handle, kPluginFactorySymbol));
    if (!factory) {
      dlclose(handle);
      return {nullptr, path + " is not a dpro learned cost model plugin (it has no " +
                           std::string(kPluginFactorySymbol) + ")"};
    }
    Plugin* plugin = factory(kPluginAbiVersion);
    if (!plugin)
      // Not closed: its static objects may already be constructed; LibTorch does not unload.
      return {nullptr, "the learned cost model plugin " + path +
                           " was built by another version of dpro: rebuild it (cmake --build build)"};
    return {plugin, ""};
  }
  return {nullptr, "the learned cost model is not available: its LibTorch plugin was not found (looked for " +
                       joined(candidates) + "); build it (cmake --build build --target dpro_learned_torch) or "
                                            "put it next to the executable"};
}

const PluginOpen& process_plugin() {
  static const PluginOpen opened = open_plugin(plugin_candidates());
  return opened;
}

}  // namespace dpro::costmodel::learned
