// SPDX-License-Identifier: GPL-2.0
/*
 * Files outside the appraise policy are never touched: not root-owned
 * under fowner=0 rules, or on tmpfs.
 *
 * Layout, one per test, on the scratch ext4 filesystem:
 *
 * <scratch>/notinpolicy.XXXXXX/
 *     prog      copy of exec_helper (exits 42), 0755, owned by
 *               FOWNER_NOT_IN_POLICY, security.ima missing or wrong
 *     tmpfs/    a tmpfs mount (tmpfs variant)
 *         prog  copy of exec_helper, root:root 0755
 *
 * Both the custom policy (fsuuid=<scratch> fowner=0) and appraise_tcb
 * (appraise fowner=0, dont_appraise fsmagic=TMPFS_MAGIC) leave prog out,
 * so in every mode: open for read and write, execve, mmap PROT_EXEC and
 * mprotect(+PROT_EXEC) succeed, security.ima keeps its exact bytes (fix
 * mode does not repair it, the last writer does not relabel it), and no
 * audit record names it.
 *
 * The kernels under test have no CONFIG_TMPFS_XATTR: setxattr() of
 * security.ima on tmpfs then fails with EOPNOTSUPP (IMA's own
 * ima_inode_setxattr() accepts the value, the VFS finds no handler).  With
 * it, the label would be stored and must stay as it is.
 *
 * Broken kernel: rule matching that ignores fowner=, fsuuid= or fsmagic=
 * (appraises everything: EACCES in enforce, labels written in fix mode,
 * audit records), a last writer that labels files outside the policy.
 */

#include "common.h"

#include <sys/mount.h>

static const char prog_name[] = "prog";
static const char tmpfs_name[] = "tmpfs";
static const char new_contents[] = "rewritten outside the policy\n";

FIXTURE(not_in_policy)
{
	struct ima_env env;
	char mnt[DIR_MAX + 8];
	/* tmpfs: errno of setting security.ima there, 0 if it was stored */
	int xattr_err;
	size_t len;
};

FIXTURE_VARIANT(not_in_policy)
{
	/* security.ima of prog */
	enum ima_state state;
	/* prog is root-owned on a tmpfs instead of uid 1000 on the ext4 */
	bool tmpfs;
};

/* clang-format off */
FIXTURE_VARIANT_ADD(not_in_policy, fowner_missing_hash)
{
	.state = STATE_MISSING,
};

FIXTURE_VARIANT_ADD(not_in_policy, fowner_wrong_hash)
{
	.state = STATE_WRONG,
};

FIXTURE_VARIANT_ADD(not_in_policy, tmpfs_wrong_hash)
{
	.state = STATE_WRONG,
	.tmpfs = true,
};
/* clang-format on */

FIXTURE_SETUP(not_in_policy)
{
	uint8_t wrong[IMA_XATTR_MAX];
	char helper[PATH_MAX];
	size_t wrong_len;
	void *elf;

	if (ima_env_setup(_metadata, &self->env, variant, "notinpolicy",
			  prog_name))
		return;
	sibling_path(helper, "exec_helper");
	elf = read_file(_metadata, helper, &self->len);
	ima_hash_xattr(&self->env.cell, elf, self->len, self->env.good);

	if (variant->tmpfs) {
		snprintf(self->mnt, sizeof(self->mnt), "%s/%s", self->env.dir,
			 tmpfs_name);
		ASSERT_EQ(0, mkdir(self->mnt, 0755));
		ASSERT_EQ(0, mount("tmpfs", self->mnt, "tmpfs", 0, "size=1m"))
		{
			TH_LOG("mount tmpfs on %s: %s", self->mnt,
			       strerror(errno));
		}
		snprintf(self->env.path, sizeof(self->env.path), "%s/%s",
			 self->mnt, prog_name);
		create_file(_metadata, self->env.path, elf, self->len);
		wrong_len = ima_wrong_xattr(self->env.good, wrong);
		self->xattr_err = setxattr(self->env.path, XATTR_IMA, wrong,
					   wrong_len, 0) ?
					  errno :
					  0;
		ASSERT_TRUE(!self->xattr_err || self->xattr_err == EOPNOTSUPP)
		{
			TH_LOG("setxattr security.ima on tmpfs: %s",
			       strerror(self->xattr_err));
		}
	} else {
		create_file(_metadata, self->env.path, elf, self->len);
		/*
		 * First out of the policy, then labelled: a chown that takes
		 * it out may remove security.ima (ima_appraise_setattr=remove).
		 */
		ASSERT_EQ(0, chown(self->env.path, FOWNER_NOT_IN_POLICY,
				   FOWNER_NOT_IN_POLICY));
		set_ima_state(_metadata, self->env.path, variant->state,
			      self->env.good);
	}
	free(elf);
}

FIXTURE_TEARDOWN(not_in_policy)
{
	if (self->mnt[0])
		EXPECT_EQ(0, umount(self->mnt));
	ima_env_teardown(_metadata, &self->env);
}

/* security.ima of prog must be exactly what the setup left. */
static void expect_label_kept(struct __test_metadata *const _metadata,
			      FIXTURE_DATA(not_in_policy) * self,
			      const FIXTURE_VARIANT(not_in_policy) * variant)
{
	uint8_t buf[IMA_XATTR_MAX];

	if (variant->tmpfs && self->xattr_err) {
		EXPECT_EQ(-self->xattr_err,
			  get_ima(self->env.path, buf, sizeof(buf)));
	} else {
		expect_ima_kept(_metadata, self->env.path, variant->state,
				self->env.good);
	}
}

TEST_F_ENV(not_in_policy, read)
{
	ima_env_watch(_metadata, &self->env);
	ASSERT_EQ(0, test_open(self->env.path, O_RDONLY));
	expect_label_kept(_metadata, self, variant);
	expect_not_logged(_metadata, &self->env.log, self->env.path, NULL);
}

/*
 * Rewritten in place and closed: the last writer must not label it
 * either.  No O_TRUNC: a truncation is a setattr, and with
 * ima_appraise_setattr=remove any setattr of a file outside the policy
 * removes its security.ima (the 2012 semantics; setattr_test's business).
 */
TEST_F_ENV(not_in_policy, write)
{
	int fd;

	ima_env_watch(_metadata, &self->env);
	fd = open(self->env.path, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd)
	{
		TH_LOG("open %s O_RDWR: %s", self->env.path, strerror(errno));
	}
	ASSERT_EQ(sizeof(new_contents) - 1,
		  write(fd, new_contents, sizeof(new_contents) - 1));
	ASSERT_EQ(0, close(fd));
	expect_label_kept(_metadata, self, variant);
	expect_not_logged(_metadata, &self->env.log, self->env.path, NULL);
}

TEST_F_ENV(not_in_policy, execve)
{
	int ret;

	ima_env_watch(_metadata, &self->env);
	ret = test_execve(_metadata, self->env.path);
	ASSERT_EQ(0, ret)
	{
		TH_LOG("execve %s: %s", self->env.path,
		       ret == EXEC_RAN_BADLY ? "did not exit with status 42" :
					       strerror(ret));
	}
	expect_label_kept(_metadata, self, variant);
	expect_not_logged(_metadata, &self->env.log, self->env.path, NULL);
}

TEST_F_ENV(not_in_policy, mmap_exec)
{
	int fd;

	fd = open(self->env.path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ima_env_watch(_metadata, &self->env);
	ASSERT_EQ(0, test_mmap_exec(fd, self->len));
	close(fd);
	expect_label_kept(_metadata, self, variant);
	expect_not_logged(_metadata, &self->env.log, self->env.path, NULL);
}

/* ima_file_mprotect() only refuses files an MMAP_CHECK rule covers. */
TEST_F_ENV(not_in_policy, mprotect_exec)
{
	int fd;
	void *p;

	fd = open(self->env.path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	p = mmap(NULL, self->len, PROT_READ, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ima_env_watch(_metadata, &self->env);
	ASSERT_EQ(0, mprotect(p, self->len, PROT_READ | PROT_EXEC))
	{
		TH_LOG("mprotect(+PROT_EXEC) of %s: %s", self->env.path,
		       strerror(errno));
	}
	munmap(p, self->len);
	close(fd);
	expect_label_kept(_metadata, self, variant);
	expect_not_logged(_metadata, &self->env.log, self->env.path, NULL);
}

TEST_HARNESS_MAIN
