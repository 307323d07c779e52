// SPDX-License-Identifier: GPL-2.0
/*
 * truncate(2) and ftruncate(2) of an appraised file: the new contents are
 * appraised afresh.
 *
 * Layout, one per test, on the scratch ext4 filesystem:
 *
 * <scratch>/truncate.XXXXXX/
 *     data    root:root 0755, CONTENTS, security.ima correct for it,
 *             opened once by the setup unless the variant says not
 *             (appraised, the pass cached)
 *
 * truncate(2) changes the data with no open file, so no last writer
 * relabels it: security.ima keeps the digest of CONTENTS, which no longer
 * matches.  The next open must see that, as for any file changed behind
 * IMA's back: enforce EACCES, fix relabels with the digest of the new
 * contents, log allows; all three log cause=invalid-hash (so does off
 * under appraise_tcb, which appraises like log); off under a custom
 * policy does nothing.
 *
 * 6.1 re-appraises after the setattr (IMA_CHANGE_ATTR) but keeps
 * IMA_COLLECTED, and so compares the label with the digest of the old
 * contents: the stale pass is served, the label never repaired, nothing
 * logged (kernel-patches/0004 collects afresh when i_version moved).  A
 * file whose appraisal was not cached (no_cache) shows what the answer
 * must be.
 *
 * ftruncate(2) through a writer is a content change like a write: the
 * writer's close labels the new contents, and the next open passes in
 * every mode and logs nothing.
 */

#include "writer.h"

#define CONTENTS "IMA appraisal selftest: truncate, the contents labelled\n"

static const char data_name[] = "data";

FIXTURE(truncate)
{
	/* env.path is data, env.good its security.ima before the truncate */
	struct ima_env env;
	/* data's contents after the truncate, and their correct label */
	char *now;
	uint8_t now_good[IMA_XATTR_MAX];
	size_t now_good_len;
};

FIXTURE_VARIANT(truncate)
{
	/* the size data is truncated (or extended, with zeroes) to */
	off_t new_len;
	/* data was never opened before the truncate: nothing cached */
	bool no_cache;
};

/* clang-format off */
FIXTURE_VARIANT_ADD(truncate, shrunk)
{
	.new_len = 15,
};

FIXTURE_VARIANT_ADD(truncate, emptied)
{
	.new_len = 0,
};

FIXTURE_VARIANT_ADD(truncate, extended)
{
	.new_len = 4096 + 7,
};

FIXTURE_VARIANT_ADD(truncate, shrunk_no_cache)
{
	.new_len = 15,
	.no_cache = true,
};
/* clang-format on */

FIXTURE_SETUP(truncate)
{
	if (ima_env_setup(_metadata, &self->env, variant, "truncate",
			  data_name))
		return;
	self->env.good_len = create_labelled(_metadata, &self->env.cell,
					     self->env.path, CONTENTS,
					     strlen(CONTENTS), self->env.good);
	/* CONTENTS cut, or extended with zeroes, to new_len */
	self->now = calloc(1, variant->new_len + 1);
	ASSERT_NE(NULL, self->now);
	memcpy(self->now, CONTENTS,
	       variant->new_len < (off_t)strlen(CONTENTS) ? variant->new_len :
							    strlen(CONTENTS));
	self->now_good_len = ima_hash_xattr(&self->env.cell, self->now,
					    variant->new_len, self->now_good);
	if (!variant->no_cache)
		ASSERT_EQ(0, test_open(self->env.path, O_RDONLY));
}

FIXTURE_TEARDOWN(truncate)
{
	free(self->now);
	ima_env_teardown(_metadata, &self->env);
}

/*
 * Fails on a kernel that re-appraises a truncated file against the digest
 * of its old contents (6.1 without kernel-patches/0004): enforce allows,
 * fix does not relabel, nothing is logged.
 */
TEST_F_ENV(truncate, path)
{
	struct ima_env *env = &self->env;

	ASSERT_EQ(0, truncate(env->path, variant->new_len));
	expect_ima_is(_metadata, env->path, env->good, env->good_len);

	ima_env_watch(_metadata, env);
	ASSERT_EQ(expected_errno(&env->cell, STATE_WRONG),
		  test_open(env->path, O_RDONLY))
	{
		TH_LOG("%s mode, %s policy: open after truncate(2) to %lld bytes",
		       mode_names[env->cell.mode],
		       policy_names[env->cell.policy],
		       (long long)variant->new_len);
	}
	if (env->cell.mode == MODE_FIX)
		expect_ima_is(_metadata, env->path, self->now_good,
			      self->now_good_len);
	else
		expect_ima_is(_metadata, env->path, env->good, env->good_len);
	expect_audited(_metadata, &env->cell, &env->log, env->path,
		       STATE_WRONG);
}

/*
 * Fails on a kernel whose last writer does not relabel after ftruncate(2)
 * (the next open would find the old label), or that hashes wrongly.
 */
TEST_F_ENV(truncate, fd)
{
	struct ima_env *env = &self->env;
	int fd;

	ima_env_quiet(_metadata, env);
	fd = open(env->path, O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, fd)
	{
		TH_LOG("open %s O_WRONLY: %s", env->path, strerror(errno));
	}
	ASSERT_EQ(0, ftruncate(fd, variant->new_len));
	ASSERT_EQ(0, close(fd));
	if (cell_appraises(&env->cell))
		expect_ima_is(_metadata, env->path, self->now_good,
			      self->now_good_len);
	else
		expect_ima_is(_metadata, env->path, env->good, env->good_len);
	ASSERT_EQ(0, test_open(env->path, O_RDONLY));
}

TEST_HARNESS_MAIN
