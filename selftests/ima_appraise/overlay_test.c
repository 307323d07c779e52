// SPDX-License-Identifier: GPL-2.0
/*
 * IMA appraisal through overlayfs: lower files appraised through the
 * overlay, a lower file changed behind the overlay's back, copy-up labels.
 *
 * Layout, one per test, on the scratch ext4 filesystem:
 *
 * <scratch>/ovl.XXXXXX/
 *     lower/file   root:root 0644, security.ima as the variant says
 *     upper/       empty until a copy-up: then file, with lower's xattrs
 *     work/
 *     merged/      overlay: lowerdir=lower, upperdir=upper, workdir=work
 *
 * IMA appraises the overlay inode (file_inode() of the file opened in
 * merged/), reads security.ima through the overlay (the upper copy if
 * there is one, else the lower file) and writes it through the overlay,
 * which copies the file up first.  A copy-up duplicates the file with its
 * xattrs: the upper copy carries the lower file's security.ima, good or
 * bad, and is appraised as the lower file was; only fix mode, or a last
 * writer after a passing appraisal, may give it a new label.
 *
 * The custom cells' rules are scoped to the scratch filesystem's fsuuid=,
 * which is not the overlay's (6.1 leaves the overlay's s_uuid null), so
 * they add OVERLAY_RULE.  Under appraise_tcb the func-less
 * "appraise fowner=0" covers overlay files.
 */

#include "common.h"

#include <ftw.h>
#include <sys/mount.h>

#define OVERLAYFS_SUPER_MAGIC 0x794c7630
/* Root-owned files on any overlay: only this test mounts one. */
#define OVERLAY_RULE "appraise func=FILE_CHECK fsmagic=0x794c7630 fowner=0"

static const char contents[] = "IMA appraisal selftest: overlayfs\n";
static const char appended[] = "written through the overlay\n";

/*
 * One layout: the files of the drawing above, and what they hold.
 * env.path is merged/file, env.good IMA's hash of contents.
 */
struct ovl_layout {
	struct ima_env env;
	bool mounted;
	char lower[PATH_MAX]; /* lower/file */
	char upper[PATH_MAX]; /* upper/file */
	uint8_t label[IMA_XATTR_MAX]; /* lower's security.ima */
	size_t label_len; /* 0: none */
};

FIXTURE(overlay)
{
	struct ovl_layout l;
};

FIXTURE_VARIANT(overlay)
{
	/* security.ima of lower/file */
	enum ima_state state;
};

/* clang-format off */
FIXTURE_VARIANT_ADD(overlay, missing_hash)
{
	.state = STATE_MISSING,
};

FIXTURE_VARIANT_ADD(overlay, wrong_hash)
{
	.state = STATE_WRONG,
};

FIXTURE_VARIANT_ADD(overlay, correct_hash)
{
	.state = STATE_CORRECT,
};
/* clang-format on */

/* dir/name, dir being at most DIR_MAX + 8 long. */
static void subpath(char *out, size_t size, const char *dir, const char *name)
{
	snprintf(out, size, "%s/%s", dir, name);
}

/*
 * Mounts the overlay, unless the test must be skipped (l->env.skip);
 * the kernel log is watched from the end of the setup on.  variant is
 * the fixture setup's (see ima_env_setup()).
 */
static void setup_overlay(struct __test_metadata *const _metadata,
			  struct ovl_layout *l, const void *variant,
			  enum ima_state state)
{
	char lowerdir[DIR_MAX + 8], upperdir[DIR_MAX + 8], workdir[DIR_MAX + 8];
	char mergeddir[DIR_MAX + 8], opts[4 * DIR_MAX + 128];
	struct ima_env *env = &l->env;
	struct statfs sfs;

	if (ima_env_setup(_metadata, env, variant, "ovl", "merged/file"))
		return;
	if (env->cell.policy == POLICY_CUSTOM)
		policy_add_rule(_metadata, OVERLAY_RULE);

	subpath(lowerdir, sizeof(lowerdir), env->dir, "lower");
	subpath(upperdir, sizeof(upperdir), env->dir, "upper");
	subpath(workdir, sizeof(workdir), env->dir, "work");
	subpath(mergeddir, sizeof(mergeddir), env->dir, "merged");
	subpath(l->lower, sizeof(l->lower), lowerdir, "file");
	subpath(l->upper, sizeof(l->upper), upperdir, "file");
	ASSERT_EQ(0, mkdir(lowerdir, 0755));
	ASSERT_EQ(0, mkdir(upperdir, 0755));
	ASSERT_EQ(0, mkdir(workdir, 0755));
	ASSERT_EQ(0, mkdir(mergeddir, 0755));

	create_file(_metadata, l->lower, contents, sizeof(contents) - 1);
	ASSERT_EQ(0, chmod(l->lower, 0644));
	env->good_len = ima_hash_xattr(&env->cell, contents,
				       sizeof(contents) - 1, env->good);
	memcpy(l->label, env->good, env->good_len);
	l->label_len = env->good_len;
	if (state == STATE_WRONG)
		ima_wrong_xattr(env->good, l->label);
	if (state == STATE_MISSING) {
		l->label_len = 0;
		if (removexattr(l->lower, XATTR_IMA))
			ASSERT_EQ(ENODATA, errno);
	} else {
		ASSERT_EQ(0, setxattr(l->lower, XATTR_IMA, l->label,
				      l->label_len, 0));
	}

	snprintf(opts, sizeof(opts),
		 "lowerdir=%s,upperdir=%s,workdir=%s,metacopy=off", lowerdir,
		 upperdir, workdir);
	ASSERT_EQ(0, mount("overlay", mergeddir, "overlay", 0, opts))
	{
		TH_LOG("mount overlay %s: %s (CONFIG_OVERLAY_FS?)", opts,
		       strerror(errno));
	}
	l->mounted = true;
	ASSERT_EQ(0, statfs(mergeddir, &sfs));
	ASSERT_EQ(OVERLAYFS_SUPER_MAGIC, sfs.f_type);
	/* A correct label must pass every access: no record, in any mode. */
	if (state == STATE_CORRECT)
		ima_env_quiet(_metadata, env);
	else
		ima_env_watch(_metadata, env);
}

static void teardown_overlay(struct __test_metadata *const _metadata,
			     struct ovl_layout *l)
{
	char mergeddir[DIR_MAX + 8];

	if (l->mounted) {
		subpath(mergeddir, sizeof(mergeddir), l->env.dir, "merged");
		/* Not EXPECT and a block: see ima_env_teardown(). */
		if (umount2(mergeddir, 0)) {
			TH_LOG("umount %s: %s", mergeddir, strerror(errno));
			_metadata->passed = 0;
		}
	}
	ima_env_teardown(_metadata, &l->env);
}

FIXTURE_SETUP(overlay)
{
	setup_overlay(_metadata, &self->l, variant, variant->state);
}

FIXTURE_TEARDOWN(overlay)
{
	if (!self->l.env.skip)
		teardown_overlay(_metadata, &self->l);
}

/* security.ima of path is want[len], or absent if len is 0. */
static void expect_label(struct __test_metadata *const _metadata,
			 const char *path, const uint8_t *want, size_t len)
{
	if (len)
		expect_ima_is(_metadata, path, want, len);
	else
		expect_no_ima(_metadata, path);
}

/*
 * Right after a copy-up the upper copy holds the lower file's label byte
 * for byte (none if it had none), and the lower file is unchanged.
 */
static void expect_copied_up(struct __test_metadata *const _metadata,
			     struct ovl_layout *l)
{
	expect_label(_metadata, l->upper, l->label, l->label_len);
	expect_label(_metadata, l->lower, l->label, l->label_len);
}

/*
 * A lower file's label is appraised through the overlay: enforce denies
 * a missing or wrong one; fix repairs it through the overlay, so the file
 * is copied up and only the upper copy gets IMA's hash; log and off
 * change nothing and copy nothing up.  Breaking change: a kernel that
 * skips the overlay inode (e.g. by appraising only inodes whose
 * superblock has s_uuid, or checking IOP_XATTR on the wrong inode) lets
 * the bad lower file through.
 */
TEST_F(overlay, read)
{
	struct ima_env *env = &self->l.env;
	bool bad = variant->state != STATE_CORRECT;

	if (env->skip)
		return;
	ASSERT_EQ(expected_errno(&env->cell, variant->state),
		  test_open(env->path, O_RDONLY));
	expect_label(_metadata, self->l.lower, self->l.label,
		     self->l.label_len);
	if (env->cell.mode == MODE_FIX && bad)
		expect_ima_is(_metadata, self->l.upper, env->good,
			      env->good_len);
	else
		EXPECT_EQ(ENOENT, test_open(self->l.upper, O_RDONLY));
	if (bad)
		expect_audited(_metadata, &env->cell, &env->log, env->path,
			       variant->state);
}

/*
 * chmod through the overlay copies the file up with its xattrs, and the
 * copy is appraised as the original was: a copy-up must not launder a
 * missing or wrong label into a valid one.  Breaking changes: a copy-up
 * that relabels its copy, as 6.1 does under appraise_tcb
 * (ovl_copy_up_tmpfile()'s vfs_tmpfile() calls ima_post_create_tmpfile(),
 * which takes the copy for a new file, and the copy-up's own fput() labels
 * it with the hash of the copied data: kernel-patches/0003); a copy-up
 * that drops security.ima (security_inode_copy_up_xattr() discarding it,
 * as 6.8 does for security.evm) fails the correctly labelled file.
 */
TEST_F(overlay, chmod_copy_up)
{
	struct ima_env *env = &self->l.env;
	bool bad = variant->state != STATE_CORRECT;

	if (env->skip)
		return;
	ASSERT_EQ(0, chmod(env->path, 0640));
	expect_copied_up(_metadata, &self->l);
	ASSERT_EQ(expected_errno(&env->cell, variant->state),
		  test_open(env->path, O_RDONLY));
	if (env->cell.mode == MODE_FIX && bad)
		expect_ima_is(_metadata, self->l.upper, env->good,
			      env->good_len);
	else
		expect_copied_up(_metadata, &self->l);
	if (bad)
		expect_audited(_metadata, &env->cell, &env->log, env->path,
			       variant->state);
}

/*
 * The last writer through the overlay labels the upper copy: after
 * appending and closing, upper/file holds IMA's hash of its new content
 * wherever the file was appraised and passed or fix repaired it, and the
 * copied-up label otherwise (a failed appraisal blesses nothing, and off
 * under a custom policy does nothing); lower/file never changes.
 * enforce denies the write open of a bad file after the overlay already
 * copied it up: the copy keeps the bad label, so the file stays denied
 * (6.1 under appraise_tcb relabels it, see chmod_copy_up, and the next
 * open passes).  Breaking change: ima_check_last_writer()/
 * ima_update_xattr() not running for the overlay file leaves the old hash
 * on new content.
 */
TEST_F(overlay, write_copy_up)
{
	struct ima_env *env = &self->l.env;
	char both[sizeof(contents) + sizeof(appended)];
	uint8_t now[IMA_XATTR_MAX];
	size_t now_len;
	int fd;

	if (env->skip)
		return;
	snprintf(both, sizeof(both), "%s%s", contents, appended);
	now_len = ima_hash_xattr(&env->cell, both, strlen(both), now);

	fd = open(env->path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (expected_errno(&env->cell, variant->state)) {
		ASSERT_EQ(-1, fd);
		ASSERT_EQ(EACCES, errno);
		/* ovl_open() copied it up before IMA said no */
		expect_copied_up(_metadata, &self->l);
		EXPECT_EQ(EACCES, test_open(env->path, O_RDONLY));
		expect_copied_up(_metadata, &self->l);
	} else {
		ASSERT_LE(0, fd)
		{
			TH_LOG("open %s for write: %s", env->path,
			       strerror(errno));
		}
		ASSERT_EQ(sizeof(appended) - 1,
			  write(fd, appended, sizeof(appended) - 1));
		ASSERT_EQ(0, close(fd));
		if (env->cell.mode == MODE_FIX ||
		    (cell_appraises(&env->cell) &&
		     variant->state == STATE_CORRECT))
			expect_ima_is(_metadata, self->l.upper, now, now_len);
		else /* failed appraisal: no last-writer update */
			expect_label(_metadata, self->l.upper, self->l.label,
				     self->l.label_len);
		expect_label(_metadata, self->l.lower, self->l.label,
			     self->l.label_len);
	}
	if (variant->state != STATE_CORRECT)
		expect_audited(_metadata, &env->cell, &env->log, env->path,
			       variant->state);
}

/*
 * A lower file with the correct label, changed behind the overlay after
 * a passing access through it.
 */
FIXTURE(overlay_lower)
{
	struct ovl_layout l;
};

FIXTURE_SETUP(overlay_lower)
{
	setup_overlay(_metadata, &self->l, variant, STATE_CORRECT);
}

FIXTURE_TEARDOWN(overlay_lower)
{
	if (!self->l.env.skip)
		teardown_overlay(_metadata, &self->l);
}

/*
 * The lower file's content is rewritten and its old label put back, so
 * only the overlay inode's cached "appraised" status could still let it
 * through.  process_measurement() re-appraises when the backing inode
 * changed (d_real_inode() and i_version, upstream "ima: detect changes to
 * the backing overlay file"); a kernel without that check keeps the
 * cached pass and enforce allows the changed file.  fix repairs the
 * label through the overlay, so the upper copy gets the new hash.
 */
TEST_F(overlay_lower, changed_behind_overlay)
{
	struct ima_env *env = &self->l.env;
	char both[sizeof(contents) + sizeof(appended)];
	uint8_t now[IMA_XATTR_MAX];
	size_t now_len;
	int fd;

	if (env->skip)
		return;
	snprintf(both, sizeof(both), "%s%s", contents, appended);
	now_len = ima_hash_xattr(&env->cell, both, strlen(both), now);
	ASSERT_EQ(0, test_open(env->path, O_RDONLY));
	expect_not_logged(_metadata, &env->log, env->path, NULL);

	fd = open(self->l.lower, O_WRONLY | O_APPEND | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(sizeof(appended) - 1,
		  write(fd, appended, sizeof(appended) - 1));
	ASSERT_EQ(0, close(fd));
	ASSERT_EQ(0, setxattr(self->l.lower, XATTR_IMA, self->l.label,
			      self->l.label_len, 0));

	ima_env_watch(_metadata, env);
	ASSERT_EQ(expected_errno(&env->cell, STATE_WRONG),
		  test_open(env->path, O_RDONLY));
	expect_label(_metadata, self->l.lower, self->l.label,
		     self->l.label_len);
	if (env->cell.mode == MODE_FIX)
		expect_ima_is(_metadata, self->l.upper, now, now_len);
	else
		EXPECT_EQ(ENOENT, test_open(self->l.upper, O_RDONLY));
	expect_audited(_metadata, &env->cell, &env->log, env->path,
		       STATE_WRONG);
}

TEST_HARNESS_MAIN
