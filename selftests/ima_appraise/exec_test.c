// SPDX-License-Identifier: GPL-2.0
/*
 * IMA appraisal on execve(2): a small static ELF and a "#!" script run by
 * a static interpreter, root-owned, with no, a wrong or the correct
 * security.ima.
 *
 * Layout, one per test, on the scratch ext4 filesystem:
 *
 * <scratch>/exec.XXXXXX/
 *     prog    copy of exec_helper (exits 42), root:root 0755,
 *             security.ima as the variant says
 *
 *     script  "#!<dir>/interp", root:root 0755     (exec_script)
 *     interp  copy of exec_helper, root:root 0755  (exec_script)
 *
 * Expected: enforce refuses missing/wrong with EACCES; fix runs it and
 * writes the correct digest; log and off run it and leave security.ima.
 * The exit status 42 proves the program (the interpreter) really ran.
 *
 * Broken kernel: BPRM_CHECK skipped (custom cells: the exec open is not a
 * FILE_CHECK of the custom policy, so nothing else catches the ELF), or
 * BPRM_CHECK run on the script but not on the interpreter that
 * binfmt_script substitutes (exec_binprm() runs search_binary_handler(),
 * hence security_bprm_check(), once per file).
 */

#include "common.h"

static const char prog_name[] = "prog";
static const char *const layout_files[] = { prog_name, NULL };
static const char script_name[] = "script";
static const char interp_name[] = "interp";
static const char *const script_files[] = { script_name, interp_name, NULL };

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

FIXTURE_SETUP(exec_file)
{
	char helper[PATH_MAX];
	size_t len;
	void *elf;

	self->skip = setup_cell(_metadata, &self->cell, self->dir, "exec");
	if (self->skip)
		return;
	sibling_path(helper, "exec_helper");
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

FIXTURE(exec_script)
{
	bool skip;
	struct cell cell;
	char dir[DIR_MAX];
	char script[PATH_MAX];
	char interp[PATH_MAX];
	uint8_t script_good[IMA_XATTR_MAX];
	uint8_t interp_good[IMA_XATTR_MAX];
};

FIXTURE_VARIANT(exec_script)
{
	/* security.ima of the script when it is executed */
	enum ima_state script;
	/* security.ima of the interpreter named by its "#!" line */
	enum ima_state interp;
};

/* clang-format off */
FIXTURE_VARIANT_ADD(exec_script, script_missing_hash)
{
	.script = STATE_MISSING,
	.interp = STATE_CORRECT,
};

FIXTURE_VARIANT_ADD(exec_script, script_wrong_hash)
{
	.script = STATE_WRONG,
	.interp = STATE_CORRECT,
};

FIXTURE_VARIANT_ADD(exec_script, interp_missing_hash)
{
	.script = STATE_CORRECT,
	.interp = STATE_MISSING,
};

FIXTURE_VARIANT_ADD(exec_script, interp_wrong_hash)
{
	.script = STATE_CORRECT,
	.interp = STATE_WRONG,
};

FIXTURE_VARIANT_ADD(exec_script, correct_hashes)
{
	.script = STATE_CORRECT,
	.interp = STATE_CORRECT,
};
/* clang-format on */

FIXTURE_SETUP(exec_script)
{
	char helper[PATH_MAX], text[PATH_MAX + 16];
	size_t len;
	void *elf;
	int n;

	self->skip = setup_cell(_metadata, &self->cell, self->dir, "script");
	if (self->skip)
		return;
	sibling_path(helper, "exec_helper");
	elf = read_file(_metadata, helper, &len);
	snprintf(self->interp, sizeof(self->interp), "%s/%s", self->dir,
		 interp_name);
	create_file(_metadata, self->interp, elf, len);
	ima_hash_xattr(&self->cell, elf, len, self->interp_good);
	free(elf);

	snprintf(self->script, sizeof(self->script), "%s/%s", self->dir,
		 script_name);
	n = snprintf(text, sizeof(text), "#!%s\nexit 1\n", self->interp);
	create_file(_metadata, self->script, text, n);
	ima_hash_xattr(&self->cell, text, n, self->script_good);

	set_ima_state(_metadata, self->interp, variant->interp,
		      self->interp_good);
	set_ima_state(_metadata, self->script, variant->script,
		      self->script_good);
}

FIXTURE_TEARDOWN(exec_script)
{
	if (!self->skip)
		cleanup_dir(_metadata, self->dir, script_files);
}

/*
 * The script is appraised first (its own BPRM_CHECK, or under the builtin
 * policy its exec open); a bad script is refused before its interpreter is
 * even opened.  A bad interpreter is refused when binfmt_script hands it
 * to the next round of exec_binprm().  Both are repaired in fix mode.
 */
TEST_F(exec_script, execve)
{
	enum ima_state bad = variant->script != STATE_CORRECT ?
				     variant->script :
				     variant->interp;
	const char *bad_path = variant->script != STATE_CORRECT ? self->script :
								  self->interp;
	int kmsg, ret;

	if (self->skip)
		return;
	kmsg = kmsg_open(_metadata);
	ret = test_execve(_metadata, self->script);
	ASSERT_EQ(expected_errno(&self->cell, bad), ret)
	{
		TH_LOG("execve %s: %s", self->script,
		       ret == EXEC_RAN_BADLY ?
			       "it ran, but the interpreter did not exit with status 42" :
			       strerror(ret));
	}
	assert_audited(_metadata, &self->cell, kmsg, bad_path, bad);
	close(kmsg);
	assert_ima_after(_metadata, &self->cell, self->script, variant->script,
			 self->script_good);
	assert_ima_after(_metadata, &self->cell, self->interp, variant->interp,
			 self->interp_good);
}

TEST_HARNESS_MAIN
