// text_poke_bp_batch(), text_poke_queue()/text_poke_finish() and poke_int3_handler() after
// arch/x86/kernel/alternative.c (Linux 5.6 .. 6.x).
//
// The hazard (Rostedt, "Ftrace Kernel Hooks", and 08d636b6d4fb):
//
//   CPU 0 (patcher)                       CPU 1 (running schedule())
//   writes e8 37 over 0f 1f               fetches the site: 0f 1f 2e 00 00 ...   <- torn
//   writes 2e 00 00 over 44 00 00         nopl (%rsi); add %al,(%rax) -> GPF
//
// The fix is to make every intermediate state safe: first an int3 on the first byte (any CPU that
// reaches the site traps, and the handler emulates the new instruction), then the tail, then the
// first byte, with a sync (IPI + serialise) between phases so no CPU can still hold stale bytes.

#include "X86_64TextPoke.h"

#include "ftsim/arch/Error.h"

#include <algorithm>

namespace ftsim::arch {
namespace {

constexpr std::uint8_t kInt3 = 0xcc;
constexpr std::uint8_t kCall = 0xe8;
constexpr std::uint8_t kJmp32 = 0xe9;
constexpr std::uint8_t kJmp8 = 0xeb;
constexpr std::uint8_t kRet = 0xc3;

struct TextPokeLoc {
  std::uint64_t addr;
  Bytes oldBytes;
  Bytes newBytes;
};

class X86_64Poke final : public PatchProtocol {
public:
  X86_64Poke(const Arch &arch, std::string name, std::string difference, X86_64PokeProgram program)
      : arch_(arch), name_(std::move(name)), difference_(std::move(difference)),
        program_(std::move(program)) {}

  std::string_view name() const override { return name_; }
  std::string_view difference() const override { return difference_; }
  const PatchStats &stats() const override { return stats_; }

  void attach(MachinePort &port) override {
    port_ = &port;
    port.setTrapHandler(
        [this](GuestContext &ctx, std::uint64_t addr) { return handleInt3(ctx, addr); });
  }

  // text_poke_queue(): batch up to TP_VEC_MAX ascending entries (vecMax 0: every one).
  void queue(const PatchRequest &request) override {
    checkRequest(request);
    if ((program_.vecMax && queued_.size() == program_.vecMax) ||
        (program_.sorted && !queued_.empty() && request.addr < queued_.back().addr))
      flush();
    queued_.push_back({request.addr, request.oldBytes, request.newBytes});
  }

  void finish() override { flush(); }

  // text_poke_bp(): a batch of one. Queued entries go first, as text_poke_flush() does.
  void pokeNow(const PatchRequest &request) override {
    checkRequest(request);
    flush();
    queued_.push_back({request.addr, request.oldBytes, request.newBytes});
    flush();
  }

private:
  void checkRequest(const PatchRequest &request) const {
    if (!port_)
      FTSIM_PANIC("patch protocol {} used before attach()", name_);
    if (request.newBytes.empty() || request.newBytes.size() != request.oldBytes.size() ||
        request.newBytes.size() > 5)
      FTSIM_PANIC("bad text_poke request at {:#x}: {} old, {} new bytes", request.addr,
                  request.oldBytes.size(), request.newBytes.size());
  }

  void flush() {
    if (queued_.empty())
      return;
    std::vector<TextPokeLoc> batch = std::move(queued_);
    queued_.clear();
    stats_.batches++;
    stats_.sites += batch.size();
    run(batch);
  }

  void sync() {
    stats_.syncs++;
    port_->syncCores();
  }

  // The program's steps over one batch. A sync right after a write step that stored nothing is
  // skipped (Linux's do_sync); any other sync always runs.
  void run(const std::vector<TextPokeLoc> &batch) {
    using Op = X86_64PokeStep::Op;
    bool previousWriteStored = true;
    for (const X86_64PokeStep &step : program_.steps) {
      switch (step.op) {
      case Op::Write:
        previousWriteStored = write(batch, step);
        continue;
      case Op::Sync:
        if (previousWriteStored)
          sync();
        break;
      case Op::Publish:
        // bp_desc.vec = tp; atomic_set_release(&bp_desc.refs, 1).
        port_->publish("bp_desc.vec", [this, &batch] { vector_ = batch; });
        break;
      case Op::Withdraw:
        // Remove and wait for refs to be zero: no handler is still using the vector afterwards
        // (a handler runs within the trapping CPU's event here, so none is in flight).
        port_->publish("bp_desc.vec=NULL", [this] { vector_.clear(); });
        break;
      }
      previousWriteStored = true;
    }
  }

  // One write step over every site of the batch; whether it stored anything. `first` with the
  // new value skips a site whose new first byte is an int3 (text_poke_bp_batch's third step);
  // `tail` skips a one-byte site.
  bool write(const std::vector<TextPokeLoc> &batch, const X86_64PokeStep &step) {
    using Part = X86_64PokeStep::Part;
    using Value = X86_64PokeStep::Value;
    static constexpr std::uint8_t int3 = kInt3;
    bool stored = false;
    for (const auto &tp : batch) {
      const Bytes &bytes = step.value == Value::Old ? tp.oldBytes : tp.newBytes;
      std::span<const std::uint8_t> part;
      std::uint64_t addr = tp.addr;
      switch (step.part) {
      case Part::First:
        if (step.value == Value::Int3)
          part = {&int3, 1};
        else if (step.value == Value::New && bytes[0] == kInt3)
          continue;
        else
          part = std::span(bytes).first(1);
        break;
      case Part::Tail:
        if (bytes.size() < 2)
          continue;
        part = std::span(bytes).subspan(1);
        addr += 1;
        break;
      case Part::Whole:
        part = bytes;
        break;
      }
      stats_.stores++;
      if (!port_->writeText(addr, part))
        FTSIM_PANIC("text_poke: write fault at {:#x}", addr);
      stored = true;
    }
    return stored;
  }

  const TextPokeLoc *lookup(std::uint64_t ip) const {
    if (vector_.empty())
      return nullptr;
    if (program_.lookup == X86_64PokeProgram::Lookup::FirstOnly || vector_.size() == 1)
      return vector_[0].addr == ip ? &vector_[0] : nullptr;
    // __inline_bsearch(ip, desc->vec, desc->nr_entries, ..., patch_cmp): assumes sorted.
    std::size_t lo = 0, hi = vector_.size();
    while (lo < hi) {
      const std::size_t mid = (lo + hi) / 2;
      if (vector_[mid].addr == ip)
        return &vector_[mid];
      if (vector_[mid].addr < ip)
        lo = mid + 1;
      else
        hi = mid;
    }
    return nullptr;
  }

  // poke_int3_handler(): find the site, emulate the new instruction.
  TrapVerdict handleInt3(GuestContext &ctx, std::uint64_t ip) {
    if (program_.handler == X86_64PokeProgram::Handler::Unknown)
      return TrapVerdict::NotMine;
    const TextPokeLoc *tp = lookup(ip);
    if (!tp)
      return TrapVerdict::NotMine;
    stats_.trapsHandled++;
    const std::uint64_t next = ip + tp->newBytes.size();
    if (program_.handler == X86_64PokeProgram::Handler::SkipSite) {
      // ftrace_int3_handler before 2019: regs->ip += MCOUNT_INSN_SIZE - 1.
      ctx.setPc(next);
      return TrapVerdict::Handled;
    }
    const Bytes &insn = tp->newBytes;
    switch (insn[0]) {
    case kInt3:
      // Someone poked an explicit INT3: not ours to consume.
      return TrapVerdict::NotMine;
    case kCall: {
      // int3_emulate_call(): push the return address, jump.
      const std::uint64_t target = *arch_.callTarget(ip, insn);
      std::uint8_t ret[8];
      for (unsigned i = 0; i < 8; ++i)
        ret[i] = static_cast<std::uint8_t>(next >> (8 * i));
      const std::uint64_t sp = ctx.sp() - 8;
      if (!ctx.writeMemory(sp, ret))
        return TrapVerdict::NotMine;
      ctx.setSp(sp);
      ctx.setPc(target);
      return TrapVerdict::Handled;
    }
    case kJmp32: {
      const std::int32_t rel = static_cast<std::int32_t>(
          static_cast<std::uint32_t>(insn[1]) | static_cast<std::uint32_t>(insn[2]) << 8 |
          static_cast<std::uint32_t>(insn[3]) << 16 | static_cast<std::uint32_t>(insn[4]) << 24);
      ctx.setPc(next + static_cast<std::int64_t>(rel));
      return TrapVerdict::Handled;
    }
    case kJmp8:
      ctx.setPc(next + static_cast<std::int8_t>(insn[1]));
      return TrapVerdict::Handled;
    case kRet: {
      std::uint8_t ret[8];
      if (!ctx.readMemory(ctx.sp(), ret))
        return TrapVerdict::NotMine;
      std::uint64_t target = 0;
      for (unsigned i = 0; i < 8; ++i)
        target |= static_cast<std::uint64_t>(ret[i]) << (8 * i);
      ctx.setSp(ctx.sp() + 8);
      ctx.setPc(target);
      return TrapVerdict::Handled;
    }
    default:
      // A nop of any length: jump over it.
      if (insn == arch_.nop() || (insn.size() >= 2 && insn[0] == 0x0f && insn[1] == 0x1f) ||
          insn[0] == 0x90 || insn[0] == 0x66) {
        ctx.setPc(next);
        return TrapVerdict::Handled;
      }
      FTSIM_PANIC("poke_int3_handler: cannot emulate {} at {:#x}", hexBytes(insn), ip);
    }
  }

  const Arch &arch_;
  std::string name_;
  std::string difference_;
  X86_64PokeProgram program_;
  MachinePort *port_ = nullptr;
  std::vector<TextPokeLoc> queued_;
  std::vector<TextPokeLoc> vector_; // bp_desc.vec as handlers see it
  PatchStats stats_;
};

} // namespace

std::unique_ptr<PatchProtocol> makeX86_64Poke(const Arch &arch, std::string name,
                                              std::string difference, X86_64PokeProgram program) {
  return std::make_unique<X86_64Poke>(arch, std::move(name), std::move(difference),
                                      std::move(program));
}

} // namespace ftsim::arch
