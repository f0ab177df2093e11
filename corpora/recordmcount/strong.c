/* Linked with sites.c by tests/arch/RecordMcountTest.cpp, compiled without -pg: strong definitions
 * that override sites.c's weak functions, and the profiling hooks the sites call. */
int arch_hook(int x) { return x + 100; }
int weak_only(int x) { return x + 200; }
void __fentry__(void) {}
void mcount(void) {}
void _mcount(void) {}
