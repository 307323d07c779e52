// SPDX-License-Identifier: GPL-2.0
/*
 * IMA appraisal on execve(2): a small static ELF, root-owned, with no, a
 * wrong or the correct security.ima.
 *
 * Layout, one per test, on the scratch ext4 filesystem:
 *
 * <scratch>/exec.XXXXXX/
 *     prog    copy of exec_helper (exits 42), root:root 0755,
 *             security.ima as the variant says
 *
 * Expected: enforce refuses missing/wrong with EACCES; fix runs it and
 * writes the correct digest; log and off run it and leave security.ima.
 */

#include "common.h"

#include <libgen.h>

static const char prog_name[] = "prog";
static const char *const layout_files[] = { prog_name, NULL };

FIXTURE(exec_file)
{
	bool skip;
	struct cell cell;
	char dir[DIR_MAX];
	char path[PATH_MAX];
	uint8_t good[IMA_XATTR_MAX];
};

FIXTURE_VARIANT(exec_file)
{
	/* security.ima when the test executes the file */
	enum ima_state state;
};

/* clang-format off */
FIXTURE_VARIANT_ADD(exec_file, missing_hash)
{
	.state = STATE_MISSING,
};

FIXTURE_VARIANT_ADD(exec_file, wrong_hash)
{
	.state = STATE_WRONG,
};

FIXTURE_VARIANT_ADD(exec_file, correct_hash)
{
	.state = STATE_CORRECT,
};
/* clang-format on */

/* exec_helper sits next to this test's own binary. */
static void helper_path(struct __test_metadata *const _metadata,
			char path[PATH_MAX])
{
	char self_exe[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self_exe, PATH_MAX - 1);

	ASSERT_LT(0, len);
	self_exe[len] = '\0';
	snprintf(path, PATH_MAX, "%s/exec_helper", dirname(self_exe));
}

FIXTURE_SETUP(exec_file)
{
	char helper[PATH_MAX];
	size_t len;
	void *elf;

	self->skip = setup_cell(_metadata, &self->cell, self->dir, "exec");
	if (self->skip)
		return;
	helper_path(_metadata, helper);
	elf = read_file(_metadata, helper, &len);
	snprintf(self->path, sizeof(self->path), "%s/%s", self->dir, prog_name);
	create_file(_metadata, self->path, elf, len);
	ima_hash_xattr(&self->cell, elf, len, self->good);
	free(elf);
	set_ima_state(_metadata, self->path, variant->state, self->good);
}

FIXTURE_TEARDOWN(exec_file)
{
	if (!self->skip)
		cleanup_dir(_metadata, self->dir, layout_files);
}

TEST_F(exec_file, execve)
{
	int kmsg, ret;

	if (self->skip)
		return;
	kmsg = kmsg_open(_metadata);
	ret = test_execve(_metadata, self->path);
	ASSERT_EQ(expected_errno(&self->cell, variant->state), ret)
	{
		TH_LOG("execve %s: %s", self->path,
		       ret == EXEC_RAN_BADLY ?
			       "it ran, but did not exit with status 42 (killed after the point of no return?)" :
			       strerror(ret));
	}
	assert_ima_after(_metadata, &self->cell, self->path, variant->state,
			 self->good);
	assert_audited(_metadata, &self->cell, kmsg, self->path,
		       variant->state);
	close(kmsg);
}

TEST_HARNESS_MAIN
