// SPDX-License-Identifier: GPL-2.0
/*
 * IMA appraisal of signatures (security.ima type 0x03, v2): the .ima
 * keyring, good and bad signatures, and appraise_type=imasig.
 *
 * The harness staged, next to this program (harness/keys.py):
 *
 * keys/
 *     ima.der              test certificate, signed by the CA the kernel
 *                          trusts (CONFIG_SYSTEM_TRUSTED_KEYS)
 *     rogue.der            self-signed: .ima must refuse it
 *     payload              the signed content
 *     payload.good.sig     security.ima: sha256 signature by ima.der's key
 *     payload.unknown.sig  by a CA-certified key that is never loaded
 *     payload.corrupt.sig  payload.good.sig with one signature byte flipped
 *                          (its 11th); signed_file's last_byte_flipped
 *                          flips the last byte of payload.good.sig itself
 *
 * Layout, one per test, on the scratch ext4 filesystem:
 *
 * <scratch>/sig.XXXXXX/
 *     signed    root:root 0644 (signed_file) or FOWNER_IMASIG:root
 *               (imasig_rule), content and security.ima per variant;
 *               imasig_new_file: created by FOWNER_IMASIG in the test,
 *               the directory being FOWNER_IMASIG's
 *
 * Signatures name their own hash algorithm (sha256): the file passes
 * with ima_hash=sha1 too, because ima_get_hash_algo() takes the
 * signature's.
 */

#include "sig.h"

#include <sys/fsuid.h>

#define STR(x) #x
#define XSTR(x) STR(x)
#define FOWNER_IMASIG_STR XSTR(FOWNER_IMASIG)

static const char signed_name[] = "signed";
static const char tampered[] = "tampered\n";

/* A label that verifies is correct, one that does not is wrong. */
static enum ima_state sig_state(bool valid)
{
	return valid ? STATE_CORRECT : STATE_WRONG;
}

/*
 * After an access: a label that verifies leaves no record; one that does
 * not is logged with cause where the cell appraises (cell_appraises()).
 */
static void expect_sig_audited(struct __test_metadata *const _metadata,
			       struct ima_env *env, bool valid,
			       const char *cause)
{
	if (valid)
		expect_not_logged(_metadata, &env->log, env->path, NULL);
	else
		expect_cause_logged(_metadata, &env->cell, &env->log, env->path,
				    cause);
}

/* ---- the .ima keyring ---- */

/*
 * Breaking change: a kernel whose .ima keyring has no restrict_link
 * (CONFIG_INTEGRITY_TRUSTED_KEYRING=n, or integrity_init_keyring()
 * passing no restriction) takes any self-signed key and so trusts any
 * signature its owner makes.
 */
TEST(ima_keyring_refuses_self_signed_cert)
{
	char id[CASE_ID_MAX];
	struct cell cell;

	ASSERT_EQ(0, read_cell(&cell));
	if (!cell.harness)
		SKIP(return, "not booted by the IMA selftest harness");
	mark_begin(_metadata, NULL, id);
	/* restrict_link_by_signature(): no CA in .builtin_trusted_keys signed it */
	ASSERT_EQ(ENOKEY, load_cert(_metadata, "rogue.der"));
	mark_end(id);
}

/* The test certificate is accepted, and loading it again is harmless. */
TEST(ima_keyring_takes_ca_signed_cert_twice)
{
	char id[CASE_ID_MAX];
	struct cell cell;

	ASSERT_EQ(0, read_cell(&cell));
	if (!cell.harness)
		SKIP(return, "not booted by the IMA selftest harness");
	mark_begin(_metadata, NULL, id);
	ASSERT_EQ(0, load_cert(_metadata, "ima.der"));
	ASSERT_EQ(0, load_cert(_metadata, "ima.der"));
	mark_end(id);
}

/* ---- signed files under the cell's policy ---- */

FIXTURE(signed_file)
{
	struct ima_env env;
	uint8_t sig[SIG_MAX];
	size_t sig_len;
};

FIXTURE_VARIANT(signed_file)
{
	/* security.ima: a file in keys/ */
	const char *sig;
	/* the content is the payload with "tampered\n" appended */
	bool tampered;
	/* the last byte of the signature is flipped (after reading it) */
	bool last_byte_flipped;
	/* the signature verifies against the content with the .ima keys */
	bool valid;
};

/*
 * Breaking changes: xattr_verify() treating an EVM_IMA_XATTR_DIGSIG it
 * cannot verify as a pass (corrupt, last_byte_flipped, unknown_key,
 * changed_content; last_byte_flipped is wrong only at the end of the
 * value, where a verification that stops short does not look), or
 * a kernel that ignores v2 signatures' own hash algorithm and hashes
 * with ima_hash= (good_signature fails under the default SHA-1).
 */
/* clang-format off */
FIXTURE_VARIANT_ADD(signed_file, good_signature)
{
	.sig = "payload.good.sig",
	.tampered = false,
	.valid = true,
};

FIXTURE_VARIANT_ADD(signed_file, corrupt_signature)
{
	.sig = "payload.corrupt.sig",
	.tampered = false,
	.valid = false,
};

FIXTURE_VARIANT_ADD(signed_file, last_byte_flipped)
{
	.sig = "payload.good.sig",
	.tampered = false,
	.last_byte_flipped = true,
	.valid = false,
};

FIXTURE_VARIANT_ADD(signed_file, unknown_key)
{
	.sig = "payload.unknown.sig",
	.tampered = false,
	.valid = false,
};

FIXTURE_VARIANT_ADD(signed_file, changed_content)
{
	.sig = "payload.good.sig",
	.tampered = true,
	.valid = false,
};
/* clang-format on */

FIXTURE_SETUP(signed_file)
{
	uint8_t payload[KEY_MAX];
	size_t len;
	int fd;

	if (ima_env_setup(_metadata, &self->env, variant, "sig", signed_name))
		return;
	load_ima_key(_metadata);
	len = read_key_file(_metadata, "payload", payload, sizeof(payload));
	self->sig_len = read_key_file(_metadata, variant->sig, self->sig,
				      sizeof(self->sig));
	ASSERT_EQ(EVM_IMA_XATTR_DIGSIG, self->sig[0]);
	if (variant->last_byte_flipped)
		self->sig[self->sig_len - 1] ^= 0xff;

	fd = open(self->env.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
		  0644);
	ASSERT_LE(0, fd);
	ASSERT_EQ(len, write(fd, payload, len));
	if (variant->tampered)
		ASSERT_EQ(sizeof(tampered) - 1,
			  write(fd, tampered, sizeof(tampered) - 1));
	ASSERT_EQ(0, close(fd));
	ASSERT_EQ(0, setxattr(self->env.path, XATTR_IMA, self->sig,
			      self->sig_len, 0))
	{
		TH_LOG("setxattr %s: %s", self->env.path, strerror(errno));
	}
	ima_env_watch(_metadata, &self->env);
}

FIXTURE_TEARDOWN(signed_file)
{
	ima_env_teardown(_metadata, &self->env);
}

/*
 * enforce denies a signature that does not verify; fix, log and off
 * allow it.  No mode ever rewrites a signature: fix mode's repair
 * excludes EVM_IMA_XATTR_DIGSIG (ima_appraise_measurement()), a kernel
 * without that exclusion replaces it with a hash here.
 */
TEST_F_ENV(signed_file, read)
{
	ASSERT_EQ(expected_errno(&self->env.cell, sig_state(variant->valid)),
		  test_open(self->env.path, O_RDONLY));
	expect_sig_is(_metadata, self->env.path, self->sig, self->sig_len);
	expect_sig_audited(_metadata, &self->env, variant->valid,
			   "invalid-signature");
}

/*
 * A signed file is immutable in enforce mode: even with a good
 * signature, opening it for write gets EACCES (process_measurement():
 * MAY_WRITE on an IMA_DIGSIG file).  Elsewhere the write goes through,
 * and the last writer's close leaves the signature alone
 * (ima_update_xattr() skips IMA_DIGSIG): the file now fails appraisal
 * instead of being relabelled with a hash.  Breaking changes: dropping
 * either check.
 */
TEST_F_ENV(signed_file, write)
{
	int fd;

	fd = open(self->env.path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (self->env.cell.mode == MODE_ENFORCE) {
		ASSERT_EQ(-1, fd);
		ASSERT_EQ(EACCES, errno);
	} else {
		ASSERT_LE(0, fd)
		{
			TH_LOG("%s mode: open for write: %s",
			       mode_names[self->env.cell.mode],
			       strerror(errno));
		}
		ASSERT_EQ(sizeof(tampered) - 1,
			  write(fd, tampered, sizeof(tampered) - 1));
		ASSERT_EQ(0, close(fd));
	}
	expect_sig_is(_metadata, self->env.path, self->sig, self->sig_len);
	if (self->env.cell.mode == MODE_ENFORCE) {
		/*
		 * The refusal changed nothing: the file reads as it did
		 * before, and a good signature leaves no record
		 * (regressions/0059 caches a failure with the refusal).
		 */
		ASSERT_EQ(expected_errno(&self->env.cell,
					 sig_state(variant->valid)),
			  test_open(self->env.path, O_RDONLY))
		{
			TH_LOG("a read after the refused write open");
		}
		expect_sig_audited(_metadata, &self->env, variant->valid,
				   "invalid-signature");
		return;
	}
	/* the content no longer matches any signature */
	EXPECT_EQ(0, test_open(self->env.path, O_RDONLY));
	expect_sig_audited(_metadata, &self->env, false, "invalid-signature");
	expect_sig_is(_metadata, self->env.path, self->sig, self->sig_len);
}

/* ---- a signed executable ---- */

/*
 * A copy of exec_helper with the signature the harness made of the
 * compiled binary: execve() appraises it under every policy (BPRM_CHECK
 * in the custom one, the func-less fowner=0 rule of appraise_tcb).
 * Breaking change: bprm appraisal that skips signature verification, or
 * hashes the binary with ima_hash= instead of the signature's sha256.
 */
FIXTURE(signed_exec)
{
	struct ima_env env;
	uint8_t sig[SIG_MAX];
	size_t sig_len;
};

FIXTURE_VARIANT(signed_exec)
{
	/* security.ima: a file in keys/ */
	const char *sig;
	/* the signature is of this binary, unaltered */
	bool valid;
};

/* clang-format off */
FIXTURE_VARIANT_ADD(signed_exec, good_signature)
{
	.sig = "exec_helper.good.sig",
	.valid = true,
};

FIXTURE_VARIANT_ADD(signed_exec, corrupt_signature)
{
	.sig = "exec_helper.corrupt.sig",
	.valid = false,
};
/* clang-format on */

FIXTURE_SETUP(signed_exec)
{
	char helper[PATH_MAX];
	size_t len;
	void *elf;

	if (ima_env_setup(_metadata, &self->env, variant, "sig", signed_name))
		return;
	load_ima_key(_metadata);
	self->sig_len = read_key_file(_metadata, variant->sig, self->sig,
				      sizeof(self->sig));
	/* keys/../exec_helper: the binary the harness signed */
	keys_path(helper, "../exec_helper");
	elf = read_file(_metadata, helper, &len);
	create_file(_metadata, self->env.path, elf, len);
	free(elf);
	ASSERT_EQ(0, setxattr(self->env.path, XATTR_IMA, self->sig,
			      self->sig_len, 0));
	ima_env_watch(_metadata, &self->env);
}

FIXTURE_TEARDOWN(signed_exec)
{
	ima_env_teardown(_metadata, &self->env);
}

TEST_F_ENV(signed_exec, execve)
{
	ASSERT_EQ(expected_errno(&self->env.cell, sig_state(variant->valid)),
		  test_execve(_metadata, self->env.path));
	expect_sig_is(_metadata, self->env.path, self->sig, self->sig_len);
	expect_sig_audited(_metadata, &self->env, variant->valid,
			   "invalid-signature");
}

/* ---- appraise_type=imasig ---- */

/*
 * Adds an imasig rule for each of funcs[n] (FILE_CHECK, MMAP_CHECK) for
 * FOWNER_IMASIG's files on the scratch filesystem; SKIPs the case (sets
 * env->skip) outside custom cells.
 */
static void imasig_rules(struct __test_metadata *const _metadata,
			 struct ima_env *env, const char *const funcs[],
			 size_t n)
{
	char rule[256], uuid[37];
	size_t i;

	if (env->cell.policy != POLICY_CUSTOM) {
		env->skip = true;
		/* imasig there is for POLICY_CHECK only; never replace it */
		CELL_SKIP(return, "imasig rules need a custom policy, not %s",
				policy_names[env->cell.policy]);
	}
	scratch_fsuuid(_metadata, scratch_dir(), uuid);
	for (i = 0; i < n; i++) {
		snprintf(rule, sizeof(rule),
			 "appraise func=%s fsuuid=%s fowner=%s appraise_type=imasig",
			 funcs[i], uuid, FOWNER_IMASIG_STR);
		policy_add_rule(_metadata, rule);
	}
}

/*
 * Custom cells only: a rule of its own, scoped to files owned by
 * FOWNER_IMASIG on the scratch filesystem.  The builtin policy requires
 * signatures only for POLICY_CHECK, and loading a policy file there would
 * replace appraise_tcb for the rest of the boot.
 */
FIXTURE(imasig_rule)
{
	struct ima_env env;
	uint8_t before[SIG_MAX];
	ssize_t before_len;
	uint8_t hash[IMA_XATTR_MAX];
	size_t hash_len;
};

FIXTURE_VARIANT(imasig_rule)
{
	/* security.ima: NULL = none, "hash" = IMA's hash, else a keys/ file */
	const char *label;
	/* appraisal passes: the label is a good signature */
	bool valid;
};

/*
 * Breaking change: a kernel that ignores IMA_DIGSIG_REQUIRED
 * (xattr_verify() accepting a hash under appraise_type=imasig) lets
 * hash_only through in enforce and logs nothing in fix and log.
 */
/* clang-format off */
FIXTURE_VARIANT_ADD(imasig_rule, hash_only)
{
	.label = "hash",
	.valid = false,
};

FIXTURE_VARIANT_ADD(imasig_rule, missing)
{
	.label = NULL,
	.valid = false,
};

FIXTURE_VARIANT_ADD(imasig_rule, good_signature)
{
	.label = "payload.good.sig",
	.valid = true,
};
/* clang-format on */

FIXTURE_SETUP(imasig_rule)
{
	static const char *const funcs[] = { "FILE_CHECK" };
	uint8_t payload[KEY_MAX];
	size_t len;

	if (ima_env_setup(_metadata, &self->env, variant, "sig", signed_name))
		return;
	imasig_rules(_metadata, &self->env, funcs, ARRAY_SIZE(funcs));
	if (self->env.skip)
		return;
	load_ima_key(_metadata);

	len = read_key_file(_metadata, "payload", payload, sizeof(payload));
	self->hash_len =
		ima_hash_xattr(&self->env.cell, payload, len, self->hash);
	create_file(_metadata, self->env.path, payload, len);
	ASSERT_EQ(0, chown(self->env.path, FOWNER_IMASIG, 0));
	if (removexattr(self->env.path, XATTR_IMA))
		ASSERT_EQ(ENODATA, errno);
	if (variant->label && !strcmp(variant->label, "hash")) {
		memcpy(self->before, self->hash, self->hash_len);
		self->before_len = self->hash_len;
	} else if (variant->label) {
		self->before_len = read_key_file(_metadata, variant->label,
						 self->before,
						 sizeof(self->before));
	} else {
		self->before_len = 0;
	}
	if (self->before_len)
		ASSERT_EQ(0, setxattr(self->env.path, XATTR_IMA, self->before,
				      self->before_len, 0));
	ima_env_watch(_metadata, &self->env);
}

FIXTURE_TEARDOWN(imasig_rule)
{
	ima_env_teardown(_metadata, &self->env);
}

/*
 * enforce: a hash or nothing is denied, cause=IMA-signature-required.
 * fix: allowed, and 6.1 still writes its hash (ima_fix_xattr() runs for
 * anything but a signature), so the file carries a hash it will never
 * pass with in enforce.  log: allowed, unchanged.  off: not appraised.
 */
TEST_F_ENV(imasig_rule, read)
{
	ASSERT_EQ(expected_errno(&self->env.cell, sig_state(variant->valid)),
		  test_open(self->env.path, O_RDONLY));
	if (self->env.cell.mode == MODE_FIX && !variant->valid)
		expect_ima_is(_metadata, self->env.path, self->hash,
			      self->hash_len);
	else if (self->before_len)
		expect_sig_is(_metadata, self->env.path, self->before,
			      self->before_len);
	else
		expect_no_ima(_metadata, self->env.path);
	expect_sig_audited(_metadata, &self->env, variant->valid,
			   "IMA-signature-required");
}

/*
 * A file its owner creates under an imasig rule is new (IMA_NEW_FILE:
 * FMODE_CREATED) until its last writer closes it, and a new file is
 * excused its missing label; but where a signature is required only
 * while it is empty (ima_appraise_measurement(): IMA_DIGSIG_REQUIRED),
 * as nobody can have signed what it holds.  The create's own FILE_CHECK
 * passes and is cached, so the rule that shows it is a second one, for
 * MMAP_CHECK: FOWNER_IMASIG (setfsuid()) creates the file, writes it or
 * not, and maps it executable before the close.  An empty one passes
 * without a record in every mode; one with data is an unsigned file:
 * denied in enforce, cause=IMA-signature-required where the cell
 * appraises.  Broken kernels: every new file excused (regressions/0061),
 * none under a signature rule, not even an empty one (0062).
 */
FIXTURE(imasig_new_file)
{
	struct ima_env env;
};

FIXTURE_VARIANT(imasig_new_file)
{
	/* written before it is mapped */
	bool data;
};

/* clang-format off */
FIXTURE_VARIANT_ADD(imasig_new_file, empty)
{
	.data = false,
};

FIXTURE_VARIANT_ADD(imasig_new_file, written)
{
	.data = true,
};
/* clang-format on */

FIXTURE_SETUP(imasig_new_file)
{
	static const char *const funcs[] = { "FILE_CHECK", "MMAP_CHECK" };

	if (ima_env_setup(_metadata, &self->env, variant, "sig", signed_name))
		return;
	imasig_rules(_metadata, &self->env, funcs, ARRAY_SIZE(funcs));
	if (self->env.skip)
		return;
	/* FOWNER_IMASIG creates the file in dir */
	ASSERT_EQ(0, chown(self->env.dir, FOWNER_IMASIG, 0));
	ima_env_watch(_metadata, &self->env);
}

FIXTURE_TEARDOWN(imasig_new_file)
{
	ima_env_teardown(_metadata, &self->env);
}

TEST_F_ENV(imasig_new_file, mmap_exec)
{
	static const char data[] = "written by its owner, signed by nobody\n";
	bool denied = variant->data && self->env.cell.mode == MODE_ENFORCE;
	size_t page = sysconf(_SC_PAGESIZE);
	struct stat st;
	void *map;
	int fd;

	setfsuid(FOWNER_IMASIG);
	fd = open(self->env.path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	setfsuid(0);
	ASSERT_LE(0, fd)
	{
		TH_LOG("create %s as uid %d: %s", self->env.path,
		       FOWNER_IMASIG, strerror(errno));
	}
	ASSERT_EQ(0, fstat(fd, &st));
	ASSERT_EQ(FOWNER_IMASIG, st.st_uid);
	if (variant->data)
		ASSERT_EQ(sizeof(data) - 1, write(fd, data, sizeof(data) - 1));
	map = mmap(NULL, page, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	EXPECT_EQ(denied ? EACCES : 0, map == MAP_FAILED ? errno : 0)
	{
		TH_LOG("%s mode: a new %s file under appraise_type=imasig, mapped executable",
		       mode_names[self->env.cell.mode],
		       variant->data ? "written" : "empty");
	}
	if (map != MAP_FAILED)
		ASSERT_EQ(0, munmap(map, page));
	ASSERT_EQ(0, close(fd));
	if (variant->data)
		expect_cause_logged(_metadata, &self->env.cell, &self->env.log,
				    self->env.path, "IMA-signature-required");
	else
		expect_not_logged(_metadata, &self->env.log, self->env.path,
				  NULL);
}

TEST_HARNESS_MAIN
