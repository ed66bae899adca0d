/* The exported entry points on x86-64 (hooks.c has the same in C for other
 * machines): gg_hook_NAME for each name of driver/hooks.def, exported as
 * NAME@GPUGUARD_HOOK.
 *
 * Disabled, re-entered from the driver, or with no work in this
 * configuration (start.h's gg_start_pass: a copy with red zones off), the
 * call jumps to the driver's function with every register and the stack as
 * the caller left them; else,
 * and until the driver's function is known, to the hook's work (hooks.c's
 * gg_hooks_work_NAME), the same way. In C, gcc reloads and stores back the
 * stack-passed arguments of a launch (eleven arguments, five on the stack)
 * before its tail call; here nothing is moved (issue 16: a disabled launch
 * costs 6 instructions).
 *
 * The ids: hooks.def expanded in order, as enum gg_hook_id is (driver/real.h),
 * counted by gg_id. */
#include "start/start-mode.h"

#ifdef __CET__
#include <cet.h> /* the IBT/SHSTK property note, so the library keeps its marking */
#define GG_ENDBR endbr64
#else
#define GG_ENDBR
#endif

	.set	gg_id, 0

	.macro	gg_entry name
	.text
	.globl	gg_hook_\name
	.hidden	gg_hook_\name
	.type	gg_hook_\name, @function
#ifdef GG_EXPORT_HOOKS
	.globl	gg_export_\name
	.type	gg_export_\name, @function
	.symver	gg_export_\name, \name@GPUGUARD_HOOK
#endif
	.p2align 4
gg_hook_\name:
#ifdef GG_EXPORT_HOOKS
gg_export_\name:
#endif
	.cfi_startproc
	GG_ENDBR
	movl	gg_start_mode(%rip), %eax
	cmpl	$GG_MODE_DISABLED, %eax
	je	1f
	cmpl	$GG_MODE_ACTIVE, %eax
	jne	gg_hooks_work_\name
	cmpb	$0, gg_start_pass+gg_id(%rip)
	jne	1f
	movq	gg_real_inside@gottpoff(%rip), %rax
	cmpl	$0, %fs:(%rax)
	je	gg_hooks_work_\name
1:
	movq	gg_real_fns+8*gg_id(%rip), %rax
	testq	%rax, %rax
	jz	gg_hooks_work_\name	/* not resolved yet: the work resolves it */
	jmp	*%rax
	.cfi_endproc
	.size	gg_hook_\name, .-gg_hook_\name
#ifdef GG_EXPORT_HOOKS
	.size	gg_export_\name, .-gg_export_\name
#endif
	.set	gg_id, gg_id + 1
	.endm

#define GG_HOOK(name, pfn, params, args) gg_entry name
#include "driver/hooks.def"
#undef GG_HOOK

	.section .note.GNU-stack, "", @progbits
