// SPDX-License-Identifier: GPL-2.0
/*
 * IMA appraisal on open(2): a root-owned file with no, a wrong or the
 * correct security.ima, opened for reading, writing, both, and O_TRUNC.
 *
 * Layout, one per test, on the scratch ext4 filesystem:
 *
 * <scratch>/open.XXXXXX/
 *     data    root:root 0755, security.ima as the variant says
 *
 * <scratch>/direct.XXXXXX/ (open_direct)
 *     data    root:root 0755 (correct_hash) or FOWNER_DIRECTIO:root
 *             (permitted), 4 KiB, its correct security.ima
 *
 * Expected, whatever the policy source (builtin, legacy or custom):
 *   enforce: missing/wrong -> EACCES + audit cause=, security.ima untouched
 *   fix:     allowed, security.ima rewritten to the exact correct value
 *            (01 <sha1>, or 04 04 <sha256> with ima_hash=sha256) + audit
 *   log:     allowed, security.ima untouched + audit
 *   off:     allowed, security.ima untouched, no audit record under a
 *            custom policy (under appraise_tcb off still appraises and
 *            logs, see common.h)
 *
 * The *_other_algo variants label the file with a digest of the algorithm
 * the cell does not use (sha256 in a SHA-1 cell and the reverse): IMA
 * re-hashes with the algorithm of the xattr it finds (ima_get_hash_algo()),
 * so fix mode repairs a wrong one in that algorithm, not in ima_hash=.
 *
 * Broken kernels: FILE_CHECK not appraised (every bad-file open succeeds
 * in enforce), fix mode that does not write or writes a digest of the
 * wrong algorithm or length, log mode treated as off (no audit record),
 * an O_TRUNC that truncates before appraisal denies the open.
 */

#include "common.h"

static const char data_name[] = "data";
static const char contents[] = "IMA appraisal selftest: open(2)\n";

FIXTURE(open_file)
{
	struct ima_env env;
};

FIXTURE_VARIANT(open_file)
{
	/* security.ima when the test opens the file */
	enum ima_state state;
	/* labelled with the digest algorithm the cell does not default to */
	bool other_algo;
};

/* clang-format off */
FIXTURE_VARIANT_ADD(open_file, missing_hash)
{
	.state = STATE_MISSING,
};

FIXTURE_VARIANT_ADD(open_file, wrong_hash)
{
	.state = STATE_WRONG,
};

FIXTURE_VARIANT_ADD(open_file, correct_hash)
{
	.state = STATE_CORRECT,
};

FIXTURE_VARIANT_ADD(open_file, wrong_hash_other_algo)
{
	.state = STATE_WRONG,
	.other_algo = true,
};

FIXTURE_VARIANT_ADD(open_file, correct_hash_other_algo)
{
	.state = STATE_CORRECT,
	.other_algo = true,
};
/* clang-format on */

FIXTURE_SETUP(open_file)
{
	struct cell algo_cell;

	if (ima_env_setup(_metadata, &self->env, variant, "open", data_name))
		return;
	create_file(_metadata, self->env.path, contents, sizeof(contents) - 1);
	algo_cell = self->env.cell;
	if (variant->other_algo)
		algo_cell.hash_algo = self->env.cell.hash_algo ==
						      HASH_ALGO_SHA1 ?
					      HASH_ALGO_SHA256 :
					      HASH_ALGO_SHA1;
	ima_hash_xattr(&algo_cell, contents, sizeof(contents) - 1,
		       self->env.good);
	set_ima_state(_metadata, self->env.path, variant->state,
		      self->env.good);
}

FIXTURE_TEARDOWN(open_file)
{
	ima_env_teardown(_metadata, &self->env);
}

/*
 * Opens the file with flags and checks the verdict, the xattr and the log.
 *
 * A wrong label of the other algorithm is repaired in that algorithm, but
 * if the file is open for writing the repair itself (a setxattr: a new
 * i_version) makes the close a last writer's that "changed" the file, and
 * ima_update_xattr() relabels it with ima_hash_algo: the cell's algorithm.
 */
static void check_open(struct __test_metadata *const _metadata,
		       FIXTURE_DATA(open_file) * self,
		       const FIXTURE_VARIANT(open_file) * variant, int flags)
{
	const uint8_t *good = self->env.good;
	uint8_t relabelled[IMA_XATTR_MAX];

	if (variant->other_algo && variant->state == STATE_WRONG &&
	    self->env.cell.mode == MODE_FIX &&
	    (flags & O_ACCMODE) != O_RDONLY) {
		ima_hash_xattr(&self->env.cell, contents, sizeof(contents) - 1,
			       relabelled);
		good = relabelled;
	}
	ima_env_watch(_metadata, &self->env);
	ASSERT_EQ(expected_errno(&self->env.cell, variant->state),
		  test_open(self->env.path, flags));
	expect_ima_after(_metadata, &self->env.cell, self->env.path,
			 variant->state, good);
	expect_audited(_metadata, &self->env.cell, &self->env.log,
		       self->env.path, variant->state);
}

/*
 * And a second read: IMA caches only a pass (ima_appraise_measurement()
 * sets IMA_*_APPRAISED only then), so every access to a bad file is
 * appraised, decided and logged again.  In fix mode the first read
 * repaired the label, and the second passes without a record.  Broken
 * kernel: a failure cached like a pass, answered by
 * ima_get_cache_status() without a record (regressions/0058).
 */
TEST_F_ENV(open_file, read)
{
	enum ima_state now;

	check_open(_metadata, self, variant, O_RDONLY);
	now = self->env.cell.mode == MODE_FIX ? STATE_CORRECT : variant->state;
	ima_env_watch(_metadata, &self->env);
	ASSERT_EQ(expected_errno(&self->env.cell, now),
		  test_open(self->env.path, O_RDONLY))
	{
		TH_LOG("the second read");
	}
	expect_ima_after(_metadata, &self->env.cell, self->env.path, now,
			 self->env.good);
	expect_audited(_metadata, &self->env.cell, &self->env.log,
		       self->env.path, now);
}

/* Opening for write is appraised too: a bad file cannot be rewritten. */
TEST_F_ENV(open_file, write)
{
	check_open(_metadata, self, variant, O_WRONLY);
}

TEST_F_ENV(open_file, read_write)
{
	check_open(_metadata, self, variant, O_RDWR);
}

/*
 * O_TRUNC on an existing file: do_open() calls ima_file_check() before
 * handle_truncate(), so the appraisal sees the old contents.  A file with
 * a bad label is denied in enforce and keeps its contents (it is not an
 * O_CREAT-ed file: FMODE_CREATED, hence IMA_NEW_FILE, is unset and a
 * missing hash is not excused).  Where the open is allowed, the file is
 * truncated, and the close is the last writer's: ima_update_xattr() labels
 * the now empty file with the cell's algorithm -- but only if the open's
 * appraisal passed (a correct label, or fix mode repaired it); in log mode
 * a failed appraisal leaves the old label, and with IMA off (custom
 * policy) nothing at all is updated, so even a correct label goes stale.
 */
TEST_F_ENV(open_file, trunc)
{
	bool denied = expected_errno(&self->env.cell, variant->state);
	bool passed = variant->state == STATE_CORRECT ||
		      self->env.cell.mode == MODE_FIX;
	uint8_t empty[IMA_XATTR_MAX];
	size_t empty_len, len;
	struct stat st;

	ima_env_watch(_metadata, &self->env);
	ASSERT_EQ(denied ? EACCES : 0,
		  test_open(self->env.path, O_WRONLY | O_TRUNC));
	ASSERT_EQ(0, stat(self->env.path, &st));
	len = denied ? sizeof(contents) - 1 : 0;
	EXPECT_EQ(len, st.st_size)
	{
		TH_LOG("%s mode: %s is %lld bytes after O_TRUNC, expected %zu",
		       mode_names[self->env.cell.mode], self->env.path,
		       (long long)st.st_size, len);
	}
	expect_audited(_metadata, &self->env.cell, &self->env.log,
		       self->env.path, variant->state);
	if (!denied && passed && cell_appraises(&self->env.cell)) {
		empty_len = ima_hash_xattr(&self->env.cell, "", 0, empty);
		expect_ima_is(_metadata, self->env.path, empty, empty_len);
	} else {
		/* denied, failed in log mode, or IMA off: the old label */
		expect_ima_kept(_metadata, self->env.path, variant->state,
				self->env.good);
	}
}

/*
 * O_DIRECT.  IMA cannot hash a file opened O_DIRECT: ima_calc_file_hash()
 * refuses it (-EINVAL, the same with or without DAX), and
 * ima_collect_measurement() audits collect_data with
 * cause=failed(directio), naming the file by its base name and inode.
 * process_measurement() then skips the appraisal and keeps the error:
 * enforce denies the open, whatever the label, and fix and log let it
 * through; no mode repairs or rewrites a label it could not check.  A
 * failure is not cached, so a second O_DIRECT open is refused and
 * logged again, and an open without O_DIRECT appraises the file as
 * usual: the label is correct, it passes without a record, and its pass
 * is cached, which a later O_DIRECT open then gets without a hash.
 *
 * Only an appraise rule with permit_directio lets the O_DIRECT open
 * through in enforce (process_measurement() clears the error after the
 * collect_data record, which is still written: the file was not hashed).
 * That rule is a custom policy's: permitted is for those cells only.
 * Where the cell does not appraise, nothing is hashed or logged.
 *
 * Broken kernels: every O_DIRECT open let through (regressions/0075,
 * correct_hash in enforce), permit_directio dropped from the rule
 * (regressions/0076, permitted in enforce).
 */
FIXTURE(open_direct)
{
	/* env.path is data, env.good its security.ima */
	struct ima_env env;
};

FIXTURE_VARIANT(open_direct)
{
	/* owned by FOWNER_DIRECTIO, whose rule says permit_directio */
	bool permitted;
};

/* clang-format off */
FIXTURE_VARIANT_ADD(open_direct, correct_hash)
{
	.permitted = false,
};

FIXTURE_VARIANT_ADD(open_direct, permitted)
{
	.permitted = true,
};
/* clang-format on */

FIXTURE_SETUP(open_direct)
{
	struct ima_env *env = &self->env;
	char content[4096], rule[256], uuid[37];

	if (ima_env_setup(_metadata, env, variant, "direct", data_name))
		return;
	if (variant->permitted && env->cell.policy != POLICY_CUSTOM) {
		env->skip = true;
		CELL_SKIP(
			return,
			      "permit_directio needs a rule of its own, and a %s policy cannot be extended",
			      policy_names[env->cell.policy]);
	}
	memset(content, 'd', sizeof(content));
	create_file(_metadata, env->path, content, sizeof(content));
	env->good_len =
		ima_hash_xattr(&env->cell, content, sizeof(content), env->good);
	if (variant->permitted) {
		scratch_fsuuid(_metadata, scratch_dir(), uuid);
		snprintf(
			rule, sizeof(rule),
			"appraise func=FILE_CHECK fsuuid=%s fowner=%d permit_directio",
			uuid, FOWNER_DIRECTIO);
		policy_add_rule(_metadata, rule);
		/* Owner first: a chown may remove the label (setattr=remove). */
		ASSERT_EQ(0, chown(env->path, FOWNER_DIRECTIO, 0));
	}
	set_ima_state(_metadata, env->path, STATE_CORRECT, env->good);
}

FIXTURE_TEARDOWN(open_direct)
{
	ima_env_teardown(_metadata, &self->env);
}

/*
 * Where the cell appraises, a collect_data record with
 * cause=failed(directio) names the file, by its inode, and no record of
 * the file says anything else; where it does not, no record names it.
 */
static void expect_directio_logged(struct __test_metadata *const _metadata,
				   struct ima_env *env)
{
	static const char cause[] = "cause=failed(directio) ";
	char inode[96], name[PATH_MAX + 8];

	if (!cell_appraises(&env->cell)) {
		expect_not_logged(_metadata, &env->log, env->path, NULL);
		return;
	}
	ASSERT_TRUE(audit_inode(env->path, inode, sizeof(inode)));
	audit_sync(_metadata, &env->log);
	EXPECT_TRUE(audit_has(&env->log, inode,
			      "op=collect_data cause=failed(directio) "))
	{
		TH_LOG("%s mode: no collect_data %sfor %s (%s) in:\n%s",
		       mode_names[env->cell.mode], cause, env->path, inode,
		       env->log.text);
	}
	EXPECT_FALSE(audit_has_but(&env->log, inode, cause) ||
		     audit_has_but(&env->log,
				   audit_name(env->path, name, sizeof(name)),
				   cause))
	{
		TH_LOG("a record of %s without %sin:\n%s", env->path, cause,
		       env->log.text);
	}
	expect_none_lost(_metadata, &env->log);
}

TEST_F_ENV(open_direct, read)
{
	struct ima_env *env = &self->env;
	bool denied = env->cell.mode == MODE_ENFORCE && !variant->permitted;
	int i;

	ima_env_watch(_metadata, env);
	for (i = 1; i <= 2; i++) {
		ASSERT_EQ(denied ? EACCES : 0,
			  test_open(env->path, O_RDONLY | O_DIRECT))
		{
			TH_LOG("%s mode, %s policy: O_DIRECT open %d of a file IMA cannot hash",
			       mode_names[env->cell.mode],
			       policy_names[env->cell.policy], i);
		}
	}
	expect_ima_is(_metadata, env->path, env->good, env->good_len);
	expect_directio_logged(_metadata, env);

	/* Appraised without O_DIRECT: a pass, cached and unlogged. */
	ima_env_watch(_metadata, env);
	ASSERT_EQ(0, test_open(env->path, O_RDONLY))
	{
		TH_LOG("the open without O_DIRECT");
	}
	ASSERT_EQ(0, test_open(env->path, O_RDONLY | O_DIRECT))
	{
		TH_LOG("an O_DIRECT open after a cached pass");
	}
	expect_ima_is(_metadata, env->path, env->good, env->good_len);
	expect_not_logged(_metadata, &env->log, env->path, NULL);
}

TEST_HARNESS_MAIN
