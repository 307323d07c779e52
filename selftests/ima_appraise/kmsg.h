/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel-log checks: whether IMA logged (audit cause=...) an access, and
 * proof that it did not.
 *
 * Without auditd, audit records reach the kernel log through kauditd:
 * audit_log_end() queues each record on audit_queue in the context that
 * made it, and kauditd prints the queue in order (kauditd_hold_skb() ->
 * kauditd_printk_skb()).  A record of our own queued after an access is
 * therefore printed after every record the access made: once it is in
 * /dev/kmsg, a record of the access that is not there before it will
 * never come.  That record, the sentinel, is a user message sent on a
 * NETLINK_AUDIT socket: audit_receive_msg() queues it from the sending
 * syscall through the same audit_log_end(), whatever IMA does, so it
 * also bounds the search where IMA logs nothing (ima_appraise=off under
 * a custom policy).  Its type is AUDIT_USER_AVC, the only user message
 * audit_receive_msg() and audit_log_common_recv_msg() accept while
 * audit_enabled is 0, as it is without auditd or audit=1.
 *
 * No check waits for a record on a clock: AUDIT_SENTINEL_MS only bounds
 * a kauditd that stopped printing altogether, and running into it fails.
 */

#ifndef _IMA_APPRAISE_KMSG_H
#define _IMA_APPRAISE_KMSG_H

#include <linux/audit.h>
#include <linux/netlink.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "../kselftest_harness.h"
#include "cell.h"
#include "label.h"

/* Only a kauditd that prints nothing any more runs into this: a failure. */
#define AUDIT_SENTINEL_MS 20000
/* What audit_log_lost() prints when a record was dropped (rate, backlog). */
#define AUDIT_LOST "audit: audit_lost="
/*
 * What printk_ratelimit() prints when kauditd_printk_skb() prints
 * again after leaving records out: "kauditd_printk_skb: N callbacks
 * suppressed".
 */
#define AUDIT_SUPPRESSED "kauditd_printk_skb: "
/* How kauditd prints a record: "audit: type=<type> audit(<stamp>): ..." */
#define AUDIT_RECORD "audit: type="

/* The kernel log from audit_watch() on, read up to the last sentinel. */
struct audit_log {
	/* /dev/kmsg, or -1 when not watching */
	int fd;
	/* every record's message read so far, one per line */
	char *text;
	size_t len, size;
	/* records were overwritten before they were read (EPIPE) */
	bool overrun;
	/* sentinels sent so far */
	unsigned int sentinels;
	/*
	 * The watch's own first sentinel, and whether it was read: records
	 * printed before it were made before the watch began.
	 */
	char from[64];
	bool from_seen;
};

/* Watches begun in this process, for unique sentinels. */
static unsigned int audit_watches;

static inline void audit_send_user_msg(struct __test_metadata *const _metadata,
				       const char *text);

/*
 * Starts reading the kernel log after every record made so far: what is
 * in /dev/kmsg now, and, once a sentinel sent now is read, what kauditd
 * still held queued (a record an earlier case made and kauditd printed
 * late is not this watch's, although a name or an inode number in it may
 * be the same as one of ours).
 */
static inline void audit_watch(struct __test_metadata *const _metadata,
			       struct audit_log *log)
{
	*log = (struct audit_log){ .fd = -1 };
	log->fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ASSERT_LE(0, log->fd)
	{
		TH_LOG("open /dev/kmsg: %s", strerror(errno));
	}
	ASSERT_LE(0, lseek(log->fd, 0, SEEK_END));
	snprintf(log->from, sizeof(log->from), "ima_selftest_watch=%d.%u",
		 getpid(), ++audit_watches);
	audit_send_user_msg(_metadata, log->from);
}

static inline void audit_unwatch(struct audit_log *log)
{
	if (log->fd >= 0)
		close(log->fd);
	free(log->text);
	*log = (struct audit_log){ .fd = -1 };
}

/*
 * Queues the sentinel "msg='<text>'" (see the top of this file); the ack
 * says audit_receive_msg() took it.
 */
static inline void audit_send_user_msg(struct __test_metadata *const _metadata,
				       const char *text)
{
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	struct {
		struct nlmsghdr nlh;
		char text[128];
	} req = {};
	struct {
		struct nlmsghdr nlh;
		struct nlmsgerr err;
	} ack = {};
	int sock;

	sock = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_AUDIT);
	ASSERT_LE(0, sock)
	{
		TH_LOG("socket(NETLINK_AUDIT): %s (CONFIG_AUDIT?)",
		       strerror(errno));
	}
	snprintf(req.text, sizeof(req.text), "%s", text);
	req.nlh.nlmsg_len = NLMSG_LENGTH(strlen(req.text) + 1);
	req.nlh.nlmsg_type = AUDIT_USER_AVC;
	req.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	req.nlh.nlmsg_seq = 1;
	ASSERT_EQ(req.nlh.nlmsg_len,
		  sendto(sock, &req, req.nlh.nlmsg_len, 0,
			 (struct sockaddr *)&kernel, sizeof(kernel)))
	{
		TH_LOG("sending an audit user message: %s", strerror(errno));
	}
	ASSERT_LE((ssize_t)sizeof(ack), recv(sock, &ack, sizeof(ack), 0));
	close(sock);
	ASSERT_EQ(NLMSG_ERROR, ack.nlh.nlmsg_type);
	ASSERT_EQ(0, ack.err.error)
	{
		TH_LOG("the kernel refused the audit user message: %s",
		       strerror(-ack.err.error));
	}
}

static inline void audit_append(struct __test_metadata *const _metadata,
				struct audit_log *log, const char *msg,
				size_t len)
{
	if (log->len + len + 2 > log->size) {
		log->size = 2 * (log->len + len + 2) + 4096;
		log->text = realloc(log->text, log->size);
		ASSERT_NE(NULL, log->text);
	}
	memcpy(log->text + log->len, msg, len);
	log->len += len;
	log->text[log->len++] = '\n';
	log->text[log->len] = '\0';
}

/*
 * Sends a sentinel and reads the kernel log up to it: every record made
 * before this call is then in log->text.
 */
static inline void audit_sync(struct __test_metadata *const _metadata,
			      struct audit_log *log)
{
	struct pollfd pfd = { .fd = log->fd, .events = POLLIN };
	char sentinel[64], needle[80], from[80], rec[8192], *msg, *end;
	struct timespec now, deadline;
	ssize_t len;

	ASSERT_LE(0, log->fd);
	snprintf(sentinel, sizeof(sentinel), "ima_selftest_sentinel=%d.%u",
		 getpid(), ++log->sentinels);
	snprintf(needle, sizeof(needle), "msg='%s'", sentinel);
	snprintf(from, sizeof(from), "msg='%s'", log->from);
	ASSERT_EQ(0, clock_gettime(CLOCK_MONOTONIC, &deadline));
	deadline.tv_sec += AUDIT_SENTINEL_MS / 1000;
	audit_send_user_msg(_metadata, sentinel);
	for (;;) {
		len = read(log->fd, rec, sizeof(rec) - 1);
		if (len < 0 && errno == EPIPE) {
			log->overrun = true;
			continue;
		}
		if (len < 0 && errno == EAGAIN) {
			ASSERT_EQ(0, clock_gettime(CLOCK_MONOTONIC, &now));
			ASSERT_TRUE(now.tv_sec < deadline.tv_sec ||
				    (now.tv_sec == deadline.tv_sec &&
				     now.tv_nsec < deadline.tv_nsec))
			{
				TH_LOG(TIMED_OUT
				       "the audit sentinel \"%s\" did not reach /dev/kmsg within %d ms: kauditd stopped printing",
				       sentinel, AUDIT_SENTINEL_MS);
			}
			poll(&pfd, 1, 100);
			continue;
		}
		ASSERT_LT(0, len)
		{
			TH_LOG("read /dev/kmsg: %s", strerror(errno));
		}
		rec[len] = '\0';
		/* "<prio>,<seq>,<usec>,<flags>;<message>\n[ KEY=value\n...]" */
		msg = strchr(rec, ';');
		msg = msg ? msg + 1 : rec;
		end = strchrnul(msg, '\n');
		*end = '\0';
		if (strstr(msg, needle)) {
			/* kauditd prints in the order records were queued */
			ASSERT_TRUE(log->from_seen)
			{
				TH_LOG("the watch's first sentinel \"%s\" did not come before the last",
				       log->from);
			}
			return;
		}
		if (!log->from_seen && strstr(msg, from)) {
			log->from_seen = true;
			continue;
		}
		/*
		 * A record before the watch's first sentinel was queued before
		 * the watch began; anything else the kernel printed (that
		 * records were lost, say) counts wherever it comes.
		 */
		if (!log->from_seen && !strncmp(msg, AUDIT_RECORD,
						strlen(AUDIT_RECORD)))
			continue;
		audit_append(_metadata, log, msg, end - msg);
	}
}

/*
 * Whether a record read so far contains needle1, and needle2 unless it is
 * NULL, and not but unless it is NULL.
 */
static inline bool audit_match(const struct audit_log *log,
			       const char *needle1, const char *needle2,
			       const char *but)
{
	const char *line = log->text, *end;
	char rec[8192];

	while (line && *line) {
		end = strchrnul(line, '\n');
		snprintf(rec, sizeof(rec), "%.*s", (int)(end - line), line);
		if (strstr(rec, needle1) && (!needle2 || strstr(rec, needle2)) &&
		    (!but || !strstr(rec, but)))
			return true;
		line = *end ? end + 1 : NULL;
	}
	return false;
}

/* Whether a record read so far contains both needles (needle2 may be NULL). */
static inline bool audit_has(const struct audit_log *log, const char *needle1,
			     const char *needle2)
{
	return audit_match(log, needle1, needle2, NULL);
}

/* Whether a record read so far contains needle and not but. */
static inline bool audit_has_but(const struct audit_log *log,
				 const char *needle, const char *but)
{
	return audit_match(log, needle, NULL, but);
}

/* The needle IMA's records name a file with: name="<path>". */
static inline const char *audit_name(const char *path, char *buf, size_t size)
{
	snprintf(buf, size, "name=\"%s\"", path);
	return buf;
}

/*
 * dev="<s_id>", as a record of an inode prints its filesystem, for one
 * on the block device dev: its s_id is the device's name, the DEVNAME of
 * /sys/dev/block/<major>:<minor>/uevent.  False where dev is no block
 * device's (overlayfs, tmpfs).
 */
static inline bool audit_dev(dev_t dev, char *buf, size_t size)
{
	char uevent[64], line[256];
	bool found = false;
	FILE *f;

	snprintf(uevent, sizeof(uevent), "/sys/dev/block/%u:%u/uevent",
		 major(dev), minor(dev));
	f = fopen(uevent, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "DEVNAME=", 8))
			continue;
		line[strcspn(line, "\n")] = '\0';
		snprintf(buf, size, "dev=\"%s\"", line + 8);
		found = true;
	}
	fclose(f);
	return found;
}

/*
 * The needle every record of path's inode has, "dev=\"<s_id>\" ino=<n> ",
 * whatever name it gives the file: IMA names it by the path it was
 * opened by, but a failed collect_data by its base name and set_data by
 * its path in its filesystem.  False where path is gone or not on a
 * block device.
 */
static inline bool audit_inode(const char *path, char *buf, size_t size)
{
	char dev[48];
	struct stat st;

	if (stat(path, &st) || !audit_dev(st.st_dev, dev, sizeof(dev)))
		return false;
	snprintf(buf, size, "%s ino=%lu ", dev, (unsigned long)st.st_ino);
	return true;
}

/*
 * A record "cause=<cause> ... name=\"<path>\"" was made before now
 * (IMA's audit name: the path as opened, or the dentry path for the
 * setxattr hooks).
 */
static inline void expect_logged(struct __test_metadata *const _metadata,
				 struct audit_log *log, const char *path,
				 const char *cause)
{
	char name[PATH_MAX + 8], want[64];

	snprintf(want, sizeof(want), "cause=%s ", cause);
	audit_sync(_metadata, log);
	EXPECT_TRUE(audit_has(log, want, audit_name(path, name, sizeof(name))))
	{
		TH_LOG("no audit record \"%s\" for %s before the sentinel",
		       want, path);
	}
}

/* An absence in log is proven only if no record was lost on the way. */
static inline void expect_none_lost(struct __test_metadata *const _metadata,
				    const struct audit_log *log)
{
	EXPECT_FALSE(log->overrun || audit_has(log, AUDIT_LOST, NULL) ||
		     audit_has(log, AUDIT_SUPPRESSED, "callbacks suppressed"))
	{
		TH_LOG("kernel log records were lost: absence not proven");
	}
}

/*
 * No record containing needle1 (and needle2, if not NULL) was made before
 * now.  Proven only if no record was lost on the way.
 */
static inline void expect_no_record(struct __test_metadata *const _metadata,
				    struct audit_log *log, const char *needle1,
				    const char *needle2)
{
	audit_sync(_metadata, log);
	EXPECT_FALSE(audit_has(log, needle1, needle2))
	{
		TH_LOG("unexpected audit record %s%s%s in:\n%s", needle1,
		       needle2 ? " " : "", needle2 ? needle2 : "", log->text);
	}
	expect_none_lost(_metadata, log);
}

/*
 * No record named path (with cause=<cause>, or any record if cause is
 * NULL) was made before now, by its path or by its inode (audit_inode()).
 */
static inline void expect_not_logged(struct __test_metadata *const _metadata,
				     struct audit_log *log, const char *path,
				     const char *cause)
{
	char name[PATH_MAX + 8], want[64], inode[96];

	snprintf(want, sizeof(want), "cause=%s ", cause ? cause : "");
	expect_no_record(_metadata, log, audit_name(path, name, sizeof(name)),
			 cause ? want : NULL);
	if (!audit_inode(path, inode, sizeof(inode)))
		return;
	/* read up to the sentinel already */
	EXPECT_FALSE(audit_has(log, inode, cause ? want : NULL))
	{
		TH_LOG("unexpected audit record naming %s by its inode (%s) in:\n%s",
		       path, inode, log->text);
	}
}

/*
 * expect_logged(), and no other record: every record that names path,
 * by its name or by its inode (audit_inode()), says cause=<cause>.  For
 * an access refused for one reason, in a test that cannot keep its
 * environment quiet (ima_env_quiet()) because it expects that record.
 */
static inline void expect_only_logged(struct __test_metadata *const _metadata,
				      struct audit_log *log, const char *path,
				      const char *cause)
{
	char name[PATH_MAX + 8], want[64], inode[96];

	expect_logged(_metadata, log, path, cause);
	snprintf(want, sizeof(want), "cause=%s ", cause);
	EXPECT_FALSE(audit_has_but(log, audit_name(path, name, sizeof(name)),
				   want) ||
		     (audit_inode(path, inode, sizeof(inode)) &&
		      audit_has_but(log, inode, want)))
	{
		TH_LOG("a record of %s without %s in:\n%s", path, want,
		       log->text);
	}
	expect_none_lost(_metadata, log);
}

/* No record named a file in directory dir before now. */
static inline void
expect_dir_not_logged(struct __test_metadata *const _metadata,
		      struct audit_log *log, const char *dir)
{
	char name[PATH_MAX + 8];

	snprintf(name, sizeof(name), "name=\"%s/", dir);
	expect_no_record(_metadata, log, name, NULL);
}

/*
 * The record "cause=<cause> ... name=\"<path>\"" is there if the cell
 * appraises, and nothing names path where it does not (cell_appraises()).
 */
static inline void expect_cause_logged(struct __test_metadata *const _metadata,
				       const struct cell *cell,
				       struct audit_log *log, const char *path,
				       const char *cause)
{
	if (cell_appraises(cell))
		expect_logged(_metadata, log, path, cause);
	else
		expect_not_logged(_metadata, log, path, NULL);
}

/*
 * After an access to a file in state before: a missing or wrong
 * security.ima is logged with its cause where the cell appraises; a
 * correct one, and anything where IMA is off, leaves no record at all.
 */
static inline void expect_audited(struct __test_metadata *const _metadata,
				  const struct cell *cell,
				  struct audit_log *log, const char *path,
				  enum ima_state before)
{
	if (before == STATE_CORRECT)
		expect_not_logged(_metadata, log, path, NULL);
	else
		expect_cause_logged(_metadata, cell, log, path,
				    before == STATE_MISSING ? "missing-hash" :
							      "invalid-hash");
}

#endif /* _IMA_APPRAISE_KMSG_H */
