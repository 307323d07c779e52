// SPDX-License-Identifier: GPL-2.0
/*
 * kmsg-dump: every record of the kernel log, oldest first, one line per
 * line of its text:
 *
 *   kmsg <seq>,<level> [<seconds>.<microseconds>] <text>
 *
 * and exits 0 once /dev/kmsg has no newer record (EAGAIN), so nothing is
 * waited for on a clock.  The sequence numbers let the host prove the log
 * whole: the first must be 0 (else the ring buffer wrapped and the oldest
 * records are gone), and none may be missing (records overwritten while
 * this read them: read() says EPIPE and skips ahead).  The guest's init
 * runs it after the tests (harness/kernlog.py reads it).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* CONSOLE_EXT_LOG_MAX: /dev/kmsg refuses a smaller read (EINVAL). */
#define RECORD_MAX 8192

/* Prints text up to its end, a line of output per escaped newline. */
static void print_text(const char *prefix, const char *text)
{
	fputs(prefix, stdout);
	for (; *text && *text != '\n'; text++) {
		if (!strncmp(text, "\\x0a", 4)) {
			printf("\n%s", prefix);
			text += 3;
		} else if (!strncmp(text, "\\x5c", 4)) {
			putchar('\\');
			text += 3;
		} else {
			putchar(*text);
		}
	}
	putchar('\n');
}

/* "<prefix>,<seq>,<usec>,<flags>[,...];<text>\n[ KEY=value\n...]" */
static int print_record(const char *rec)
{
	unsigned long long seq, usec;
	char prefix[64];
	const char *text;
	unsigned int pri;

	text = strchr(rec, ';');
	if (!text || sscanf(rec, "%u,%llu,%llu,", &pri, &seq, &usec) != 3)
		return -1;
	snprintf(prefix, sizeof(prefix), "kmsg %llu,%u [%5llu.%06llu] ", seq,
		 pri & 7, usec / 1000000, usec % 1000000);
	print_text(prefix, text + 1);
	return 0;
}

int main(void)
{
	static char rec[RECORD_MAX + 1];
	ssize_t len;
	int fd;

	fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		perror("kmsg-dump: /dev/kmsg");
		return 1;
	}
	for (;;) {
		len = read(fd, rec, RECORD_MAX);
		if (len < 0 && errno == EAGAIN)
			break;
		/* The gap in the sequence numbers tells the host. */
		if (len < 0 && (errno == EPIPE || errno == EINTR))
			continue;
		if (len < 0) {
			perror("kmsg-dump: read /dev/kmsg");
			return 1;
		}
		rec[len] = '\0';
		if (print_record(rec)) {
			fprintf(stderr, "kmsg-dump: cannot parse \"%.80s\"\n",
				rec);
			return 1;
		}
	}
	return fflush(stdout) ? 1 : 0;
}
