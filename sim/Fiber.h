#pragma once
// A stackful coroutine on the calling thread: the patcher's body runs on a stack of its own and
// hands control back and forth with the code that resumes it, like a thread under a strict baton
// but without a thread, a lock or a system call per hand-over.
//
// The stack is allocated once (mmap, a guard page below it) and reused by every body the fiber
// runs, and by the next fiber made on the same thread once this one is destroyed (Fiber.cpp). The
// first entry goes through makecontext/setcontext (glibc ucontext); every later switch is
// _setjmp/_longjmp, which, unlike swapcontext, does not save and restore the signal mask with a
// system call. Each side keeps its own C++ exception-handling state (the Itanium ABI's
// __cxa_eh_globals: caught exceptions and the uncaught count), as two threads would, so a body
// may suspend inside a catch handler. Under AddressSanitizer every switch is announced with
// __sanitizer_start_switch_fiber / __sanitizer_finish_switch_fiber.

#include <csetjmp>
#include <cstddef>
#include <functional>

namespace ftsim::sim {

class Fiber {
public:
  static constexpr std::size_t kDefaultStackSize = 8 << 20; // a thread's default on Linux

  explicit Fiber(std::size_t stackSize = kDefaultStackSize);
  // The fiber must not be busy: a suspended body cannot be unwound from outside (make it return
  // first, e.g. by resuming it with a reason to throw).
  ~Fiber();
  Fiber(const Fiber &) = delete;
  Fiber &operator=(const Fiber &) = delete;

  // Run `body` on the fiber's stack until it calls suspend() or returns. The fiber must be idle.
  // `body` must not let an exception escape (std::terminate): catch inside it.
  void start(std::function<void()> body);
  // Continue the suspended body until it suspends again or returns.
  void resume();
  // From inside the body: hand control back to the start() or resume() that entered it.
  void suspend();

  bool busy() const { return busy_; }     // a body started and has not returned
  bool inside() const { return inside_; } // the body is executing now

private:
  struct EhState {
    void *caughtExceptions = nullptr;
    unsigned int uncaughtExceptions = 0;
  };

  [[noreturn]] static void entry();
  [[noreturn]] void loop();
  void switchIn();
  void switchOut(bool dying);

  void *mapping_ = nullptr;
  std::size_t mappingSize_ = 0;
  void *stack_ = nullptr;
  std::size_t stackSize_ = 0;
  std::function<void()> body_;
  bool entered_ = false; // the stack holds the fiber's loop
  bool busy_ = false;
  bool inside_ = false;
  bool quit_ = false;
  EhState eh_; // the fiber's exception-handling state while it is not running
  std::jmp_buf caller_{};
  std::jmp_buf self_{};
  // AddressSanitizer's view of the two stacks (unused without it).
  void *callerFakeStack_ = nullptr;
  void *fiberFakeStack_ = nullptr;
  const void *callerStackBottom_ = nullptr;
  std::size_t callerStackSize_ = 0;
};

} // namespace ftsim::sim
