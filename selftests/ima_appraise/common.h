/* SPDX-License-Identifier: GPL-2.0 */
/*
 * IMA appraisal selftests: what every *_test.c shares.
 *
 * These tests rewrite the IMA policy and security.ima of files.  They only
 * act in a guest booted by the harness, which puts IMA_SELFTEST_MARKER on
 * the kernel command line; anywhere else every test SKIPs and says why.
 * The mode and policy source under test are read from /proc/cmdline.
 *
 *   hash.h    SHA-1, SHA-256 and their known-answer self-test
 *   cell.h    the cell: /proc/cmdline, cell_appraises()
 *   label.h   files and their security.ima
 *   kmsg.h    audit records in the kernel log, their absence proven by a
 *             sentinel
 *   mark.h    each case's begin and end in the kernel log, lockdep's state
 *   policy.h  the custom policy and the uid table of its rules
 *
 * and here: the probes (an access, returning 0 or its errno), the verdict
 * a cell owes a file, and struct ima_env, the per-test environment every
 * fixture embeds, with its one setup and teardown.
 */

#ifndef _IMA_APPRAISE_COMMON_H
#define _IMA_APPRAISE_COMMON_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "cell.h"
#include "hash.h"
#include "kmsg.h"
#include "label.h"
#include "mark.h"
#include "policy.h"

#define EXT4_SUPER_MAGIC 0xEF53
/* Size of a test directory path: short, so dir + "/name" always fits. */
#define DIR_MAX 256

static inline int test_open(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC);

	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

/*
 * Executes path; the helper exits with EXEC_HELPER_STATUS.  Returns 0 if
 * it ran, the execve() errno if the kernel refused, or EXEC_RAN_BADLY if
 * it started but did not exit with EXEC_HELPER_STATUS (killed after the
 * point of no return, for instance).
 */
#define EXEC_HELPER_STATUS 42
#define EXEC_RAN_BADLY (-1)

static inline int test_execve(struct __test_metadata *const _metadata,
			      const char *path)
{
	int pipefd[2], err = 0, status;
	pid_t pid;

	ASSERT_EQ(0, pipe2(pipefd, O_CLOEXEC));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		char *const argv[] = { (char *)path, NULL };
		char *const envp[] = { NULL };

		execve(path, argv, envp);
		err = errno;
		if (write(pipefd[1], &err, sizeof(err)) != sizeof(err))
			_exit(126);
		_exit(127);
	}
	close(pipefd[1]);
	if (read(pipefd[0], &err, sizeof(err)) != sizeof(err))
		err = 0; /* pipe closed on exec: it ran */
	close(pipefd[0]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	if (err)
		return err;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != EXEC_HELPER_STATUS)
		return EXEC_RAN_BADLY;
	return 0;
}

static inline int test_mmap_exec(int fd, size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);

	if (p == MAP_FAILED)
		return errno;
	munmap(p, len);
	return 0;
}

static inline void write_sysctl(struct __test_metadata *const _metadata,
				const char *path, const char *value)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	ASSERT_LE(0, fd)
	{
		TH_LOG("open %s: %s", path, strerror(errno));
	}
	ASSERT_EQ((ssize_t)strlen(value), write(fd, value, strlen(value)));
	EXPECT_EQ(0, close(fd));
}

/*
 * The setup under every fixture: returns true if the test must be skipped
 * (after saying why), otherwise the case's begin is marked in the kernel
 * log (id), the cell is known, the hash code passed its known answers,
 * the custom policy is loaded where the cell wants one, and dir is a
 * fresh directory on the scratch ext4 filesystem.  Fixtures with an
 * ima_env use ima_env_setup(), which calls this.
 */
static inline bool setup_cell(struct __test_metadata *const _metadata,
			      const void *variant, char id[CASE_ID_MAX],
			      struct cell *cell, char dir[DIR_MAX],
			      const char *tag)
{
	const char *scratch = scratch_dir();
	struct statfs sfs;

	ASSERT_EQ(0, read_cell(cell));
	if (!cell->harness) {
		SKIP(return true,
			    "not booted by the IMA selftest harness (no %s on the kernel command line): these tests rewrite the IMA policy and security.ima and only run in its guests",
			    IMA_SELFTEST_MARKER);
	}
	/* Before anything the kernel could report on. */
	mark_begin(_metadata, variant, id);
	ASSERT_EQ(0, geteuid());
	ASSERT_NE(0, cell->hash_algo)
	{
		TH_LOG("IMA's hash algorithm (ima_hash= on the command line, else the boot_aggregate's in %s) is unreadable or one these tests cannot compute (sha1 and sha256 only)",
		       IMA_ASCII_MEASUREMENTS);
	}
	ASSERT_EQ(NULL, hash_self_test())
	{
		TH_LOG("the tests' own %s is wrong: no verdict could be trusted",
		       hash_self_test());
	}
	/*
	 * kauditd prints records under printk_ratelimit() (10 per 5 s by
	 * default): more would be dropped, and no absence could be proven.
	 * An interval of 0 turns the limit off.  A larger burst is not
	 * enough: since 7.2 (lib/ratelimit.c, rs_n_left) a new burst takes
	 * effect only when the current interval has run out, and the
	 * records of the first case after boot were dropped.
	 */
	write_sysctl(_metadata, "/proc/sys/kernel/printk_ratelimit", "0");
	ASSERT_EQ(0, statfs(scratch, &sfs))
	{
		TH_LOG("scratch filesystem %s: %s", scratch, strerror(errno));
	}
	ASSERT_EQ(EXT4_SUPER_MAGIC, sfs.f_type)
	{
		TH_LOG("%s must be the harness's ext4 scratch disk", scratch);
	}
	if (cell->policy == POLICY_CUSTOM)
		load_custom_policy(_metadata, scratch);

	snprintf(dir, DIR_MAX, "%s/%s.XXXXXX", scratch, tag);
	ASSERT_NE(NULL, mkdtemp(dir))
	{
		TH_LOG("mkdtemp %s: %s", dir, strerror(errno));
	}
	return false;
}

/* The errno an open/exec/mmap of a file in this state must get. */
static inline int expected_errno(const struct cell *cell, enum ima_state state)
{
	return cell->mode == MODE_ENFORCE && state != STATE_CORRECT ? EACCES :
								      0;
}

/* The per-test environment: one file under test in a fresh directory. */
struct ima_env {
	/* SKIPped in the setup: the body and the teardown do nothing */
	bool skip;
	struct cell cell;
	/* <scratch>/<tag>.XXXXXX, removed with everything in it */
	char dir[DIR_MAX];
	/* dir/<name>: the file under test */
	char path[PATH_MAX];
	/* its correct security.ima in this cell, once the fixture made it */
	uint8_t good[IMA_XATTR_MAX];
	size_t good_len;
	/* the kernel log from ima_env_watch() on */
	struct audit_log log;
	/* every file of dir must pass: no record may name one (teardown) */
	bool quiet;
	/* the case, as its markers in the kernel log name it ("" before) */
	char case_id[CASE_ID_MAX];
};

/*
 * TEST_F() of a fixture that embeds struct ima_env env: the body runs
 * only if the fixture's setup did not skip (env.skip).  In 6.1's harness
 * a SKIP() in the setup does not stop the test body, so every body
 * would otherwise start with the same check.
 */
#define TEST_F_ENV(fixture_name, test_name)                                  \
	static void env_##fixture_name##_##test_name(                        \
		struct __test_metadata *const _metadata,                     \
		FIXTURE_DATA(fixture_name) *self,                            \
		const FIXTURE_VARIANT(fixture_name) *variant);               \
	TEST_F(fixture_name, test_name)                                      \
	{                                                                    \
		if (!self->env.skip)                                         \
			env_##fixture_name##_##test_name(_metadata, self,    \
							 variant);           \
	}                                                                    \
	static void env_##fixture_name##_##test_name(                        \
		struct __test_metadata *const _metadata,                     \
		FIXTURE_DATA(fixture_name) *self,                            \
		const FIXTURE_VARIANT(fixture_name) *variant)

/*
 * Fixture setup: env->skip and the cell (setup_cell()), env->dir, and
 * env->path = dir/name; the fixture makes the file itself.  variant is
 * the fixture setup's own (its name goes into the case's markers).
 */
static inline bool ima_env_setup(struct __test_metadata *const _metadata,
				 struct ima_env *env, const void *variant,
				 const char *tag, const char *name)
{
	env->log.fd = -1;
	env->skip = setup_cell(_metadata, variant, env->case_id, &env->cell,
			       env->dir, tag);
	if (!env->skip)
		snprintf(env->path, sizeof(env->path), "%s/%s", env->dir, name);
	return env->skip;
}

/*
 * From now on env->log collects the kernel log (just before an access);
 * records of a quiet environment are no longer checked.
 */
static inline void ima_env_watch(struct __test_metadata *const _metadata,
				 struct ima_env *env)
{
	env->quiet = false;
	audit_unwatch(&env->log);
	audit_watch(_metadata, &env->log);
}

/*
 * From now on to the teardown, no audit record may name a file of dir:
 * for fixtures whose files are labelled correctly (or new) and must pass
 * every access, in every mode.  Call it before the first access: a pass
 * in fix mode may be a repair, cached as a pass, and only its record
 * shows it.  A test that expects a record starts its own watch instead.
 */
static inline void ima_env_quiet(struct __test_metadata *const _metadata,
				 struct ima_env *env)
{
	ima_env_watch(_metadata, env);
	env->quiet = true;
}

/*
 * The quiet check by inode (ima_env_teardown()): some records name a
 * file by its base name (a failed collect_data) or by its path in its
 * filesystem (set_data), not by the path the test opened, but every
 * record of an inode says dev="<s_id>" ino=<number>.  Nothing on the
 * scratch filesystem but the case's own files changes while it runs,
 * and the watch counts no record printed before its first sentinel, so
 * no record of the watch may name an inode of that filesystem at all:
 * that covers the files the case removed as well as those still in dir.
 */
static inline void expect_inodes_not_logged(struct __test_metadata *const _metadata,
					    struct audit_log *log,
					    const char *dir)
{
	char dev[48], needle[64];
	struct stat st;

	/* In a teardown: no ASSERT, and no handler that returns. */
	if (stat(dir, &st) || !audit_dev(st.st_dev, dev, sizeof(dev))) {
		TH_LOG("%s: %s, or not on a block device: its files' records cannot be told by inode",
		       dir, strerror(errno));
		_metadata->passed = 0;
		return;
	}
	snprintf(needle, sizeof(needle), "%s ino=", dev);
	/* expect_dir_not_logged() read up to the sentinel already */
	EXPECT_FALSE(audit_has(log, needle, NULL))
	{
		TH_LOG("an audit record names an inode of %s's filesystem (%s...):\n%s",
		       dir, needle, log->text);
	}
}

static inline int remove_entry(const char *path, const struct stat *st,
			       int type, struct FTW *ftw)
{
	if ((type == FTW_DP ? rmdir(path) : unlink(path)) && errno != ENOENT)
		return errno;
	return 0;
}

/*
 * Fixture teardown: checks that a quiet environment stayed quiet, then
 * removes dir and everything in it, and marks the case's end.  Whatever
 * a test mounted under dir must be unmounted first (FTW_MOUNT: nothing on
 * another filesystem is touched, and its mount point stays busy).
 */
static inline void ima_env_teardown(struct __test_metadata *const _metadata,
				    struct ima_env *env)
{
	/*
	 * Only a test that has not failed yet: its verdict is all this can
	 * change.  After an ASSERT in the body the 6.1 harness leaves
	 * _metadata->trigger set, so that any ASSERT here, even one that
	 * holds, would jump back into this teardown, forever, and any
	 * EXPECT with a block would run its block (its message) although
	 * it holds: the failed ASSERT's handler has run, clear it.
	 */
	_metadata->trigger = 0;
	if (env->quiet && env->log.fd >= 0 && _metadata->passed) {
		expect_dir_not_logged(_metadata, &env->log, env->dir);
		expect_inodes_not_logged(_metadata, &env->log, env->dir);
	}
	audit_unwatch(&env->log);
	if (env->dir[0]) {
		/* remove_entry()'s errno, or -1 with nftw()'s own in errno */
		int err = nftw(env->dir, remove_entry, 16,
			       FTW_DEPTH | FTW_PHYS | FTW_MOUNT);

		/* It told of removals that "failed" with "Success". */
		if (err) {
			TH_LOG("removing %s: %s", env->dir,
			       strerror(err > 0 ? err : errno));
			_metadata->passed = 0;
		}
	}
	mark_end(env->case_id);
}

#endif /* _IMA_APPRAISE_COMMON_H */
