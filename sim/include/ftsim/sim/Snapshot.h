#pragma once
// A saved machine state (registers of every CPU and task, memory, every CPU's instruction view,
// the fetch-model state, tasks, log, schedule, findings) to re-run a scenario many times on the
// same engines. Taken and restored by Machine; opaque to everyone else.

#include <memory>

namespace ftsim::sim {

class Snapshot {
public:
  Snapshot();
  ~Snapshot();
  Snapshot(Snapshot &&) noexcept;
  Snapshot &operator=(Snapshot &&) noexcept;

private:
  friend class Machine;
  struct Data;
  std::unique_ptr<Data> data_;
};

} // namespace ftsim::sim
