// SPDX-License-Identifier: GPL-2.0
/*
 * IMA appraisal on execve(2): a small static ELF and a "#!" script run by
 * a static interpreter, root-owned, with no, a wrong or the correct
 * security.ima.
 *
 * Layout, one per test, on the scratch ext4 filesystem (owner: root, or
 * FOWNER_BPRM_ONLY in custom cells, see make_exec_file()):
 *
 * <scratch>/exec.XXXXXX/
 *     prog    copy of exec_helper (exits 42), 0755,
 *             security.ima as the variant says
 *
 * <scratch>/script.XXXXXX/
 *     script  "#!<dir>/interp", 0755     (exec_script)
 *     interp  copy of exec_helper, 0755  (exec_script)
 *
 * Expected: enforce refuses missing/wrong with EACCES; fix runs it and
 * writes the correct digest; log and off run it and leave security.ima.
 * The exit status 42 proves the program (the interpreter) really ran.
 *
 * In custom cells the files belong to FOWNER_BPRM_ONLY, covered by a
 * func=BPRM_CHECK rule only (make_exec_file()): fix mode's repair and log
 * mode's record prove that execve()'s own hook appraised them.
 *
 * Broken kernel: BPRM_CHECK skipped (custom cells, every mode that
 * appraises), or BPRM_CHECK run on the script but not on the interpreter
 * that binfmt_script substitutes (exec_binprm() runs search_binary_handler(),
 * hence security_bprm_check(), once per file).
 *
 * execve_check: execveat(2) with AT_EXECVE_CHECK (Linux 6.14) asks whether
 * a file may be executed without executing it: a script interpreter's
 * question about the script it was given.  IMA appraises that file as
 * BPRM_CHECK (ima_bprm_creds_for_exec()) and answers as for execve(): the
 * same verdict, repair and record; the script's interpreter is not
 * examined at all, so its label stays as it was, even in fix mode, and
 * nothing is executed.  A kernel before 6.14 does not know the flag: not
 * for such a cell.
 * Its failure is logged as userspace-enforced (type 1808).
 * Broken kernels: the bprm_creds_for_exec hook dropped (custom cells: only
 * BPRM_CHECK covers the file; the exec open of the builtin policy's
 * fowner=0 rule still denies); an execveat() that goes on to execute the
 * file it was only to check (every cell).
 */

#include <sys/syscall.h>
#include <sys/utsname.h>

#include "common.h"

#ifndef AT_EXECVE_CHECK
#define AT_EXECVE_CHECK 0x10000
#endif

static const char prog_name[] = "prog";
static const char script_name[] = "script";
static const char interp_name[] = "interp";

/*
 * Makes path a copy of exec_helper labelled as state says; returns its
 * correct security.ima in good.  In custom cells the file is given to
 * FOWNER_BPRM_ONLY, whose one rule is func=BPRM_CHECK: neither the exec
 * open (FILE_CHECK, MAY_EXEC) nor the ELF loader's own mapping of the
 * binary or interpreter (MMAP_CHECK) is appraised, so a verdict, a repair
 * in fix mode and a record in log mode can only come from execve()'s own
 * hook.  Under appraise_tcb the func-less "appraise fowner=0" appraises
 * the exec open first, and root keeps the file.
 */
static void make_exec_file(struct __test_metadata *const _metadata,
			   const struct cell *cell, const char *path,
			   const void *data, size_t len, enum ima_state state,
			   uint8_t good[IMA_XATTR_MAX])
{
	char rule[256], uuid[37];

	create_file(_metadata, path, data, len);
	ima_hash_xattr(cell, data, len, good);
	if (cell->policy == POLICY_CUSTOM) {
		scratch_fsuuid(_metadata, scratch_dir(), uuid);
		snprintf(rule, sizeof(rule),
			 "appraise func=BPRM_CHECK fsuuid=%s fowner=%d", uuid,
			 FOWNER_BPRM_ONLY);
		policy_add_rule(_metadata, rule);
		ASSERT_EQ(0, chown(path, FOWNER_BPRM_ONLY, 0));
	}
	set_ima_state(_metadata, path, state, good);
}

/* Whether the running kernel is at least major.minor. */
static bool kernel_at_least(int major, int minor)
{
	struct utsname u;
	int ma = 0, mi = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
		return false;
	return ma > major || (ma == major && mi >= minor);
}

/*
 * execveat(path, AT_EXECVE_CHECK) in a child: 0 if path may be executed,
 * else the errno; EXEC_CHECK_RAN if the kernel executed the file instead
 * of answering (the pipe closed on exec).
 */
#define EXEC_CHECK_RAN (-2)

static int test_execve_check(struct __test_metadata *const _metadata,
			     const char *path)
{
	int pipefd[2], err = 0, status;
	pid_t pid;

	ASSERT_EQ(0, pipe2(pipefd, O_CLOEXEC));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		char *const argv[] = { (char *)path, NULL };
		char *const envp[] = { NULL };

		if (syscall(__NR_execveat, AT_FDCWD, path, argv, envp,
			    AT_EXECVE_CHECK))
			err = errno;
		if (write(pipefd[1], &err, sizeof(err)) != sizeof(err))
			_exit(126);
		_exit(0);
	}
	close(pipefd[1]);
	if (read(pipefd[0], &err, sizeof(err)) != sizeof(err))
		err = EXEC_CHECK_RAN;
	close(pipefd[0]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	return err;
}

static const char *check_error(int ret)
{
	return ret == EXEC_CHECK_RAN ? "the kernel executed the file" :
				       strerror(ret);
}

/*
 * An AT_EXECVE_CHECK verdict is the interpreter's to enforce: IMA logs
 * its failure as AUDIT_INTEGRITY_USERSPACE (type 1808), never as one the
 * kernel enforced (1800).  Where only the check appraises the file (the
 * custom cells: a func=BPRM_CHECK rule covers it, the exec open is not
 * appraised), every record naming a bad file is a 1808.
 */
static void expect_userspace_record(struct __test_metadata *const _metadata,
				    const struct cell *cell,
				    struct audit_log *log, const char *path,
				    enum ima_state state)
{
	char name[PATH_MAX + 8];

	if (state == STATE_CORRECT || cell->policy != POLICY_CUSTOM ||
	    !cell_appraises(cell))
		return;
	audit_name(path, name, sizeof(name));
	EXPECT_TRUE(audit_has(log, name, "type=1808 "))
	{
		TH_LOG("no userspace-enforced (type=1808) record of %s in:\n%s",
		       path, log->text);
	}
	EXPECT_FALSE(audit_has(log, name, "type=1800 "))
	{
		TH_LOG("a kernel-enforced (type=1800) record of %s in:\n%s",
		       path, log->text);
	}
}

/* true (and a skip) where the kernel predates AT_EXECVE_CHECK */
#define NO_EXECVE_CHECK()                                                     \
	({                                                                    \
		bool _old = !kernel_at_least(6, 14);                          \
		if (_old)                                                     \
			CELL_SKIP(, "AT_EXECVE_CHECK is new in Linux 6.14");  \
		_old;                                                         \
	})

FIXTURE(exec_file)
{
	struct ima_env env;
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

	if (ima_env_setup(_metadata, &self->env, variant, "exec", prog_name))
		return;
	sibling_path(helper, "exec_helper");
	elf = read_file(_metadata, helper, &len);
	make_exec_file(_metadata, &self->env.cell, self->env.path, elf, len,
		       variant->state, self->env.good);
	free(elf);
}

FIXTURE_TEARDOWN(exec_file)
{
	ima_env_teardown(_metadata, &self->env);
}

TEST_F_ENV(exec_file, execve)
{
	int ret;

	ima_env_watch(_metadata, &self->env);
	ret = test_execve(_metadata, self->env.path);
	ASSERT_EQ(expected_errno(&self->env.cell, variant->state), ret)
	{
		TH_LOG("execve %s: %s", self->env.path,
		       ret == EXEC_RAN_BADLY ?
			       "it ran, but did not exit with status 42 (killed after the point of no return?)" :
			       strerror(ret));
	}
	expect_ima_after(_metadata, &self->env.cell, self->env.path,
			 variant->state, self->env.good);
	expect_audited(_metadata, &self->env.cell, &self->env.log,
		       self->env.path, variant->state);
}

TEST_F_ENV(exec_file, execve_check)
{
	int ret;

	if (NO_EXECVE_CHECK())
		return;
	ima_env_watch(_metadata, &self->env);
	ret = test_execve_check(_metadata, self->env.path);
	ASSERT_EQ(expected_errno(&self->env.cell, variant->state), ret)
	{
		TH_LOG("execveat %s, AT_EXECVE_CHECK: %s", self->env.path,
		       check_error(ret));
	}
	expect_ima_after(_metadata, &self->env.cell, self->env.path,
			 variant->state, self->env.good);
	expect_audited(_metadata, &self->env.cell, &self->env.log,
		       self->env.path, variant->state);
	expect_userspace_record(_metadata, &self->env.cell, &self->env.log,
				self->env.path, variant->state);
}

FIXTURE(exec_script)
{
	/* env.path is the script */
	struct ima_env env;
	char interp[PATH_MAX];
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

	if (ima_env_setup(_metadata, &self->env, variant, "script",
			  script_name))
		return;
	sibling_path(helper, "exec_helper");
	elf = read_file(_metadata, helper, &len);
	snprintf(self->interp, sizeof(self->interp), "%s/%s", self->env.dir,
		 interp_name);
	make_exec_file(_metadata, &self->env.cell, self->interp, elf, len,
		       variant->interp, self->interp_good);
	free(elf);

	n = snprintf(text, sizeof(text), "#!%s\nexit 1\n", self->interp);
	make_exec_file(_metadata, &self->env.cell, self->env.path, text, n,
		       variant->script, self->env.good);
}

FIXTURE_TEARDOWN(exec_script)
{
	ima_env_teardown(_metadata, &self->env);
}

/*
 * The script is appraised first (its own BPRM_CHECK, or under the builtin
 * policy its exec open); a bad script is refused before its interpreter is
 * even opened.  A bad interpreter is refused when binfmt_script hands it
 * to the next round of exec_binprm().  Both are repaired in fix mode.
 */
TEST_F_ENV(exec_script, execve)
{
	const char *script = self->env.path;
	enum ima_state bad = variant->script != STATE_CORRECT ?
				     variant->script :
				     variant->interp;
	int ret;

	ima_env_watch(_metadata, &self->env);
	ret = test_execve(_metadata, script);
	ASSERT_EQ(expected_errno(&self->env.cell, bad), ret)
	{
		TH_LOG("execve %s: %s", script,
		       ret == EXEC_RAN_BADLY ?
			       "it ran, but the interpreter did not exit with status 42" :
			       strerror(ret));
	}
	expect_ima_after(_metadata, &self->env.cell, script, variant->script,
			 self->env.good);
	expect_audited(_metadata, &self->env.cell, &self->env.log, script,
		       variant->script);
	expect_ima_after(_metadata, &self->env.cell, self->interp,
			 variant->interp, self->interp_good);
	expect_audited(_metadata, &self->env.cell, &self->env.log, self->interp,
		       variant->interp);
}

/*
 * The interpreter's question about the script: only the script is
 * appraised.  The interpreter its "#!" line names is neither opened nor
 * appraised, repaired or logged: a bad interpreter does not change the
 * answer.
 */
TEST_F_ENV(exec_script, execve_check)
{
	const char *script = self->env.path;
	int ret;

	if (NO_EXECVE_CHECK())
		return;
	ima_env_watch(_metadata, &self->env);
	ret = test_execve_check(_metadata, script);
	ASSERT_EQ(expected_errno(&self->env.cell, variant->script), ret)
	{
		TH_LOG("execveat %s, AT_EXECVE_CHECK: %s", script,
		       check_error(ret));
	}
	expect_ima_after(_metadata, &self->env.cell, script, variant->script,
			 self->env.good);
	expect_audited(_metadata, &self->env.cell, &self->env.log, script,
		       variant->script);
	expect_userspace_record(_metadata, &self->env.cell, &self->env.log,
				script, variant->script);
	expect_ima_kept(_metadata, self->interp, variant->interp,
			self->interp_good);
	expect_not_logged(_metadata, &self->env.log, self->interp, NULL);
}

TEST_HARNESS_MAIN
