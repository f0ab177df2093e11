// The object that carries the suites' shared precompiled header (tests/CMakeLists.txt).
