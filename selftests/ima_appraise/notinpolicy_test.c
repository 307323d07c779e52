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
 *     sentinel  root:root, no security.ima: in policy, its audit record
 *               marks where the records of an access end
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
static const char sentinel_name[] = "sentinel";
static const char tmpfs_name[] = "tmpfs";
static const char *const layout_files[] = { prog_name, sentinel_name, NULL };
static const char new_contents[] = "rewritten outside the policy\n";

FIXTURE(not_in_policy)
{
	bool skip;
	struct cell cell;
	char dir[DIR_MAX];
	char path[PATH_MAX];
	char sentinel[PATH_MAX];
	char mnt[DIR_MAX + 8];
	uint8_t good[IMA_XATTR_MAX];
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

	self->skip =
		setup_cell(_metadata, &self->cell, self->dir, "notinpolicy");
	if (self->skip)
		return;
	sibling_path(helper, "exec_helper");
	elf = read_file(_metadata, helper, &self->len);
	ima_hash_xattr(&self->cell, elf, self->len, self->good);

	if (variant->tmpfs) {
		snprintf(self->mnt, sizeof(self->mnt), "%s/%s", self->dir,
			 tmpfs_name);
		ASSERT_EQ(0, mkdir(self->mnt, 0755));
		ASSERT_EQ(0, mount("tmpfs", self->mnt, "tmpfs", 0, "size=1m"))
		{
			TH_LOG("mount tmpfs on %s: %s", self->mnt,
			       strerror(errno));
		}
		snprintf(self->path, sizeof(self->path), "%s/%s", self->mnt,
			 prog_name);
		create_file(_metadata, self->path, elf, self->len);
		wrong_len = ima_wrong_xattr(self->good, wrong);
		self->xattr_err =
			setxattr(self->path, XATTR_IMA, wrong, wrong_len, 0) ?
				errno :
				0;
		ASSERT_TRUE(!self->xattr_err || self->xattr_err == EOPNOTSUPP)
		{
			TH_LOG("setxattr security.ima on tmpfs: %s",
			       strerror(self->xattr_err));
		}
	} else {
		snprintf(self->path, sizeof(self->path), "%s/%s", self->dir,
			 prog_name);
		create_file(_metadata, self->path, elf, self->len);
		/*
		 * First out of the policy, then labelled: a chown that takes
		 * it out may remove security.ima (ima_appraise_setattr=remove).
		 */
		ASSERT_EQ(0, chown(self->path, FOWNER_NOT_IN_POLICY,
				   FOWNER_NOT_IN_POLICY));
		set_ima_state(_metadata, self->path, variant->state,
			      self->good);
	}
	free(elf);

	snprintf(self->sentinel, sizeof(self->sentinel), "%s/%s", self->dir,
		 sentinel_name);
	create_file(_metadata, self->sentinel, "sentinel\n", 9);
	set_ima_state(_metadata, self->sentinel, STATE_MISSING, self->good);
}

FIXTURE_TEARDOWN(not_in_policy)
{
	if (self->skip)
		return;
	if (self->mnt[0]) {
		EXPECT_EQ(0, unlink(self->path));
		EXPECT_EQ(0, umount(self->mnt));
		EXPECT_EQ(0, rmdir(self->mnt));
	}
	cleanup_dir(_metadata, self->dir, layout_files);
}

/* security.ima of prog must be exactly what the setup left. */
static void assert_label_kept(struct __test_metadata *const _metadata,
			      FIXTURE_DATA(not_in_policy) * self,
			      const FIXTURE_VARIANT(not_in_policy) * variant)
{
	struct cell unfixed = self->cell;
	uint8_t buf[IMA_XATTR_MAX];

	if (variant->tmpfs && self->xattr_err) {
		ASSERT_EQ(-self->xattr_err,
			  get_ima(self->path, buf, sizeof(buf)));
		return;
	}
	unfixed.mode = MODE_LOG; /* "as it was": what log mode leaves */
	assert_ima_after(_metadata, &unfixed, self->path, variant->state,
			 self->good);
}

/*
 * No audit record may name prog.  Records reach the log in the order they
 * were made, so an access to the sentinel (in policy, unlabelled) made
 * after the one to prog bounds the wait: once the sentinel's record is
 * there, prog's would have been before it.  Where the cell logs nothing
 * at all (off, custom policy) there is no sentinel, and nothing to see.
 */
static void assert_not_logged(struct __test_metadata *const _metadata,
			      FIXTURE_DATA(not_in_policy) * self, int kmsg)
{
	struct pollfd pfd = { .fd = kmsg, .events = POLLIN };
	char rec[2048], name[PATH_MAX + 8], sentinel[PATH_MAX + 8];
	int waited;
	ssize_t len;

	if (!cell_audits(&self->cell))
		return;
	test_open(self->sentinel, O_RDONLY);
	snprintf(name, sizeof(name), "name=\"%s\"", self->path);
	snprintf(sentinel, sizeof(sentinel), "name=\"%s\"", self->sentinel);
	for (waited = 0; waited <= AUDIT_WAIT_MS; waited += 100) {
		while ((len = read(kmsg, rec, sizeof(rec) - 1)) > 0 ||
		       (len < 0 && errno == EPIPE)) {
			if (len <= 0)
				continue;
			rec[len] = '\0';
			ASSERT_EQ(NULL, strstr(rec, name))
			{
				TH_LOG("%s is outside the policy, yet: %s",
				       self->path, rec);
			}
			if (strstr(rec, sentinel))
				return;
		}
		poll(&pfd, 1, 100);
	}
	ASSERT_TRUE(false)
	{
		TH_LOG("no audit record for the sentinel %s within %d ms",
		       self->sentinel, AUDIT_WAIT_MS);
	}
}

TEST_F(not_in_policy, read)
{
	int kmsg;

	if (self->skip)
		return;
	kmsg = kmsg_open(_metadata);
	ASSERT_EQ(0, test_open(self->path, O_RDONLY));
	assert_label_kept(_metadata, self, variant);
	assert_not_logged(_metadata, self, kmsg);
	close(kmsg);
}

/*
 * Rewritten in place and closed: the last writer must not label it
 * either.  No O_TRUNC: a truncation is a setattr, and with
 * ima_appraise_setattr=remove any setattr of a file outside the policy
 * removes its security.ima (the 2012 semantics; setattr_test's business).
 */
TEST_F(not_in_policy, write)
{
	int kmsg, fd;

	if (self->skip)
		return;
	kmsg = kmsg_open(_metadata);
	fd = open(self->path, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd)
	{
		TH_LOG("open %s O_RDWR: %s", self->path, strerror(errno));
	}
	ASSERT_EQ(sizeof(new_contents) - 1,
		  write(fd, new_contents, sizeof(new_contents) - 1));
	ASSERT_EQ(0, close(fd));
	assert_label_kept(_metadata, self, variant);
	assert_not_logged(_metadata, self, kmsg);
	close(kmsg);
}

TEST_F(not_in_policy, execve)
{
	int kmsg, ret;

	if (self->skip)
		return;
	kmsg = kmsg_open(_metadata);
	ret = test_execve(_metadata, self->path);
	ASSERT_EQ(0, ret)
	{
		TH_LOG("execve %s: %s", self->path,
		       ret == EXEC_RAN_BADLY ? "did not exit with status 42" :
					       strerror(ret));
	}
	assert_label_kept(_metadata, self, variant);
	assert_not_logged(_metadata, self, kmsg);
	close(kmsg);
}

TEST_F(not_in_policy, mmap_exec)
{
	int kmsg, fd;

	if (self->skip)
		return;
	fd = open(self->path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	kmsg = kmsg_open(_metadata);
	ASSERT_EQ(0, test_mmap_exec(fd, self->len));
	close(fd);
	assert_label_kept(_metadata, self, variant);
	assert_not_logged(_metadata, self, kmsg);
	close(kmsg);
}

/* ima_file_mprotect() only refuses files an MMAP_CHECK rule covers. */
TEST_F(not_in_policy, mprotect_exec)
{
	int kmsg, fd;
	void *p;

	if (self->skip)
		return;
	fd = open(self->path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	p = mmap(NULL, self->len, PROT_READ, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	kmsg = kmsg_open(_metadata);
	ASSERT_EQ(0, mprotect(p, self->len, PROT_READ | PROT_EXEC))
	{
		TH_LOG("mprotect(+PROT_EXEC) of %s: %s", self->path,
		       strerror(errno));
	}
	munmap(p, self->len);
	close(fd);
	assert_label_kept(_metadata, self, variant);
	assert_not_logged(_metadata, self, kmsg);
	close(kmsg);
}

TEST_HARNESS_MAIN
