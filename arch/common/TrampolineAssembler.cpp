#include "TrampolineAssembler.h"

#include "ftsim/arch/Error.h"

#include <algorithm>

namespace ftsim::arch {

TrampolineAssembler::TrampolineAssembler(const Arch &arch, std::uint64_t base, std::uint8_t fill,
                                         Bytes ret)
    : arch_(arch), base_(base), fill_(fill), ret_(std::move(ret)) {
  if (base % 4096)
    fatal("trampoline base {:#x} is not page aligned", base);
}

void TrampolineAssembler::align(unsigned n) {
  while (bytes_.size() % n)
    bytes_.push_back(fill_);
}

void TrampolineAssembler::symbol(const std::string &name) {
  label(name);
  symbols_.emplace_back(name, here());
}

void TrampolineAssembler::function(const std::string &name) {
  align(16);
  symbol(name);
}

std::uint64_t TrampolineAssembler::at(const std::string &name) const {
  auto it = labels_.find(name);
  if (it == labels_.end())
    FTSIM_PANIC("trampoline label {} undefined", name);
  return it->second;
}

// A placeholder as long as a patch site: both ISAs' direct call and jump are.
void TrampolineAssembler::branch(const std::string &target, bool link) {
  branches_.push_back({bytes_.size(), target, link});
  bytes_.resize(bytes_.size() + arch_.siteSize(), 0);
}

std::uint64_t TrampolineAssembler::stub(const std::string &name) {
  function(name);
  emit(arch_.trap());
  emit(ret_);
  return at(name);
}

void TrampolineAssembler::hypercallStubs(const TrampolineRequest &request,
                                         std::span<const std::uint8_t> preemptDisable,
                                         std::span<const std::uint8_t> preemptEnable) {
  // ftrace_ops_list_func, optionally in two hypercalls: the first reads ftrace_ops_list
  // (rcu_dereference_raw), the second walks what it read (do_for_each_ftrace_op). Split, the two
  // run inside the guest's own preempt_disable_notrace() / preempt_enable_notrace(), as
  // __ftrace_ops_list_func() walks between ftrace_test_recursion_trylock() and
  // ftrace_test_recursion_unlock() (include/linux/trace_recursion.h, 6.1 and 6.12): no preemption
  // between them, but an interrupt whose handler runs traced code can, and another CPU can unlink
  // and free an ops meanwhile, which is why ftrace_shutdown() must wait even when no code changed
  // (0e792b89e680). One hypercall is one event: nothing can come between its read and walk.
  function("ftrace_ops_list_func");
  if (request.splitListFunction)
    emit(preemptDisable);
  label("ftrace_ops_list_read");
  emit(arch_.trap());
  if (request.splitListFunction) {
    label("ftrace_ops_list_walk");
    emit(arch_.trap());
    code_.listFuncWalkStub = at("ftrace_ops_list_walk");
    emit(preemptEnable);
  }
  emit(ret_);
  code_.listFuncStub = at("ftrace_ops_list_func");
  code_.listFuncTrap = at("ftrace_ops_list_read");
  if (!request.graphViaOps) // ftrace_graph_caller's call; ftrace_graph_func is a callback stub
    code_.prepareReturnStub = stub("prepare_ftrace_return");
  code_.returnHandlerStub = stub("ftrace_return_to_handler");
  for (unsigned i = 0; i < request.callbackStubs; ++i)
    code_.callbackStubs.push_back(stub(fmt::format("ftrace_callback_{}", i)));
  align(16);
}

std::uint64_t TrampolineAssembler::atIfAny(const std::string &name) const {
  auto it = labels_.find(name);
  return it == labels_.end() ? 0 : it->second;
}

AssembledListing TrampolineAssembler::finish(const std::string &tail) {
  AssembledListing out = finishListing();
  out.ops.tail = at(tail);
  out.ops.closingSize = arch_.siteSize();
  return out;
}

AssembledListing TrampolineAssembler::finishReturning(unsigned closingSize) {
  AssembledListing out = finishListing();
  out.ops.closingSize = closingSize;
  return out;
}

AssembledListing TrampolineAssembler::finishListing() {
  for (const Branch &b : branches_) {
    const std::uint64_t site = base_ + b.offset;
    const EncodeResult r = b.link ? arch_.call(site, at(b.target)) : arch_.jump(site, at(b.target));
    if (!r.ok || r.bytes.size() != arch_.siteSize())
      FTSIM_PANIC("trampoline branch to {}: {}", b.target, r.error);
    std::copy(r.bytes.begin(), r.bytes.end(),
              bytes_.begin() + static_cast<std::ptrdiff_t>(b.offset));
  }
  AssembledListing out{std::move(code_), {}};
  TrampolineCode &code = out.code;
  code.base = base_;
  code.bytes = std::move(bytes_);
  code.ftraceCaller = at("ftrace_caller");
  code.ftraceCall = at("ftrace_call");
  code.ftraceRegsCaller = at("ftrace_regs_caller");
  code.ftraceRegsCall = at("ftrace_regs_call");
  code.ftraceStub = at("ftrace_stub");
  code.ftraceGraphCall = atIfAny("ftrace_graph_call");
  code.ftraceGraphCaller = atIfAny("ftrace_graph_caller");
  code.returnToHandler = at("return_to_handler");
  code.siteSize = arch_.siteSize();
  code.opLoads = opLoads_;
  const std::uint64_t end = code.base + code.bytes.size();
  for (std::size_t i = 0; i < symbols_.size(); ++i) {
    const auto &[name, addr] = symbols_[i];
    const std::uint64_t next = i + 1 < symbols_.size() ? symbols_[i + 1].second : end;
    code.symbols.push_back({name, addr, next - addr, true, false, false});
  }
  out.ops.callerEnd = at("ftrace_caller_end");
  out.ops.regsCallerEnd = at("ftrace_regs_caller_end");
  out.ops.fill = fill_;
  out.ops.callbackStub = arch_.trap();
  out.ops.callbackStub.insert(out.ops.callbackStub.end(), ret_.begin(), ret_.end());
  return out;
}

AssembledTrampolines::Layout AssembledTrampolines::opsLayout(bool saveRegs) const {
  Layout l;
  l.start = saveRegs ? code_.ftraceRegsCaller : code_.ftraceCaller;
  l.call = saveRegs ? code_.ftraceRegsCall : code_.ftraceCall;
  l.jump = (saveRegs ? ops_.regsCallerEnd : ops_.callerEnd) - l.start;
  l.stub = (l.jump + ops_.closingSize + 15) / 16 * 16;
  l.size = (l.stub + ops_.callbackStub.size() + 15) / 16 * 16;
  return l;
}

OpsTrampolineCode AssembledTrampolines::makeOpsTrampoline(std::uint64_t base, bool saveRegs) const {
  if (base % 64)
    fatal("ops trampoline base {:#x} is not 64-byte aligned", base);
  const Layout layout = opsLayout(saveRegs);
  OpsTrampolineCode out;
  out.base = base;
  out.saveRegs = saveRegs;
  const auto from = code_.bytes.begin() + static_cast<std::ptrdiff_t>(layout.start - code_.base);
  out.bytes.assign(from, from + static_cast<std::ptrdiff_t>(layout.jump + ops_.closingSize));
  out.bytes.resize(layout.size, ops_.fill);
  out.callSite = base + (layout.call - layout.start);
  for (std::uint64_t load : code_.opLoads)
    if (load >= layout.start && load < layout.start + layout.jump)
      out.opLoads.push_back(base + (load - layout.start));
  out.callbackStub = base + layout.stub;
  auto put = [&](std::uint64_t at, const EncodeResult &r, const char *what) {
    if (!r.ok)
      fatal("ops trampoline at {:#x}: {}: {}", base, what, r.error);
    std::copy(r.bytes.begin(), r.bytes.end(),
              out.bytes.begin() + static_cast<std::ptrdiff_t>(at - base));
  };
  put(out.callSite, arch_.call(out.callSite, out.callbackStub), "the call to its callback");
  // v6.x's create_trampoline() ends the copy with a return, as its caller does: nothing to move.
  if (ops_.tail) {
    const std::uint64_t jump = base + layout.jump;
    put(jump, arch_.jump(jump, ops_.tail), "the jump back to the shared epilogue");
  }
  std::copy(ops_.callbackStub.begin(), ops_.callbackStub.end(),
            out.bytes.begin() + static_cast<std::ptrdiff_t>(layout.stub));
  return out;
}

} // namespace ftsim::arch
