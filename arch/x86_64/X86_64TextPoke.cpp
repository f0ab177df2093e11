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
  X86_64Poke(const Arch &arch, std::string name, std::string difference, X86_64PokeOptions options)
      : arch_(arch), name_(std::move(name)), difference_(std::move(difference)), options_(options) {
  }

  std::string_view name() const override { return name_; }
  std::string_view difference() const override { return difference_; }
  const PatchStats &stats() const override { return stats_; }

  void attach(MachinePort &port) override {
    port_ = &port;
    port.setTrapHandler(
        [this](GuestContext &ctx, std::uint64_t addr) { return handleInt3(ctx, addr); });
  }

  // text_poke_queue(): batch up to TP_VEC_MAX ascending entries.
  void queue(const PatchRequest &request) override {
    checkRequest(request);
    if (queued_.size() == kTextPokeVecMax ||
        (options_.keepSorted && !queued_.empty() && request.addr < queued_.back().addr))
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
    if (options_.breakpoint)
      textPokeBpBatch(batch);
    else
      directBatch(batch);
  }

  void write(std::uint64_t addr, std::span<const std::uint8_t> bytes) {
    stats_.stores++;
    if (!port_->writeText(addr, bytes))
      FTSIM_PANIC("text_poke: write fault at {:#x}", addr);
  }

  void sync() {
    stats_.syncs++;
    port_->syncCores();
  }

  void directBatch(const std::vector<TextPokeLoc> &batch) {
    for (const auto &tp : batch)
      write(tp.addr, tp.newBytes);
    sync();
  }

  void publishVector(const std::vector<TextPokeLoc> &batch) {
    port_->publish("bp_desc.vec", [this, &batch] { vector_ = batch; });
  }

  void withdrawVector() {
    port_->publish("bp_desc.vec=NULL", [this] { vector_.clear(); });
  }

  void textPokeBpBatch(const std::vector<TextPokeLoc> &batch) {
    const std::uint8_t int3 = kInt3;
    // bp_desc.vec = tp; atomic_set_release(&bp_desc.refs, 1): the handler must be able to find
    // every site before any int3 can be observed.
    if (options_.publishBeforeInt3)
      publishVector(batch);
    // Phase 1: an int3 on the first byte of every site.
    for (const auto &tp : batch)
      write(tp.addr, {&int3, 1});
    if (!options_.publishBeforeInt3)
      publishVector(batch);
    if (options_.syncAfterInt3)
      sync();
    if (options_.firstByteBeforeTail) {
      writeFirstBytes(batch);
      writeTails(batch);
    } else {
      writeTails(batch);
      writeFirstBytes(batch);
    }
    if (!options_.withdrawAfterLastSync)
      withdrawVector();
    if (options_.syncAfterFirstByte)
      sync();
    // Remove and wait for refs to be zero: no handler is still using the vector afterwards (a
    // handler runs within the trapping CPU's event here, so none is in flight).
    if (options_.withdrawAfterLastSync)
      withdrawVector();
  }

  // Phase 2: all but the first byte ("According to Intel, this core syncing is very likely not
  // necessary and we'd be safe even without it. But better safe than sorry").
  void writeTails(const std::vector<TextPokeLoc> &batch) {
    bool any = false;
    for (const auto &tp : batch)
      if (tp.newBytes.size() > 1) {
        write(tp.addr + 1, std::span(tp.newBytes).subspan(1));
        any = true;
      }
    if (any && options_.syncAfterTail && !options_.firstByteBeforeTail)
      sync();
  }

  // Phase 3: replace the int3 by the new first byte.
  void writeFirstBytes(const std::vector<TextPokeLoc> &batch) {
    bool any = false;
    for (const auto &tp : batch) {
      if (tp.newBytes[0] == kInt3)
        continue;
      write(tp.addr, std::span(tp.newBytes).first(1));
      any = true;
    }
    if (any && options_.firstByteBeforeTail && options_.syncAfterTail)
      sync();
  }

  const TextPokeLoc *lookup(std::uint64_t ip) const {
    if (vector_.empty())
      return nullptr;
    if (options_.handler == X86_64PokeOptions::Handler::FirstOnly || vector_.size() == 1)
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
    const TextPokeLoc *tp = lookup(ip);
    if (!tp)
      return TrapVerdict::NotMine;
    stats_.trapsHandled++;
    const std::uint64_t next = ip + tp->newBytes.size();
    if (options_.handler == X86_64PokeOptions::Handler::SkipSite) {
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
  X86_64PokeOptions options_;
  MachinePort *port_ = nullptr;
  std::vector<TextPokeLoc> queued_;
  std::vector<TextPokeLoc> vector_; // bp_desc.vec as handlers see it
  PatchStats stats_;
};

} // namespace

std::unique_ptr<PatchProtocol> makeX86_64Poke(const Arch &arch, std::string name,
                                              std::string difference, X86_64PokeOptions options) {
  return std::make_unique<X86_64Poke>(arch, std::move(name), std::move(difference), options);
}

} // namespace ftsim::arch
