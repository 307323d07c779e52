// SPDX-License-Identifier: GPL-2.0
/*
 * The deferred final fput: a file written through a shared mapping after
 * its descriptor was closed gets its new hash when the last mapping goes
 * (munmap, exit, or a forked child's mapping), without a lockdep splat.
 *
 * Layout, one per test, on the scratch ext4 filesystem:
 *
 * <scratch>/fput.XXXXXX/
 *     data     root:root 0755, OLD_CONTENTS, security.ima correct for it
 *     lockdep  root:root 0644, one page: see lockdep_learn_i_rwsem_mmap_lock()
 *
 * The 2012 design had ima_defer_fput(): the final __fput() of a mapped
 * file, reached from munmap() under mmap_sem, would take the inode lock to
 * rewrite security.ima, inverting i_mutex -> mmap_sem.  Since 3.6 every
 * final fput() of a user task is task work, run on the way back to user
 * space (or at exit, before the parent can reap the task), outside
 * mmap_lock: so when munmap() returns, or waitpid() reports the exit,
 * ima_file_free() has already rewritten security.ima.
 *
 * Expected: the hash of the content written through the mapping in every
 * cell that appraises (cell_appraises(): all but off under a custom
 * policy, where security.ima never changes), and no earlier than the last
 * reference's release.  Lockdep stays on (debug_locks 1) from setup to
 * teardown; the harness also fails the cell on any splat in the console.
 * A kernel without lockdep skips every case (not for this cell).
 */

#include "writer.h"

/* Same length: a shared mapping cannot grow the file. */
#define OLD_CONTENTS "IMA appraisal selftest: deferred fput, old contents\n"
#define MID_CONTENTS "IMA appraisal selftest: deferred fput, mid contents\n"
#define NEW_CONTENTS "IMA appraisal selftest: deferred fput, NEW contents\n"

static const char data_name[] = "data";
static const char lockdep_name[] = "lockdep";

FIXTURE(deferred_fput)
{
	/* env.path is data, env.good its security.ima when the test starts */
	struct ima_env env;
};

FIXTURE_SETUP(deferred_fput)
{
	char path[PATH_MAX];

	if (ima_env_setup(_metadata, &self->env, variant, "fput", data_name) ||
	    skip_without_lockdep(_metadata, &self->env))
		return;
	assert_lockdep_quiet(_metadata);
	snprintf(path, sizeof(path), "%s/%s", self->env.dir, lockdep_name);
	lockdep_learn_i_rwsem_mmap_lock(_metadata, path);
	self->env.good_len = create_labelled(_metadata, &self->env.cell,
					     self->env.path, OLD_CONTENTS,
					     strlen(OLD_CONTENTS),
					     self->env.good);
	ima_env_quiet(_metadata, &self->env);
}

FIXTURE_TEARDOWN(deferred_fput)
{
	ima_env_teardown(_metadata, &self->env);
	if (self->env.skip)
		return;
	/*
	 * A kernel that runs the final fput synchronously under mmap_lock
	 * makes lockdep report mmap_lock -> iint->mutex -> i_rwsem ->
	 * mmap_lock here.
	 */
	EXPECT_EQ(1, lockdep_debug_locks())
	{
		TH_LOG("lockdep reported a problem during this test: see the kernel log");
	}
}

/*
 * Opens data read-write, maps it shared and closes the descriptor: the
 * mapping holds the last reference to the file.  security.ima must not
 * have changed yet.
 */
static char *map_data(struct __test_metadata *const _metadata,
		      FIXTURE_DATA(deferred_fput) * self)
{
	char *map;
	int fd;

	fd = open(self->env.path, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd)
	{
		TH_LOG("open %s O_RDWR: %s", self->env.path, strerror(errno));
	}
	map = mmap(NULL, strlen(OLD_CONTENTS), PROT_READ | PROT_WRITE,
		   MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, close(fd));
	expect_ima_is(_metadata, self->env.path, self->env.good,
		      self->env.good_len);
	return map;
}

static void assert_new_label(struct __test_metadata *const _metadata,
			     FIXTURE_DATA(deferred_fput) * self,
			     const char *contents)
{
	size_t len;
	char *data = read_file(_metadata, self->env.path, &len);

	ASSERT_EQ(strlen(contents), len);
	ASSERT_EQ(0, memcmp(contents, data, len));
	free(data);
	expect_labelled_after_close(_metadata, &self->env.cell, self->env.path,
				    contents, self->env.good,
				    self->env.good_len);
}

/*
 * close(fd), write through the mapping, munmap(): the hash is there when
 * munmap() returns.  Fails on a kernel that defers ima_file_free() past
 * the return to user space (e.g. to delayed_fput's workqueue), or that
 * skips it for files released by munmap; with lockdep, on a kernel that
 * runs that final fput synchronously under mmap_lock (teardown).
 */
TEST_F_ENV(deferred_fput, munmap_last_reference)
{
	char *map;

	map = map_data(_metadata, self);
	memcpy(map, NEW_CONTENTS, strlen(NEW_CONTENTS));
	ASSERT_EQ(0, munmap(map, strlen(OLD_CONTENTS)));
	assert_new_label(_metadata, self, NEW_CONTENTS);
}

/*
 * A child maps, closes, writes and exits without munmap(): exit_mmap()
 * drops the last reference and exit_task_work() runs the final fput
 * before the parent can reap the child.  Fails on a kernel that leaves
 * the fput of an exiting task to a workqueue, or loses it.
 */
TEST_F_ENV(deferred_fput, exit_without_munmap)
{
	child_writes_mapping_and_exits(_metadata, self->env.path, NEW_CONTENTS,
				       strlen(NEW_CONTENTS));
	assert_new_label(_metadata, self, NEW_CONTENTS);
}

/*
 * The parent maps and forks, writes and unmaps: the child's copy of the
 * mapping still holds the file, so security.ima must not change yet.
 * Then the child writes and releases the last reference, by munmap() or
 * by exiting.
 */
static void check_child_last(struct __test_metadata *const _metadata,
			     FIXTURE_DATA(deferred_fput) * self,
			     bool child_munmaps)
{
	int go[2], done[2], status;
	char *map, c = 0;
	pid_t pid;

	ASSERT_EQ(0, pipe2(go, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(done, O_CLOEXEC));
	map = map_data(_metadata, self);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(go[1]);
		close(done[0]);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		memcpy(map, NEW_CONTENTS, strlen(NEW_CONTENTS));
		if (!child_munmaps)
			_exit(0);
		if (munmap(map, strlen(OLD_CONTENTS)))
			_exit(2);
		/* Report, then wait: the parent checks while we live. */
		if (write(done[1], &c, 1) != 1)
			_exit(3);
		read(go[0], &c, 1);
		_exit(0);
	}
	close(go[0]);
	close(done[1]);
	memcpy(map, MID_CONTENTS, strlen(MID_CONTENTS));
	ASSERT_EQ(0, munmap(map, strlen(OLD_CONTENTS)));
	/* Not the last reference: nothing rewritten. */
	expect_ima_is(_metadata, self->env.path, self->env.good,
		      self->env.good_len);

	ASSERT_EQ(1, write(go[1], &c, 1));
	if (child_munmaps) {
		ASSERT_EQ(1, read(done[0], &c, 1))
		{
			TH_LOG("the child failed before its munmap returned");
		}
		assert_new_label(_metadata, self, NEW_CONTENTS);
	}
	close(go[1]);
	close(done[0]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
	{
		TH_LOG("child status %#x", status);
	}
	assert_new_label(_metadata, self, NEW_CONTENTS);
}

/*
 * Fails on a kernel that rewrites security.ima at a release that is not
 * the last (the parent's munmap would label MID_CONTENTS), or that never
 * does it for the child's exit.
 */
TEST_F_ENV(deferred_fput, child_exits_last)
{
	check_child_last(_metadata, self, false);
}

/* As child_exits_last, the child's munmap() releasing the file. */
TEST_F_ENV(deferred_fput, child_unmaps_last)
{
	check_child_last(_metadata, self, true);
}

TEST_HARNESS_MAIN
