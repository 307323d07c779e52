// SPDX-License-Identifier: GPL-2.0
/*
 * Open a file for reading and say whether IMA let it through.
 * Usage: repro <file>; prints "opened" or "denied: <error>".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char buf[64];
	int fd;

	if (argc != 2)
		return 2;
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || read(fd, buf, sizeof(buf)) < 0) {
		printf("denied: %s\n", strerror(errno));
		return 1;
	}
	close(fd);
	printf("opened\n");
	return 0;
}
