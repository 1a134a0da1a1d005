#include "costmodel/blas_tuning.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <string>

#include "costmodel/learned_plugin.h"

namespace dpro::costmodel {

const char* better_blas_core(const char* detected, bool has_avx2_fma, bool has_avx512) {
  if (!detected || !has_avx2_fma) return nullptr;
  std::string core;
  for (const char* p = detected; *p; ++p) core += static_cast<char>(std::tolower(static_cast<unsigned char>(*p)));
  // OpenBLAS core names without AVX2 kernels (x86-64).
  static const char* const kPreAvx2[] = {"prescott", "core2", "penryn", "dunnington", "nehalem",
                                         "atom", "sandybridge", "opteron", "barcelona", "bobcat",
                                         "bulldozer", "piledriver", "steamroller", "excavator", "katmai",
                                         "coppermine", "northwood", "banias", "athlon", "unknown"};
  for (const char* weak : kPreAvx2)
    if (core == weak) return has_avx512 ? "SkylakeX" : "Haswell";
  return nullptr;
}

void reexec_with_fast_blas_if_needed(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") || std::getenv("DPRO_NO_BLAS_REEXEC")) return;
  using CoreName = char* (*)();
  const char* detected = nullptr;
  if (auto corename = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"))) {
    detected = corename();
  } else if (const auto& opened = learned::process_plugin(); opened.plugin) {
    // OpenBLAS comes with LibTorch, in the learned model's plugin: open it now, before any work
    // (the commands that call this use the learned model anyway).
    detected = opened.plugin->blas_core();
  }
  if (!detected) return;
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  const char* better = better_blas_core(detected, avx2, avx512);
  if (!better) return;
  setenv("OPENBLAS_CORETYPE", better, 1);
  execv("/proc/self/exe", argv);
  // exec failed: carry on with the slower kernels.
}

}  // namespace dpro::costmodel
