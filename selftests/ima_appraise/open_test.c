// SPDX-License-Identifier: GPL-2.0
/*
 * IMA appraisal on open(2): a root-owned file with no, a wrong or the
 * correct security.ima, opened for reading and for writing.
 *
 * Layout, one per test, on the scratch ext4 filesystem:
 *
 * <scratch>/open.XXXXXX/
 *     data    root:root 0755, security.ima as the variant says
 *
 * Expected, whatever the policy source (builtin, legacy or custom):
 *   enforce: missing/wrong -> EACCES, security.ima untouched
 *   fix:     allowed, security.ima rewritten to the correct digest
 *   log:     allowed, security.ima untouched
 *   off:     allowed, security.ima untouched
 */

#include "common.h"

static const char data_name[] = "data";
static const char *const layout_files[] = { data_name, NULL };
static const char contents[] = "IMA appraisal selftest: open(2)\n";

FIXTURE(open_file)
{
	bool skip;
	struct cell cell;
	char dir[DIR_MAX];
	char path[PATH_MAX];
	uint8_t good[IMA_XATTR_MAX];
};

FIXTURE_VARIANT(open_file)
{
	/* security.ima when the test opens the file */
	enum ima_state state;
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
/* clang-format on */

FIXTURE_SETUP(open_file)
{
	self->skip = setup_cell(_metadata, &self->cell, self->dir, "open");
	if (self->skip)
		return;
	snprintf(self->path, sizeof(self->path), "%s/%s", self->dir, data_name);
	create_file(_metadata, self->path, contents, sizeof(contents) - 1);
	ima_hash_xattr(&self->cell, contents, sizeof(contents) - 1, self->good);
	set_ima_state(_metadata, self->path, variant->state, self->good);
}

FIXTURE_TEARDOWN(open_file)
{
	if (!self->skip)
		cleanup_dir(_metadata, self->dir, layout_files);
}

/* Opens the file with flags and checks the verdict, the xattr and the log. */
static void check_open(struct __test_metadata *const _metadata,
		       FIXTURE_DATA(open_file) * self,
		       const FIXTURE_VARIANT(open_file) * variant, int flags)
{
	int kmsg = kmsg_open(_metadata);

	ASSERT_EQ(expected_errno(&self->cell, variant->state),
		  test_open(self->path, flags));
	assert_ima_after(_metadata, &self->cell, self->path, variant->state,
			 self->good);
	assert_audited(_metadata, &self->cell, kmsg, self->path,
		       variant->state);
	close(kmsg);
}

TEST_F(open_file, read)
{
	if (!self->skip)
		check_open(_metadata, self, variant, O_RDONLY);
}

/* Opening for write is appraised too: a bad file cannot be rewritten. */
TEST_F(open_file, write)
{
	if (!self->skip)
		check_open(_metadata, self, variant, O_WRONLY);
}

TEST_HARNESS_MAIN
