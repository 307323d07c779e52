// SPDX-License-Identifier: GPL-2.0
/*
 * The last writer: security.ima is rewritten to the new content's hash when
 * the last file opened for writing is closed, and new files stay readable
 * until then.
 *
 * Layout, one per test, on the scratch ext4 filesystem:
 *
 * <scratch>/lastwriter.XXXXXX/
 *     data    root:root 0755, OLD_CONTENTS, security.ima correct for it
 *     new     created by the test (O_CREAT), no security.ima
 *
 * ima_check_last_writer() runs from the final __fput() of a file opened for
 * writing (task work: done when close() returns) while i_writecount is
 * still 1, and calls ima_update_xattr() when the file changed (i_version)
 * or is IMA_NEW_FILE, if process_measurement() set IMA_UPDATE_XATTR (an
 * appraised open for write) and the file's last appraisal passed: it
 * writes 01 <sha1> or, with ima_hash=sha256, 04 04 <sha256>.
 *
 * Expected:
 *   enforce, fix, log, and off under the builtin/legacy policy (which
 *   appraises like log, see cell_appraises()): the hash of the final
 *   content, written at the last close and not before;
 *   off under a custom policy: security.ima never changes.
 *   A wrong label is never blessed: log keeps it (the appraisal failed),
 *   fix repaired it at open so the last close rewrites it, enforce denies.
 */

#include "writer.h"

#include <sys/resource.h>
#include <sys/syscall.h>

#define OLD_CONTENTS "IMA appraisal selftest: last writer, old contents\n"
#define NEW_CONTENTS "IMA appraisal selftest: last writer, NEW contents\n"
#define MORE_CONTENTS "appended line\n"

static const char data_name[] = "data";
static const char new_name[] = "new";

FIXTURE(last_writer)
{
	/* env.path is data, env.good its security.ima when the test starts */
	struct ima_env env;
	char new_path[PATH_MAX];
};

FIXTURE_SETUP(last_writer)
{
	if (ima_env_setup(_metadata, &self->env, variant, "lastwriter",
			  data_name))
		return;
	snprintf(self->new_path, sizeof(self->new_path), "%s/%s", self->env.dir,
		 new_name);
	self->env.good_len = create_labelled(_metadata, &self->env.cell,
					     self->env.path, OLD_CONTENTS,
					     strlen(OLD_CONTENTS),
					     self->env.good);
	ima_env_quiet(_metadata, &self->env);
}

FIXTURE_TEARDOWN(last_writer)
{
	ima_env_teardown(_metadata, &self->env);
}

static int open_data(FIXTURE_DATA(last_writer) * self, int flags)
{
	return open(self->env.path, flags | O_CLOEXEC);
}

/*
 * Overwritten in place and closed: the new hash, at the close and not
 * before.  Fails on a kernel whose ima_file_free() no longer calls
 * ima_check_last_writer(), or that updates on every write.
 */
TEST_F_ENV(last_writer, rewrite)
{
	int fd;

	fd = open_data(self, O_WRONLY);
	ASSERT_LE(0, fd);
	pwrite_all(_metadata, fd, NEW_CONTENTS, strlen(NEW_CONTENTS), 0);
	expect_ima_is(_metadata, self->env.path, self->env.good,
		      self->env.good_len);
	ASSERT_EQ(0, close(fd));
	expect_labelled_after_close(_metadata, &self->env.cell, self->env.path,
				    NEW_CONTENTS, self->env.good,
				    self->env.good_len);
}

/*
 * Two writers: the first close leaves the old value (i_writecount is still
 * 2), the second writes the hash of what both wrote.  Fails on a kernel
 * that drops the i_writecount == 1 test (updates at the first close: the
 * value would be the hash of the intermediate content) or that updates
 * only at the first close.
 */
TEST_F_ENV(last_writer, two_writers)
{
	int fd1, fd2;

	fd1 = open_data(self, O_WRONLY);
	ASSERT_LE(0, fd1);
	fd2 = open_data(self, O_WRONLY);
	ASSERT_LE(0, fd2);
	pwrite_all(_metadata, fd1, NEW_CONTENTS, strlen(NEW_CONTENTS), 0);
	ASSERT_EQ(0, close(fd1));
	expect_ima_is(_metadata, self->env.path, self->env.good,
		      self->env.good_len);
	/* The file is still cached as appraised: readers are not denied. */
	ASSERT_EQ(0, test_open(self->env.path, O_RDONLY));
	pwrite_all(_metadata, fd2, NEW_CONTENTS MORE_CONTENTS,
		   strlen(NEW_CONTENTS MORE_CONTENTS), 0);
	ASSERT_EQ(0, close(fd2));
	expect_labelled_after_close(_metadata, &self->env.cell, self->env.path,
				    NEW_CONTENTS MORE_CONTENTS, self->env.good,
				    self->env.good_len);
}

/* O_APPEND: the hash of old + appended contents. */
TEST_F_ENV(last_writer, append)
{
	int fd;

	fd = open_data(self, O_WRONLY | O_APPEND);
	ASSERT_LE(0, fd);
	ASSERT_EQ(strlen(MORE_CONTENTS),
		  write(fd, MORE_CONTENTS, strlen(MORE_CONTENTS)));
	ASSERT_EQ(0, close(fd));
	expect_labelled_after_close(_metadata, &self->env.cell, self->env.path,
				    OLD_CONTENTS MORE_CONTENTS, self->env.good,
				    self->env.good_len);
}

/* O_TRUNC, then new contents: the hash of the new contents only. */
TEST_F_ENV(last_writer, o_trunc)
{
	int fd;

	fd = open_data(self, O_WRONLY | O_TRUNC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(strlen(NEW_CONTENTS),
		  write(fd, NEW_CONTENTS, strlen(NEW_CONTENTS)));
	ASSERT_EQ(0, close(fd));
	expect_labelled_after_close(_metadata, &self->env.cell, self->env.path,
				    NEW_CONTENTS, self->env.good,
				    self->env.good_len);
}

/*
 * O_TRUNC and no write at all: the truncation after the appraisal changed
 * i_version, so the close writes the hash of the empty file.  Fails on a
 * kernel that updates only files written through the descriptor.
 */
TEST_F_ENV(last_writer, o_trunc_no_write)
{
	int fd;

	fd = open_data(self, O_WRONLY | O_TRUNC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, close(fd));
	expect_labelled_after_close(_metadata, &self->env.cell, self->env.path,
				    "", self->env.good, self->env.good_len);
}

/*
 * closed_with_another: files of the pool, O_PATH opens of the test's
 * directory (each a struct file of its own), and the number of tries,
 * each with a file spread evenly over the pool; the pair of descriptors
 * that close_range() closes, above the pool.
 */
#define POOL_FILES 1024
#define CLOSE_TRIES 64
#define PAIR_FD (POOL_FILES + 64)

/*
 * The last writer closed in one call with another file that the task
 * alone holds: close_range() over both, the other file's descriptor
 * first, as exit and execve() (O_CLOEXEC) close a task's files in fd
 * order.  Each final fput() queues its __fput() as task work; the work
 * runs when the call returns, the last queued first, so data's
 * __fput() runs while its task-work link still points at the other
 * file.  IMA promises what it does after any last close: the label is
 * the hash of the new content where the cell appraises, unchanged where
 * it does not, and nothing is logged.  Tries CLOSE_TRIES times with new
 * content, each time closing a different file of the pool first.  data
 * is opened for reading and writing: IMA hashes the file through the
 * writer's own instance then (a write-only one, through a new
 * instance that ima_calc_file_hash() opens for reading).
 *
 * 6.1's struct file keeps f_iocb_flags, which __kernel_read() gives
 * the kiocb of IMA's hash of the file, in a union with that link: data
 * is read with the other file's address as its flags, and where they
 * hold IOCB_DIRECT (bit 17) ext4 takes its direct-I/O path, which fails
 * the kernel read (-EFAULT) of a file ext4 can read directly (not
 * inline data: the scratch disk is made without it), so the label keeps
 * the old digest and audit logs a failed collect_data.  Whether a try
 * fails therefore depends on the other file's address: the pool spreads
 * the tries over hundreds of KB of the file cache, so some hold bit 17
 * and some do not: stock 6.1 left a stale label in 17 to 33 of the 64
 * tries of each of 10 cells, x86_64 and aarch64.  Stock 6.1 fails it (a
 * known failure, its address bits permitting); kernel-patches/0008
 * computes the flags afresh in __fput(), and regressions/0056 undoes
 * that.  6.12 keeps f_iocb_flags outside the union.
 */
TEST_F_ENV(last_writer, closed_with_another)
{
	char content[sizeof(NEW_CONTENTS) + 16];
	char seen_hex[3 * IMA_XATTR_MAX + 64], want_hex[3 * IMA_XATTR_MAX + 64];
	uint8_t want[IMA_XATTR_MAX], seen[IMA_XATTR_MAX + 16];
	int pool[POOL_FILES], fd, i, stale = 0, first_stale = -1;
	unsigned int try;
	struct rlimit nofile;
	ssize_t seen_len;
	size_t want_len;

	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &nofile));
	if (nofile.rlim_cur <= PAIR_FD + 1) {
		nofile.rlim_cur = PAIR_FD + 2;
		if (nofile.rlim_max < nofile.rlim_cur)
			nofile.rlim_max = nofile.rlim_cur;
		ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &nofile))
		{
			TH_LOG("RLIMIT_NOFILE to %d: %s", PAIR_FD + 2,
			       strerror(errno));
		}
	}
	for (i = 0; i < POOL_FILES; i++) {
		pool[i] = open(self->env.dir, O_PATH | O_CLOEXEC);
		ASSERT_LE(0, pool[i])
		{
			TH_LOG("O_PATH open %d of %s: %s", i, self->env.dir,
			       strerror(errno));
		}
		ASSERT_GT(PAIR_FD, pool[i]);
	}
	for (try = 0; try < CLOSE_TRIES; try++) {
		i = try * POOL_FILES / CLOSE_TRIES;
		snprintf(content, sizeof(content), "%.*s try %02u\n",
			 (int)strlen(NEW_CONTENTS) - 1, NEW_CONTENTS, try);
		fd = open_data(self, O_RDWR);
		ASSERT_LE(0, fd)
		{
			TH_LOG("try %u: open for writing: %s (the label of try %d was stale)",
			       try, strerror(errno), first_stale);
		}
		pwrite_all(_metadata, fd, content, strlen(content), 0);
		/* Each descriptor its file's only reference, the other first */
		ASSERT_EQ(PAIR_FD, dup2(pool[i], PAIR_FD));
		ASSERT_EQ(0, close(pool[i]));
		pool[i] = -1;
		ASSERT_EQ(PAIR_FD + 1, dup2(fd, PAIR_FD + 1));
		ASSERT_EQ(0, close(fd));
		ASSERT_EQ(0, syscall(SYS_close_range, PAIR_FD, PAIR_FD + 1, 0))
		{
			TH_LOG("close_range: %s", strerror(errno));
		}
		want_len = label_after_close(&self->env.cell, content,
					     self->env.good,
					     self->env.good_len, want);
		seen_len = get_ima(self->env.path, seen, sizeof(seen));
		if (seen_len == (ssize_t)want_len &&
		    !memcmp(want, seen, want_len))
			continue;
		if (stale < 3)
			TH_LOG("try %u, closed after pool file %d: security.ima is %s, expected %s",
			       try, i,
			       hex(seen, seen_len, seen_hex, sizeof(seen_hex)),
			       hex(want, want_len, want_hex, sizeof(want_hex)));
		if (first_stale < 0)
			first_stale = try;
		stale++;
		/* Labelled by hand, so that enforce lets the next try write. */
		ASSERT_EQ(0, setxattr(self->env.path, XATTR_IMA, want,
				      want_len, 0));
	}
	for (i = 0; i < POOL_FILES; i++)
		if (pool[i] >= 0)
			close(pool[i]);
	EXPECT_EQ(0, stale)
	{
		TH_LOG("the last close left a stale label in %d of %d tries, the first in try %d",
		       stale, CLOSE_TRIES, first_stale);
	}
}

/*
 * A wrong label, opened for writing: enforce denies the open; fix repairs
 * it at the open, so the last close writes the new hash; log (and off
 * under the builtin policy) let the write happen but the appraisal failed,
 * so ima_update_xattr() must not bless the new content: the wrong value
 * stays.  Fails on a kernel that updates security.ima at the last close
 * whatever the file's appraisal status (a log-mode system would label
 * tampered files as good).
 */
TEST_F_ENV(last_writer, wrong_label_not_blessed)
{
	uint8_t wrong[IMA_XATTR_MAX];
	size_t len = ima_wrong_xattr(self->env.good, wrong);
	int fd, err;

	ASSERT_EQ(0, setxattr(self->env.path, XATTR_IMA, wrong, len, 0));
	ima_env_watch(_metadata, &self->env);
	fd = open_data(self, O_WRONLY);
	/* The log is read without blocking: EAGAIN would overwrite it. */
	err = errno;
	expect_cause_logged(_metadata, &self->env.cell, &self->env.log,
			    self->env.path, "invalid-hash");
	if (self->env.cell.mode == MODE_ENFORCE) {
		ASSERT_EQ(-1, fd);
		ASSERT_EQ(EACCES, err);
		expect_ima_is(_metadata, self->env.path, wrong, len);
		return;
	}
	ASSERT_LE(0, fd)
	{
		TH_LOG("%s mode: open for write: %s",
		       mode_names[self->env.cell.mode], strerror(errno));
	}
	pwrite_all(_metadata, fd, NEW_CONTENTS, strlen(NEW_CONTENTS), 0);
	ASSERT_EQ(0, close(fd));
	if (self->env.cell.mode == MODE_FIX)
		expect_labelled_after_close(_metadata, &self->env.cell,
					    self->env.path, NEW_CONTENTS, NULL,
					    0);
	else
		expect_ima_is(_metadata, self->env.path, wrong, len);
}

/*
 * A root file chowned out of the policy, then written: nobody labels it.
 * Fails on a kernel that updates files IMA did not appraise.
 */
TEST_F_ENV(last_writer, not_in_policy)
{
	int fd;

	ASSERT_EQ(0, chown(self->env.path, FOWNER_NOT_IN_POLICY,
			   FOWNER_NOT_IN_POLICY));
	if (removexattr(self->env.path, XATTR_IMA))
		ASSERT_EQ(ENODATA, errno);
	fd = open_data(self, O_WRONLY);
	ASSERT_LE(0, fd);
	pwrite_all(_metadata, fd, NEW_CONTENTS, strlen(NEW_CONTENTS), 0);
	ASSERT_EQ(0, close(fd));
	expect_no_ima(_metadata, self->env.path);
	ASSERT_EQ(0, test_open(self->env.path, O_RDONLY));
}

/*
 * A new empty file, closed without a write: IMA_NEW_FILE alone makes the
 * close label it (i_version did not change).  Fails on a kernel that drops
 * the IMA_NEW_FILE test from ima_check_last_writer(): the file would stay
 * unlabelled, and unreadable in enforce.
 */
TEST_F_ENV(last_writer, new_file_no_write)
{
	int fd;

	fd = open(self->new_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
		  0644);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, close(fd));
	expect_labelled_after_close(_metadata, &self->env.cell, self->new_path,
				    "", NULL, 0);
	ASSERT_EQ(0, test_open(self->new_path, O_RDONLY));
}

/*
 * O_TMPFILE, written, linked in, closed.  No ima_file_check() for this
 * open: ima_post_create_tmpfile() asks the policy for FILE_CHECK with mask
 * MAY_ACCESS and, if the file is in, sets IMA_UPDATE_XATTR and a passed
 * status, so the close labels it.  The builtin policy's mask-less
 * "appraise fowner=0" matches (off included, see cell_appraises()); the
 * custom rules are mask=^MAY_READ / ^MAY_WRITE, which MAY_ACCESS does
 * not contain: the file is not labelled there (and is then unreadable in
 * enforce).  Fails under the builtin policy on a kernel whose
 * ima_post_create_tmpfile() no longer sets IMA_UPDATE_XATTR, and under a
 * custom one on a kernel that labels files outside the policy.
 */
TEST_F_ENV(last_writer, tmpfile_linked)
{
	char proc[64];
	int fd;

	fd = open(self->env.dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
	ASSERT_LE(0, fd)
	{
		TH_LOG("O_TMPFILE in %s: %s", self->env.dir, strerror(errno));
	}
	pwrite_all(_metadata, fd, NEW_CONTENTS, strlen(NEW_CONTENTS), 0);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	ASSERT_EQ(0, linkat(AT_FDCWD, proc, AT_FDCWD, self->new_path,
			    AT_SYMLINK_FOLLOW))
	{
		TH_LOG("linkat %s: %s", proc, strerror(errno));
	}
	ASSERT_EQ(0, close(fd));
	if (self->env.cell.policy == POLICY_CUSTOM)
		expect_no_ima(_metadata, self->new_path);
	else
		expect_labelled_after_close(_metadata, &self->env.cell,
					    self->new_path, NEW_CONTENTS, NULL,
					    0);
}

/*
 * How a new file is changed before it is reopened, in the new_file
 * tests: nothing, fchmod() or fchown() (group only: root still owns it,
 * it stays in policy) through the still open descriptor.
 */
enum new_file_change { CHANGE_NONE, CHANGE_FCHMOD, CHANGE_FCHOWN };

/*
 * A new file (O_CREAT), written, then opened again for reading before its
 * first close: IMA_NEW_FILE lets it pass though it has no security.ima
 * yet; the last close labels it with the hash of what was written.
 *
 * With fchmod/fchown first, 6.1.192 fails this:
 * security/integrity/ima/ima_appraise.c:ima_inode_post_setattr() sets
 * IMA_CHANGE_ATTR, and security/integrity/ima/ima_main.c:
 * process_measurement() then clears IMA_NONACTION_FLAGS, IMA_NEW_FILE
 * among them, with the cached appraisal flags, so the reopen is
 * appraised as an existing unlabelled file: enforce denies it (EACCES,
 * missing-hash), and in enforce, log and off-under-builtin its failed
 * status keeps the last close from labelling the file.  Fixed upstream
 * by "ima: Reset IMA_NONACTION_RULE_FLAGS after post_setattr" (v6.14),
 * and for this tree by kernel-patches/series.
 */
static void check_new_file(struct __test_metadata *const _metadata,
			   FIXTURE_DATA(last_writer) * self,
			   enum new_file_change change)
{
	char buf[sizeof(NEW_CONTENTS)];
	int fd, rfd;

	fd = open(self->new_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
		  0644);
	ASSERT_LE(0, fd);
	pwrite_all(_metadata, fd, NEW_CONTENTS, strlen(NEW_CONTENTS), 0);
	if (change == CHANGE_FCHMOD)
		ASSERT_EQ(0, fchmod(fd, 0600));
	if (change == CHANGE_FCHOWN)
		ASSERT_EQ(0, fchown(fd, -1, FOWNER_NOT_IN_POLICY));

	rfd = open(self->new_path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, rfd)
	{
		TH_LOG("%s mode, %s policy: reopening a new file before its first close: %s",
		       mode_names[self->env.cell.mode],
		       policy_names[self->env.cell.policy], strerror(errno));
	}
	ASSERT_EQ(strlen(NEW_CONTENTS), read(rfd, buf, sizeof(buf)));
	ASSERT_EQ(0, memcmp(NEW_CONTENTS, buf, strlen(NEW_CONTENTS)));
	ASSERT_EQ(0, close(rfd));
	/* Closing a reader is not the last writer's close. */
	expect_no_ima(_metadata, self->new_path);

	ASSERT_EQ(0, close(fd));
	expect_labelled_after_close(_metadata, &self->env.cell, self->new_path,
				    NEW_CONTENTS, NULL, 0);
	ASSERT_EQ(0, test_open(self->new_path, O_RDONLY));
}

/* Fails on a kernel that loses IMA_NEW_FILE at the first appraisal. */
TEST_F_ENV(last_writer, new_file_reopen)
{
	check_new_file(_metadata, self, CHANGE_NONE);
}

/* Fails on stock 6.1.192 (see check_new_file()). */
TEST_F_ENV(last_writer, new_file_fchmod_reopen)
{
	check_new_file(_metadata, self, CHANGE_FCHMOD);
}

/* Fails on stock 6.1.192 (see check_new_file()). */
TEST_F_ENV(last_writer, new_file_fchown_reopen)
{
	check_new_file(_metadata, self, CHANGE_FCHOWN);
}

TEST_HARNESS_MAIN
