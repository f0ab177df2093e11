# The simulated kernel (Kernel.h): a guest image booted on sim::Machine with the ftrace engine,
# trampolines and tracers. Included from verify/CMakeLists.txt.
target_sources(ftsim_verify PRIVATE src/Kernel.cpp)
