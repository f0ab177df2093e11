# FTSIM_FUZZ=ON (included by the top-level CMakeLists.txt before the libraries are defined):
# every C++ target is built with ASan and UBSan (every report fatal), the libraries also with
# libFuzzer's coverage instrumentation (fuzzer-no-link: ftsim_library in CMakeLists.txt), and
# tests/CMakeLists.txt adds tests/fuzz/, one fuzz target per parser. clang++ only:
# `scripts/setup --sanitize` configures build-asan/ with it (scripts/fuzz runs the harnesses there).

if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "FTSIM_FUZZ needs clang++ (libFuzzer): configure with "
    "-DCMAKE_CXX_COMPILER=clang++, Debian packages 'clang' and 'libclang-rt-dev' (or run "
    "scripts/fuzz, which does both)")
endif()

set(FTSIM_FUZZ_SANITIZERS address,undefined)
add_compile_options(
  "$<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${FTSIM_FUZZ_SANITIZERS}>"
  "$<$<COMPILE_LANGUAGE:CXX>:-fno-sanitize-recover=all>"
  "$<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>")
add_link_options("$<$<LINK_LANGUAGE:CXX>:-fsanitize=${FTSIM_FUZZ_SANITIZERS}>")
