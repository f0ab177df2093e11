// The patcher's CPU running the tree's text_poke_queue()/text_poke_finish() (PokeCpu.h).

#include "ftsim/linux/PokeCpu.h"

#include "ftsim/arch/Error.h"
#include "ftsim/arch/UnicornEngine.h"

#include <fmt/format.h>
#include <unicorn/unicorn.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>

namespace ftsim::linuxk {
namespace {

constexpr std::uint64_t kPage = 4096;

struct BugEntry {
  std::string where;
  bool warning = false;
};

// include/asm-generic/bug.h with GENERIC_BUG_RELATIVE_POINTERS and DEBUG_BUGVERBOSE (x86-64):
// { s32 bug_addr_disp; s32 file_disp; u16 line; u16 flags; }, BUGFLAG_WARNING = 1.
std::map<std::uint64_t, BugEntry> bugTable(const arch::Image &image) {
  std::map<std::uint64_t, BugEntry> out;
  const arch::ImageSymbol *start = image.findSymbol("__start___bug_table");
  const arch::ImageSymbol *stop = image.findSymbol("__stop___bug_table");
  if (!start || !stop)
    return out;
  for (std::uint64_t e = start->addr; e + 12 <= stop->addr; e += 12) {
    std::uint8_t raw[12];
    if (!image.read(e, raw))
      break;
    std::int32_t addrDisp, fileDisp;
    std::uint16_t line, flags;
    std::memcpy(&addrDisp, raw, 4);
    std::memcpy(&fileDisp, raw + 4, 4);
    std::memcpy(&line, raw + 8, 2);
    std::memcpy(&flags, raw + 10, 2);
    std::string file;
    for (std::uint64_t p = e + 4 + static_cast<std::int64_t>(fileDisp); file.size() < 200; ++p) {
      std::uint8_t c = 0;
      if (!image.read(p, {&c, 1}) || c == 0)
        break;
      file += static_cast<char>(c);
    }
    out[e + static_cast<std::int64_t>(addrDisp)] = {fmt::format("{}:{}", file, line),
                                                    (flags & 1) != 0};
  }
  return out;
}

// A lock prefix, or xchg with memory (implicitly locked), before the opcode.
bool lockedInstruction(uc_engine *uc, std::uint64_t pc) {
  std::uint8_t b[8] = {};
  uc_mem_read(uc, pc, b, sizeof b);
  for (std::uint8_t x : b) {
    if (x == 0xf0)
      return true;
    const bool prefix = x == 0x66 || x == 0x67 || x == 0xf2 || x == 0xf3 || x == 0x2e ||
                        x == 0x3e || x == 0x26 || x == 0x36 || x == 0x64 || x == 0x65 ||
                        (x >= 0x40 && x <= 0x4f);
    if (!prefix)
      return x == 0x86 || x == 0x87;
  }
  return false;
}

} // namespace

struct PokeCpu::Impl {
  uc_engine *uc = nullptr;
  // The same memory with the shared pages readable and writable: an access that faulted on `uc`
  // is stepped here, its registers carried over and back in `carried`. Opening the pages on `uc`
  // for that one step (uc_mem_protect, twice) rebuilt Unicorn's view of the memory each time: more
  // than half of a Linux-backed search's time.
  uc_engine *open = nullptr;
  uc_context *carried = nullptr;
  uc_hook protHook = 0, intrHook = 0, openIntrHook = 0;
  std::map<std::uint64_t, BugEntry> bugs;
  std::uint64_t stackTop = 0;
  // The last protection fault (the access that is about to be made).
  bool faulted = false;
  std::uint64_t faultAddr = 0;
  unsigned faultSize = 0;
  bool faultWrite = false;
  std::int64_t intno = -1;

  std::uint64_t reg(int id) const {
    std::uint64_t v = 0;
    uc_reg_read(uc, id, &v);
    return v;
  }
  void setReg(int id, std::uint64_t v) { uc_reg_write(uc, id, &v); }
  // The registers of engine `from` into engine `to` (both x86-64, so one context fits both).
  void carry(uc_engine *from, uc_engine *to) {
    if (uc_context_save(from, carried) != UC_ERR_OK || uc_context_restore(to, carried) != UC_ERR_OK)
      FTSIM_PANIC("PokeCpu: cannot carry the registers between its engines");
  }
  // Return from an intercepted function: pop the return address.
  void ret(std::uint64_t rax) {
    std::uint64_t sp = reg(UC_X86_REG_RSP), to = 0;
    uc_mem_read(uc, sp, &to, sizeof to);
    setReg(UC_X86_REG_RSP, sp + 8);
    setReg(UC_X86_REG_RIP, to);
    setReg(UC_X86_REG_RAX, rax);
  }
};

PokeCpu::PokeCpu(const LinuxGuest &guest, std::span<const HostRegion> regions, HostRegion stack)
    : guest_(guest), impl_(new Impl) {
  sharedStart_ = guest.symbol("ftsim_linux_shared_start");
  sharedEnd_ = guest.symbol("ftsim_linux_shared_end");
  // Every region on both engines; the shared pages inside a data region with `shared` access.
  auto mapAll = [&](uc_engine *uc, std::uint32_t shared) {
    auto map = [&](std::uint64_t base, std::uint64_t size, std::uint8_t *host,
                   std::uint32_t perms) {
      if (size == 0)
        return;
      if (uc_mem_map_ptr(uc, base, size, perms, host) != UC_ERR_OK)
        FTSIM_PANIC("PokeCpu: cannot map {:#x}+{:#x}", base, size);
    };
    for (const HostRegion &r : regions) {
      if (r.executable) {
        map(r.base, r.size, r.host, UC_PROT_READ | UC_PROT_EXEC);
        continue;
      }
      const std::uint64_t lo = std::clamp(sharedStart_, r.base, r.base + r.size);
      const std::uint64_t hi = std::clamp(sharedEnd_, r.base, r.base + r.size);
      map(r.base, lo - r.base, r.host, UC_PROT_READ | UC_PROT_WRITE);
      map(lo, hi - lo, r.host + (lo - r.base), shared);
      map(hi, r.base + r.size - hi, r.host + (hi - r.base), UC_PROT_READ | UC_PROT_WRITE);
    }
    map(stack.base, stack.size, stack.host, UC_PROT_READ | UC_PROT_WRITE);
  };
  if (arch::openUnicorn(UC_ARCH_X86, UC_MODE_64, &impl_->uc) != UC_ERR_OK ||
      arch::openUnicorn(UC_ARCH_X86, UC_MODE_64, &impl_->open) != UC_ERR_OK ||
      uc_context_alloc(impl_->uc, &impl_->carried) != UC_ERR_OK)
    FTSIM_PANIC("uc_open failed");
  uc_engine *uc = impl_->uc;
  mapAll(uc, UC_PROT_NONE); // every access to a shared page faults first
  mapAll(impl_->open, UC_PROT_READ | UC_PROT_WRITE);
  impl_->stackTop = stack.base + stack.size;
  impl_->bugs = bugTable(guest.image);
  uc_cb_eventmem_t onProt = [](uc_engine *, uc_mem_type type, std::uint64_t addr, int size,
                               std::int64_t, void *user) -> bool {
    auto *m = static_cast<Impl *>(user);
    m->faulted = true;
    m->faultAddr = addr;
    m->faultSize = static_cast<unsigned>(size);
    m->faultWrite = type == UC_MEM_WRITE_PROT;
    return false;
  };
  uc_hook_add(uc, &impl_->protHook, UC_HOOK_MEM_READ_PROT | UC_HOOK_MEM_WRITE_PROT,
              reinterpret_cast<void *>(onProt), impl_, 1, 0);
  uc_cb_hookintr_t onIntr = [](uc_engine *u, std::uint32_t intno, void *user) {
    static_cast<Impl *>(user)->intno = intno;
    uc_emu_stop(u);
  };
  uc_hook_add(uc, &impl_->intrHook, UC_HOOK_INTR, reinterpret_cast<void *>(onIntr), impl_, 1, 0);
  uc_hook_add(impl_->open, &impl_->openIntrHook, UC_HOOK_INTR, reinterpret_cast<void *>(onIntr),
              impl_, 1, 0);
}

PokeCpu::~PokeCpu() {
  uc_context_free(impl_->carried);
  uc_close(impl_->open);
  uc_close(impl_->uc);
  delete impl_;
}

PokeOutcome PokeCpu::runBatch(std::span<const PokeRequest> requests, const PokeHooks &hooks,
                              std::uint64_t maxInstructions) {
  Impl &m = *impl_;
  uc_engine *uc = m.uc;
  if (requests.size() > 16)
    fatal("a Linux batch of {} requests: the guest's table holds 16", requests.size());
  // The request table (shims.c: struct ftsim_poke_request { void *addr; unsigned long len;
  // unsigned char opcode[8]; }).
  const std::uint64_t table = guest_.symbol("ftsim_poke_requests");
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const PokeRequest &r = requests[i];
    if (r.opcode.empty() || r.opcode.size() > 8)
      fatal("a Linux poke request of {} bytes: 1 to 8 are possible", r.opcode.size());
    std::uint8_t entry[24] = {};
    const std::uint64_t len = r.opcode.size();
    std::memcpy(entry, &r.addr, 8);
    std::memcpy(entry + 8, &len, 8);
    std::memcpy(entry + 16, r.opcode.data(), r.opcode.size());
    uc_mem_write(uc, table + 24 * i, entry, sizeof entry);
  }
  const std::uint64_t count = requests.size();
  uc_mem_write(uc, guest_.symbol("ftsim_poke_count"), &count, 8);

  const std::uint64_t exitAddr = guest_.symbol("ftsim_hc_exit");
  const std::uint64_t textPoke = guest_.symbol("__text_poke");
  const std::uint64_t onEachCpu = guest_.symbol("on_each_cpu_cond_mask");
  const std::uint64_t doSyncCore =
      guest_.image.findSymbol("do_sync_core") ? guest_.symbol("do_sync_core") : 0;
  std::uint64_t sp = m.stackTop - 64;
  uc_mem_write(uc, sp, &exitAddr, 8);
  m.setReg(UC_X86_REG_RSP, sp);
  m.setReg(UC_X86_REG_RBP, 0);
  m.setReg(UC_X86_REG_RIP, guest_.symbol("ftsim_linux_batch"));
  m.setReg(UC_X86_REG_EFLAGS, 0x2);

  PokeOutcome out;
  bool lastReadShared = false;
  std::uint64_t lastAddr = 0;
  unsigned lastSize = 0;
  auto stop = [&](std::uint64_t pc, std::string finding) {
    out.pc = pc;
    out.finding = std::move(finding);
    return out;
  };
  while (out.instructions < maxInstructions) {
    const std::uint64_t pc = m.reg(UC_X86_REG_RIP);
    if (pc == exitAddr) {
      out.finished = true;
      return out;
    }
    if (pc == textPoke) {
      // 6.x: __text_poke(func, addr, src, len); 5.x: __text_poke(addr, opcode, len).
      const bool four = guest_.textPokeArgs == 4;
      const std::uint64_t addr = m.reg(four ? UC_X86_REG_RSI : UC_X86_REG_RDI);
      const std::uint64_t src = m.reg(four ? UC_X86_REG_RDX : UC_X86_REG_RSI);
      const std::uint64_t len = m.reg(four ? UC_X86_REG_RCX : UC_X86_REG_RDX);
      if (len == 0 || len > 64)
        return stop(pc, fmt::format("__text_poke of {} bytes", len));
      arch::Bytes bytes(len);
      if (uc_mem_read(uc, src, bytes.data(), len) != UC_ERR_OK)
        return stop(pc, fmt::format("__text_poke from unreadable {:#x}", src));
      if (hooks.textWrite)
        hooks.textWrite(addr, bytes);
      m.ret(addr);
      ++out.instructions;
      continue;
    }
    if (pc == onEachCpu) {
      const std::uint64_t func = m.reg(UC_X86_REG_RSI);
      if (doSyncCore && func != doSyncCore)
        return stop(pc, fmt::format("on_each_cpu_cond_mask() of {:#x}, not do_sync_core", func));
      if (hooks.syncCores)
        hooks.syncCores();
      m.ret(0);
      ++out.instructions;
      continue;
    }
    if (std::string stub = guest_.stubAt(pc); !stub.empty())
      return stop(pc, fmt::format("unexpected call to {}", stub));
    std::uint8_t insn[2] = {};
    uc_mem_read(uc, pc, insn, 2);
    if (insn[0] == 0xf3 && insn[1] == 0x90 && lastReadShared && hooks.spinOn)
      hooks.spinOn(lastAddr, lastSize); // cpu_relax() in a spin on a shared word
    m.faulted = false;
    m.intno = -1;
    uc_err err = uc_emu_start(uc, pc, 0, 0, 1);
    arch::forgetProtectionFault(uc, err); // the next read of a shared page faults too (2.1)
    if ((err == UC_ERR_READ_PROT || err == UC_ERR_WRITE_PROT) && m.faulted &&
        m.faultAddr >= sharedStart_ && m.faultAddr < sharedEnd_) {
      const std::uint64_t a = m.faultAddr;
      const unsigned size = m.faultSize;
      // The fault reports the first access; a locked read-modify-write (atomic_inc_not_zero's
      // cmpxchg, atomic_dec_and_test) also writes.
      const bool write = m.faultWrite || lockedInstruction(uc, pc);
      if (hooks.sharedAccess)
        hooks.sharedAccess(a, size, write);
      m.setReg(UC_X86_REG_RIP, pc);
      m.carry(uc, m.open);
      err = uc_emu_start(m.open, pc, 0, 0, 1);
      m.carry(m.open, uc);
      if (!write) { // the word a cpu_relax() loop polls is the last one read
        lastReadShared = true;
        lastAddr = a;
        lastSize = size;
      }
    }
    ++out.instructions;
    if (err == UC_ERR_INSN_INVALID) {
      std::uint8_t ud2[2] = {};
      uc_mem_read(uc, pc, ud2, 2);
      auto bug = m.bugs.find(pc);
      if (ud2[0] == 0x0f && ud2[1] == 0x0b && bug != m.bugs.end()) {
        if (!bug->second.warning)
          return stop(pc, fmt::format("BUG at {}", bug->second.where));
        out.warnings.push_back(fmt::format("WARNING at {}", bug->second.where));
        m.setReg(UC_X86_REG_RIP, pc + 2);
        continue;
      }
      return stop(pc, "invalid instruction");
    }
    if (err != UC_ERR_OK)
      return stop(pc, fmt::format("guest fault: {}", uc_strerror(err)));
    if (m.intno >= 0) {
      const std::uint64_t at = m.reg(UC_X86_REG_RIP) - 1;
      if (std::string stub = guest_.stubAt(at); !stub.empty())
        return stop(at, fmt::format("unexpected call to {}", stub));
      return stop(at, fmt::format("unexpected interrupt {} in the patcher", m.intno));
    }
  }
  return stop(m.reg(UC_X86_REG_RIP),
              fmt::format("the batch did not finish within {} instructions", maxInstructions));
}

OwnedMemory copyImageMemory(const arch::Image &image, std::uint64_t stackBase,
                            std::uint64_t stackSize) {
  OwnedMemory mem;
  mem.buffers.reserve(image.segments.size() + 1);
  for (const arch::ImageSegment &s : image.segments) {
    const std::uint64_t base = s.addr & ~(kPage - 1);
    const std::uint64_t end = (s.addr + s.bytes.size() + kPage - 1) & ~(kPage - 1);
    auto &buf = mem.buffers.emplace_back(end - base, 0);
    std::memcpy(buf.data() + (s.addr - base), s.bytes.data(), s.bytes.size());
    mem.regions.push_back({base, end - base, buf.data(), s.executable});
  }
  auto &stack = mem.buffers.emplace_back(stackSize, 0);
  mem.stack = {stackBase, stackSize, stack.data(), false};
  return mem;
}

std::string sourceLine(const LinuxGuest &guest, std::uint64_t addr) {
  static std::mutex lock;
  static std::map<std::pair<std::string, std::uint64_t>, std::string> cache;
  std::lock_guard<std::mutex> hold(lock);
  auto key = std::make_pair(guest.dir, addr);
  if (auto it = cache.find(key); it != cache.end())
    return it->second;
  std::string line;
  std::string cmd = fmt::format("addr2line -e '{}/guest.elf' {:#x} 2>/dev/null", guest.dir, addr);
  if (FILE *p = popen(cmd.c_str(), "r")) {
    char buf[512];
    if (std::fgets(buf, sizeof buf, p))
      line = buf;
    pclose(p);
  }
  while (!line.empty() && (line.back() == '\n' || line.back() == ' '))
    line.pop_back();
  if (line.rfind("??", 0) == 0)
    line.clear();
  // Relative to the tree (or to ftsim's linux/ for the guest's own files).
  if (auto mutantDir = line.find("/.mutant."); mutantDir != std::string::npos)
    line = "arch/x86/kernel/" + line.substr(line.find('/', mutantDir + 1) + 1) + " (mutant)";
  else if (auto guestDir = line.find("/guest/"); guestDir != std::string::npos)
    line = "linux" + line.substr(guestDir);
  else if (auto at = line.find("/arch/"); at != std::string::npos)
    line.erase(0, at + 1);
  else if (auto inc = line.find("/include/"); inc != std::string::npos)
    line.erase(0, inc + 1);
  if (auto disc = line.find(" (discriminator"); disc != std::string::npos)
    line.erase(disc);
  cache[key] = line;
  return line;
}

} // namespace ftsim::linuxk
