# DPRO_SANITIZE: build dpro's own targets with sanitizers (tools/sanitize.sh, run by CI).
#   ""                   none (the default)
#   address,undefined    ASan + UBSan (either alone works too)
#   thread               TSan (cannot be combined with address)
# The flags go on the dpro_sanitize interface target, which dpro_warnings links, so every
# target that takes the project's warnings (all libraries, tools and tests) is instrumented
# and nothing is added to the global CMAKE_CXX_FLAGS. UBSan findings abort
# (-fno-sanitize-recover), so a finding fails its test instead of printing and passing.
set(DPRO_SANITIZE "" CACHE STRING "Sanitizers for dpro's targets: empty, address,undefined, or thread")

add_library(dpro_sanitize INTERFACE)
if(DPRO_SANITIZE)
  string(REPLACE "," ";" _dpro_sanitizers "${DPRO_SANITIZE}")
  foreach(s IN LISTS _dpro_sanitizers)
    if(NOT s MATCHES "^(address|undefined|thread)$")
      message(FATAL_ERROR "DPRO_SANITIZE: unknown sanitizer '${s}' in '${DPRO_SANITIZE}'. "
                          "Use a comma-separated list of address, undefined, thread "
                          "(e.g. -DDPRO_SANITIZE=address,undefined or -DDPRO_SANITIZE=thread).")
    endif()
  endforeach()
  if("thread" IN_LIST _dpro_sanitizers AND "address" IN_LIST _dpro_sanitizers)
    message(FATAL_ERROR "DPRO_SANITIZE: thread and address cannot be combined; build them "
                        "in separate build directories (tools/sanitize.sh asan|tsan).")
  endif()
  string(REPLACE ";" "," _dpro_sanitize_list "${_dpro_sanitizers}")
  set(_dpro_sanitize_flags -fsanitize=${_dpro_sanitize_list} -fno-omit-frame-pointer)
  if("undefined" IN_LIST _dpro_sanitizers)
    list(APPEND _dpro_sanitize_flags -fno-sanitize-recover=undefined)
  endif()
  target_compile_options(dpro_sanitize INTERFACE ${_dpro_sanitize_flags})
  target_link_options(dpro_sanitize INTERFACE ${_dpro_sanitize_flags})
  message(STATUS "dpro: sanitizers ${_dpro_sanitize_list} on dpro's targets")
endif()
