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
  // An idle task (the CPU's idle loop): it starts with preempt count 1, as Linux's idle tasks run
  // with preemption disabled, and RCU-tasks (synchronizeRcuTasks) does not wait for it, as
  // rcu_tasks_pertask() skips is_idle_task(). It gives its CPU away through the idle or schedule
  // hypercall.
  bool idle = false;
};

struct TaskInfo {
  int id = -1;
  std::string name;
  unsigned cpu = 0;
  TaskState state = TaskState::Runnable;
  std::uint64_t result = 0;
  std::uint64_t stackTop = 0;
  bool idle = false;
  // Its thread area (the lowest bytes of its stack mapping, like a 4.x thread_info): the first
  // 32-bit word is its preempt count. GuestAbi::threadReg points here while the task runs.
  std::uint64_t threadArea = 0;
};

std::string_view taskStateName(TaskState state);

} // namespace ftsim::sim
