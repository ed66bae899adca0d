/* void *dlsym(void *handle, const char *name)
 *
 * Asks gg_dlsym_route(handle, name, return address) for a plan, returned in
 * rax:rdx. rdx != 0: restore the arguments and jump to it (glibc's dlsym),
 * so glibc sees the application's return address as its caller. Otherwise
 * return rax. See dlsym.c. */
#ifdef __CET__
#include <cet.h> /* the IBT/SHSTK property note, so the library keeps its marking */
#endif

	.text
	.globl	dlsym
	.type	dlsym, @function
	.p2align 4
dlsym:
	.cfi_startproc
#ifdef __CET__
	endbr64
#endif
	pushq	%rdi
	.cfi_adjust_cfa_offset 8
	pushq	%rsi
	.cfi_adjust_cfa_offset 8
	subq	$8, %rsp		/* 16-byte alignment for the call */
	.cfi_adjust_cfa_offset 8
	movq	24(%rsp), %rdx		/* our return address: the caller */
	call	gg_dlsym_route
	addq	$8, %rsp
	.cfi_adjust_cfa_offset -8
	popq	%rsi
	.cfi_adjust_cfa_offset -8
	popq	%rdi
	.cfi_adjust_cfa_offset -8
	testq	%rdx, %rdx
	jz	1f
	jmp	*%rdx			/* tail call: stack exactly as on entry */
1:
	ret
	.cfi_endproc
	.size	dlsym, .-dlsym

	.section .note.GNU-stack, "", @progbits
