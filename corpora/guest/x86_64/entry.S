/* x86-64 guest runtime: the profiling hooks the compiler calls and the hypercall stubs.
 * Before boot, every site calls __fentry__ (or mcount), which just returns, as in the slides
 * ("<mcount>: retq"). Boot then turns every site into a 5-byte nop. */
	.text
	.globl __fentry__
	.type __fentry__, @function
__fentry__:
	ret
	.size __fentry__, . - __fentry__

	.globl mcount
	.type mcount, @function
mcount:
	ret
	.size mcount, . - mcount

/* A hypercall stub: int3 at a registered address (the simulator dispatches by address), then a
 * return to the caller. */
.macro HYPERCALL name
	.globl ftsim_hc_\name
	.type ftsim_hc_\name, @function
	.p2align 4
ftsim_hc_\name:
	int3
	ret
	.size ftsim_hc_\name, . - ftsim_hc_\name
.endm

	HYPERCALL schedule
	HYPERCALL idle
	HYPERCALL user
	HYPERCALL exit
	.section .note.GNU-stack,"",@progbits
