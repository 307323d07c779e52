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
 * which copies the file up first.  The overlay superblock has its own
 * magic and, in 6.1, a null s_uuid: the custom cells' fsuuid= rules never
 * match it, so they get OVERLAY_RULE.  Under appraise_tcb the func-less
 * "appraise fowner=0" covers overlay files already.
 */

#include "sig.h"

#include <ftw.h>
#include <sys/mount.h>

#define OVERLAYFS_SUPER_MAGIC 0x794c7630
/* Root-owned files on any overlay: only this test mounts one. */
#define OVERLAY_RULE "appraise func=FILE_CHECK fsmagic=0x794c7630 fowner=0"

static const char contents[] = "IMA appraisal selftest: overlayfs\n";
static const char appended[] = "written through the overlay\n";

/* One layout: the files of the drawing above, and what they hold. */
struct ovl_layout {
	bool mounted;
	char dir[DIR_MAX];
	char lower[PATH_MAX]; /* lower/file */
	char upper[PATH_MAX]; /* upper/file */
	char merged[PATH_MAX]; /* merged/file */
	uint8_t label[IMA_XATTR_MAX]; /* lower's security.ima */
	size_t label_len; /* 0: none */
	uint8_t good[IMA_XATTR_MAX]; /* IMA's hash of contents */
	size_t good_len;
	struct audit_log log;
};

FIXTURE(overlay)
{
	bool skip;
	struct cell cell;
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

/* Returns true if the test must be skipped; else the overlay is mounted. */
static bool setup_overlay(struct __test_metadata *const _metadata,
			  struct cell *cell, struct ovl_layout *l,
			  enum ima_state state)
{
	char lowerdir[DIR_MAX + 8], upperdir[DIR_MAX + 8], workdir[DIR_MAX + 8];
	char mergeddir[DIR_MAX + 8], opts[4 * DIR_MAX + 128];
	struct statfs sfs;

	l->log.fd = -1;
	if (setup_cell(_metadata, cell, l->dir, "ovl"))
		return true;
	if (cell->policy == POLICY_CUSTOM)
		policy_add_rule(_metadata, OVERLAY_RULE);

	subpath(lowerdir, sizeof(lowerdir), l->dir, "lower");
	subpath(upperdir, sizeof(upperdir), l->dir, "upper");
	subpath(workdir, sizeof(workdir), l->dir, "work");
	subpath(mergeddir, sizeof(mergeddir), l->dir, "merged");
	subpath(l->lower, sizeof(l->lower), lowerdir, "file");
	subpath(l->upper, sizeof(l->upper), upperdir, "file");
	subpath(l->merged, sizeof(l->merged), mergeddir, "file");
	ASSERT_EQ(0, mkdir(lowerdir, 0755));
	ASSERT_EQ(0, mkdir(upperdir, 0755));
	ASSERT_EQ(0, mkdir(workdir, 0755));
	ASSERT_EQ(0, mkdir(mergeddir, 0755));

	create_file(_metadata, l->lower, contents, sizeof(contents) - 1);
	ASSERT_EQ(0, chmod(l->lower, 0644));
	l->good_len =
		ima_hash_xattr(cell, contents, sizeof(contents) - 1, l->good);
	memcpy(l->label, l->good, l->good_len);
	l->label_len = l->good_len;
	if (state == STATE_WRONG)
		ima_wrong_xattr(l->good, l->label);
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
	audit_watch(_metadata, &l->log);
	return false;
}

static void teardown_overlay(struct __test_metadata *const _metadata,
			     struct ovl_layout *l)
{
	char mergeddir[DIR_MAX + 8];

	audit_unwatch(&l->log);
	if (!l->dir[0])
		return;
	if (l->mounted) {
		subpath(mergeddir, sizeof(mergeddir), l->dir, "merged");
		EXPECT_EQ(0, umount2(mergeddir, 0))
		{
			TH_LOG("umount %s: %s", mergeddir, strerror(errno));
		}
	}
	EXPECT_EQ(0, nftw(l->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS));
}

FIXTURE_SETUP(overlay)
{
	self->skip =
		setup_overlay(_metadata, &self->cell, &self->l, variant->state);
}

FIXTURE_TEARDOWN(overlay)
{
	if (!self->skip)
		teardown_overlay(_metadata, &self->l);
}

/* security.ima of path is want[len], or absent if len is 0. */
static void assert_label(struct __test_metadata *const _metadata,
			 const char *path, const uint8_t *want, size_t len)
{
	if (len)
		expect_ima_is(_metadata, path, want, len);
	else
		expect_no_ima(_metadata, path);
}

/*
 * Whether copy-up relabels the upper copy with IMA's hash of its content.
 * ovl_copy_up_tmpfile() makes the copy with vfs_tmpfile(), and
 * ima_post_create_tmpfile() marks a new file that ima_must_appraise() with
 * MAY_ACCESS, FILE_CHECK (the func-less "appraise fowner=0" of appraise_tcb
 * does; the custom cells' ^MAY_READ/^MAY_WRITE rules do not) as passed,
 * label pending.  The last writer of the upper inode, the copy-up's own
 * (deferred) fput() or, when the overlay file was opened for write, the
 * overlay's real upper file, then labels it with the hash of its content,
 * over whatever label the copy-up brought along.  6.1 thereby turns a
 * missing or wrong lower label into a valid upper one (a finding: the
 * overlay inode's failed appraisal does not stop it).
 */
static bool copy_up_relabels(const struct cell *cell)
{
	return cell->policy != POLICY_CUSTOM;
}

/* The upper copy's security.ima right after a copy-up. */
static void assert_copied_up(struct __test_metadata *const _metadata,
			     const struct cell *cell, struct ovl_layout *l)
{
	if (copy_up_relabels(cell))
		expect_ima_is(_metadata, l->upper, l->good, l->good_len);
	else
		assert_label(_metadata, l->upper, l->label, l->label_len);
}

static const char *cause_of(enum ima_state state)
{
	return state == STATE_MISSING ? "missing-hash" : "invalid-hash";
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
	bool bad = variant->state != STATE_CORRECT;

	if (self->skip)
		return;
	ASSERT_EQ(expected_errno(&self->cell, variant->state),
		  test_open(self->l.merged, O_RDONLY));
	assert_label(_metadata, self->l.lower, self->l.label,
		     self->l.label_len);
	if (self->cell.mode == MODE_FIX && bad) {
		expect_ima_is(_metadata, self->l.upper, self->l.good,
			      self->l.good_len);
	} else {
		ASSERT_EQ(ENOENT, test_open(self->l.upper, O_RDONLY));
	}
	if (bad && self->cell.mode != MODE_OFF)
		expect_logged(_metadata, &self->l.log, self->l.merged,
			      cause_of(variant->state));
}

/*
 * chmod through the overlay copies the file up with its xattrs.  Where the
 * policy does not cover the new upper file, security.ima arrives byte for
 * byte and the copy is appraised like the original; under appraise_tcb,
 * 6.1 relabels the copy (copy_up_relabels()), so a missing or wrong lower
 * label turns into a valid one and enforce lets the copy through.
 * Breaking change: a copy-up that drops security.ima
 * (security_inode_copy_up_xattr() discarding it, as 6.8 does for
 * security.evm) makes copied-up files fail appraisal in the custom cells.
 */
TEST_F(overlay, chmod_copy_up)
{
	int want = expected_errno(&self->cell, variant->state);

	if (self->skip)
		return;
	if (copy_up_relabels(&self->cell))
		want = 0;
	ASSERT_EQ(0, chmod(self->l.merged, 0640));
	assert_copied_up(_metadata, &self->cell, &self->l);
	assert_label(_metadata, self->l.lower, self->l.label,
		     self->l.label_len);
	ASSERT_EQ(want, test_open(self->l.merged, O_RDONLY));
}

/*
 * The last writer through the overlay labels the upper copy: after
 * appending and closing, upper/file holds IMA's hash of its new content
 * wherever the file was appraised and passed, fix repaired it, or the
 * upper inode itself is in policy (copy_up_relabels(): even in log mode
 * after a failed appraisal), the copied-up label otherwise; lower/file
 * never changes.  enforce denies the write open of a bad file, after the
 * overlay already copied it up (and, under appraise_tcb, relabelled it).
 * Breaking change: ima_check_last_writer()/ima_update_xattr() not running
 * for the overlay file leaves the old hash on new content.
 */
TEST_F(overlay, write_copy_up)
{
	char both[sizeof(contents) + sizeof(appended)];
	uint8_t now[IMA_XATTR_MAX];
	size_t now_len;
	int fd;

	if (self->skip)
		return;
	snprintf(both, sizeof(both), "%s%s", contents, appended);
	now_len = ima_hash_xattr(&self->cell, both, strlen(both), now);

	fd = open(self->l.merged, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (expected_errno(&self->cell, variant->state)) {
		ASSERT_EQ(-1, fd);
		ASSERT_EQ(EACCES, errno);
		/* ovl_open() copied it up before IMA said no */
		assert_copied_up(_metadata, &self->cell, &self->l);
	} else {
		ASSERT_LE(0, fd)
		{
			TH_LOG("open %s for write: %s", self->l.merged,
			       strerror(errno));
		}
		ASSERT_EQ(sizeof(appended) - 1,
			  write(fd, appended, sizeof(appended) - 1));
		ASSERT_EQ(0, close(fd));
		if (self->cell.mode == MODE_FIX ||
		    copy_up_relabels(&self->cell) ||
		    (cell_appraises(&self->cell) &&
		     variant->state == STATE_CORRECT))
			expect_ima_is(_metadata, self->l.upper, now, now_len);
		else /* failed appraisal: no last-writer update */
			assert_label(_metadata, self->l.upper, self->l.label,
				     self->l.label_len);
	}
	assert_label(_metadata, self->l.lower, self->l.label,
		     self->l.label_len);
}

/*
 * A lower file with the correct label, changed behind the overlay after
 * a passing access through it.
 */
FIXTURE(overlay_lower)
{
	bool skip;
	struct cell cell;
	struct ovl_layout l;
};

FIXTURE_SETUP(overlay_lower)
{
	self->skip =
		setup_overlay(_metadata, &self->cell, &self->l, STATE_CORRECT);
}

FIXTURE_TEARDOWN(overlay_lower)
{
	if (!self->skip)
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
	char both[sizeof(contents) + sizeof(appended)];
	uint8_t now[IMA_XATTR_MAX];
	size_t now_len;
	int fd;

	if (self->skip)
		return;
	snprintf(both, sizeof(both), "%s%s", contents, appended);
	now_len = ima_hash_xattr(&self->cell, both, strlen(both), now);
	ASSERT_EQ(0, test_open(self->l.merged, O_RDONLY));

	fd = open(self->l.lower, O_WRONLY | O_APPEND | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(sizeof(appended) - 1,
		  write(fd, appended, sizeof(appended) - 1));
	ASSERT_EQ(0, close(fd));
	ASSERT_EQ(0, setxattr(self->l.lower, XATTR_IMA, self->l.label,
			      self->l.label_len, 0));

	ASSERT_EQ(self->cell.mode == MODE_ENFORCE ? EACCES : 0,
		  test_open(self->l.merged, O_RDONLY));
	assert_label(_metadata, self->l.lower, self->l.label,
		     self->l.label_len);
	if (self->cell.mode == MODE_FIX)
		expect_ima_is(_metadata, self->l.upper, now, now_len);
	else
		ASSERT_EQ(ENOENT, test_open(self->l.upper, O_RDONLY));
	if (self->cell.mode != MODE_OFF)
		expect_logged(_metadata, &self->l.log, self->l.merged,
			      "invalid-hash");
}

TEST_HARNESS_MAIN
