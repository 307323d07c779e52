// SPDX-License-Identifier: GPL-2.0
/*
 * Lock walks: every path where IMA meets the VFS and mm locks, walked on
 * an appraised file, so that lockdep learns each lock order at least once
 * per boot, and each walk's outcome is what IMA promises.
 *
 * Layout, one per test, on the scratch ext4 filesystem:
 *
 * <scratch>/lockwalk.XXXXXX/
 *     file     root:root 0755, one page of OLD text, security.ima correct
 *     lockdep  FOWNER_NOT_IN_POLICY, one page: teaches lockdep
 *              i_rwsem -> mmap_lock (lockdep_learn_i_rwsem_mmap_lock())
 *     target   FOWNER_NOT_IN_POLICY: odirect_write_from_fresh_mapping only
 *     lower/ upper/ work/ merged/: overlay_copy_up only
 *
 * The orders IMA itself takes are iint->mutex -> i_rwsem (appraisal, fix
 * mode, the last writer's update) and never anything under mmap_lock:
 * every hook that runs under mmap_lock (ima_file_mprotect()) decides
 * without the iint, and every final fput() of a user task is task work.
 * A kernel that takes an IMA lock under mmap_lock, or under a lock the
 * VFS takes inside i_rwsem, closes a cycle with the order the setup
 * teaches; the walk during which lockdep reports it fails (teardown:
 * debug_locks must still be 1), and the harness fails the cell for the
 * report itself.  A walk that starts with lockdep already off (an earlier
 * report in this boot) checks only its outcome: that report already
 * failed the cell.  A kernel without lockdep (CONFIG_LOCKDEP off) skips
 * every walk as not for this cell.
 *
 * The walks that map the file come last, those whose munmap() or exit
 * releases a written file last of all: a kernel with a lockdep
 * regression on that path (0011) and one on another (0050, 0051) then
 * reports each in its own walk, and a continuation boot after the first
 * report still reaches the second.
 *
 * Walked elsewhere: a final fput() from a kernel thread (fput() from a
 * PF_KTHREAD task goes to delayed_fput_list, and a kworker runs
 * __fput()).  race_test's final_fput_from_kthread reaches it (an AIO
 * fsync's kworker drops a written file's last reference, CONFIG_AIO),
 * with readers appraising the file meanwhile.  io_uring, the loop
 * device, BSD process accounting (whose close_work() calls __fput_sync()
 * from a worker) and AF_UNIX's garbage collector (6.12: __unix_gc() on
 * system_unbound_wq drops the last reference of a file sent in
 * SCM_RIGHTS inside an unreachable socket cycle) are configured out.
 * Every other final fput of a user task, munmap() and exit_mmap()
 * included, is task work.
 *
 * Expected outcomes: the file's label after each walk is the hash of what
 * it then holds where the cell appraises and a writer released it
 * (cell_appraises()), its old label otherwise; accesses to a correctly
 * labelled file pass and leave no audit record in any mode.
 */

#include "writer.h"

#include <sys/mount.h>
#include <sys/time.h>

#define OVERLAYFS_SUPER_MAGIC 0x794c7630
/* overlay_test's rule, spelled the same, so that a boot adds it once. */
#define OVERLAY_RULE "appraise func=FILE_CHECK fsmagic=0x794c7630 fowner=0"

static const char file_name[] = "file";
static const char lockdep_name[] = "lockdep";
static const char target_name[] = "target";
static const char appended[] = "appended through the overlay\n";

FIXTURE(lockwalk)
{
	/* env.path is file, env.good its label when the walk starts */
	struct ima_env env;
	/* debug_locks when the walk started: 1 if lockdep watched it */
	int lockdep_before;
	size_t page;
	/* one page of text each, NUL-terminated: file's old and new data */
	char *old, *new;
};

/* A page of text: a line naming it, then filler, no NUL inside. */
static char *page_of(struct __test_metadata *const _metadata, size_t page,
		     const char *name, char fill)
{
	char *text = malloc(page + 1);

	ASSERT_NE(NULL, text);
	memset(text, fill, page);
	memcpy(text, name, strlen(name));
	text[page - 1] = '\n';
	text[page] = '\0';
	return text;
}

FIXTURE_SETUP(lockwalk)
{
	char path[PATH_MAX];

	self->lockdep_before = -1;
	if (ima_env_setup(_metadata, &self->env, variant, "lockwalk",
			  file_name) ||
	    skip_without_lockdep(_metadata, &self->env))
		return;
	self->page = sysconf(_SC_PAGESIZE);
	self->old = page_of(_metadata, self->page, "lockwalk OLD\n", 'o');
	self->new = page_of(_metadata, self->page, "lockwalk NEW\n", 'n');

	self->lockdep_before = lockdep_debug_locks();
	ASSERT_LE(0, self->lockdep_before)
	{
		TH_LOG("%s: %s (CONFIG_LOCKDEP?)", LOCKDEP_STATS,
		       strerror(-self->lockdep_before));
	}
	if (self->lockdep_before == 1) {
		snprintf(path, sizeof(path), "%s/%s", self->env.dir,
			 lockdep_name);
		lockdep_learn_i_rwsem_mmap_lock(_metadata, path);
	} else {
		TH_LOG("lockdep is already off (an earlier report in this boot): only the walk's outcome is checked");
	}
	self->env.good_len = create_labelled(_metadata, &self->env.cell,
					     self->env.path, self->old,
					     self->page, self->env.good);
	ima_env_quiet(_metadata, &self->env);
}

FIXTURE_TEARDOWN(lockwalk)
{
	ima_env_teardown(_metadata, &self->env);
	free(self->old);
	free(self->new);
	if (self->env.skip || self->lockdep_before != 1)
		return;
	EXPECT_EQ(1, lockdep_debug_locks())
	{
		TH_LOG("lockdep reported a problem during this walk: see the kernel log");
	}
}

static int open_file(struct __test_metadata *const _metadata, const char *path,
		     int flags)
{
	int fd = open(path, flags | O_CLOEXEC);

	EXPECT_LE(0, fd)
	{
		TH_LOG("open %s (flags %#x): %s", path, flags, strerror(errno));
	}
	return fd;
}

/* data must be what path holds now, byte for byte. */
static void expect_contents(struct __test_metadata *const _metadata,
			    const char *path, const char *data)
{
	size_t len;
	char *seen = read_file(_metadata, path, &len);

	EXPECT_TRUE(len == strlen(data) && !memcmp(data, seen, len))
	{
		TH_LOG("%s holds %zu bytes, not the %zu expected", path, len,
		       strlen(data));
	}
	free(seen);
}

/* After the last writer released file holding data. */
static void expect_relabelled(struct __test_metadata *const _metadata,
			      FIXTURE_DATA(lockwalk) * self, const char *data)
{
	expect_contents(_metadata, self->env.path, data);
	expect_labelled_after_close(_metadata, &self->env.cell, self->env.path,
				    data, self->env.good, self->env.good_len);
}

static void expect_unchanged(struct __test_metadata *const _metadata,
			     FIXTURE_DATA(lockwalk) * self)
{
	expect_ima_is(_metadata, self->env.path, self->env.good,
		      self->env.good_len);
}

/* A shared mapping of file, its descriptor closed: the mapping holds it. */
static char *map_shared(struct __test_metadata *const _metadata,
			FIXTURE_DATA(lockwalk) * self, int prot, int open_flags)
{
	char *map;
	int fd;

	fd = open_file(_metadata, self->env.path, open_flags);
	ASSERT_LE(0, fd);
	map = mmap(NULL, self->page, prot, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, map)
	{
		TH_LOG("mmap %s: %s", self->env.path, strerror(errno));
	}
	ASSERT_EQ(0, close(fd));
	return map;
}

/*
 * open, read, write, close: FILE_CHECK appraisal (iint->mutex ->
 * i_rwsem), ext4's write under i_rwsem, and the last writer's update at
 * __fput() (iint->mutex -> i_rwsem -> xattr).
 */
TEST_F_ENV(lockwalk, read_write_close)
{
	char *buf;
	int fd;

	buf = malloc(self->page);
	ASSERT_NE(NULL, buf);
	fd = open_file(_metadata, self->env.path, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(self->page, read(fd, buf, self->page));
	EXPECT_EQ(0, memcmp(self->old, buf, self->page));
	free(buf);
	pwrite_all(_metadata, fd, self->new, self->page, 0);
	expect_unchanged(_metadata, self);
	ASSERT_EQ(0, close(fd));
	expect_relabelled(_metadata, self, self->new);
}

/* O_TRUNC: handle_truncate() -> do_truncate() after ima_file_check(). */
TEST_F_ENV(lockwalk, open_truncate)
{
	int fd;

	fd = open_file(_metadata, self->env.path, O_WRONLY | O_TRUNC);
	ASSERT_LE(0, fd);
	pwrite_all(_metadata, fd, self->new, self->page, 0);
	ASSERT_EQ(0, close(fd));
	expect_relabelled(_metadata, self, self->new);
}

/* ftruncate(2) on a writer: setattr under i_rwsem, then the last writer. */
TEST_F_ENV(lockwalk, ftruncate)
{
	char *half;
	int fd;

	half = strndup(self->old, self->page / 2);
	ASSERT_NE(NULL, half);
	fd = open_file(_metadata, self->env.path, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, self->page / 2));
	ASSERT_EQ(0, close(fd));
	expect_relabelled(_metadata, self, half);
	free(half);
}

/*
 * truncate(2) opens no file: no writer ever relabels it, and the next
 * open appraises the shortened data against the old label (the file was
 * not appraised since its label was set, so no cached verdict applies).
 */
TEST_F_ENV(lockwalk, truncate_path)
{
	uint8_t now[IMA_XATTR_MAX];
	size_t now_len;
	char *half;

	half = strndup(self->old, self->page / 2);
	ASSERT_NE(NULL, half);
	now_len = ima_hash_xattr(&self->env.cell, half, strlen(half), now);
	ASSERT_EQ(0, truncate(self->env.path, self->page / 2));
	expect_unchanged(_metadata, self);

	ima_env_watch(_metadata, &self->env);
	ASSERT_EQ(expected_errno(&self->env.cell, STATE_WRONG),
		  test_open(self->env.path, O_RDONLY));
	if (self->env.cell.mode == MODE_FIX)
		expect_ima_is(_metadata, self->env.path, now, now_len);
	else
		expect_unchanged(_metadata, self);
	expect_audited(_metadata, &self->env.cell, &self->env.log,
		       self->env.path, STATE_WRONG);
	free(half);
}

/*
 * chmod, chown and utimes: notify_change() under i_rwsem, then
 * ima_inode_post_setattr().  The file stays root's, so in policy: its
 * label stays (also with ima_appraise_setattr=remove) and it still
 * passes.
 */
TEST_F_ENV(lockwalk, chmod_chown_utimes)
{
	ASSERT_EQ(0, chmod(self->env.path, 0700));
	ASSERT_EQ(0, chown(self->env.path, 0, 0));
	ASSERT_EQ(0, utimes(self->env.path, NULL));
	expect_unchanged(_metadata, self);
	ASSERT_EQ(0, test_open(self->env.path, O_RDONLY));
	expect_unchanged(_metadata, self);
}

/*
 * setxattr and removexattr of security.ima: vfs_setxattr() under
 * i_rwsem, ima_inode_setxattr() resets the appraisal cached by the first
 * open; the next open appraises the new value (wrong, then missing).
 */
TEST_F_ENV(lockwalk, setxattr_removexattr)
{
	struct ima_env *env = &self->env;

	ASSERT_EQ(0, test_open(env->path, O_RDONLY));
	expect_not_logged(_metadata, &env->log, env->path, NULL);
	ima_env_watch(_metadata, env);
	set_ima_state(_metadata, env->path, STATE_WRONG, env->good);
	ASSERT_EQ(expected_errno(&env->cell, STATE_WRONG),
		  test_open(env->path, O_RDONLY));
	expect_ima_after(_metadata, &env->cell, env->path, STATE_WRONG,
			 env->good);
	expect_audited(_metadata, &env->cell, &env->log, env->path,
		       STATE_WRONG);

	ima_env_watch(_metadata, env);
	set_ima_state(_metadata, env->path, STATE_MISSING, env->good);
	ASSERT_EQ(expected_errno(&env->cell, STATE_MISSING),
		  test_open(env->path, O_RDONLY));
	expect_ima_after(_metadata, &env->cell, env->path, STATE_MISSING,
			 env->good);
	expect_audited(_metadata, &env->cell, &env->log, env->path,
		       STATE_MISSING);
}

/*
 * Through an overlay on the test directory: an appraised open of the
 * lower file (iint->mutex -> the overlay inode's i_rwsem), a chmod that
 * copies it up (the overlay inode's i_rwsem, the copy-up lock, the upper
 * directory's and file's i_rwsem), then the last writer through the
 * overlay labels the upper copy.
 */
TEST_F_ENV(lockwalk, overlay_copy_up)
{
	char lower[DIR_MAX + 8], upper[DIR_MAX + 8], work[DIR_MAX + 8];
	char merged[DIR_MAX + 8], opts[4 * DIR_MAX + 128];
	char lfile[PATH_MAX], ufile[PATH_MAX], mfile[PATH_MAX];
	char *both = NULL;
	struct statfs sfs;
	int fd;

	if (self->env.cell.policy == POLICY_CUSTOM)
		policy_add_rule(_metadata, OVERLAY_RULE);
	snprintf(lower, sizeof(lower), "%s/lower", self->env.dir);
	snprintf(upper, sizeof(upper), "%s/upper", self->env.dir);
	snprintf(work, sizeof(work), "%s/work", self->env.dir);
	snprintf(merged, sizeof(merged), "%s/merged", self->env.dir);
	snprintf(lfile, sizeof(lfile), "%s/%s", lower, file_name);
	snprintf(ufile, sizeof(ufile), "%s/%s", upper, file_name);
	snprintf(mfile, sizeof(mfile), "%s/%s", merged, file_name);
	ASSERT_EQ(0, mkdir(lower, 0755));
	ASSERT_EQ(0, mkdir(upper, 0755));
	ASSERT_EQ(0, mkdir(work, 0755));
	ASSERT_EQ(0, mkdir(merged, 0755));
	/* The labelled file becomes the lower file. */
	ASSERT_EQ(0, rename(self->env.path, lfile));
	snprintf(opts, sizeof(opts),
		 "lowerdir=%s,upperdir=%s,workdir=%s,metacopy=off", lower,
		 upper, work);
	ASSERT_EQ(0, mount("overlay", merged, "overlay", 0, opts))
	{
		TH_LOG("mount overlay %s: %s", opts, strerror(errno));
	}
	EXPECT_EQ(0, statfs(merged, &sfs));
	EXPECT_EQ(OVERLAYFS_SUPER_MAGIC, sfs.f_type);

	EXPECT_EQ(0, test_open(mfile, O_RDONLY));
	EXPECT_EQ(0, chmod(mfile, 0750));
	expect_ima_is(_metadata, ufile, self->env.good, self->env.good_len);
	EXPECT_EQ(0, test_open(mfile, O_RDONLY));

	fd = open_file(_metadata, mfile, O_WRONLY | O_APPEND);
	if (fd >= 0) {
		EXPECT_EQ(strlen(appended),
			  write(fd, appended, strlen(appended)));
		EXPECT_EQ(0, close(fd));
	}
	EXPECT_EQ(0, umount2(merged, 0))
	{
		TH_LOG("umount %s: %s", merged, strerror(errno));
	}
	EXPECT_LT(0, asprintf(&both, "%s%s", self->old, appended));
	if (both) {
		expect_contents(_metadata, ufile, both);
		expect_labelled_after_close(_metadata, &self->env.cell, ufile,
					    both, self->env.good,
					    self->env.good_len);
		free(both);
	}
	expect_contents(_metadata, lfile, self->old);
	expect_ima_is(_metadata, lfile, self->env.good, self->env.good_len);
}

/*
 * An O_DIRECT write whose buffer is a fresh, never touched, shared
 * mapping of the appraised file: ext4_dio_write_iter() holds the
 * target's i_rwsem while get_user_pages() takes mmap_lock and faults the
 * appraised file's page in (filemap_fault(): invalidate_lock, page
 * lock).  The target is out of policy: IMA cannot hash a file opened
 * with O_DIRECT (ima_calc_file_hash(): -EINVAL).
 */
TEST_F_ENV(lockwalk, odirect_write_from_fresh_mapping)
{
	char target[PATH_MAX];
	char *map;
	int fd;

	snprintf(target, sizeof(target), "%s/%s", self->env.dir, target_name);
	fd = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fchown(fd, FOWNER_NOT_IN_POLICY, FOWNER_NOT_IN_POLICY));
	ASSERT_EQ(0, close(fd));

	map = map_shared(_metadata, self, PROT_READ, O_RDONLY);
	fd = open_file(_metadata, target, O_WRONLY | O_DIRECT);
	ASSERT_LE(0, fd);
	ASSERT_EQ(self->page, write(fd, map, self->page))
	{
		TH_LOG("O_DIRECT write from a fresh mapping: %s",
		       strerror(errno));
	}
	ASSERT_EQ(0, close(fd));
	ASSERT_EQ(0, munmap(map, self->page));

	expect_contents(_metadata, target, self->old);
	expect_unchanged(_metadata, self);
}

/*
 * An executable mapping: MMAP_CHECK appraisal in security_mmap_file(),
 * before vm_mmap_pgoff() takes mmap_lock; munmap() of a read-only one.
 */
TEST_F_ENV(lockwalk, mmap_exec)
{
	char *map;
	int fd;

	fd = open_file(_metadata, self->env.path, O_RDONLY);
	ASSERT_LE(0, fd);
	map = mmap(NULL, self->page, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, map)
	{
		TH_LOG("mmap PROT_EXEC of %s: %s", self->env.path,
		       strerror(errno));
	}
	ASSERT_EQ(0, close(fd));
	EXPECT_EQ(0, memcmp(self->old, map, self->page));
	ASSERT_EQ(0, munmap(map, self->page));
	expect_unchanged(_metadata, self);
}

/*
 * mprotect(+PROT_EXEC) runs ima_file_mprotect() under mmap_lock: it may
 * not appraise there (that would take i_rwsem and iint->mutex inside
 * mmap_lock), so where the cell appraises it refuses with EPERM and
 * audits cause=failed-mprotect; elsewhere it allows.
 */
TEST_F_ENV(lockwalk, mprotect_exec)
{
	int want = cell_appraises(&self->env.cell) ? EPERM : 0;
	char *map;
	int fd;

	ima_env_watch(_metadata, &self->env);
	fd = open_file(_metadata, self->env.path, O_RDONLY);
	ASSERT_LE(0, fd);
	map = mmap(NULL, self->page, PROT_READ, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, close(fd));
	ASSERT_EQ(want,
		  mprotect(map, self->page, PROT_READ | PROT_EXEC) ? errno : 0);
	ASSERT_EQ(0, munmap(map, self->page));
	expect_unchanged(_metadata, self);
	if (want)
		expect_only_logged(_metadata, &self->env.log, self->env.path,
				   "failed-mprotect");
	else
		expect_not_logged(_metadata, &self->env.log, self->env.path,
				  NULL);
}

/*
 * remap_file_pages() of an executable shared mapping: the mmap hook runs
 * between its two mmap_lock sections (6.1.192 has the upstream split),
 * then do_mmap() under mmap_lock replaces the mapping.  Only a mapping
 * of a file open for writing is VM_SHARED, which remap_file_pages()
 * requires, and such a mapping counts as a writable one: where a
 * func=MMAP_CHECK rule applies (the custom cells) IMA refuses to map the
 * file executable (enforce: EACCES) and audits cause=mmapped_writers, as
 * for any exec mapping of a file mapped writable.  Nothing is written,
 * so the label stays.
 */
TEST_F_ENV(lockwalk, remap_file_pages_exec)
{
	bool mmap_rule = self->env.cell.policy == POLICY_CUSTOM &&
			 cell_appraises(&self->env.cell);
	int want = mmap_rule && self->env.cell.mode == MODE_ENFORCE ? EACCES :
								      0;
	char *map;
	int fd;

	ima_env_watch(_metadata, &self->env);
	fd = open_file(_metadata, self->env.path, O_RDWR);
	ASSERT_LE(0, fd);
	map = mmap(NULL, self->page, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(want, remap_file_pages(map, self->page, 0, 0, 0) ? errno : 0)
	{
		TH_LOG("remap_file_pages: %s", strerror(errno));
	}
	EXPECT_EQ(0, memcmp(self->old, map, self->page));
	ASSERT_EQ(0, munmap(map, self->page));
	/* The last release is here, not in munmap(): one path per walk. */
	ASSERT_EQ(0, close(fd));
	expect_unchanged(_metadata, self);
	if (mmap_rule)
		expect_only_logged(_metadata, &self->env.log, self->env.path,
				   "mmapped_writers");
	else
		expect_not_logged(_metadata, &self->env.log, self->env.path,
				  NULL);
}

/*
 * A writable shared mapping holds the last reference: munmap() drops it
 * under mmap_lock, the final fput runs as task work after, and labels the
 * data written through the mapping.
 */
TEST_F_ENV(lockwalk, munmap_last_reference)
{
	char *map;

	map = map_shared(_metadata, self, PROT_READ | PROT_WRITE, O_RDWR);
	memcpy(map, self->new, self->page);
	expect_unchanged(_metadata, self);
	ASSERT_EQ(0, munmap(map, self->page));
	expect_relabelled(_metadata, self, self->new);
}

/*
 * mremap() moves the writable mapping (move_vma(): a second reference
 * taken, the old vma's dropped under mmap_lock); releasing the moved one
 * is the last writer.
 */
TEST_F_ENV(lockwalk, mremap_then_munmap)
{
	char *map, *moved, *hole;

	/* A free address to move to: reserve it, then let mremap take it. */
	hole = mmap(NULL, self->page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	ASSERT_NE(MAP_FAILED, hole);
	map = map_shared(_metadata, self, PROT_READ | PROT_WRITE, O_RDWR);
	moved = mremap(map, self->page, self->page,
		       MREMAP_MAYMOVE | MREMAP_FIXED, hole);
	ASSERT_EQ(hole, moved)
	{
		TH_LOG("mremap: %s", strerror(errno));
	}
	memcpy(moved, self->new, self->page);
	expect_unchanged(_metadata, self);
	ASSERT_EQ(0, munmap(moved, self->page));
	expect_relabelled(_metadata, self, self->new);
}

/*
 * A child writes through a mapping and exits without munmap():
 * exit_mmap() drops the last reference, exit_task_work() labels the file
 * before the parent can reap the child.
 */
TEST_F_ENV(lockwalk, exit_with_mapping)
{
	child_writes_mapping_and_exits(_metadata, self->env.path, self->new,
				       self->page);
	expect_relabelled(_metadata, self, self->new);
}

/*
 * fork() copies a writable mapping (dup_mmap(): both mmap_locks, a
 * reference per copy); the parent's munmap() is not the last release,
 * the child's exit is.
 */
TEST_F_ENV(lockwalk, fork_with_mapping)
{
	int go[2], status;
	char *map, c = 0;
	pid_t pid;

	ASSERT_EQ(0, pipe2(go, O_CLOEXEC));
	map = map_shared(_metadata, self, PROT_READ | PROT_WRITE, O_RDWR);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		memcpy(map, self->new, self->page);
		_exit(0);
	}
	close(go[0]);
	ASSERT_EQ(0, munmap(map, self->page));
	expect_unchanged(_metadata, self);
	ASSERT_EQ(1, write(go[1], &c, 1));
	close(go[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
	{
		TH_LOG("child status %#x", status);
	}
	expect_relabelled(_metadata, self, self->new);
}

TEST_HARNESS_MAIN
