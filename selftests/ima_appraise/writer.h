/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the tests of what happens after a file is written: the last
 * writer (lastwriter_test), the deferred final fput (fput_test), the lock
 * walks (lockwalk_test), security.ima changes (xattr_test) and metadata
 * changes (setattr_test).
 */

#ifndef _IMA_APPRAISE_WRITER_H
#define _IMA_APPRAISE_WRITER_H

#include "common.h"

#define LOCKDEP_CLASSES "/proc/lockdep"

/* Writes all of data at offset off of fd. */
static inline void pwrite_all(struct __test_metadata *const _metadata, int fd,
			      const void *data, size_t len, off_t off)
{
	ASSERT_EQ((ssize_t)len, pwrite(fd, data, len, off))
	{
		TH_LOG("pwrite: %s", strerror(errno));
	}
}

/*
 * What security.ima must be after the last writer of a file closed it with
 * contents data: the hash of data where the cell appraises, the value it
 * had before (old, or none if old_len is 0) where it does not.  Puts it in
 * want and returns its length, 0 for none.
 */
static inline size_t label_after_close(const struct cell *cell,
				       const char *data, const uint8_t *old,
				       size_t old_len, uint8_t *want)
{
	if (cell_appraises(cell))
		return ima_hash_xattr(cell, data, strlen(data), want);
	if (old_len)
		memcpy(want, old, old_len);
	return old_len;
}

/* After the last writer of path closed it: label_after_close(). */
static inline void expect_labelled_after_close(
	struct __test_metadata *const _metadata, const struct cell *cell,
	const char *path, const char *data, const uint8_t *old, size_t old_len)
{
	uint8_t want[IMA_XATTR_MAX];
	size_t len = label_after_close(cell, data, old, old_len, want);

	if (len)
		expect_ima_is(_metadata, path, want, len);
	else
		expect_no_ima(_metadata, path);
}

/*
 * A child opens path, maps its first len bytes shared, closes the
 * descriptor, writes data through the mapping and exits without munmap():
 * exit_mmap() drops the last reference, and exit_task_work() runs the
 * final fput() before the parent can reap the child.  So when this
 * returns, the last writer's update is done.
 */
static inline void
child_writes_mapping_and_exits(struct __test_metadata *const _metadata,
			       const char *path, const char *data, size_t len)
{
	int status;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd = open(path, O_RDWR | O_CLOEXEC);
		char *map;

		if (fd < 0)
			_exit(1);
		map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			   0);
		if (map == MAP_FAILED)
			_exit(2);
		close(fd);
		memcpy(map, data, len);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
	{
		TH_LOG("child status %#x (exit 1: open %s failed, 2: mmap failed)",
		       status, path);
	}
}

/*
 * A test that needs lockdep, on a kernel built without it (no
 * LOCKDEP_STATS: CONFIG_LOCKDEP is off, as in Debian's kernels): SKIPs
 * the case as not for this cell, after marking env skipped, and returns
 * true.  Any other state of lockdep is the test's to judge.
 */
static inline bool skip_without_lockdep(struct __test_metadata *const _metadata,
					struct ima_env *env)
{
	if (access(LOCKDEP_STATS, F_OK) == 0 || errno != ENOENT)
		return false;
	env->skip = true;
	CELL_SKIP(return true, "needs lockdep: %s is absent (no CONFIG_LOCKDEP)",
		  LOCKDEP_STATS);
}

/* Lockdep must be on and quiet: no problem reported in this boot yet. */
static inline void assert_lockdep_quiet(struct __test_metadata *const _metadata)
{
	int debug_locks = lockdep_debug_locks();

	ASSERT_EQ(1, debug_locks)
	{
		if (debug_locks < 0)
			TH_LOG("%s: %s (CONFIG_LOCKDEP?)", LOCKDEP_STATS,
			       strerror(-debug_locks));
		else
			TH_LOG("lockdep is off: it reported a problem in this boot (see the kernel log)");
	}
}

/*
 * Whether /proc/lockdep lists a direct dependency from a regular file's
 * i_rwsem class ("&sb->s_type->i_mutex_key", "#<n>" per filesystem type;
 * directories have i_mutex_dir_key) to "&mm->mmap_lock".
 */
static inline bool lockdep_knows_i_rwsem_mmap_lock(void)
{
	bool in_i_rwsem = false, found = false;
	char line[512];
	FILE *f;

	f = fopen(LOCKDEP_CLASSES, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, " -> ", 4))
			found = in_i_rwsem && strstr(line, "&mm->mmap_lock");
		else if (line[0] != '\n')
			in_i_rwsem = strstr(line, "i_mutex_key") &&
				     !strstr(line, "i_mutex_dir_key");
	}
	fclose(f);
	return found;
}

/*
 * Teaches lockdep the VFS order i_rwsem -> mmap_lock, so that a final
 * fput() run under mmap_lock (ima_file_free() -> iint->mutex -> i_rwsem)
 * shows as the circular dependency it is even if nothing else in the boot
 * taught it.  A page fault does not: it takes mmap_lock with a trylock
 * first, which lockdep records no order for.  An O_DIRECT read into a
 * buffer that is not faulted in does: ext4_dio_read_iter() holds i_rwsem
 * while get_user_pages_fast() falls back to get_user_pages_unlocked(),
 * which takes mmap_read_lock().  The file is given away to
 * FOWNER_NOT_IN_POLICY: IMA fails to hash files opened with O_DIRECT
 * (ima_calc_file_hash(): -EINVAL), so in policy its open would be denied.
 */
static inline void
lockdep_learn_i_rwsem_mmap_lock(struct __test_metadata *const _metadata,
				const char *path)
{
	long page = sysconf(_SC_PAGESIZE);
	char *buf;
	int fd;

	buf = malloc(page);
	ASSERT_NE(NULL, buf);
	memset(buf, 'L', page);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ASSERT_LE(0, fd)
	{
		TH_LOG("create %s: %s", path, strerror(errno));
	}
	ASSERT_EQ(0, fchown(fd, FOWNER_NOT_IN_POLICY, FOWNER_NOT_IN_POLICY));
	pwrite_all(_metadata, fd, buf, page, 0);
	ASSERT_EQ(0, close(fd));
	free(buf);

	buf = mmap(NULL, page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, fd)
	{
		TH_LOG("open %s O_DIRECT: %s", path, strerror(errno));
	}
	ASSERT_EQ(page, read(fd, buf, page))
	{
		TH_LOG("O_DIRECT read into an unfaulted mapping: %s",
		       strerror(errno));
	}
	ASSERT_EQ('L', buf[page - 1]);
	ASSERT_EQ(0, close(fd));
	ASSERT_EQ(0, munmap(buf, page));
	ASSERT_TRUE(lockdep_knows_i_rwsem_mmap_lock())
	{
		TH_LOG("%s lists no i_rwsem -> mmap_lock dependency: lockdep could not see a final fput under mmap_lock",
		       LOCKDEP_CLASSES);
	}
}

#endif /* _IMA_APPRAISE_WRITER_H */
