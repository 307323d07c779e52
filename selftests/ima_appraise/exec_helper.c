// SPDX-License-Identifier: GPL-2.0
/*
 * The program the exec tests run: its exit status (42) proves it ran.
 *
 * Every exec case copies it, hashes it for the label it expects and has
 * IMA hash it again, under TCG: where it has a _start of its own here it
 * is linked without libc (the Makefile): 4.8 KB on x86_64, 1.2 KB on
 * arm64, instead of a static glibc's 760 KB, which cost each such case
 * about 50 ms of copying and hashing.  Elsewhere it is a plain C program.
 */
#if defined(__x86_64__) && defined(EXEC_HELPER_NOLIBC)
__asm__(".globl _start\n"
	"_start:\n"
	"	mov $60, %eax\n"	/* __NR_exit */
	"	mov $42, %edi\n"
	"	syscall\n");
#elif defined(__aarch64__) && defined(EXEC_HELPER_NOLIBC)
__asm__(".globl _start\n"
	"_start:\n"
	"	mov x8, #93\n"		/* __NR_exit */
	"	mov x0, #42\n"
	"	svc #0\n");
#else
int main(void)
{
	return 42;
}
#endif
