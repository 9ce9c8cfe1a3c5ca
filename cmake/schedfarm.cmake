# Helpers shared by every folder: one library per folder, warnings as errors in the
# project's own code, precompiled heavy headers (Halide.h, torch) where they are used.

set(SCHEDFARM_WARNINGS -Wall -Wextra -Werror -Wno-unused-parameter)

# schedfarm_library(NAME SOURCES ... DEPS ... [PCH header...])
function(schedfarm_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PCH" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
  target_compile_options(${name} PRIVATE ${SCHEDFARM_WARNINGS})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  if(ARG_PCH)
    target_precompile_headers(${name} PRIVATE ${ARG_PCH})
  endif()
endfunction()

# schedfarm_executable(NAME SOURCES ... DEPS ...)
function(schedfarm_executable name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE ${SCHEDFARM_WARNINGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
endfunction()

# schedfarm_test(NAME SOURCES ... DEPS ... [LABELS ...] [TIMEOUT s])
# One GoogleTest binary; every TEST in it is registered with ctest on its own.
function(schedfarm_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;DEPS;LABELS;PCH" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE ${SCHEDFARM_WARNINGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  if(ARG_PCH)
    target_precompile_headers(${name} PRIVATE ${ARG_PCH})
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  # gtest_discover_tests flattens lists in PROPERTIES: escape the labels' separators.
  string(REPLACE ";" "\\;" labels "${ARG_LABELS}")
  gtest_discover_tests(${name}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    PROPERTIES LABELS "${labels}" TIMEOUT ${ARG_TIMEOUT}
    DISCOVERY_TIMEOUT 60)
endfunction()

include(GoogleTest)
