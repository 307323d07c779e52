// SPDX-License-Identifier: GPL-2.0
/*
 * What is on disk decides: once the inode left the cache (drop_caches,
 * or a remount of the scratch filesystem), the file is appraised afresh,
 * and a change made underneath meanwhile is seen.
 *
 * Layout, one per test, on the scratch ext4 filesystem:
 *
 * <scratch>/ondisk.XXXXXX/
 *     data    root:root, CONTENTS (one block), security.ima correct for
 *             it, opened once by the test (appraised, the pass cached)
 *
 * The change underneath is a write to data's block on the scratch block
 * device itself (FIBMAP gives the block), which no filesystem or IMA hook
 * sees; ext4 does not checksum data blocks.  The cached state is dropped
 * first: with no open file, echo 3 > drop_caches evicts the inode (and
 * IMA's iint with it) and the page cache; umount does so for certain.
 *
 * Then: unchanged, data passes in every mode, keeps its label and logs
 * nothing; changed, its label no longer matches: enforce EACCES, fix
 * relabels it with the digest of what the disk holds, log allows; the
 * three log cause=invalid-hash (as off under appraise_tcb); off under a
 * custom policy does nothing.
 */

#include "common.h"

#include <sys/ioctl.h>
#include <sys/mount.h>

/* <linux/fs.h>, which clashes with <sys/mount.h> */
#define FIBMAP _IO(0x00, 1)

#define CONTENTS "IMA appraisal selftest: the label really on disk\n"

static const char data_name[] = "data";

FIXTURE(on_disk)
{
	/* env.path is data, env.good its correct security.ima */
	struct ima_env env;
	/* the scratch block device, and where data's block is on it */
	char dev[PATH_MAX];
	off_t block_off;
	size_t block_size;
};

FIXTURE_VARIANT(on_disk)
{
	/* umount and mount the scratch filesystem instead of drop_caches */
	bool remount;
	/* data's first byte is changed on the device while out of the cache */
	bool changed;
};

/* clang-format off */
FIXTURE_VARIANT_ADD(on_disk, drop_caches_unchanged)
{
	.remount = false,
	.changed = false,
};

FIXTURE_VARIANT_ADD(on_disk, drop_caches_changed)
{
	.remount = false,
	.changed = true,
};

FIXTURE_VARIANT_ADD(on_disk, remount_unchanged)
{
	.remount = true,
	.changed = false,
};

FIXTURE_VARIANT_ADD(on_disk, remount_changed)
{
	.remount = true,
	.changed = true,
};
/* clang-format on */

/* The device mounted at dir, from /proc/mounts. */
static void mount_source(struct __test_metadata *const _metadata,
			 const char *dir, char dev[PATH_MAX])
{
	char mnt[PATH_MAX], line[2 * PATH_MAX + 64];
	bool found = false;
	FILE *mounts;

	mounts = fopen("/proc/mounts", "re");
	ASSERT_NE(NULL, mounts);
	while (!found && fgets(line, sizeof(line), mounts))
		found = sscanf(line, "%4095s %4095s", dev, mnt) == 2 &&
			!strcmp(mnt, dir);
	fclose(mounts);
	ASSERT_TRUE(found)
	{
		TH_LOG("%s is not a mount point in /proc/mounts", dir);
	}
}

FIXTURE_SETUP(on_disk)
{
	struct ima_env *env = &self->env;
	struct stat st;
	int fd, block;

	if (ima_env_setup(_metadata, env, variant, "ondisk", data_name))
		return;
	mount_source(_metadata, scratch_dir(), self->dev);
	env->good_len = create_labelled(_metadata, &env->cell, env->path,
					CONTENTS, strlen(CONTENTS), env->good);

	fd = open(env->path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd)
	{
		TH_LOG("open %s: %s", env->path, strerror(errno));
	}
	/* Allocated and on disk: FIBMAP reports 0 for a delayed block. */
	ASSERT_EQ(0, fsync(fd));
	ASSERT_EQ(0, fstat(fd, &st));
	block = 0;
	ASSERT_EQ(0, ioctl(fd, FIBMAP, &block))
	{
		TH_LOG("FIBMAP %s: %s", env->path, strerror(errno));
	}
	ASSERT_NE(0, block);
	self->block_size = st.st_blksize;
	self->block_off = (off_t)block * st.st_blksize;
	ASSERT_EQ(0, close(fd));
}

FIXTURE_TEARDOWN(on_disk)
{
	ima_env_teardown(_metadata, &self->env);
}

/* Inverts the first byte of data's block on the device itself. */
static void change_underneath(struct __test_metadata *const _metadata,
			      FIXTURE_DATA(on_disk) * self)
{
	uint8_t *buf;
	int fd;

	ASSERT_EQ(0, posix_memalign((void **)&buf, self->block_size,
				    self->block_size));
	fd = open(self->dev, O_RDWR | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, fd)
	{
		TH_LOG("open %s: %s", self->dev, strerror(errno));
	}
	ASSERT_EQ(self->block_size,
		  pread(fd, buf, self->block_size, self->block_off));
	ASSERT_EQ(0, memcmp(buf, CONTENTS, strlen(CONTENTS)))
	{
		TH_LOG("%s: block at %lld of %s does not hold data",
		       self->env.path, (long long)self->block_off, self->dev);
	}
	buf[0] = ~buf[0];
	ASSERT_EQ(self->block_size,
		  pwrite(fd, buf, self->block_size, self->block_off));
	ASSERT_EQ(0, fsync(fd));
	ASSERT_EQ(0, close(fd));
	free(buf);
}

/*
 * Fails on a kernel whose appraisal verdicts outlive the inode (the
 * change underneath would go unseen) and, unchanged, on one that hashes
 * wrongly.
 */
TEST_F_ENV(on_disk, open)
{
	struct ima_env *env = &self->env;
	char changed[sizeof(CONTENTS)];
	uint8_t now[IMA_XATTR_MAX];

	if (!variant->changed)
		ima_env_quiet(_metadata, env);
	ASSERT_EQ(0, test_open(env->path, O_RDONLY));
	memcpy(changed, CONTENTS, sizeof(CONTENTS));
	changed[0] = ~changed[0];

	if (variant->remount) {
		ASSERT_EQ(0, umount(scratch_dir()))
		{
			TH_LOG("umount %s: %s", scratch_dir(), strerror(errno));
		}
		if (variant->changed)
			change_underneath(_metadata, self);
		ASSERT_EQ(0, mount(self->dev, scratch_dir(), "ext4", 0, NULL))
		{
			TH_LOG("mount %s on %s: %s", self->dev, scratch_dir(),
			       strerror(errno));
		}
	} else {
		if (variant->changed)
			change_underneath(_metadata, self);
		sync();
		write_sysctl(_metadata, "/proc/sys/vm/drop_caches", "3");
	}

	if (!variant->changed) {
		ASSERT_EQ(0, test_open(env->path, O_RDONLY));
		expect_ima_is(_metadata, env->path, env->good, env->good_len);
		return;
	}
	ima_env_watch(_metadata, env);
	ASSERT_EQ(expected_errno(&env->cell, STATE_WRONG),
		  test_open(env->path, O_RDONLY))
	{
		TH_LOG("%s mode, %s policy: open after the data changed on disk",
		       mode_names[env->cell.mode],
		       policy_names[env->cell.policy]);
	}
	if (env->cell.mode == MODE_FIX) {
		ima_hash_xattr(&env->cell, changed, strlen(changed), now);
		expect_ima_is(_metadata, env->path, now, env->good_len);
	} else {
		expect_ima_is(_metadata, env->path, env->good, env->good_len);
	}
	expect_audited(_metadata, &env->cell, &env->log, env->path,
		       STATE_WRONG);
}

TEST_HARNESS_MAIN
