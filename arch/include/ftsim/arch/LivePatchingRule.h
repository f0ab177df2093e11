#pragma once
// An ISA's rule for writing code other CPUs may be executing, beyond "the protocol's stores and
// syncs": powerpc's CMODX (Power ISA Book II, "Concurrent Modification and Execution of
// Instructions": only patch-class instructions may be written live, no multi-instruction sequence
// may be seen half-updated, and nothing may rely on another CPU having seen the new word before it
// context-synchronised). x86 has none (its int3 protocol is checked by exploration). The verifier
// applies a target's rule to any scenario of that ISA without knowing the ISA:
//  - watch(port): a MachinePort that forwards to `port` and records every violation of the rule
//    by the writes (and frees) made through it (wrap the patcher's port; read findings() after
//    the run);
//  - checkProtocol(protocol): drive `protocol` through enable, retarget and disable of one site
//    on a flat text where every store lands at once, and return the first violation.

#include "ftsim/arch/ForwardingPort.h"
#include "ftsim/arch/PatchProtocol.h"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ftsim::arch {

// The port a rule watches through: it forwards every call to the port it wraps.
class RuleCheckedPort : public ForwardingPort {
public:
  using ForwardingPort::ForwardingPort;
  // One line per violation of the rule, with the words decoded.
  virtual std::vector<std::string> findings() const = 0;
  // Whether other CPUs may execute the text now. A watch starts live; while it is not (boot:
  // text_poke_early, nothing else runs), writes are forwarded but neither checked nor remembered.
  virtual void setLive(bool live) = 0;
};

class LivePatchingRule {
public:
  virtual ~LivePatchingRule() = default;
  // The checker's name in mutation scores ("cmodx+sync:enable-modify-disable").
  virtual std::string_view name() const = 0;
  virtual std::unique_ptr<RuleCheckedPort> watch(MachinePort &port) const = 0;
  virtual std::optional<std::string> checkProtocol(PatchProtocol &protocol) const = 0;
};

} // namespace ftsim::arch
