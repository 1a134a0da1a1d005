#pragma once
// OpenBLAS (the BLAS behind Debian's LibTorch) picks its kernels from the CPU model when it
// loads; on a CPU model it does not know (the generic "Intel Xeon Processor" of some VMs) it
// falls back to its SSE3 "Prescott" kernels, 2-4x slower than the AVX2 / AVX-512 kernels the
// CPU can run. The learned cost model is mostly sgemm, so dpro's executables call this at the
// start of main: when OpenBLAS reports a pre-AVX2 core on a CPU with AVX2 and FMA, and the user
// has not chosen one (OPENBLAS_CORETYPE), the process re-executes itself with
// OPENBLAS_CORETYPE set to the best kernel family the CPU supports. Otherwise (no OpenBLAS in
// the process or the learned model's plugin, a good core already, DPRO_NO_BLAS_REEXEC set, or
// exec failing) it returns and nothing changes. LibTorch and its OpenBLAS live in the learned
// model's plugin (learned_backend.h): call this only for commands that use the learned model,
// as it opens the plugin to ask OpenBLAS.
namespace dpro::costmodel {

void reexec_with_fast_blas_if_needed(char** argv);

// The OPENBLAS_CORETYPE value for this CPU if OpenBLAS's own choice (`detected`, as
// openblas_get_corename() reports it) is a pre-AVX2 fallback; nullptr when it is fine. For
// tests: `has_avx2_fma` and `has_avx512` describe the CPU.
const char* better_blas_core(const char* detected, bool has_avx2_fma, bool has_avx512);

}  // namespace dpro::costmodel
