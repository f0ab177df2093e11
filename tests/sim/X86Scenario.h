#pragma once
// A hand-built x86-64 kernel fragment for the simulator tests, laid out like the slide's
// schedule() (slides "Modifying code at runtime"): text at 0xffffffff81000000 (-mcmodel=kernel),
// hypercall stubs `int3; ret`, a worker task that calls schedule() eight times, and a patch site
// (the 5-byte nop at schedule+4) placed at an address = siteOffset (mod 64).

#include "ftsim/sim/Machine.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace ftsim::sim::test {

struct X86Scenario {
  static constexpr std::uint64_t kText = 0xffffffff81000000ull;
  static constexpr std::uint64_t kHcSchedule = kText + 0x00;
  static constexpr std::uint64_t kHcIdle = kText + 0x04;
  static constexpr std::uint64_t kHcUser = kText + 0x08;
  static constexpr std::uint64_t kHcExit = kText + 0x0c;
  static constexpr std::uint64_t kWorker = kText + 0x40;
  static constexpr unsigned kIterations = 8;

  std::uint64_t schedule = 0;     // push %rbp; mov %rsp,%rbp; <site>; pop %rbp; ret
  std::uint64_t site = 0;         // schedule + 4
  std::uint64_t ftraceCaller = 0; // the target of the slide's call: e8 37 2e 00 00 at `site`
  std::vector<std::uint8_t> text;

  static std::vector<std::uint8_t> nop() { return {0x0f, 0x1f, 0x44, 0x00, 0x00}; }
  static std::vector<std::uint8_t> call() { return {0xe8, 0x37, 0x2e, 0x00, 0x00}; }

  explicit X86Scenario(unsigned siteOffset) {
    text.assign(0x4000, 0xcc);
    schedule = kText + 0x100 + ((siteOffset + 64 - 4) % 64);
    site = schedule + 4;
    ftraceCaller = site + 5 + 0x2e37;
    auto put = [&](std::uint64_t at, std::vector<std::uint8_t> bytes) {
      std::copy(bytes.begin(), bytes.end(), text.begin() + (at - kText));
    };
    auto rel32 = [](std::uint64_t from, std::uint64_t to) {
      auto r = static_cast<std::uint32_t>(to - from);
      return std::vector<std::uint8_t>{
          static_cast<std::uint8_t>(r), static_cast<std::uint8_t>(r >> 8),
          static_cast<std::uint8_t>(r >> 16), static_cast<std::uint8_t>(r >> 24)};
    };
    for (std::uint64_t stub : {kHcSchedule, kHcIdle, kHcUser, kHcExit})
      put(stub, {0xcc, 0xc3});
    // worker(seed): rax = seed; 8 times { rax += 3; schedule(); hc_schedule(); }; return rax.
    put(kWorker, {0x48, 0x89, 0xf8, 0xb9, kIterations, 0, 0, 0, 0x48, 0x83, 0xc0, 0x03, 0xe8});
    put(kWorker + 13, rel32(kWorker + 17, schedule));
    put(kWorker + 17, {0xe8});
    put(kWorker + 18, rel32(kWorker + 22, kHcSchedule));
    put(kWorker + 22, {0xff, 0xc9, 0x75, 0xee, 0xc3});
    put(schedule, {0x55, 0x48, 0x89, 0xe5});
    put(site, nop());
    put(site + 5, {0x5d, 0xc3});
    put(ftraceCaller, {0xc3});
  }

  static std::uint64_t expectedResult(std::uint64_t seed) { return seed + 3 * kIterations; }

  // Maps the text, binds the stubs, watches the site (allowed: nop, call) and adds one worker per
  // listed CPU with seeds 0, 1, 2, ...
  void install(Machine &m, std::vector<unsigned> workerCpus) const {
    m.mapText(kText, text);
    m.bindHypercall(GuestHypercall::Schedule, kHcSchedule);
    m.bindHypercall(GuestHypercall::Idle, kHcIdle);
    m.bindHypercall(GuestHypercall::User, kHcUser);
    m.bindHypercall(GuestHypercall::Exit, kHcExit);
    m.watchSite(site, 5, {nop(), call()});
    std::uint64_t seed = 0;
    for (unsigned cpu : workerCpus)
      m.addTask({"worker" + std::to_string(seed), cpu, kWorker, seed}), ++seed;
  }
};

} // namespace ftsim::sim::test
