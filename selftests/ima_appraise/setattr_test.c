// SPDX-License-Identifier: GPL-2.0
/*
 * Metadata changes (chmod, chown, ftruncate): security.ima is kept while the
 * file stays in the appraise policy and the next open is appraised afresh;
 * a chown out of the policy removes it under ima_appraise_setattr=remove.
 *
 * Layout, one per test, on the scratch ext4 filesystem:
 *
 * <scratch>/setattr.XXXXXX/
 *     data    root:root 0755, OLD_CONTENTS, security.ima correct for it,
 *             opened once by the setup (appraised, the pass cached)
 *
 * ima_inode_post_setattr() (6.1) returns at once unless ima_policy_flag
 * has IMA_APPRAISE (not so for off under a custom policy); otherwise it
 * sets IMA_CHANGE_ATTR, which makes the next process_measurement() drop
 * the cached appraisal, and if the file left the policy it clears
 * IMA_UPDATE_XATTR so that an open writer's close does not label it.  It
 * never removes security.ima; the 2012 semantics (remove it when the
 * change takes the file out of the policy) come with the patched kernel's
 * ima_appraise_setattr=remove (cell->setattr_remove), which stock kernels
 * ignore: the tests that expect removal fail there.
 *
 * In or out of the policy: the base custom rules are "fowner=0", so
 * chown root -> FOWNER_NOT_IN_POLICY takes data out.  The builtin (and
 * legacy) appraise_tcb policy has a "func=POLICY_CHECK" rule, and for
 * POST_SETATTR every func= rule matches (ima_match_rules()), so there
 * every regular file stays in policy for setattr: security.ima is kept.
 */

#include "writer.h"

#define OLD_CONTENTS "IMA appraisal selftest: setattr, old contents\n"
#define NEW_CONTENTS "IMA appraisal selftest: setattr, NEW contents\n"
/* ftruncate() keeps the first TRUNC_LEN bytes of OLD_CONTENTS */
#define TRUNC_LEN 15

static const char data_name[] = "data";

FIXTURE(setattr)
{
	/* env.path is data, env.good its security.ima when the test starts */
	struct ima_env env;
};

FIXTURE_SETUP(setattr)
{
	if (ima_env_setup(_metadata, &self->env, variant, "setattr", data_name))
		return;
	self->env.good_len = create_labelled(_metadata, &self->env.cell,
					     self->env.path, OLD_CONTENTS,
					     strlen(OLD_CONTENTS),
					     self->env.good);
	ima_env_quiet(_metadata, &self->env);
	ASSERT_EQ(0, test_open(self->env.path, O_RDONLY));
}

FIXTURE_TEARDOWN(setattr)
{
	ima_env_teardown(_metadata, &self->env);
}

/*
 * Whether a chown out of the fowner=0 rules must remove security.ima in
 * this cell: custom policy (builtin keeps every file in policy),
 * ima_appraise_setattr=remove, and IMA appraising at all.
 */
static bool chown_out_removes(const struct cell *cell)
{
	return cell->policy == POLICY_CUSTOM && cell->setattr_remove &&
	       cell_appraises(cell);
}

/*
 * chown root -> FOWNER_NOT_IN_POLICY: removed where chown_out_removes(),
 * else kept byte for byte; open is allowed everywhere (not in policy, or
 * correct).  Fails on stock kernels in custom cells with
 * ima_appraise_setattr=remove (no removal); fails on a kernel that
 * removes security.ima while the file stays in policy (builtin cells) or
 * without being asked to (6.1 semantics: kept).
 */
TEST_F_ENV(setattr, chown_out_of_policy)
{
	ASSERT_EQ(0, chown(self->env.path, FOWNER_NOT_IN_POLICY, -1));
	if (chown_out_removes(&self->env.cell))
		expect_no_ima(_metadata, self->env.path);
	else
		expect_ima_is(_metadata, self->env.path, self->env.good,
			      self->env.good_len);
	ASSERT_EQ(0, test_open(self->env.path, O_RDONLY));
}

/*
 * Group change and chmod: root still owns the file, it stays in policy,
 * security.ima is kept everywhere.  Fails on a kernel that removes it on
 * any metadata change (e.g. an inverted in-policy test in the setattr
 * patch).
 */
TEST_F_ENV(setattr, chown_group_keeps)
{
	ASSERT_EQ(0, chown(self->env.path, -1, FOWNER_NOT_IN_POLICY));
	expect_ima_is(_metadata, self->env.path, self->env.good,
		      self->env.good_len);
	ASSERT_EQ(0, test_open(self->env.path, O_RDONLY));
}

TEST_F_ENV(setattr, chmod_keeps)
{
	ASSERT_EQ(0, chmod(self->env.path, 0700));
	expect_ima_is(_metadata, self->env.path, self->env.good,
		      self->env.good_len);
	ASSERT_EQ(0, test_open(self->env.path, O_RDONLY));
}

/*
 * A writer open, the file written, then chowned out of the policy through
 * the descriptor, then closed: in custom cells post_setattr cleared
 * IMA_UPDATE_XATTR, so the close does not label the new content (the old
 * value stays, or is gone under ima_appraise_setattr=remove); under the
 * builtin policy the file is still in policy and the close labels it.
 * Fails on a kernel whose post_setattr no longer clears IMA_UPDATE_XATTR
 * (custom cells get the new hash), and on stock with
 * ima_appraise_setattr=remove.
 */
TEST_F_ENV(setattr, chown_out_with_open_writer)
{
	int fd;

	fd = open(self->env.path, O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	pwrite_all(_metadata, fd, NEW_CONTENTS, strlen(NEW_CONTENTS), 0);
	ASSERT_EQ(0, fchown(fd, FOWNER_NOT_IN_POLICY, -1));
	ASSERT_EQ(0, close(fd));
	if (chown_out_removes(&self->env.cell))
		expect_no_ima(_metadata, self->env.path);
	else if (self->env.cell.policy == POLICY_CUSTOM)
		expect_ima_is(_metadata, self->env.path, self->env.good,
			      self->env.good_len);
	else
		expect_labelled_after_close(_metadata, &self->env.cell,
					    self->env.path, NEW_CONTENTS,
					    self->env.good, self->env.good_len);
}

/*
 * A metadata change forces a fresh appraisal (IMA_CHANGE_ATTR), under the
 * rules that match the file now.  Observable only where the rules differ:
 * process_measurement() keeps IMA_COLLECTED across the reset and re-checks
 * the cached digest, so a chmod (no rule looks at the mode) or a
 * truncate(2) (content changed behind the cache) is appraised again with
 * the same verdict.  So: data passed and is cached under the fowner=0
 * rule; chown to FOWNER_SETATTR_IMASIG moves it under an
 * appraise_type=imasig rule, and its hash no longer suffices: enforce
 * EACCES, fix and log allow, all three log cause=IMA-signature-required;
 * off under a custom policy allows silently.  security.ima is kept
 * (fix rewrites the same hash: it never replaces one with a signature, and
 * here there is none to keep).  Fails on a kernel that ignores
 * IMA_CHANGE_ATTR (the stale cached pass is served, nothing is logged).
 * Custom cells only: the builtin policy cannot be extended.
 */
TEST_F_ENV(setattr, chown_reappraises)
{
	char rule[256], uuid[37];

	if (self->env.cell.policy != POLICY_CUSTOM)
		CELL_SKIP(
			return,
			      "needs an appraise_type=imasig rule for fowner=%d, and a %s policy cannot be extended",
			      FOWNER_SETATTR_IMASIG,
			      policy_names[self->env.cell.policy]);
	scratch_fsuuid(_metadata, scratch_dir(), uuid);
	snprintf(
		rule, sizeof(rule),
		"appraise func=FILE_CHECK fsuuid=%s fowner=%d appraise_type=imasig",
		uuid, FOWNER_SETATTR_IMASIG);
	policy_add_rule(_metadata, rule);
	ASSERT_EQ(0, test_open(self->env.path, O_RDONLY));
	/* the setup's open and this one passed, not repaired */
	expect_not_logged(_metadata, &self->env.log, self->env.path, NULL);

	ASSERT_EQ(0, chown(self->env.path, FOWNER_SETATTR_IMASIG, -1));
	ima_env_watch(_metadata, &self->env);
	ASSERT_EQ(self->env.cell.mode == MODE_ENFORCE ? EACCES : 0,
		  test_open(self->env.path, O_RDONLY))
	{
		TH_LOG("%s mode: open after the chown into an imasig rule",
		       mode_names[self->env.cell.mode]);
	}
	expect_cause_logged(_metadata, &self->env.cell, &self->env.log,
			    self->env.path, "IMA-signature-required");
	expect_ima_is(_metadata, self->env.path, self->env.good,
		      self->env.good_len);
}

/*
 * ftruncate() through a writer: a setattr and a content change; the
 * writer's close labels the truncated content (i_version changed).  Fails
 * on a kernel whose post_setattr clears IMA_UPDATE_XATTR for files that
 * stay in policy.
 */
TEST_F_ENV(setattr, ftruncate_relabels)
{
	char truncated[TRUNC_LEN + 1];
	int fd;

	memcpy(truncated, OLD_CONTENTS, TRUNC_LEN);
	truncated[TRUNC_LEN] = '\0';
	fd = open(self->env.path, O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, TRUNC_LEN));
	expect_ima_is(_metadata, self->env.path, self->env.good,
		      self->env.good_len);
	ASSERT_EQ(0, close(fd));
	expect_labelled_after_close(_metadata, &self->env.cell, self->env.path,
				    truncated, self->env.good,
				    self->env.good_len);
}

TEST_HARNESS_MAIN
