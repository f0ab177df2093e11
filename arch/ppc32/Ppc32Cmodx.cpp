#include "Ppc32Cmodx.h"

#include "Ppc32Code.h"

#include <fmt/format.h>

#include <optional>

namespace ftsim::arch {

std::uint32_t CmodxCheckedPort::wordAt(std::uint64_t addr, bool &ok) {
  std::uint8_t b[4] = {};
  ok = inner().readText(addr, b);
  return ok ? ppc32::wordOf(b) : 0;
}

std::vector<std::string> CmodxCheckedPort::findings() const {
  std::vector<std::string> out;
  for (const CmodxViolation &v : violations_)
    out.push_back(v.reason);
  return out;
}

void CmodxCheckedPort::flag(std::uint64_t addr, std::uint32_t oldWord, std::uint32_t newWord,
                            std::string why) {
  violations_.push_back(
      {addr, oldWord, newWord,
       fmt::format("CMODX: {:08x} -> {:08x} at {:#x}: {}", oldWord, newWord, addr, why)});
}

bool CmodxCheckedPort::writeText(std::uint64_t addr, std::span<const std::uint8_t> bytes) {
  if (!live_)
    return inner().writeText(addr, bytes);
  if (addr % 4 != 0 || bytes.size() % 4 != 0) {
    flag(addr, 0, 0, fmt::format("{} bytes not as aligned words", bytes.size()));
  } else {
    for (std::size_t i = 0; i < bytes.size(); i += 4) {
      bool ok = false;
      const std::uint32_t oldWord = wordAt(addr + i, ok);
      if (ok)
        check(addr + i, oldWord, ppc32::wordOf(bytes.subspan(i, 4)));
    }
  }
  // Rule 3: the branches being overwritten, whose targets must not be freed before every other
  // CPU context-synchronised.
  std::vector<OldBranch> overwritten;
  for (std::size_t i = 0; addr % 4 == 0 && i + 4 <= bytes.size(); i += 4) {
    bool ok = false;
    const std::uint32_t oldWord = wordAt(addr + i, ok);
    if (ok && oldWord != ppc32::wordOf(bytes.subspan(i, 4)))
      if (std::optional<std::uint64_t> to = ppc32::branchTarget(addr + i, oldWord))
        overwritten.push_back({addr + i, oldWord, *to});
  }
  const bool ok = inner().writeText(addr, bytes);
  if (ok) {
    for (std::size_t i = 0; i + 4 <= bytes.size(); i += 4)
      written_[addr + i] = {gracePeriods_, syncs_};
    oldBranches_.insert(oldBranches_.end(), overwritten.begin(), overwritten.end());
  }
  return ok;
}

void CmodxCheckedPort::freeText(std::uint64_t addr, std::size_t size) {
  if (live_)
    for (const OldBranch &b : oldBranches_)
      if (b.target - addr < size) {
        violations_.push_back(
            {b.site, b.oldWord, b.oldWord,
             fmt::format("CMODX: text at {:#x} freed while a CPU may still execute the "
                         "overwritten branch {:08x} at {:#x} into it: no context synchronisation "
                         "of the other CPUs (IPI, schedule_on_each_cpu) since the store",
                         b.target, b.oldWord, b.site)});
        break;
      }
  inner().freeText(addr, size);
}

void CmodxCheckedPort::check(std::uint64_t addr, std::uint32_t oldWord, std::uint32_t newWord) {
  if (oldWord == newWord)
    return;
  const bool slotWrite = (oldWord == ppc32::kNop && newWord == ppc32::kMflrR0) ||
                         (oldWord == ppc32::kMflrR0 && newWord == ppc32::kNop);
  if (slotWrite) {
    bool ok = false;
    const std::uint32_t next = wordAt(addr + 4, ok);
    if (!ok || next != ppc32::kNop) {
      flag(addr, oldWord, newWord,
           fmt::format("mflr r0 is not patch class; written while the next word is {:08x}, not a "
                       "nop, so a CPU may run that bl with r0 not holding its return address",
                       next));
      return;
    }
    // A nopped mflr after a disabled bl: the bl's nop must have reached every CPU first.
    auto it = written_.find(addr + 4);
    if (newWord == ppc32::kNop && it != written_.end() && it->second.syncs == syncs_)
      flag(addr, oldWord, newWord,
           "mflr r0 nopped before the CPUs were synchronised after nopping the bl: a CPU may "
           "still fetch the stale bl");
    return;
  }
  if (!ppc32::isPatchClass(oldWord) || !ppc32::isPatchClass(newWord)) {
    flag(addr, oldWord, newWord, "not a patch-class (b, bl, nop) modification");
    return;
  }
  if (ppc32::isBl(newWord)) {
    bool ok = false;
    const std::uint32_t before = wordAt(addr - 4, ok);
    auto it = written_.find(addr - 4);
    if (ok && before == ppc32::kNop && oldWord == ppc32::kNop)
      flag(addr, oldWord, newWord,
           "bl written after a nopped mflr r0: it runs with r0 not holding the return address");
    else if (ok && before == ppc32::kMflrR0 && it != written_.end() &&
             it->second.gracePeriods == gracePeriods_)
      flag(addr, oldWord, newWord,
           "bl written without an RCU-tasks grace period since mflr r0 was restored: a task "
           "stopped after the old nop would run the bl with a stale r0");
  }
}

} // namespace ftsim::arch
