// The exact legal states of record call sites (SiteTargets.h).

#include "ftsim/kernel/SiteTargets.h"

#include "ftsim/arch/ForwardingPort.h"

#include <algorithm>

namespace ftsim::kernel {

namespace {

void addState(std::vector<arch::Bytes> &states, const arch::Bytes &b) {
  if (!b.empty() && std::find(states.begin(), states.end(), b) == states.end())
    states.push_back(b);
}

} // namespace

void SiteTargets::rest(std::uint64_t ip, arch::Bytes now) {
  Site &s = sites_[ip];
  s.states.clear();
  addState(s.states, now);
  s.newest = std::move(now);
  pending_.erase(ip);
  publish_(ip, s.states);
}

void SiteTargets::update(std::uint64_t ip, arch::Bytes old, arch::Bytes now) {
  Site &s = sites_[ip];
  // States not yet synchronised away stay legal; the old one is legal until the next sync.
  addState(s.states, old);
  addState(s.states, now);
  s.newest = std::move(now);
  if (s.states.size() > 1)
    pending_.insert(ip);
  publish_(ip, s.states);
}

void SiteTargets::contextSynchronised() {
  for (auto it = pending_.begin(); it != pending_.end();) {
    Site &s = sites_.at(*it);
    if (read_(*it, s.newest.size()) == s.newest) {
      s.states = {s.newest};
      publish_(*it, s.states);
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
}

std::vector<arch::Bytes> SiteTargets::legal(std::uint64_t ip) const {
  auto it = sites_.find(ip);
  return it == sites_.end() ? std::vector<arch::Bytes>{} : it->second.states;
}

namespace {

// Forwards to the patcher's port and tells when every CPU has synchronised.
class SyncObservingPort final : public arch::ForwardingPort {
public:
  SyncObservingPort(arch::MachinePort &inner, std::function<void()> synced)
      : ForwardingPort(inner), synced_(std::move(synced)) {}
  void syncCores() override {
    inner().syncCores();
    synced_();
  }
  void scheduleOnEachCpu() override {
    inner().scheduleOnEachCpu();
    synced_();
  }

private:
  std::function<void()> synced_;
};

class TargetCheckedPatcher final : public model::ArchPatcher {
public:
  TargetCheckedPatcher(model::ArchPatcher &inner, SiteTargets &targets,
                       std::function<std::uint64_t(const model::DynFtrace &)> addrNew)
      : inner_(inner), targets_(targets), addrNew_(std::move(addrNew)) {}

  const arch::Arch &arch() const override { return inner_.arch(); }
  unsigned archPrivateSize() const override { return inner_.archPrivateSize(); }
  std::uint64_t recordDatum(const model::DynFtrace &rec,
                            const std::optional<model::SymbolInfo> &symbol) const override {
    return inner_.recordDatum(rec, symbol);
  }
  arch::Bytes callBytes(const model::DynFtrace &rec, std::uint64_t target) const override {
    return inner_.callBytes(rec, target);
  }
  arch::Bytes nopBytes(const model::DynFtrace &rec) const override { return inner_.nopBytes(rec); }
  model::PatchOutcome initNop(model::DynFtrace &rec, std::uint64_t mcountAddr) override {
    const model::PatchOutcome outcome = inner_.initNop(rec, mcountAddr);
    targets_.rest(rec.ip, inner_.nopBytes(rec));
    return outcome;
  }
  void prepare() override { inner_.prepare(); }
  void beginBatch() override { inner_.beginBatch(); }
  // The engine's state says what the site becomes: ftrace_get_addr_new() of the record (its
  // TRAMP and REGS flags and the ops that own it), whatever address the caller passes.
  model::PatchOutcome makeCall(const model::DynFtrace &rec, std::uint64_t addr) override {
    expect(rec, inner_.callBytes(rec, addrNew_(rec)));
    return inner_.makeCall(rec, addr);
  }
  model::PatchOutcome makeNop(const model::DynFtrace &rec, std::uint64_t oldAddr) override {
    expect(rec, inner_.nopBytes(rec));
    return inner_.makeNop(rec, oldAddr);
  }
  model::PatchOutcome modifyCall(const model::DynFtrace &rec, std::uint64_t oldAddr,
                                 std::uint64_t addr) override {
    expect(rec, inner_.callBytes(rec, addrNew_(rec)));
    return inner_.modifyCall(rec, oldAddr, addr);
  }
  void finishBatch() override { inner_.finishBatch(); }
  void postProcess() override { inner_.postProcess(); }
  model::PatchOutcome updateFtraceFunc(const model::TraceFunction &function) override {
    return inner_.updateFtraceFunc(function);
  }
  model::PatchOutcome modifyCode(std::uint64_t ip, const arch::Bytes &old,
                                 const arch::Bytes &replacement) override {
    return inner_.modifyCode(ip, old, replacement);
  }

private:
  void expect(const model::DynFtrace &rec, arch::Bytes now) {
    // The state before: what the engine last wanted there (the nop of ftrace_init_nop first).
    arch::Bytes old = targets_.known(rec.ip) ? targets_.newest(rec.ip) : inner_.nopBytes(rec);
    targets_.update(rec.ip, std::move(old), std::move(now));
  }

  model::ArchPatcher &inner_;
  SiteTargets &targets_;
  std::function<std::uint64_t(const model::DynFtrace &)> addrNew_;
};

} // namespace

std::unique_ptr<arch::MachinePort> makeSyncObservingPort(arch::MachinePort &inner,
                                                         std::function<void()> synced) {
  return std::make_unique<SyncObservingPort>(inner, std::move(synced));
}

std::unique_ptr<model::ArchPatcher>
makeTargetCheckedPatcher(model::ArchPatcher &inner, SiteTargets &targets,
                         std::function<std::uint64_t(const model::DynFtrace &)> addrNew) {
  return std::make_unique<TargetCheckedPatcher>(inner, targets, std::move(addrNew));
}

} // namespace ftsim::kernel
