/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Markers in the kernel log, so that a kernel report (a lockdep splat, a
 * WARNING) can be tied by its printk time to the test that was running,
 * and lockdep's state is on record after every case and every program:
 *
 *   ima_selftest: start <program> lockdep=on|off|absent
 *   ima_selftest: begin <program>/<fixture>.<variant>.<test>
 *   ima_selftest: end <program>/<fixture>.<variant>.<test> lockdep=...
 *   ima_selftest: done <program> lockdep=...
 *
 * Test output goes through pipes (runner.sh), so the console's order is
 * not the kernel's: only records in the kernel log itself can say when a
 * case ran.  They are written at KERN_WARNING, so that a console at
 * 'dmesg -n 5' shows them too: a guest that dies before its log is read
 * in full still has them on its console.  Only in a guest booted by the
 * harness; a case that dies before its teardown has no end marker.
 */

#ifndef _IMA_APPRAISE_MARK_H
#define _IMA_APPRAISE_MARK_H

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "cell.h"

#define LOCKDEP_STATS "/proc/lockdep_stats"
#define MARK_PREFIX "ima_selftest: "
/* <program>/<fixture>.<variant>.<test> */
#define CASE_ID_MAX 256

/*
 * debug_locks from /proc/lockdep_stats: 1 while lockdep runs, 0 once it
 * reported a problem (it reports only the first of a boot) or was turned
 * off; -errno if the file cannot be read (no CONFIG_LOCKDEP).
 */
static inline int lockdep_debug_locks(void)
{
	char buf[8192], *p;
	ssize_t len;
	int fd;

	fd = open(LOCKDEP_STATS, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len < 0)
		return -errno;
	buf[len] = '\0';
	p = strstr(buf, "debug_locks:");
	if (!p)
		return -ENOENT;
	return atoi(p + strlen("debug_locks:"));
}

static inline const char *lockdep_state(void)
{
	int debug_locks = lockdep_debug_locks();

	return debug_locks < 0 ? "absent" : debug_locks ? "on" : "off";
}

/* Returns 0 or -errno: a marker not written shows as a missing one. */
static inline int mark(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int fd, err = 0;
	size_t len;

	/* A fresh open each time: /dev/kmsg rate-limits writes per file. */
	fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	len = snprintf(buf, sizeof(buf), "<4>" MARK_PREFIX);
	va_start(ap, fmt);
	vsnprintf(buf + len, sizeof(buf) - len, fmt, ap);
	va_end(ap);
	if (write(fd, buf, strlen(buf)) < 0)
		err = -errno;
	close(fd);
	return err;
}

static inline bool in_harness_guest(void)
{
	struct cell cell;

	return !read_cell(&cell) && cell.harness;
}

/*
 * "<program>/<fixture>.<variant>.<test>" as kselftest_harness.h names the
 * case; variant is what the fixture's setup got (NULL without variants).
 * The 6.1 harness hands the setup only the variant's data, so its name is
 * found by that pointer.
 */
static inline void case_id(const struct __test_metadata *t, const void *variant,
			   char id[CASE_ID_MAX])
{
	const struct __fixture_variant_metadata *v;
	const char *vname = "";

	for (v = t->fixture->variant; variant && v; v = v->next) {
		if (v->data == variant)
			vname = v->name;
	}
	snprintf(id, CASE_ID_MAX, "%s/%s%s%s.%s", program_invocation_short_name,
		 t->fixture->name, vname[0] ? "." : "", vname, t->name);
}

/* Marks the case's start: first thing in its setup. */
static inline void mark_begin(const struct __test_metadata *t,
			      const void *variant, char id[CASE_ID_MAX])
{
	case_id(t, variant, id);
	mark("begin %s\n", id);
}

/* Marks its end: last thing in its teardown (id "" if it never began). */
static inline void mark_end(const char id[CASE_ID_MAX])
{
	if (id[0])
		mark("end %s lockdep=%s\n", id, lockdep_state());
}

/*
 * Each program's start and end, from its main process only (the test
 * children leave with _exit(), but a child that calls exit() must not
 * mark its program done).
 */
static pid_t mark_main_pid;

static void __attribute__((constructor)) mark_program_start(void)
{
	if (!in_harness_guest())
		return;
	mark_main_pid = getpid();
	mark("start %s lockdep=%s\n", program_invocation_short_name,
	     lockdep_state());
}

static void __attribute__((destructor)) mark_program_done(void)
{
	if (mark_main_pid && getpid() == mark_main_pid)
		mark("done %s lockdep=%s\n", program_invocation_short_name,
		     lockdep_state());
}

#endif /* _IMA_APPRAISE_MARK_H */
