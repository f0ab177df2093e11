// Snapshots: keep the engines (and their translated code) alive across executions. The machine
// tracks which text lines changed since it last matched a snapshot (TextRegion::touch); restoring
// that snapshot rewrites only those lines (canonical, flags, watched marks, and the view lines that
// differ) and removes translated code only over the view bytes it changed: a full cache flush costs
// about 14 ms in Unicorn 2.0.1, a small-range removal about 0.06 us. Text a scenario never touches
// (the trampoline area of a site scenario, 1 MiB) costs nothing per execution. Restoring any other
// snapshot compares every line. Data (guest data and stacks, written by the guest through Unicorn,
// which reports no dirty pages) is copied back whole.

#include "MachineImpl.h"

#include "ftsim/arch/Error.h"

#include <atomic>
#include <cstring>

namespace ftsim::sim {

namespace {
std::atomic<std::uint64_t> nextSnapshotId{1};
} // namespace

struct Snapshot::Data {
  std::uint64_t id = 0; // unique per snapshot taken (Machine::Impl::textBaseline)
  State state;
  std::vector<std::vector<std::uint8_t>> engineRegs; // per CPU: the running task's registers
  struct Text {
    std::vector<std::uint8_t> canonical;
    std::vector<std::vector<std::uint8_t>> views;
    std::vector<std::uint8_t> flags;
    std::vector<std::uint8_t> lineWatched;
  };
  std::vector<Text> text;
  std::vector<std::vector<std::uint8_t>> data;
};

Snapshot::Snapshot() = default;
Snapshot::~Snapshot() = default;
Snapshot::Snapshot(Snapshot &&) noexcept = default;
Snapshot &Snapshot::operator=(Snapshot &&) noexcept = default;

Snapshot Machine::snapshot() const {
  Impl &m = *impl_;
  if (m.patcher.alive)
    fatal("cannot snapshot a machine while its patcher is running");
  m.dropUnadopted();
  m.settleViews();
  Snapshot s;
  s.data_ = std::make_unique<Snapshot::Data>();
  Snapshot::Data &d = *s.data_;
  d.id = nextSnapshotId.fetch_add(1);
  d.state = m.state;
  for (unsigned c = 0; c < m.config.cpus; ++c) {
    d.engineRegs.emplace_back();
    m.saveRegs(c, d.engineRegs.back());
  }
  for (TextRegion &r : m.text) {
    Snapshot::Data::Text t;
    t.canonical.assign(r.canonical.get(), r.canonical.get() + r.size);
    for (const HostBuffer &v : r.views)
      t.views.emplace_back(v.get(), v.get() + r.size);
    t.flags.assign(r.flags.get(), r.flags.get() + r.size);
    t.lineWatched = r.lineWatched;
    d.text.push_back(std::move(t));
    r.clearDirty();
  }
  for (const DataRegion &r : m.data)
    d.data.emplace_back(r.memory.get(), r.memory.get() + r.size);
  m.textBaseline = d.id;
  return s;
}

void Machine::restore(const Snapshot &snapshot) {
  Impl &m = *impl_;
  if (!snapshot.data_)
    FTSIM_PANIC("restore from an empty snapshot");
  const Snapshot::Data &d = *snapshot.data_;
  if (d.text.size() > m.text.size() || d.data.size() > m.data.size() ||
      d.engineRegs.size() != m.config.cpus)
    FTSIM_PANIC("snapshot taken from another machine");
  m.abortPatcher();
  m.settleViews();
  m.state = d.state;
  if (m.config.restoresPerEngine && ++m.restoresSinceRenewal >= m.config.restoresPerEngine)
    m.renewEngines();
  for (unsigned c = 0; c < m.config.cpus; ++c)
    m.loadRegs(c, d.engineRegs[c]);
  // Line `line` of region `r` back to the snapshot's: canonical, flags, watched mark, and every
  // view that differs (its translations over the changed bytes removed).
  auto restoreLine = [&m](TextRegion &r, const Snapshot::Data::Text &t, std::uint64_t line) {
    const std::uint64_t off = line * kLineSize;
    std::memcpy(r.canonical.get() + off, t.canonical.data() + off, kLineSize);
    std::memcpy(r.flags.get() + off, t.flags.data() + off, kLineSize);
    r.lineWatched[line] = t.lineWatched[line];
    r.markChanged(line);
    for (unsigned c = 0; c < m.config.cpus; ++c)
      m.rewriteView(c, r, r.base + off, t.views[c].data() + off, kLineSize);
  };
  const bool onlyDirty = m.textBaseline == d.id;
  for (std::size_t i = 0; i < d.text.size(); ++i) {
    TextRegion &r = m.text[i];
    const Snapshot::Data::Text &t = d.text[i];
    if (onlyDirty) {
      for (std::uint32_t line : r.dirtyLines)
        restoreLine(r, t, line);
    } else {
      for (std::uint64_t line = 0; line < r.size / kLineSize; ++line)
        restoreLine(r, t, line);
    }
  }
  // Regions mapped after the snapshot keep their contents, as before.
  for (TextRegion &r : m.text)
    r.clearDirty();
  m.textBaseline = d.id;
  for (std::size_t i = 0; i < d.data.size(); ++i)
    std::memcpy(m.data[i].memory.get(), d.data[i].data(), m.data[i].size);
}

} // namespace ftsim::sim
