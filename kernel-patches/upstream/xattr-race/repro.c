// SPDX-License-Identifier: GPL-2.0
/*
 * Remove and set security.ima while two readers keep opening the file.
 * Enforce mode: once removexattr() has returned, an open must fail with
 * EACCES; once setxattr() of the correct label has returned, it must pass.
 * Usage: repro <file> <correct label as hex, e.g. 0404...> [rounds]
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

static int opens(const char *f)
{
	int fd = open(f, O_RDONLY);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned char label[128];
	int rounds = argc > 3 ? atoi(argv[3]) : 2000;
	pid_t readers[2];
	size_t len, i;
	int r, bad = 0;

	if (argc < 3 || strlen(argv[2]) / 2 > sizeof(label))
		return 2;
	len = strlen(argv[2]) / 2;
	for (i = 0; i < len; i++)
		sscanf(argv[2] + 2 * i, "%2hhx", &label[i]);
	for (i = 0; i < 2; i++)
		if ((readers[i] = fork()) == 0)
			for (;;)
				opens(argv[1]);
	for (r = 0; r < rounds; r++) {
		if (removexattr(argv[1], "security.ima"))
			return 2;
		if (opens(argv[1]) != -EACCES) {
			printf("round %d: opened after removexattr()\n", r);
			bad = 1;
		}
		if (setxattr(argv[1], "security.ima", label, len, 0))
			return 2;
		if (opens(argv[1])) {
			printf("round %d: denied after setxattr()\n", r);
			bad = 1;
		}
	}
	for (i = 0; i < 2; i++)
		kill(readers[i], SIGKILL);
	while (wait(NULL) > 0)
		;
	printf("%s\n", bad ? "FAIL" : "ok");
	return bad;
}
