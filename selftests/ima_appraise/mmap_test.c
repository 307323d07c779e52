// SPDX-License-Identifier: GPL-2.0
/*
 * IMA appraisal on mmap(2) with PROT_EXEC (MMAP_CHECK), PROT_READ under
 * READ_IMPLIES_EXEC, mprotect(2) adding PROT_EXEC, and an exec mapping of
 * a file that is mapped writable.
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
 *
 * <scratch>/mmap_writers.XXXXXX/
 *     lib     root:root 0755, correct security.ima, mapped MAP_SHARED
 *             PROT_WRITE through an O_RDWR fd before the exec mapping
 *
 * Broken kernels: MMAP_CHECK skipped (prot_exec, read_implies_exec),
 * security_mmap_file() passing IMA the requested instead of the adjusted
 * protection (read_implies_exec: "ima: Align ima_file_mmap() parameters
 * with mmap_file LSM hook", present in 6.1.192), ima_file_mprotect()
 * dropped (mprotect_exec: a PROT_READ mapping made executable without
 * appraisal), mmap_violation_check() dropped (exec_while_mapped_writable).
 */

#include "common.h"

#include <sys/personality.h>

static const char lib_name[] = "lib";

FIXTURE(mmap_file)
{
	struct ima_env env;
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
	if (ima_env_setup(_metadata, &self->env, variant, "mmap", lib_name))
		return;
	memset(page, 0xc3, sizeof(page)); /* x86 'ret', for what it's worth */
	self->len = sizeof(page);
	create_labelled(_metadata, &self->env.cell, self->env.path, page,
			self->len, self->env.good);
	ima_env_watch(_metadata, &self->env);
	self->fd = open(self->env.path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->fd)
	{
		TH_LOG("open %s with a correct security.ima: %s",
		       self->env.path, strerror(errno));
	}
	/* passed, not repaired: a repair would be cached as a pass */
	expect_audited(_metadata, &self->env.cell, &self->env.log,
		       self->env.path, STATE_CORRECT);
	set_ima_state(_metadata, self->env.path, variant->state,
		      self->env.good);
}

FIXTURE_TEARDOWN(mmap_file)
{
	if (self->fd >= 0)
		EXPECT_EQ(0, close(self->fd));
	ima_env_teardown(_metadata, &self->env);
}

TEST_F_ENV(mmap_file, prot_exec)
{
	ima_env_watch(_metadata, &self->env);
	ASSERT_EQ(expected_errno(&self->env.cell, variant->state),
		  test_mmap_exec(self->fd, self->len));
	expect_ima_after(_metadata, &self->env.cell, self->env.path,
			 variant->state, self->env.good);
	expect_audited(_metadata, &self->env.cell, &self->env.log,
		       self->env.path, variant->state);
}

/*
 * With READ_IMPLIES_EXEC a PROT_READ mapping is executable: mmap_prot()
 * adds PROT_EXEC, and 6.1.192's security_mmap_file() hands IMA that
 * adjusted protection, so the mapping is appraised as PROT_EXEC.
 */
TEST_F_ENV(mmap_file, read_implies_exec)
{
	int ret;
	void *p;

	/* Each test runs in a child of its own: nothing to restore. */
	ASSERT_LE(0, personality(personality(0xffffffff) | READ_IMPLIES_EXEC));
	ima_env_watch(_metadata, &self->env);
	p = mmap(NULL, self->len, PROT_READ, MAP_PRIVATE, self->fd, 0);
	ret = p == MAP_FAILED ? errno : 0;
	ASSERT_EQ(expected_errno(&self->env.cell, variant->state), ret)
	{
		TH_LOG("mmap(PROT_READ) with READ_IMPLIES_EXEC %s: %s",
		       self->env.path, strerror(ret));
	}
	if (!ret)
		munmap(p, self->len);
	expect_ima_after(_metadata, &self->env.cell, self->env.path,
			 variant->state, self->env.good);
	expect_audited(_metadata, &self->env.cell, &self->env.log,
		       self->env.path, variant->state);
}

/*
 * mprotect(PROT_EXEC) on a PROT_READ mapping cannot be appraised
 * (mmap_lock is held), so ima_file_mprotect() refuses it with EPERM for
 * any file an MMAP_CHECK appraise rule covers, whatever its label and in
 * every mode where IMA_APPRAISE is in ima_policy_flag: enforce, fix and
 * log, and under appraise_tcb even off.  It audits cause=failed-mprotect
 * and never appraises, so fix mode repairs nothing here.  Only off under
 * a custom policy lets the mapping become executable.
 */
TEST_F_ENV(mmap_file, mprotect_exec)
{
	int ret, want = cell_appraises(&self->env.cell) ? EPERM : 0;
	void *p;

	p = mmap(NULL, self->len, PROT_READ, MAP_PRIVATE, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p)
	{
		TH_LOG("mmap(PROT_READ) %s: %s", self->env.path,
		       strerror(errno));
	}
	ima_env_watch(_metadata, &self->env);
	ret = mprotect(p, self->len, PROT_READ | PROT_EXEC) ? errno : 0;
	munmap(p, self->len);
	ASSERT_EQ(want, ret)
	{
		TH_LOG("%s mode, %s policy: mprotect(+PROT_EXEC) of %s: %s",
		       mode_names[self->env.cell.mode],
		       policy_names[self->env.cell.policy], self->env.path,
		       strerror(ret));
	}
	expect_cause_logged(_metadata, &self->env.cell, &self->env.log,
			    self->env.path, "failed-mprotect");
	expect_ima_kept(_metadata, self->env.path, variant->state,
			self->env.good);
}

/*
 * Without PROT_EXEC the MMAP_CHECK rules do not apply: the mapping is
 * allowed whatever the label, fix mode repairs nothing and nothing is
 * logged.  Fails on a kernel that appraises every mapping.
 */
TEST_F_ENV(mmap_file, prot_read)
{
	void *p;

	ima_env_watch(_metadata, &self->env);
	p = mmap(NULL, self->len, PROT_READ, MAP_PRIVATE, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p)
	{
		TH_LOG("mmap(PROT_READ) %s: %s", self->env.path,
		       strerror(errno));
	}
	munmap(p, self->len);
	expect_ima_kept(_metadata, self->env.path, variant->state,
			self->env.good);
	expect_not_logged(_metadata, &self->env.log, self->env.path, NULL);
}

FIXTURE(mmap_writers)
{
	struct ima_env env;
	size_t len;
};

FIXTURE_SETUP(mmap_writers)
{
	char page[4096];

	if (ima_env_setup(_metadata, &self->env, variant, "mmap_writers",
			  lib_name))
		return;
	memset(page, 0xc3, sizeof(page));
	self->len = sizeof(page);
	self->env.good_len = create_labelled(_metadata, &self->env.cell,
					     self->env.path, page, self->len,
					     self->env.good);
	ima_env_quiet(_metadata, &self->env);
}

FIXTURE_TEARDOWN(mmap_writers)
{
	ima_env_teardown(_metadata, &self->env);
}

/*
 * A correctly labelled file that is mapped writable (MAP_SHARED) must not
 * be mapped executable: its contents can change under the appraisal.
 * mmap_violation_check() fails it with cause=mmapped_writers, but only for
 * func == MMAP_CHECK: under the custom policy's func=MMAP_CHECK rule it is
 * denied (EACCES) in enforce, allowed and audited in fix and log, and
 * nothing at all when off.  Under appraise_tcb the func-less "appraise
 * fowner=0" turns the hook into FILE_CHECK, so the check never fires and
 * the mapping is allowed silently in every mode.  Once the writable
 * mapping is gone the exec mapping is allowed everywhere.
 */
TEST_F_ENV(mmap_writers, exec_while_mapped_writable)
{
	bool checked = self->env.cell.policy == POLICY_CUSTOM &&
		       self->env.cell.mode != MODE_OFF;
	int rw, ro, ret, want;
	void *w;

	rw = open(self->env.path, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, rw)
	{
		TH_LOG("open %s O_RDWR: %s", self->env.path, strerror(errno));
	}
	w = mmap(NULL, self->len, PROT_READ | PROT_WRITE, MAP_SHARED, rw, 0);
	ASSERT_NE(MAP_FAILED, w);
	ro = open(self->env.path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, ro);

	ret = test_mmap_exec(ro, self->len);
	want = checked && self->env.cell.mode == MODE_ENFORCE ? EACCES : 0;
	ASSERT_EQ(want, ret)
	{
		TH_LOG("%s mode, %s policy: exec mapping of writably mapped %s: %s",
		       mode_names[self->env.cell.mode],
		       policy_names[self->env.cell.policy], self->env.path,
		       strerror(ret));
	}
	/* the quiet log: nothing else may have named the file either */
	if (checked)
		expect_only_logged(_metadata, &self->env.log, self->env.path,
				   "mmapped_writers");
	else
		expect_not_logged(_metadata, &self->env.log, self->env.path,
				  NULL);

	ASSERT_EQ(0, munmap(w, self->len));
	ASSERT_EQ(0, close(rw));
	ima_env_watch(_metadata, &self->env);
	EXPECT_EQ(0, test_mmap_exec(ro, self->len))
	{
		TH_LOG("exec mapping of %s refused after the writer is gone",
		       self->env.path);
	}
	ASSERT_EQ(0, close(ro));
	expect_ima_is(_metadata, self->env.path, self->env.good,
		      self->env.good_len);
	expect_not_logged(_metadata, &self->env.log, self->env.path, NULL);
}

TEST_HARNESS_MAIN
