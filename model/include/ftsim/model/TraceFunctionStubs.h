#pragma once
// Where the `call` at ftrace_call goes for each trace function: ftrace_stub, the list function,
// or a stub of its own for each distinct ops->func (as each C callback has its own address). The
// integration tells the table the guest addresses once (the generated trampolines' stubs); the
// arch patcher asks it for the target of ftrace_update_ftrace_func(), and the hypercall behind a
// callback stub asks it which function the stub stands for. Stubs are bound on first use, in
// order, and never rebound.

#include "ftsim/model/TraceFunction.h"

#include <cstdint>
#include <map>
#include <vector>

namespace ftsim::model {

struct TraceFunctionAddresses {
  std::uint64_t stub = 0;                   // ftrace_stub
  std::uint64_t listFunc = 0;               // ftrace_ops_list_func
  std::vector<std::uint64_t> callbackStubs; // one per distinct ops->func
};

class TraceFunctionStubs {
public:
  explicit TraceFunctionStubs(TraceFunctionAddresses addresses);

  // The guest address ftrace_call must call for `function` (binds the next free callback stub to
  // an ops function seen for the first time; FTSIM_PANIC when none is left).
  std::uint64_t addressOf(const TraceFunction &function);
  // The function a callback stub stands for; nullptr while the stub is unbound.
  const TraceFunction *functionAt(std::uint64_t stub) const;

private:
  TraceFunctionAddresses addresses_;
  std::map<std::uint64_t, TraceFunction> bound_; // callback stub -> function
};

} // namespace ftsim::model
