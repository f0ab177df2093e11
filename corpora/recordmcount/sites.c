/* Test input for recordmcount (tests/arch/RecordMcountTest.cpp): one function of every kind the
 * kernel's recordmcount must handle - global, static (local), weak, .init.text, cold
 * (.text.unlikely) and a function in its own named text section. Each is kept out of line and
 * referenced, so the compiler emits its profiling call. */
#define noinline __attribute__((__noinline__))
#define __init __attribute__((section(".init.text"), __noinline__))
#define __cold __attribute__((cold, __noinline__))
#define __weak __attribute__((weak, __noinline__))

int counter;

void schedule(void) { counter++; }

static noinline int helper(int x) {
  counter += x;
  return counter * 3;
}

__weak int arch_hook(int x) { return x + 1; }

__weak void weak_empty(void) {}

__init int setup_once(int x) { return helper(x) + 7; }

__cold void report_bug(int code) { counter = code; }

__attribute__((section(".text.sched"), __noinline__)) int yield(int x) { return arch_hook(x) * 2; }

int _cond_resched(int x) {
  if (x > 100)
    report_bug(x);
  return helper(x) + yield(x);
}

/* The only symbol of its section is weak: recordmcount.c find_secsym_ndx() gives up ("Cannot find
 * symbol for section") unless gas emitted a section symbol; ours adds one. strong.c overrides it,
 * so a table based on the weak symbol would point into the override. */
__attribute__((section(".text.weak_only"), weak, __noinline__)) int weak_only(int x) { return x - 1; }

/* The only symbol of its section is local and nothing refers to the section: the local symbol is
 * the base. */
static __attribute__((section(".text.static_only"), used, __noinline__)) int static_only(int x) {
  return x ^ 5;
}
