/* ppc32 guest runtime. gcc -pg emits `mflr r0; stw r0,4(r1); bl _mcount` at each function
 * entry: r0 holds the caller's LR, LR the return into the function. _mcount goes back to the
 * function with LR restored (arch/powerpc/kernel/trace/ftrace_32.S, _mcount without tracing). */
	.text
	.globl _mcount
	.type _mcount, @function
_mcount:
	mflr	%r12
	mtctr	%r12
	mtlr	%r0
	bctr
	.size _mcount, . - _mcount

/* A hypercall stub: a trap at a registered address, then a return (blr). */
.macro HYPERCALL name
	.globl ftsim_hc_\name
	.type ftsim_hc_\name, @function
	.p2align 4
ftsim_hc_\name:
	trap
	blr
	.size ftsim_hc_\name, . - ftsim_hc_\name
.endm

	HYPERCALL schedule
	HYPERCALL idle
	HYPERCALL user
	HYPERCALL exit
	.section .note.GNU-stack,"",@progbits
