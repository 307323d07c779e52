// SPDX-License-Identifier: GPL-2.0
/*
 * An existing empty file: appraised like any other, its emptiness no
 * excuse for a missing label.
 *
 * Layout, one per test, on the scratch ext4 filesystem:
 *
 * <scratch>/empty.XXXXXX/
 *     data    root:root, 0 bytes, made as the variant says
 *
 * <scratch>/mknod.XXXXXX/ (new_empty_file)
 *     data    root:root 0644, made by mknod(S_IFREG) in the test, then
 *             written through its first open
 *
 * Only a new file, created in this boot and not yet closed by its writer,
 * may be opened without security.ima (IMA_NEW_FILE); once its creator
 * closed it, an empty file is a file like any other: with no label,
 * enforce EACCES, fix labels it with the digest of no data, log allows;
 * all three log cause=missing-hash (as off under appraise_tcb); off under
 * a custom policy does nothing.  With the right label it passes in every
 * mode, keeps it and logs nothing.
 */

#include "writer.h"

static const char data_name[] = "data";

/* How data came to be. */
enum empty_origin {
	/*
	 * mknod(S_IFREG), never opened, so never labelled, then evicted
	 * from the cache: an existing file, as after a reboot.  While
	 * cached it is new: ima_post_path_mknod() sets IMA_NEW_FILE where
	 * a rule matches MAY_ACCESS (appraise_tcb's do; the custom ones,
	 * mask=^MAY_READ, do not).
	 */
	ORIGIN_MKNOD_EVICTED,
	/* open(O_WRONLY | O_CREAT), closed, then security.ima removed */
	ORIGIN_WRITER_UNLABELLED,
	/* mknod(S_IFREG), then labelled with the digest of no data */
	ORIGIN_LABELLED,
};

FIXTURE(empty_file)
{
	/* env.path is data, env.good the digest of no data as its label */
	struct ima_env env;
};

FIXTURE_VARIANT(empty_file)
{
	enum empty_origin origin;
	/* security.ima of data when the test opens it */
	enum ima_state state;
};

/* clang-format off */
FIXTURE_VARIANT_ADD(empty_file, mknod_evicted_missing_hash)
{
	.origin = ORIGIN_MKNOD_EVICTED,
	.state = STATE_MISSING,
};

FIXTURE_VARIANT_ADD(empty_file, written_missing_hash)
{
	.origin = ORIGIN_WRITER_UNLABELLED,
	.state = STATE_MISSING,
};

FIXTURE_VARIANT_ADD(empty_file, correct_hash)
{
	.origin = ORIGIN_LABELLED,
	.state = STATE_CORRECT,
};
/* clang-format on */

FIXTURE_SETUP(empty_file)
{
	struct ima_env *env = &self->env;

	if (ima_env_setup(_metadata, env, variant, "empty", data_name))
		return;
	env->good_len = ima_hash_xattr(&env->cell, "", 0, env->good);

	switch (variant->origin) {
	case ORIGIN_MKNOD_EVICTED:
	case ORIGIN_LABELLED:
		ASSERT_EQ(0, mknod(env->path, S_IFREG | 0644, 0));
		expect_no_ima(_metadata, env->path);
		set_ima_state(_metadata, env->path, variant->state, env->good);
		if (variant->origin == ORIGIN_MKNOD_EVICTED)
			write_sysctl(_metadata, "/proc/sys/vm/drop_caches",
				     "2");
		break;
	case ORIGIN_WRITER_UNLABELLED:
		create_file(_metadata, env->path, "", 0);
		/* The writer's close labelled it wherever IMA appraises. */
		expect_labelled_after_close(_metadata, &env->cell, env->path,
					    "", NULL, 0);
		set_ima_state(_metadata, env->path, STATE_MISSING, env->good);
		break;
	}
}

FIXTURE_TEARDOWN(empty_file)
{
	ima_env_teardown(_metadata, &self->env);
}

/*
 * Fails on a kernel that exempts every empty file (not only new ones)
 * from needing a label, and on one that cannot hash an empty file.
 */
TEST_F_ENV(empty_file, open)
{
	struct ima_env *env = &self->env;

	ima_env_watch(_metadata, env);
	ASSERT_EQ(expected_errno(&env->cell, variant->state),
		  test_open(env->path, O_RDONLY))
	{
		TH_LOG("%s mode, %s policy: open of an existing empty file",
		       mode_names[env->cell.mode],
		       policy_names[env->cell.policy]);
	}
	expect_ima_after(_metadata, &env->cell, env->path, variant->state,
			 env->good);
	expect_audited(_metadata, &env->cell, &env->log, env->path,
		       variant->state);
}

/*
 * A new file: made by mknod(S_IFREG), which leaves it empty and without
 * security.ima, and opened for writing while its inode is still cached.
 * ima_post_path_mknod() marked it IMA_NEW_FILE where a rule matches
 * FILE_CHECK with MAY_ACCESS, so the open passes as the first open of an
 * O_CREAT-ed file would, and the last writer's close labels it with the
 * hash of what was written.  The builtin policy's mask-less "appraise
 * fowner=0" matches (off too, see cell_appraises()); the custom rules
 * (mask=^MAY_READ, ^MAY_WRITE) do not, so a custom cell never marks the
 * file new: not for those cells.
 */
FIXTURE(new_empty_file)
{
	/* env.path is data */
	struct ima_env env;
};

FIXTURE_SETUP(new_empty_file)
{
	if (ima_env_setup(_metadata, &self->env, variant, "mknod", data_name))
		return;
	if (self->env.cell.policy == POLICY_CUSTOM) {
		self->env.skip = true;
		CELL_SKIP(return, "the %s rules never match mknod's MAY_ACCESS",
				policy_names[self->env.cell.policy]);
	}
	ima_env_quiet(_metadata, &self->env);
}

FIXTURE_TEARDOWN(new_empty_file)
{
	ima_env_teardown(_metadata, &self->env);
}

/*
 * Every mode: the open for write succeeds (enforce included), no record
 * names the file, and after the close security.ima is the hash of what
 * was written where the cell appraises, absent where it does not.  Fails
 * on a kernel whose ima_post_path_mknod() does not mark the file new
 * (regressions/0074): enforce denies the open as missing-hash, the other
 * modes that appraise log it.
 */
TEST_F_ENV(new_empty_file, mknod_cached_open)
{
	char content[4096 + 1];
	int fd;

	memset(content, 'm', sizeof(content) - 1);
	content[sizeof(content) - 1] = '\0';
	ASSERT_EQ(0, mknod(self->env.path, S_IFREG | 0644, 0))
	{
		TH_LOG("mknod %s: %s", self->env.path, strerror(errno));
	}
	expect_no_ima(_metadata, self->env.path);
	fd = open(self->env.path, O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, fd)
	{
		TH_LOG("%s mode, %s policy: open for write of a file mknod() just made: %s",
		       mode_names[self->env.cell.mode],
		       policy_names[self->env.cell.policy], strerror(errno));
	}
	pwrite_all(_metadata, fd, content, sizeof(content) - 1, 0);
	/* Not labelled before the last writer's close. */
	expect_no_ima(_metadata, self->env.path);
	ASSERT_EQ(0, close(fd));
	expect_labelled_after_close(_metadata, &self->env.cell, self->env.path,
				    content, NULL, 0);
}

TEST_HARNESS_MAIN
