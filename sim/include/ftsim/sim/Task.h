#pragma once
// Guest tasks: each is pinned to one CPU, has its own stack and registers, and starts at a
// function `entry(arg)` whose return address is the exit hypercall stub.

#include <cstdint>
#include <string>

namespace ftsim::sim {

enum class TaskState : std::uint8_t {
  Runnable, // running or waiting for its CPU
  Exited,   // returned into ftsim_hc_exit; result holds rax / r3
  Faulted,  // killed by a guest fault (like an oops in task context)
};

struct TaskSpec {
  std::string name;
  unsigned cpu = 0;
  std::uint64_t entry = 0;
  std::uint64_t arg = 0;
};

struct TaskInfo {
  int id = -1;
  std::string name;
  unsigned cpu = 0;
  TaskState state = TaskState::Runnable;
  std::uint64_t result = 0;
  std::uint64_t stackTop = 0;
};

std::string_view taskStateName(TaskState state);

} // namespace ftsim::sim
