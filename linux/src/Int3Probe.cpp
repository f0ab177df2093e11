// The tree's poke_int3_handler() asked about one address (Int3Probe.h).

#include "ftsim/linux/Int3Probe.h"

#include "ftsim/arch/Error.h"
#include "ftsim/arch/UnicornEngine.h"
#include "ftsim/linux/Int3Entry.h"

#include <fmt/format.h>
#include <unicorn/unicorn.h>

#include <array>
#include <cstring>

namespace ftsim::linuxk {
namespace {

constexpr std::uint64_t kFlagsFixed = 0x2;
constexpr std::uint64_t kMaxInstructions = 100'000;

} // namespace

struct Int3Probe::Impl {
  uc_engine *uc = nullptr;
  uc_hook intrHook = 0;
  std::uint64_t stackTop = 0;
  std::int64_t intno = -1;
};

Int3Probe::Int3Probe(const LinuxGuest &guest, std::span<const HostRegion> regions, HostRegion stack)
    : guest_(guest), impl_(new Impl) {
  if (arch::openUnicorn(UC_ARCH_X86, UC_MODE_64, &impl_->uc) != UC_ERR_OK)
    FTSIM_PANIC("uc_open failed");
  for (const HostRegion &r : regions) {
    const std::uint32_t perms =
        r.executable ? UC_PROT_READ | UC_PROT_EXEC : UC_PROT_READ | UC_PROT_WRITE;
    if (r.size && uc_mem_map_ptr(impl_->uc, r.base, r.size, perms, r.host) != UC_ERR_OK)
      FTSIM_PANIC("Int3Probe: cannot map {:#x}+{:#x}", r.base, r.size);
  }
  if (uc_mem_map_ptr(impl_->uc, stack.base, stack.size, UC_PROT_READ | UC_PROT_WRITE, stack.host) !=
      UC_ERR_OK)
    FTSIM_PANIC("Int3Probe: cannot map the stack {:#x}+{:#x}", stack.base, stack.size);
  impl_->stackTop = stack.base + stack.size;
  uc_cb_hookintr_t onIntr = [](uc_engine *u, std::uint32_t intno, void *user) {
    static_cast<Impl *>(user)->intno = intno;
    uc_emu_stop(u);
  };
  uc_hook_add(impl_->uc, &impl_->intrHook, UC_HOOK_INTR, reinterpret_cast<void *>(onIntr), impl_, 1,
              0);
}

Int3Probe::~Int3Probe() {
  uc_close(impl_->uc);
  delete impl_;
}

Int3ProbeResult Int3Probe::probe(std::uint64_t site) {
  Impl &m = *impl_;
  uc_engine *uc = m.uc;
  // The trapped context: a kernel stack of its own (int3_emulate_call pushes there), ip past the
  // int3, interrupted with IF set; the handler's frame below it, as Int3Entry.h lays it out.
  const std::uint64_t trappedSp = (m.stackTop & ~0xfull) - 1024;
  PtRegs regs{};
  regs[kPtRegsSp] = trappedSp;
  setInt3Entry(regs, site);
  const std::uint64_t frame = trappedSp - 2048;
  // The trapped stack's top two words read as 0: what a `ret` pops, where a call pushes.
  const std::uint64_t zeros[2] = {0, 0};
  uc_mem_write(uc, trappedSp - 8, zeros, sizeof zeros);
  static_assert(sizeof regs == kPtRegsSize);
  uc_mem_write(uc, frame, regs.data(), kPtRegsSize);
  const std::uint64_t returnStub = guest_.symbol("ftsim_linux_iret");
  const std::uint64_t sp = frame - 8;
  uc_mem_write(uc, sp, &returnStub, 8);
  auto set = [&](int id, std::uint64_t v) { uc_reg_write(uc, id, &v); };
  set(UC_X86_REG_RSP, sp);
  set(UC_X86_REG_RDI, frame);
  set(UC_X86_REG_RBP, 0);
  set(UC_X86_REG_EFLAGS, kFlagsFixed); // IF clear, DF clear
  m.intno = -1;
  const uc_err err =
      uc_emu_start(uc, guest_.symbol("poke_int3_handler"), returnStub, 0, kMaxInstructions);
  std::uint64_t pc = 0, rax = 0;
  uc_reg_read(uc, UC_X86_REG_RIP, &pc);
  uc_reg_read(uc, UC_X86_REG_RAX, &rax);
  Int3ProbeResult out;
  if (err == UC_ERR_OK && m.intno < 0 && pc == returnStub) {
    out.handled = (rax & 0xffffffffu) != 0; // int poke_int3_handler(struct pt_regs *)
    if (out.handled) {
      uc_mem_read(uc, frame, regs.data(), kPtRegsSize);
      out.ip = regs[kPtRegsIp];
      if (regs[kPtRegsSp] == trappedSp - 8)
        uc_mem_read(uc, trappedSp - 8, &out.pushed, 8);
    }
    return out;
  }
  if (m.intno >= 0) {
    if (std::string stub = guest_.stubAt(pc - 1); !stub.empty())
      out.finding = fmt::format("poke_int3_handler: unexpected call to {}", stub);
    else
      out.finding = fmt::format("poke_int3_handler: interrupt {} at {:#x}", m.intno, pc - 1);
  } else if (err != UC_ERR_OK) {
    out.finding = fmt::format("poke_int3_handler: {} at {:#x} ({})", uc_strerror(err), pc,
                              sourceLine(guest_, pc));
  } else {
    out.finding =
        fmt::format("poke_int3_handler did not return within {} instructions", kMaxInstructions);
  }
  return out;
}

} // namespace ftsim::linuxk
