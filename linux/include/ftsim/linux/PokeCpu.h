#pragma once
// The patcher's CPU running a Linux tree's own text_poke_queue() / text_poke_finish() (linux/
// README.md). One Unicorn engine executes the tree's code instruction by instruction; what the
// batch does that other CPUs can observe reaches the caller through hooks, at the instant it
// happens in the tree's code:
//   - the text write of the static __text_poke (found in the image's symbol table; its body, which
//     needs poking_mm and page tables, never runs): textWrite(addr, bytes), then a return;
//   - on_each_cpu_cond_mask(), which text_poke_sync() reaches through on_each_cpu(do_sync_core):
//     syncCores(), then a return;
//   - every access to the tree's shared data (alternative.o's .data and .bss: bp_desc, tp_vec,
//     tp_vec_nr), before it is made: sharedAccess(addr, size, write). The pages are mapped with no
//     access, so the access faults precisely, before any effect; the caller may park there (the
//     machine makes it one event), then the instruction runs once with the pages open;
//   - a `pause` (cpu_relax() in a spin such as atomic_cond_read_acquire) right after reading a
//     shared word: spinOn(addr, size), where the caller waits until the word can have changed.
// Everything else (the batch's own stack, its locals, the decoder) is private to the patcher.

#include "ftsim/arch/Arch.h"
#include "ftsim/linux/LinuxGuest.h"

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace ftsim::linuxk {

struct PokeRequest {
  std::uint64_t addr = 0;
  arch::Bytes opcode; // 1..8 bytes: what text_poke_queue() is asked to write at addr
};

// Guest memory the engine maps: host buffers shared with whoever else uses them.
struct HostRegion {
  std::uint64_t base = 0;
  std::uint64_t size = 0;
  std::uint8_t *host = nullptr;
  bool executable = false;
};

struct PokeHooks {
  std::function<void(std::uint64_t addr, std::span<const std::uint8_t> bytes)> textWrite;
  std::function<void()> syncCores;
  std::function<void(std::uint64_t addr, unsigned size, bool write)> sharedAccess;
  std::function<void(std::uint64_t addr, unsigned size)> spinOn;
};

struct PokeOutcome {
  bool finished = false; // text_poke_finish() returned
  std::string finding;   // otherwise: what stopped it ("unexpected call to X", "BUG at f:l", ...)
  std::uint64_t pc = 0;  // where
  std::uint64_t instructions = 0;
  std::vector<std::string> warnings; // WARN()s passed (the batch went on)
};

class PokeCpu {
public:
  // `regions` must cover the image (text and data) and `stack` (private, read+write).
  PokeCpu(const LinuxGuest &guest, std::span<const HostRegion> regions, HostRegion stack);
  ~PokeCpu();
  PokeCpu(const PokeCpu &) = delete;
  PokeCpu &operator=(const PokeCpu &) = delete;

  // Writes the requests into the guest's table and runs ftsim_linux_batch(): text_poke_queue()
  // per request, then text_poke_finish(). FatalError for more than 16 requests or an opcode
  // longer than 8 bytes.
  PokeOutcome runBatch(std::span<const PokeRequest> requests, const PokeHooks &hooks,
                       std::uint64_t maxInstructions = 2'000'000);

  std::uint64_t sharedStart() const { return sharedStart_; }
  std::uint64_t sharedEnd() const { return sharedEnd_; }

  struct Impl;

private:
  const LinuxGuest &guest_;
  std::uint64_t sharedStart_ = 0, sharedEnd_ = 0;
  Impl *impl_ = nullptr;
};

// The image's memory as host buffers of its own (for runs without a machine): text and data
// copied from the image, plus a stack. The buffers live as long as the returned object.
struct OwnedMemory {
  std::vector<std::vector<std::uint8_t>> buffers;
  std::vector<HostRegion> regions;
  HostRegion stack;
};
OwnedMemory copyImageMemory(const arch::Image &image, std::uint64_t stackBase,
                            std::uint64_t stackSize);

// "file.c:123" of a guest address, from the image's DWARF line table (addr2line), or "" when
// unknown. Cached per address.
std::string sourceLine(const LinuxGuest &guest, std::uint64_t addr);

} // namespace ftsim::linuxk
