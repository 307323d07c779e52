// SPDX-License-Identifier: GPL-2.0
/*
 * Two writers of one file close at the same time; the last writer's
 * close must leave security.ima matching the final contents.
 * Usage: repro <file> <round>   (run by repro.sh, which checks the label)
 * Writer A truncates the file and rewrites it (ext4 then sleeps in
 * ->release() to allocate the delayed blocks), writer B closes meanwhile.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int gate[2], i;
	char buf[4096];

	if (argc != 3 || pipe(gate))
		return 2;
	memset(buf, 'a' + atoi(argv[2]) % 26, sizeof(buf));
	for (i = 0; i < 2; i++) {
		if (fork() == 0) {
			int fd = open(argv[1], O_WRONLY);
			char c;

			if (fd < 0)
				_exit(2);
			close(gate[1]);
			if (read(gate[0], &c, 1) < 0)	/* wait for the gate */
				_exit(2);
			if (i == 0) {
				int n;

				if (ftruncate(fd, 0))
					_exit(2);
				for (n = 0; n < 64; n++)
					if (write(fd, buf, sizeof(buf)) < 0)
						_exit(2);
			} else {
				usleep(1000);
			}
			close(fd);
			_exit(0);
		}
	}
	close(gate[0]);
	usleep(20000);
	close(gate[1]);			/* both writers go */
	while (wait(NULL) > 0)
		;
	return 0;
}
