// SPDX-License-Identifier: GPL-2.0
/*
 * security.ima protection: setting or removing it needs CAP_SYS_ADMIN,
 * malformed values are refused, and any change makes the next open be
 * appraised afresh.
 *
 * Layout, one per test, on the scratch ext4 filesystem:
 *
 * <scratch>/xattr.XXXXXX/
 *     data    root:root 0755, CONTENTS, security.ima correct for it
 *
 * ima_inode_setxattr()/ima_inode_removexattr() run whatever the mode and
 * policy (they are not gated by ima_policy_flag), after
 * cap_inode_setxattr()'s own CAP_SYS_ADMIN check for security.*:
 *   without CAP_SYS_ADMIN        EPERM (commoncap or IMA: the tests
 *                                cannot tell which, see below)
 *   empty value                  EINVAL
 *   type >= IMA_XATTR_LAST (7)   EINVAL
 *   an algorithm not built in    EACCES (validate_hash_algo(), not EINVAL),
 *                                audit cause=unavailable-hash-algorithm
 * and in every case the old value stays, byte for byte.
 *
 * A change that is allowed resets the cached appraisal (IMA_CHANGE_XATTR),
 * so the next open sees the new value, per mode: enforce denies a wrong
 * or missing one, fix repairs it, log and off under the builtin policy
 * allow and log it, off under a custom policy does nothing at all.
 */

#include <linux/capability.h>
#include <sys/syscall.h>

#include "writer.h"

#define CONTENTS "IMA appraisal selftest: security.ima protection\n"
/* enum hash_algo: Whirlpool-256, which the kernels under test lack. */
#define HASH_ALGO_WP_256 11
/* enum evm_ima_xattr_type: IMA_VERITY_DIGSIG + 1 */
#define IMA_XATTR_LAST 7

static const char data_name[] = "data";

FIXTURE(ima_xattr)
{
	struct ima_env env;
	uint8_t wrong[IMA_XATTR_MAX];
};

FIXTURE_SETUP(ima_xattr)
{
	if (ima_env_setup(_metadata, &self->env, variant, "xattr", data_name))
		return;
	self->env.good_len = create_labelled(_metadata, &self->env.cell,
					     self->env.path, CONTENTS,
					     strlen(CONTENTS), self->env.good);
	ima_env_quiet(_metadata, &self->env);
	ima_wrong_xattr(self->env.good, self->wrong);
}

FIXTURE_TEARDOWN(ima_xattr)
{
	ima_env_teardown(_metadata, &self->env);
}

/* Drops CAP_SYS_ADMIN from the effective and permitted sets; 0 or errno. */
static int drop_cap_sys_admin(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data))
		return errno;
	data[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective &=
		~CAP_TO_MASK(CAP_SYS_ADMIN);
	data[CAP_TO_INDEX(CAP_SYS_ADMIN)].permitted &=
		~CAP_TO_MASK(CAP_SYS_ADMIN);
	if (syscall(SYS_capset, &hdr, data))
		return errno;
	return 0;
}

/*
 * Runs set (value != NULL) or remove of security.ima of path in a child
 * without CAP_SYS_ADMIN; returns 0 or the errno it got.  The child stays
 * root with every other capability.
 */
static int change_without_cap(struct __test_metadata *const _metadata,
			      const char *path, const uint8_t *value,
			      size_t len)
{
	int status, err;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		err = drop_cap_sys_admin();
		if (err)
			_exit(200);
		if (value)
			err = setxattr(path, XATTR_IMA, value, len, 0);
		else
			err = removexattr(path, XATTR_IMA);
		_exit(err ? errno : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 200)
	{
		TH_LOG("child could not drop CAP_SYS_ADMIN (status %#x)",
		       status);
	}
	return WEXITSTATUS(status);
}

/* Returns 0 or the errno of setxattr(security.ima). */
static int set_ima(const char *path, const void *value, size_t len)
{
	return setxattr(path, XATTR_IMA, value, len, 0) ? errno : 0;
}

/*
 * What these two check is the outcome only: a root process without
 * CAP_SYS_ADMIN cannot change security.ima (EPERM, the value kept).  Not
 * which check refuses it: commoncap's cap_inode_setxattr() and
 * cap_inode_removexattr() ask for CAP_SYS_ADMIN in the file's user
 * namespace for every security.* name before IMA's ima_protect_xattr()
 * asks for capable(CAP_SYS_ADMIN), and on ext4 mounted in the initial
 * user namespace the two agree.  Only a filesystem mounted in another
 * user namespace (CONFIG_USER_NS, which the kernels under test lack)
 * would tell IMA's own check apart.  Fails on a kernel that drops both.
 */
TEST_F_ENV(ima_xattr, set_without_cap_sys_admin)
{
	ASSERT_EQ(EPERM, change_without_cap(_metadata, self->env.path,
					    self->wrong, self->env.good_len));
	expect_ima_is(_metadata, self->env.path, self->env.good,
		      self->env.good_len);
}

TEST_F_ENV(ima_xattr, remove_without_cap_sys_admin)
{
	ASSERT_EQ(EPERM,
		  change_without_cap(_metadata, self->env.path, NULL, 0));
	expect_ima_is(_metadata, self->env.path, self->env.good,
		      self->env.good_len);
}

/* Fails on a kernel without the !xattr_value_len test. */
TEST_F_ENV(ima_xattr, set_empty_value)
{
	ASSERT_EQ(EINVAL, set_ima(self->env.path, "", 0));
	expect_ima_is(_metadata, self->env.path, self->env.good,
		      self->env.good_len);
}

/* Type IMA_XATTR_LAST itself: fails on an off-by-one (> instead of >=). */
TEST_F_ENV(ima_xattr, set_type_last)
{
	uint8_t value[IMA_XATTR_MAX];

	memcpy(value, self->env.good, self->env.good_len);
	value[0] = IMA_XATTR_LAST;
	ASSERT_EQ(EINVAL, set_ima(self->env.path, value, self->env.good_len));
	expect_ima_is(_metadata, self->env.path, self->env.good,
		      self->env.good_len);
}

/* Fails on a kernel that does not check the type at all. */
TEST_F_ENV(ima_xattr, set_type_unknown)
{
	uint8_t value[IMA_XATTR_MAX];

	memcpy(value, self->env.good, self->env.good_len);
	value[0] = 0x7f;
	ASSERT_EQ(EINVAL, set_ima(self->env.path, value, self->env.good_len));
	expect_ima_is(_metadata, self->env.path, self->env.good,
		      self->env.good_len);
}

/*
 * 04 <wp256> <32 bytes>: a hash the kernel cannot compute.  6.1 refuses it
 * with EACCES and an audit record (validate_hash_algo()).  Fails on a
 * kernel that drops validate_hash_algo() (the file would carry a label
 * no appraisal can ever verify).
 */
TEST_F_ENV(ima_xattr, set_unavailable_algo)
{
	uint8_t value[2 + 32];

	value[0] = IMA_XATTR_DIGEST_NG;
	value[1] = HASH_ALGO_WP_256;
	memset(value + 2, 0x5a, sizeof(value) - 2);
	ima_env_watch(_metadata, &self->env);
	ASSERT_EQ(EACCES, set_ima(self->env.path, value, sizeof(value)));
	expect_ima_is(_metadata, self->env.path, self->env.good,
		      self->env.good_len);
	/* The audit name is the dentry path inside the filesystem. */
	expect_logged(_metadata, &self->env.log,
		      self->env.path + strlen(scratch_dir()),
		      "unavailable-hash-algorithm");
}

/*
 * The per-mode result of opening data for reading when its security.ima
 * is in state (wrong or missing), after it passed before: the cached pass
 * must not survive the change.
 */
static void check_reappraised(struct __test_metadata *const _metadata,
			      FIXTURE_DATA(ima_xattr) * self,
			      enum ima_state state)
{
	ASSERT_EQ(expected_errno(&self->env.cell, state),
		  test_open(self->env.path, O_RDONLY))
	{
		TH_LOG("%s mode, %s policy: open after security.ima changed",
		       mode_names[self->env.cell.mode],
		       policy_names[self->env.cell.policy]);
	}
	expect_ima_after(_metadata, &self->env.cell, self->env.path, state,
			 self->env.good);
	expect_audited(_metadata, &self->env.cell, &self->env.log,
		       self->env.path, state);
}

/*
 * Passed and cached, then given a wrong value: the next open is appraised
 * again.  Fails on a kernel whose ima_inode_setxattr() no longer resets
 * the cache (IMA_CHANGE_XATTR): enforce would allow, fix would not
 * repair, log would not log.
 */
TEST_F_ENV(ima_xattr, set_wrong_reappraises)
{
	ASSERT_EQ(0, test_open(self->env.path, O_RDONLY));
	/* passed, not repaired: a repair would be cached as a pass */
	expect_not_logged(_metadata, &self->env.log, self->env.path, NULL);
	ASSERT_EQ(0, set_ima(self->env.path, self->wrong, self->env.good_len));
	ima_env_watch(_metadata, &self->env);
	check_reappraised(_metadata, self, STATE_WRONG);
}

/* Passed and cached, then security.ima removed: the same. */
TEST_F_ENV(ima_xattr, remove_reappraises)
{
	ASSERT_EQ(0, test_open(self->env.path, O_RDONLY));
	/* passed, not repaired: a repair would be cached as a pass */
	expect_not_logged(_metadata, &self->env.log, self->env.path, NULL);
	ASSERT_EQ(0, removexattr(self->env.path, XATTR_IMA));
	ima_env_watch(_metadata, &self->env);
	check_reappraised(_metadata, self, STATE_MISSING);
}

/*
 * The reverse: denied (enforce) for a wrong value, then labelled
 * correctly: allowed, the value kept.  Fails on a kernel that caches a
 * failed appraisal across a security.ima change.
 */
TEST_F_ENV(ima_xattr, set_correct_allows)
{
	ASSERT_EQ(0, set_ima(self->env.path, self->wrong, self->env.good_len));
	ima_env_watch(_metadata, &self->env);
	ASSERT_EQ(expected_errno(&self->env.cell, STATE_WRONG),
		  test_open(self->env.path, O_RDONLY));
	expect_audited(_metadata, &self->env.cell, &self->env.log,
		       self->env.path, STATE_WRONG);
	ASSERT_EQ(0,
		  set_ima(self->env.path, self->env.good, self->env.good_len));
	ima_env_watch(_metadata, &self->env);
	ASSERT_EQ(0, test_open(self->env.path, O_RDONLY));
	expect_ima_is(_metadata, self->env.path, self->env.good,
		      self->env.good_len);
	expect_audited(_metadata, &self->env.cell, &self->env.log,
		       self->env.path, STATE_CORRECT);
}

TEST_HARNESS_MAIN
