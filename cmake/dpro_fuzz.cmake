# DPRO_FUZZ: build the fuzz targets of tests/fuzz as libFuzzer fuzzers (tools/fuzz.sh). Needs
# clang (Debian's clang ships libFuzzer). Every dpro target is then compiled with
# -fsanitize=fuzzer-no-link (coverage for libFuzzer's guidance, through dpro_sanitize, as
# DPRO_SANITIZE's flags go) and each fuzz target links -fsanitize=fuzzer (libFuzzer's main()).
# Off (the default, and with g++), the same targets link tests/fuzz/fuzz_driver.cpp, which
# replays their corpus and a fixed set of mutations of it: a ctest test in every build.
option(DPRO_FUZZ "Build tests/fuzz as libFuzzer fuzzers (clang only)" OFF)
if(DPRO_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "DPRO_FUZZ=ON needs clang (libFuzzer), not ${CMAKE_CXX_COMPILER_ID}: configure with "
                        "CXX=clang++ (tools/fuzz.sh does), or leave DPRO_FUZZ off to build the fuzz targets "
                        "with their standalone corpus driver")
  endif()
  target_compile_options(dpro_sanitize INTERFACE -fsanitize=fuzzer-no-link)
  message(STATUS "dpro: libFuzzer fuzz targets (coverage instrumentation on dpro's targets)")
endif()
