// SPDX-License-Identifier: GPL-2.0
/*
 * IMA appraisal on mmap(2) with PROT_EXEC (MMAP_CHECK).
 *
 * The file is opened while its security.ima is correct, so open(2) itself
 * passes appraisal; the variant's state is set afterwards through setxattr
 * or removexattr, which resets IMA's cached verdict.  The mmap() is then
 * the first hook to see the bad file, and its errno is the one asserted.
 *
 * Layout, one per test, on the scratch ext4 filesystem:
 *
 * <scratch>/mmap.XXXXXX/
 *     lib     root:root 0755, one page of data, opened O_RDONLY before
 *             security.ima is set as the variant says
 *
 * Expected: enforce refuses missing/wrong with EACCES; fix maps it and
 * writes the correct digest; log and off map it and leave security.ima.
 */

#include "common.h"

static const char lib_name[] = "lib";
static const char *const layout_files[] = { lib_name, NULL };

FIXTURE(mmap_file)
{
	bool skip;
	struct cell cell;
	char dir[DIR_MAX];
	char path[PATH_MAX];
	uint8_t good[IMA_XATTR_MAX];
	int fd;
	size_t len;
};

FIXTURE_VARIANT(mmap_file)
{
	/* security.ima when the test maps the file */
	enum ima_state state;
};

/* clang-format off */
FIXTURE_VARIANT_ADD(mmap_file, missing_hash)
{
	.state = STATE_MISSING,
};

FIXTURE_VARIANT_ADD(mmap_file, wrong_hash)
{
	.state = STATE_WRONG,
};

FIXTURE_VARIANT_ADD(mmap_file, correct_hash)
{
	.state = STATE_CORRECT,
};
/* clang-format on */

FIXTURE_SETUP(mmap_file)
{
	char page[4096];

	self->fd = -1;
	self->skip = setup_cell(_metadata, &self->cell, self->dir, "mmap");
	if (self->skip)
		return;
	memset(page, 0xc3, sizeof(page)); /* x86 'ret', for what it's worth */
	self->len = sizeof(page);
	snprintf(self->path, sizeof(self->path), "%s/%s", self->dir, lib_name);
	create_file(_metadata, self->path, page, self->len);
	ima_hash_xattr(&self->cell, page, self->len, self->good);
	set_ima_state(_metadata, self->path, STATE_CORRECT, self->good);
	self->fd = open(self->path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->fd)
	{
		TH_LOG("open %s with a correct security.ima: %s", self->path,
		       strerror(errno));
	}
	set_ima_state(_metadata, self->path, variant->state, self->good);
}

FIXTURE_TEARDOWN(mmap_file)
{
	if (self->fd >= 0)
		EXPECT_EQ(0, close(self->fd));
	if (!self->skip)
		cleanup_dir(_metadata, self->dir, layout_files);
}

TEST_F(mmap_file, prot_exec)
{
	int kmsg;

	if (self->skip)
		return;
	kmsg = kmsg_open(_metadata);
	ASSERT_EQ(expected_errno(&self->cell, variant->state),
		  test_mmap_exec(self->fd, self->len));
	assert_ima_after(_metadata, &self->cell, self->path, variant->state,
			 self->good);
	assert_audited(_metadata, &self->cell, kmsg, self->path,
		       variant->state);
	close(kmsg);
}

/* Without PROT_EXEC the MMAP_CHECK rules do not apply. */
TEST_F(mmap_file, prot_read)
{
	void *p;

	if (self->skip)
		return;
	p = mmap(NULL, self->len, PROT_READ, MAP_PRIVATE, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p)
	{
		TH_LOG("mmap(PROT_READ) %s: %s", self->path, strerror(errno));
	}
	munmap(p, self->len);
}

TEST_HARNESS_MAIN
