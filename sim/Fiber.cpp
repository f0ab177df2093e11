// The fiber (Fiber.h). glibc's fortified longjmp refuses to jump to another stack ("longjmp causes
// uninitialized stack frame"); switching stacks is the point here, so this file is not fortified.
#ifdef _FORTIFY_SOURCE
#undef _FORTIFY_SOURCE
#endif

#include "Fiber.h"

#include "ftsim/arch/Error.h"

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <utility>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define FTSIM_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FTSIM_FIBER_ASAN 1
#endif
#endif
#ifdef FTSIM_FIBER_ASAN
#include <dlfcn.h>
#include <sanitizer/common_interface_defs.h>
#endif

// The Itanium C++ ABI (2.2.2): the per-thread exception-handling globals, one pointer to the
// stack of caught exceptions and the count of uncaught ones, at the start of __cxa_eh_globals.
namespace __cxxabiv1 {
struct __cxa_eh_globals;
extern "C" __cxa_eh_globals *__cxa_get_globals() noexcept;
} // namespace __cxxabiv1

namespace ftsim::sim {
namespace {

struct EhGlobals {
  void *caughtExceptions;
  unsigned int uncaughtExceptions;
};

EhGlobals &ehGlobals() { return *reinterpret_cast<EhGlobals *>(__cxxabiv1::__cxa_get_globals()); }

// The fiber being entered for the first time (makecontext passes only ints to its function).
thread_local Fiber *entering = nullptr;

#ifndef FTSIM_FIBER_ASAN
// Stacks of fibers that ended, kept for the next fiber on the same thread: an engine-level search
// makes a machine, and so a fiber, per execution, and mapping a stack, faulting its first pages
// in and unmapping it again was 4% of such a search (perf record of op-func-residual-race: mmap,
// clear_page, munmap). At most kKeptStacks per thread, each with only the pages a body touched
// committed. Not under AddressSanitizer, which tracks each stack's frames itself.
constexpr std::size_t kKeptStacks = 4;
struct KeptStacks {
  std::vector<std::pair<void *, std::size_t>> stacks; // mapping, size
  ~KeptStacks() {
    for (auto [mapping, size] : stacks)
      munmap(mapping, size);
  }
};
thread_local KeptStacks keptStacks;
#endif

// A switch to the other side's _setjmp. Under AddressSanitizer _longjmp is intercepted, and the
// interceptor calls __asan_handle_no_return, which makes a sigaltstack system call and clears the
// shadow of the signal stack and of the stack being left, on every switch: about 40% of a
// trampoline search's time in the sanitizer build. A switch abandons no frame (the frames on both
// stacks are resumed later), so there is nothing to clear: libc's _longjmp is called directly,
// through a pointer. The return after it is never reached but keeps the compiler from inferring
// `jump` noreturn, which would put that same call before every call to it. The dying fiber's last
// switch, which abandons its frames, keeps the intercepted path.
void jump(std::jmp_buf to, [[maybe_unused]] bool abandonsFrames) {
#ifdef FTSIM_FIBER_ASAN
  using LongJump = void (*)(std::jmp_buf, int);
  static const auto direct = reinterpret_cast<LongJump>(dlsym(RTLD_NEXT, "_longjmp"));
  if (direct && !abandonsFrames) {
    direct(to, 1);
    return; // not reached
  }
#endif
  _longjmp(to, 1);
}

} // namespace

Fiber::Fiber(std::size_t stackSize) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  stackSize_ = (stackSize + page - 1) / page * page;
  mappingSize_ = stackSize_ + page;
#ifndef FTSIM_FIBER_ASAN
  auto &kept = keptStacks.stacks;
  for (auto it = kept.begin(); it != kept.end(); ++it)
    if (it->second == mappingSize_) {
      mapping_ = it->first;
      kept.erase(it);
      stack_ = static_cast<char *>(mapping_) + page;
      return;
    }
#endif
  // Reserved, not committed: only the pages the body touches cost memory.
  mapping_ = mmap(nullptr, mappingSize_, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (mapping_ == MAP_FAILED)
    FTSIM_PANIC("cannot map a {}-byte fiber stack", mappingSize_);
  if (mprotect(mapping_, page, PROT_NONE) != 0) // the guard page: an overflow faults
    FTSIM_PANIC("cannot protect the fiber stack's guard page");
  stack_ = static_cast<char *>(mapping_) + page;
}

Fiber::~Fiber() {
  if (busy_) {
    std::fputs("ftsim: a fiber was destroyed with its body suspended\n", stderr);
    std::abort();
  }
  if (entered_) {
    // Let the loop end, so the sanitizer forgets the stack before it is unmapped.
    quit_ = true;
    switchIn();
  }
#ifndef FTSIM_FIBER_ASAN
  if (keptStacks.stacks.size() < kKeptStacks) {
    keptStacks.stacks.emplace_back(mapping_, mappingSize_);
    return;
  }
#endif
  munmap(mapping_, mappingSize_);
}

void Fiber::start(std::function<void()> body) {
  FTSIM_ASSERT(!busy_ && !inside_);
  body_ = std::move(body);
  busy_ = true;
  switchIn();
}

void Fiber::resume() {
  FTSIM_ASSERT(busy_ && !inside_);
  switchIn();
}

void Fiber::suspend() {
  FTSIM_ASSERT(inside_);
  switchOut(false);
}

// Caller side: run the fiber until it switches back. The exception-handling globals are swapped
// here for both directions, since the fiber runs only between the jump and the return.
void Fiber::switchIn() {
  EhGlobals &g = ehGlobals();
  const EhGlobals outside = g;
  g = {eh_.caughtExceptions, eh_.uncaughtExceptions};
  inside_ = true;
#ifdef FTSIM_FIBER_ASAN
  __sanitizer_start_switch_fiber(&callerFakeStack_, stack_, stackSize_);
#endif
  if (_setjmp(caller_) == 0) {
    if (!entered_) {
      entered_ = true;
      entering = this;
      ucontext_t context;
      if (getcontext(&context) != 0)
        FTSIM_PANIC("getcontext failed");
      context.uc_stack.ss_sp = stack_;
      context.uc_stack.ss_size = stackSize_;
      context.uc_link = nullptr;
      makecontext(&context, &Fiber::entry, 0);
      setcontext(&context);
      FTSIM_PANIC("setcontext failed");
    }
    jump(self_, false);
  }
#ifdef FTSIM_FIBER_ASAN
  __sanitizer_finish_switch_fiber(callerFakeStack_, nullptr, nullptr);
#endif
  inside_ = false;
  eh_ = {g.caughtExceptions, g.uncaughtExceptions};
  g = outside;
}

// Fiber side: back to the caller; returns when the caller switches in again. A dying fiber never
// returns (its stack is about to go).
void Fiber::switchOut([[maybe_unused]] bool dying) {
#ifdef FTSIM_FIBER_ASAN
  __sanitizer_start_switch_fiber(dying ? nullptr : &fiberFakeStack_, callerStackBottom_,
                                 callerStackSize_);
#endif
  if (_setjmp(self_) == 0)
    jump(caller_, dying);
#ifdef FTSIM_FIBER_ASAN
  __sanitizer_finish_switch_fiber(fiberFakeStack_, &callerStackBottom_, &callerStackSize_);
#endif
}

void Fiber::entry() {
  Fiber *self = entering;
  entering = nullptr;
  self->loop();
}

void Fiber::loop() {
#ifdef FTSIM_FIBER_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &callerStackBottom_, &callerStackSize_);
#endif
  while (!quit_) {
    try {
      body_();
    } catch (...) {
      std::fputs("ftsim: an exception escaped a fiber's body\n", stderr);
      std::terminate();
    }
    body_ = nullptr; // what the body captured is destroyed here, before the caller sees it end
    busy_ = false;
    switchOut(false);
  }
  switchOut(true);
  std::abort(); // not reached: a dying fiber is never resumed
}

} // namespace ftsim::sim
