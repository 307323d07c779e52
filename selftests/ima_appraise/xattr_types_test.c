// SPDX-License-Identifier: GPL-2.0
/*
 * security.ima values of a type or length IMA cannot verify: stored, and
 * refused by appraisal with the exact audit cause.
 *
 * Layout, one per test, on the scratch ext4 filesystem:
 *
 * <scratch>/xtypes.XXXXXX/
 *     data    root:root 0755, CONTENTS, security.ima as the variant says
 *
 * ima_inode_setxattr() refuses only an empty value, a type >=
 * IMA_XATTR_LAST and an algorithm not built in (xattr_test); every value
 * here is stored.  The appraisal (xattr_verify()) then must not pass:
 *   a type that is no IMA label (0x00, EVM's 0x02 HMAC and 0x05 portable
 *   signature)                          INTEGRITY_UNKNOWN, unknown-ima-data
 *   a digest shorter than its algorithm's, or none (type_only: the
 *   single byte 04)                                     invalid-hash
 *   the correct digest with its last byte flipped       invalid-hash
 *   a v2 signature with no signature data               invalid-signature
 *   an fs-verity signature (0x06) of the wrong version
 *                                       invalid-signature-version
 *   an fs-verity v3 signature by no known key  invalid-verity-signature
 * Per mode: enforce EACCES; fix replaces a value that is no signature with
 * the correct hash and keeps signatures (0x03 and 0x06) as they are; log
 * allows; the three log the cause (so does off under appraise_tcb); off
 * under a custom policy does nothing.
 *
 * 6.1 replaces an fs-verity signature in fix mode (only 0x03 is kept):
 * kernel-patches/0005.
 *
 * The edges of the digest comparison: one byte short (digest_truncated)
 * and the last byte wrong (digest_last_byte) must fail; one byte long
 * (digest_extended) must pass in every mode, untouched and unlogged:
 * xattr_verify() compares the algorithm's length and accepts a longer
 * value ("md5 hash in previous version occupied 20 bytes in xattr").
 */

#include "common.h"

#define CONTENTS "IMA appraisal selftest: security.ima types\n"

/* enum evm_ima_xattr_type */
#define EVM_XATTR_HMAC 0x02
#define EVM_IMA_XATTR_DIGSIG 0x03
#define EVM_XATTR_PORTABLE_DIGSIG 0x05
#define IMA_VERITY_DIGSIG 0x06

static const char data_name[] = "data";

/* How the variant's value is made from the correct one. */
enum value_kind {
	/* type byte replaced, the rest of the correct value kept */
	VALUE_RETYPED,
	/* the correct value cut to len bytes */
	VALUE_CUT,
	/* the bytes of raw, len long */
	VALUE_RAW,
	/* the correct value with its byte at len (negative: from the end) flipped */
	VALUE_FLIPPED,
	/* the correct value and len more bytes */
	VALUE_EXTENDED,
};

FIXTURE(ima_value)
{
	/* env.path is data, env.good its correct security.ima */
	struct ima_env env;
	/* the variant's security.ima */
	uint8_t value[IMA_XATTR_MAX];
	size_t value_len;
};

FIXTURE_VARIANT(ima_value)
{
	enum value_kind kind;
	/* VALUE_RETYPED: the type byte */
	uint8_t type;
	/* VALUE_CUT: bytes kept, negative to keep all but that many */
	int len;
	/* VALUE_RAW: the value */
	const uint8_t *raw;
	/* the audit cause of its appraisal */
	const char *cause;
	/* a signature: fix mode must keep it */
	bool signature;
	/* it verifies: every mode opens it and keeps it, nothing is logged */
	bool passes;
};

/*
 * signature_v2_hdr: type, version, hash_algo (SHA-256), keyid (a key no
 * keyring holds), sig_size (big endian), then sig_size bytes.
 */
static const uint8_t digsig_v2_empty[] = {
	EVM_IMA_XATTR_DIGSIG, 2, 4, 0xde, 0xad, 0xbe, 0xef, 0, 0
};
/*
 * The type byte of a digest with its algorithm (04 <algo> <digest>) and
 * nothing else: xattr_verify() skips the algorithm byte, so a bounds test
 * that subtracts from the value's length wraps around here and compares
 * the digest past the end of the 1-byte value (only KASAN sees that).
 */
static const uint8_t ng_type_only[] = { IMA_XATTR_DIGEST_NG };
static const uint8_t verity_v2[] = {
	IMA_VERITY_DIGSIG, 2, 4, 0xde, 0xad, 0xbe, 0xef, 0, 4, 1, 2, 3, 4
};
static const uint8_t verity_v3[] = {
	IMA_VERITY_DIGSIG, 3, 4, 0xde, 0xad, 0xbe, 0xef, 0, 4, 1, 2, 3, 4
};

/* clang-format off */
FIXTURE_VARIANT_ADD(ima_value, type_zero)
{
	.kind = VALUE_RETYPED,
	.type = 0x00,
	.cause = "unknown-ima-data",
};

FIXTURE_VARIANT_ADD(ima_value, evm_hmac)
{
	.kind = VALUE_RETYPED,
	.type = EVM_XATTR_HMAC,
	.cause = "unknown-ima-data",
};

FIXTURE_VARIANT_ADD(ima_value, evm_portable_signature)
{
	.kind = VALUE_RETYPED,
	.type = EVM_XATTR_PORTABLE_DIGSIG,
	.cause = "unknown-ima-data",
};

FIXTURE_VARIANT_ADD(ima_value, digest_truncated)
{
	.kind = VALUE_CUT,
	.len = -1,
	.cause = "invalid-hash",
};

FIXTURE_VARIANT_ADD(ima_value, digest_half)
{
	.kind = VALUE_CUT,
	.len = -10,
	.cause = "invalid-hash",
};

FIXTURE_VARIANT_ADD(ima_value, digest_last_byte)
{
	.kind = VALUE_FLIPPED,
	.len = -1,
	.cause = "invalid-hash",
};

FIXTURE_VARIANT_ADD(ima_value, digest_extended)
{
	.kind = VALUE_EXTENDED,
	.len = 1,
	.passes = true,
};

FIXTURE_VARIANT_ADD(ima_value, type_only)
{
	.kind = VALUE_RAW,
	.raw = ng_type_only,
	.len = sizeof(ng_type_only),
	.cause = "invalid-hash",
};

FIXTURE_VARIANT_ADD(ima_value, signature_empty)
{
	.kind = VALUE_RAW,
	.raw = digsig_v2_empty,
	.len = sizeof(digsig_v2_empty),
	.cause = "invalid-signature",
	.signature = true,
};

FIXTURE_VARIANT_ADD(ima_value, verity_signature_v2)
{
	.kind = VALUE_RAW,
	.raw = verity_v2,
	.len = sizeof(verity_v2),
	.cause = "invalid-signature-version",
	.signature = true,
};

FIXTURE_VARIANT_ADD(ima_value, verity_signature_unknown_key)
{
	.kind = VALUE_RAW,
	.raw = verity_v3,
	.len = sizeof(verity_v3),
	.cause = "invalid-verity-signature",
	.signature = true,
};
/* clang-format on */

FIXTURE_SETUP(ima_value)
{
	struct ima_env *env = &self->env;

	if (ima_env_setup(_metadata, env, variant, "xtypes", data_name))
		return;
	env->good_len = create_labelled(_metadata, &env->cell, env->path,
					CONTENTS, strlen(CONTENTS), env->good);

	switch (variant->kind) {
	case VALUE_RETYPED:
		memcpy(self->value, env->good, env->good_len);
		self->value[0] = variant->type;
		self->value_len = env->good_len;
		break;
	case VALUE_CUT:
		self->value_len = variant->len < 0 ?
					  env->good_len + variant->len :
					  (size_t)variant->len;
		memcpy(self->value, env->good, self->value_len);
		break;
	case VALUE_RAW:
		self->value_len = variant->len;
		memcpy(self->value, variant->raw, self->value_len);
		break;
	case VALUE_FLIPPED:
		self->value_len = env->good_len;
		memcpy(self->value, env->good, self->value_len);
		self->value[variant->len < 0 ? env->good_len + variant->len :
					       (size_t)variant->len] ^= 0xff;
		break;
	case VALUE_EXTENDED:
		ASSERT_GE(sizeof(self->value), env->good_len + variant->len);
		self->value_len = env->good_len + variant->len;
		memcpy(self->value, env->good, env->good_len);
		memset(self->value + env->good_len, 0x5a, variant->len);
		break;
	}
}

FIXTURE_TEARDOWN(ima_value)
{
	ima_env_teardown(_metadata, &self->env);
}

/*
 * Stored as given, then the open is refused, repaired or logged as the
 * mode says.  Fails on a kernel that passes values it cannot verify
 * (unknown types, digests compared over the bytes present) and, in fix
 * mode, on one that replaces a signature.
 */
TEST_F_ENV(ima_value, open)
{
	struct ima_env *env = &self->env;

	ASSERT_EQ(0, setxattr(env->path, XATTR_IMA, self->value,
			      self->value_len, 0))
	{
		TH_LOG("setxattr %s: %s", env->path, strerror(errno));
	}
	expect_ima_is(_metadata, env->path, self->value, self->value_len);

	ima_env_watch(_metadata, env);
	if (variant->passes) {
		ASSERT_EQ(0, test_open(env->path, O_RDONLY))
		{
			TH_LOG("%s mode, %s policy: open with a value that verifies",
			       mode_names[env->cell.mode],
			       policy_names[env->cell.policy]);
		}
		expect_ima_is(_metadata, env->path, self->value,
			      self->value_len);
		expect_not_logged(_metadata, &env->log, env->path, NULL);
		return;
	}
	ASSERT_EQ(env->cell.mode == MODE_ENFORCE ? EACCES : 0,
		  test_open(env->path, O_RDONLY))
	{
		TH_LOG("%s mode, %s policy: open with a value that cannot verify",
		       mode_names[env->cell.mode],
		       policy_names[env->cell.policy]);
	}
	if (env->cell.mode == MODE_FIX && !variant->signature)
		expect_ima_is(_metadata, env->path, env->good, env->good_len);
	else
		expect_ima_is(_metadata, env->path, self->value,
			      self->value_len);
	expect_cause_logged(_metadata, &env->cell, &env->log, env->path,
			    variant->cause);
}

TEST_HARNESS_MAIN
