/* The ppc32 guest module's long-branch stubs, as the module loader builds them
 * (arch/powerpc/kernel/module_32.c): the PLT entry through which the module's `bl _mcount` sites
 * reach the kernel's _mcount, and the two ftrace trampolines module_finalize_ftrace() creates
 * (mod->arch.tramp -> ftrace_caller, mod->arch.tramp_regs -> ftrace_regs_caller). The latter are
 * left as traps here: ftrace_caller is generated at boot, so the loader (the test or the simulated
 * kernel) writes them with ftsim::arch::ppc32::longBranchStub before the module goes live.
 * FTSIM_KERNEL_MCOUNT is the kernel's _mcount, given to the linker with --defsym. */
	.text
	.globl _mcount
	.type _mcount, @function
	.p2align 4
_mcount:
	lis	%r12, FTSIM_KERNEL_MCOUNT@ha
	addi	%r12, %r12, FTSIM_KERNEL_MCOUNT@l
	mtctr	%r12
	bctr
	.size _mcount, . - _mcount

	.globl ftsim_mod_ftrace_tramp
	.type ftsim_mod_ftrace_tramp, @function
	.p2align 4
ftsim_mod_ftrace_tramp:
	trap
	trap
	trap
	trap
	.size ftsim_mod_ftrace_tramp, . - ftsim_mod_ftrace_tramp

	.globl ftsim_mod_ftrace_tramp_regs
	.type ftsim_mod_ftrace_tramp_regs, @function
	.p2align 4
ftsim_mod_ftrace_tramp_regs:
	trap
	trap
	trap
	trap
	.size ftsim_mod_ftrace_tramp_regs, . - ftsim_mod_ftrace_tramp_regs
	.section .note.GNU-stack,"",@progbits
