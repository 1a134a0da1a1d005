# The module helper: one folder of src/ = one module = one library, linked to the modules it
# declares and nothing else of dpro. Every module's folder and declared dependencies go into
# ${PROJECT_BINARY_DIR}/dpro_modules.txt, which the layering test (tests/layering) reads: an
# #include of a module not declared (directly or through a declared module), or a declared
# dependency that points up the layers of docs/architecture.md, fails it.
#
#   dpro_module(<target> DIR <folder under src/> SOURCES <files...>
#               [STATIC] [DEPENDS <dpro module targets...>] [LIBS <other public libraries...>]
#               [PRIVATE_LIBS <other private libraries...>])
function(dpro_module target)
  cmake_parse_arguments(M "STATIC" "DIR" "SOURCES;DEPENDS;LIBS;PRIVATE_LIBS" ${ARGN})
  if(NOT M_DIR)
    message(FATAL_ERROR "dpro_module(${target}): DIR (its folder under src/) is required")
  endif()
  if(M_STATIC)
    add_library(${target} STATIC ${M_SOURCES})
  else()
    add_library(${target} ${M_SOURCES})
  endif()
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${target} PUBLIC ${M_DEPENDS} ${M_LIBS} PRIVATE ${M_PRIVATE_LIBS} dpro_warnings)
  dpro_declare_module(${target} ${M_DIR} ${M_DEPENDS})
endfunction()

# For a library made another way (a plugin, a profiler target with special link options): its
# folder and the dpro modules it may use.
function(dpro_declare_module target dir)
  string(REPLACE ";" " " deps "${ARGN}")
  set_property(GLOBAL APPEND PROPERTY DPRO_DECLARED_MODULES "${dir} ${target} ${deps}")
endfunction()

# Writes the table (one line per target: folder, target, its declared dpro dependencies).
function(dpro_write_module_table)
  get_property(lines GLOBAL PROPERTY DPRO_DECLARED_MODULES)
  string(REPLACE ";" "\n" text "${lines}")
  file(WRITE ${PROJECT_BINARY_DIR}/dpro_modules.txt "${text}\n")
endfunction()
