// SPDX-License-Identifier: GPL-2.0
/*
 * A filesystem without xattr support under an appraise rule: its files
 * can carry no security.ima, so none can pass.
 *
 * Layout, one per test:
 *
 * <scratch>/noxattr.XXXXXX/
 *     ramfs/    a ramfs mount (no xattr handlers, no IOP_XATTR)
 *         data  CONTENTS, owned by the variant's uid
 *
 * IMA logs nothing for such a file (ima_appraise_measurement() returns
 * INTEGRITY_UNKNOWN before its audit call), in any mode: the test's
 * environment is quiet (ima_env_quiet(): no record names a file of it).
 *
 * The rule "appraise func=FILE_CHECK mask=^MAY_READ fsmagic=<ramfs>
 * fowner=FOWNER_NOXATTR" (custom cells only: appraise_tcb says
 * dont_appraise fsmagic=ramfs, and cannot be extended) covers data when
 * it is owned by FOWNER_NOXATTR.  ima_appraise_measurement() returns
 * INTEGRITY_UNKNOWN for an inode without IOP_XATTR: enforce must deny
 * the open with EACCES; fix cannot label it (nothing to write to) and
 * allows, as log does; off does nothing.  Owned by root, data is in no
 * rule (the base rules are fsuuid=<scratch>) and opens in every mode.
 */

#include "common.h"

#include <sys/mount.h>

#define RAMFS_MAGIC 0x858458f6

#define CONTENTS "IMA appraisal selftest: no xattr support\n"

static const char ramfs_name[] = "ramfs";

FIXTURE(no_xattr)
{
	/* env.path is the ramfs mount point */
	struct ima_env env;
	/* its file data */
	char path[PATH_MAX + 8];
	/* ramfs is mounted on env.path */
	bool mounted;
};

FIXTURE_VARIANT(no_xattr)
{
	/* owner of data: FOWNER_NOXATTR puts it under the rule */
	uid_t owner;
};

/* clang-format off */
FIXTURE_VARIANT_ADD(no_xattr, in_policy)
{
	.owner = FOWNER_NOXATTR,
};

FIXTURE_VARIANT_ADD(no_xattr, not_in_policy)
{
	.owner = 0,
};
/* clang-format on */

FIXTURE_SETUP(no_xattr)
{
	struct ima_env *env = &self->env;
	uint8_t buf[IMA_XATTR_MAX];
	char rule[256];

	if (ima_env_setup(_metadata, env, variant, "noxattr", ramfs_name))
		return;
	if (env->cell.policy != POLICY_CUSTOM) {
		env->skip = true;
		CELL_SKIP(
			return,
			      "needs an appraise rule for ramfs, and a %s policy says dont_appraise fsmagic=ramfs",
			      policy_names[env->cell.policy]);
	}
	snprintf(
		rule, sizeof(rule),
		"appraise func=FILE_CHECK mask=^MAY_READ fsmagic=0x%x fowner=%d",
		RAMFS_MAGIC, FOWNER_NOXATTR);
	policy_add_rule(_metadata, rule);

	ASSERT_EQ(0, mkdir(env->path, 0755));
	ASSERT_EQ(0, mount("ramfs", env->path, "ramfs", 0, NULL))
	{
		TH_LOG("mount ramfs on %s: %s", env->path, strerror(errno));
	}
	self->mounted = true;
	snprintf(self->path, sizeof(self->path), "%s/data", env->path);
	create_file(_metadata, self->path, CONTENTS, strlen(CONTENTS));
	ASSERT_EQ(0, chown(self->path, variant->owner, variant->owner));
	/* The premise: nothing can be labelled here. */
	ASSERT_EQ(-EOPNOTSUPP, get_ima(self->path, buf, sizeof(buf)));
}

FIXTURE_TEARDOWN(no_xattr)
{
	if (self->mounted)
		EXPECT_EQ(0, umount(self->env.path));
	ima_env_teardown(_metadata, &self->env);
}

/*
 * Fails on a kernel that passes files it cannot appraise (enforce would
 * allow), on one that appraises files no rule covers, and on one that
 * logs their appraisal (regressions/0057).
 */
TEST_F_ENV(no_xattr, open)
{
	struct ima_env *env = &self->env;
	int want = 0;

	ima_env_quiet(_metadata, env);
	if (variant->owner == FOWNER_NOXATTR && env->cell.mode == MODE_ENFORCE)
		want = EACCES;
	ASSERT_EQ(want, test_open(self->path, O_RDONLY))
	{
		TH_LOG("%s mode: open of a ramfs file owned by %d",
		       mode_names[env->cell.mode], variant->owner);
	}
	/*
	 * Opened again, to the same verdict.  (INTEGRITY_UNKNOWN is not
	 * cached at all here, so this cannot tell a cached failure from
	 * none: open_file.*.read's second read does.)
	 */
	EXPECT_EQ(want, test_open(self->path, O_RDONLY));
}

TEST_HARNESS_MAIN
