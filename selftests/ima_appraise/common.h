/* SPDX-License-Identifier: GPL-2.0 */
/*
 * IMA appraisal selftests: helpers shared by every *_test.c.
 *
 * These tests rewrite the IMA policy and security.ima of files.  They only
 * act in a guest booted by the harness, which puts IMA_SELFTEST_MARKER on
 * the kernel command line; anywhere else every test SKIPs and says why.
 * The mode and policy source under test are read from /proc/cmdline.
 */

#ifndef _IMA_APPRAISE_COMMON_H
#define _IMA_APPRAISE_COMMON_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "../kselftest_harness.h"

#define IMA_SELFTEST_MARKER "ima_selftest.harness=1"
#define DEFAULT_SCRATCH "/mnt/scratch"
#define IMA_POLICY "/sys/kernel/security/ima/policy"
#define XATTR_IMA "security.ima"
#define EXT4_SUPER_MAGIC 0xEF53
/* Size of a test directory path: short, so dir + "/name" always fits. */
#define DIR_MAX 256

/*
 * security.ima of a hash, as ima_fix_xattr() writes it: SHA-1 (and MD5) as
 * IMA_XATTR_DIGEST (01 <digest>), every other algorithm as
 * IMA_XATTR_DIGEST_NG (04 <enum hash_algo> <digest>).
 */
#define IMA_XATTR_DIGEST 0x01
#define IMA_XATTR_DIGEST_NG 0x04
#define HASH_ALGO_SHA1 2
#define HASH_ALGO_SHA256 4
#define SHA1_LEN 20
#define SHA256_LEN 32
/* Room for any value the tests read: 04 <algo> <sha512 digest>. */
#define IMA_XATTR_MAX 66

enum appraise_mode { MODE_ENFORCE, MODE_FIX, MODE_LOG, MODE_OFF };
enum policy_source { POLICY_BUILTIN, POLICY_LEGACY, POLICY_CUSTOM };

/* What security.ima holds when a test accesses the file. */
enum ima_state { STATE_MISSING, STATE_WRONG, STATE_CORRECT };

static const char *const mode_names[] = { "enforce", "fix", "log", "off" };
static const char *const policy_names[] = { "builtin", "legacy", "custom" };

/* The boot this test runs in, as /proc/cmdline describes it. */
struct cell {
	bool harness;
	enum appraise_mode mode;
	enum policy_source policy;
	/* ima_hash=: what IMA hashes new and repaired files with (enum hash_algo) */
	int hash_algo;
	/* ima_appraise_setattr=remove: post_setattr removes security.ima */
	bool setattr_remove;
};

/*
 * The uid table: file owners that select extra rules of the custom policy
 * (or no rule at all), one per feature, so that rules appended by one test
 * never apply to another test's files.
 *
 * FOWNER_NOT_IN_POLICY: outside every rule (the base rules are fowner=0,
 *                       the builtin appraise_tcb policy's too).
 * FOWNER_IMASIG:        signatures: appraise_type=imasig rules.
 */
#define FOWNER_NOT_IN_POLICY 1000
#define FOWNER_IMASIG 4242

/* SKIP for a reason the cell states; the harness accepts only these. */
#define CELL_SKIP(statement, fmt, ...) \
	SKIP(statement, "not for this cell: " fmt, ##__VA_ARGS__)

/* ---- SHA-256 (FIPS 180-4), so the tests depend on no library ---- */

struct sha256 {
	uint32_t h[8];
	uint64_t len;
	uint8_t buf[64];
	size_t used;
};

static const uint32_t sha256_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROR32(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static inline void sha256_block(struct sha256 *s, const uint8_t *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, h, t1, t2;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | p[4 * i + 1] << 16 |
		       p[4 * i + 2] << 8 | p[4 * i + 3];
	for (; i < 64; i++)
		w[i] = w[i - 16] + w[i - 7] +
		       (ROR32(w[i - 15], 7) ^ ROR32(w[i - 15], 18) ^
			(w[i - 15] >> 3)) +
		       (ROR32(w[i - 2], 17) ^ ROR32(w[i - 2], 19) ^
			(w[i - 2] >> 10));
	a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3];
	e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
	for (i = 0; i < 64; i++) {
		t1 = h + (ROR32(e, 6) ^ ROR32(e, 11) ^ ROR32(e, 25)) +
		     ((e & f) ^ (~e & g)) + sha256_k[i] + w[i];
		t2 = (ROR32(a, 2) ^ ROR32(a, 13) ^ ROR32(a, 22)) +
		     ((a & b) ^ (a & c) ^ (b & c));
		h = g, g = f, f = e, e = d + t1;
		d = c, c = b, b = a, a = t1 + t2;
	}
	s->h[0] += a, s->h[1] += b, s->h[2] += c, s->h[3] += d;
	s->h[4] += e, s->h[5] += f, s->h[6] += g, s->h[7] += h;
}

static inline void sha256(const void *data, size_t len, uint8_t out[SHA256_LEN])
{
	static const uint32_t init[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};
	struct sha256 s = { .len = len };
	const uint8_t *p = data;
	uint64_t bits = (uint64_t)len * 8;
	int i;

	memcpy(s.h, init, sizeof(init));
	for (; len >= 64; len -= 64, p += 64)
		sha256_block(&s, p);
	memcpy(s.buf, p, len);
	s.buf[len++] = 0x80;
	if (len > 56) {
		memset(s.buf + len, 0, 64 - len);
		sha256_block(&s, s.buf);
		len = 0;
	}
	memset(s.buf + len, 0, 56 - len);
	for (i = 0; i < 8; i++)
		s.buf[56 + i] = bits >> (56 - 8 * i);
	sha256_block(&s, s.buf);
	for (i = 0; i < 32; i++)
		out[i] = s.h[i / 4] >> (24 - 8 * (i % 4));
}

/* ---- SHA-1 (FIPS 180-4), the default ima_hash of the kernels under test ---- */

#define ROL32(x, n) (((x) << (n)) | ((x) >> (32 - (n))))

static inline void sha1_block(uint32_t h[5], const uint8_t *p)
{
	uint32_t w[80], a, b, c, d, e, f, k, t;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | p[4 * i + 1] << 16 |
		       p[4 * i + 2] << 8 | p[4 * i + 3];
	for (; i < 80; i++)
		w[i] = ROL32(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
	for (i = 0; i < 80; i++) {
		if (i < 20)
			f = (b & c) | (~b & d), k = 0x5a827999;
		else if (i < 40)
			f = b ^ c ^ d, k = 0x6ed9eba1;
		else if (i < 60)
			f = (b & c) | (b & d) | (c & d), k = 0x8f1bbcdc;
		else
			f = b ^ c ^ d, k = 0xca62c1d6;
		t = ROL32(a, 5) + f + e + k + w[i];
		e = d, d = c, c = ROL32(b, 30), b = a, a = t;
	}
	h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
}

static inline void sha1(const void *data, size_t len, uint8_t out[SHA1_LEN])
{
	uint32_t h[5] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476,
			  0xc3d2e1f0 };
	const uint8_t *p = data;
	uint64_t bits = (uint64_t)len * 8;
	uint8_t buf[64];
	int i;

	for (; len >= 64; len -= 64, p += 64)
		sha1_block(h, p);
	memcpy(buf, p, len);
	buf[len++] = 0x80;
	if (len > 56) {
		memset(buf + len, 0, 64 - len);
		sha1_block(h, buf);
		len = 0;
	}
	memset(buf + len, 0, 56 - len);
	for (i = 0; i < 8; i++)
		buf[56 + i] = bits >> (56 - 8 * i);
	sha1_block(h, buf);
	for (i = 0; i < SHA1_LEN; i++)
		out[i] = h[i / 4] >> (24 - 8 * (i % 4));
}

/* ---- the cell: harness marker, ima_appraise= and policy source ---- */

static inline bool cmdline_has(const char *cmdline, const char *token)
{
	size_t len = strlen(token);
	const char *p = cmdline;

	while ((p = strstr(p, token))) {
		if ((p == cmdline || p[-1] == ' ') &&
		    (p[len] == ' ' || p[len] == '\n' || p[len] == '\0'))
			return true;
		p += len;
	}
	return false;
}

/*
 * Value of "key=" on the command line (last one wins, as for the kernel).
 * The key must be followed by '=': "ima_appraise" does not match
 * ima_appraise_tcb or ima_appraise_setattr=.
 */
static const char *cmdline_value(const char *cmdline, const char *key,
				 char *val, size_t size)
{
	size_t klen = strlen(key);
	const char *p = cmdline, *found = NULL;

	while ((p = strstr(p, key))) {
		if ((p == cmdline || p[-1] == ' ') && p[klen] == '=')
			found = p + klen + 1;
		p += klen;
	}
	if (!found)
		return NULL;
	snprintf(val, size, "%.*s", (int)strcspn(found, "\n "), found);
	return val;
}

/* Returns 0, or an errno if /proc/cmdline cannot be read. */
static inline int read_cell(struct cell *cell)
{
	char cmdline[4096], val[256];
	ssize_t len;
	int fd;

	fd = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	len = read(fd, cmdline, sizeof(cmdline) - 1);
	close(fd);
	if (len < 0)
		return errno;
	cmdline[len] = '\0';

	cell->harness = cmdline_has(cmdline, IMA_SELFTEST_MARKER);

	/* Same prefix matching as ima_appraise_parse_cmdline(); default enforce. */
	cell->mode = MODE_ENFORCE;
	if (cmdline_value(cmdline, "ima_appraise", val, sizeof(val))) {
		if (!strncmp(val, "off", 3))
			cell->mode = MODE_OFF;
		else if (!strncmp(val, "log", 3))
			cell->mode = MODE_LOG;
		else if (!strncmp(val, "fix", 3))
			cell->mode = MODE_FIX;
	}

	/*
	 * ima_hash= (hash_setup()): a name of hash_algo_name[]; the kernels
	 * under test default to SHA-1.  Only the algorithms the tests can
	 * compute are known; anything else is 0 and setup_cell() fails.
	 */
	cell->hash_algo = HASH_ALGO_SHA1;
	if (cmdline_value(cmdline, "ima_hash", val, sizeof(val))) {
		if (!strcmp(val, "sha1"))
			cell->hash_algo = HASH_ALGO_SHA1;
		else if (!strcmp(val, "sha256"))
			cell->hash_algo = HASH_ALGO_SHA256;
		else
			cell->hash_algo = 0;
	}

	cell->setattr_remove = cmdline_value(cmdline, "ima_appraise_setattr",
					     val, sizeof(val)) &&
			       !strcmp(val, "remove");

	/* ima_policy= takes '|'-separated names; appraise_tcb is ours. */
	if (cmdline_value(cmdline, "ima_policy", val, sizeof(val)) &&
	    strstr(val, "appraise_tcb"))
		cell->policy = POLICY_BUILTIN;
	else if (cmdline_has(cmdline, "ima_appraise_tcb"))
		cell->policy = POLICY_LEGACY;
	else
		cell->policy = POLICY_CUSTOM;
	return 0;
}

/* ---- probes: return 0 or the errno of the failing call ---- */

static inline int test_open(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC);

	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

/*
 * Executes path; the helper exits with EXEC_HELPER_STATUS.  Returns 0 if
 * it ran, the execve() errno if the kernel refused, or EXEC_RAN_BADLY if
 * it started but did not exit with EXEC_HELPER_STATUS (killed after the
 * point of no return, for instance).
 */
#define EXEC_HELPER_STATUS 42
#define EXEC_RAN_BADLY (-1)

static inline int test_execve(struct __test_metadata *const _metadata,
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

		execve(path, argv, envp);
		err = errno;
		if (write(pipefd[1], &err, sizeof(err)) != sizeof(err))
			_exit(126);
		_exit(127);
	}
	close(pipefd[1]);
	if (read(pipefd[0], &err, sizeof(err)) != sizeof(err))
		err = 0; /* pipe closed on exec: it ran */
	close(pipefd[0]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	if (err)
		return err;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != EXEC_HELPER_STATUS)
		return EXEC_RAN_BADLY;
	return 0;
}

static inline int test_mmap_exec(int fd, size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);

	if (p == MAP_FAILED)
		return errno;
	munmap(p, len);
	return 0;
}

/* ---- security.ima ---- */

/*
 * The security.ima value IMA itself writes (fix mode, last writer) for a
 * file holding data, in this cell; returns its length.
 */
static inline size_t ima_hash_xattr(const struct cell *cell, const void *data,
				    size_t len, uint8_t out[IMA_XATTR_MAX])
{
	if (cell->hash_algo == HASH_ALGO_SHA256) {
		out[0] = IMA_XATTR_DIGEST_NG;
		out[1] = HASH_ALGO_SHA256;
		sha256(data, len, out + 2);
		return 2 + SHA256_LEN;
	}
	out[0] = IMA_XATTR_DIGEST;
	sha1(data, len, out + 1);
	return 1 + SHA1_LEN;
}

/* Length and digest offset of a value made by ima_hash_xattr(). */
static inline size_t ima_xattr_len(const uint8_t *value, size_t *digest_off)
{
	if (value[0] == IMA_XATTR_DIGEST) {
		*digest_off = 1;
		return 1 + SHA1_LEN;
	}
	*digest_off = 2;
	return value[0] == IMA_XATTR_DIGEST_NG && value[1] == HASH_ALGO_SHA256 ?
		       2 + SHA256_LEN :
		       0;
}

/* Returns the length read, or -errno. */
static inline ssize_t get_ima(const char *path, uint8_t *buf, size_t size)
{
	ssize_t len = getxattr(path, XATTR_IMA, buf, size);

	return len < 0 ? -errno : len;
}

/* Reads a whole file into a malloc'ed buffer. */
static inline void *read_file(struct __test_metadata *const _metadata,
			      const char *path, size_t *len)
{
	struct stat st;
	char *data;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd)
	{
		TH_LOG("open %s: %s", path, strerror(errno));
	}
	ASSERT_EQ(0, fstat(fd, &st));
	data = malloc(st.st_size ? st.st_size : 1);
	ASSERT_NE(NULL, data);
	ASSERT_EQ(st.st_size, read(fd, data, st.st_size));
	close(fd);
	*len = st.st_size;
	return data;
}

/* Creates path (root-owned, 0755) holding data; IMA may label it on close. */
static inline void create_file(struct __test_metadata *const _metadata,
			       const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);

	ASSERT_LE(0, fd)
	{
		TH_LOG("create %s: %s", path, strerror(errno));
	}
	ASSERT_EQ(len, write(fd, data, len));
	ASSERT_EQ(0, close(fd));
}

/* "01 a3 5f ...": for TH_LOG. */
static inline const char *hex(const uint8_t *buf, ssize_t len, char *out,
			      size_t size)
{
	size_t used = 0;
	ssize_t i;

	out[0] = '\0';
	if (len < 0) {
		snprintf(out, size, "(none: %s)", strerror(-len));
		return out;
	}
	for (i = 0; i < len && used + 4 < size; i++)
		used += snprintf(out + used, size - used, "%s%02x",
				 i ? " " : "", buf[i]);
	return out;
}

/* security.ima of path must be exactly want[0..len). */
static inline void assert_ima_is(struct __test_metadata *const _metadata,
				 const char *path, const uint8_t *want,
				 size_t len)
{
	char seen_hex[3 * IMA_XATTR_MAX + 64], want_hex[3 * IMA_XATTR_MAX + 64];
	uint8_t seen[IMA_XATTR_MAX + 16];
	ssize_t seen_len = get_ima(path, seen, sizeof(seen));

	ASSERT_TRUE(seen_len == (ssize_t)len && !memcmp(want, seen, len))
	{
		TH_LOG("%s: security.ima is %s, expected %s", path,
		       hex(seen, seen_len, seen_hex, sizeof(seen_hex)),
		       hex(want, len, want_hex, sizeof(want_hex)));
	}
}

/* path must have no security.ima at all. */
static inline void assert_no_ima(struct __test_metadata *const _metadata,
				 const char *path)
{
	char seen_hex[3 * IMA_XATTR_MAX + 64];
	uint8_t seen[IMA_XATTR_MAX + 16];
	ssize_t seen_len = get_ima(path, seen, sizeof(seen));

	ASSERT_EQ(-ENODATA, seen_len)
	{
		TH_LOG("%s: security.ima should be absent, it is %s", path,
		       hex(seen, seen_len, seen_hex, sizeof(seen_hex)));
	}
}

/*
 * The well-formed but wrong value for a file whose correct value is good
 * (from ima_hash_xattr()): the same header with the digest bytes inverted.
 */
static inline size_t ima_wrong_xattr(const uint8_t *good,
				     uint8_t wrong[IMA_XATTR_MAX])
{
	size_t off, len = ima_xattr_len(good, &off), i;

	memcpy(wrong, good, len);
	for (i = off; i < len; i++)
		wrong[i] = ~wrong[i];
	return len;
}

/*
 * Puts security.ima of path into the given state.  good is the correct
 * value for the file's contents in this cell, from ima_hash_xattr(); the
 * wrong one is ima_wrong_xattr(good): well formed, of the cell's
 * algorithm (which is then also the one IMA re-hashes with), only the
 * digest mismatches.
 */
static inline void set_ima_state(struct __test_metadata *const _metadata,
				 const char *path, enum ima_state state,
				 const uint8_t *good)
{
	uint8_t wrong[IMA_XATTR_MAX];
	size_t off, len = ima_xattr_len(good, &off);

	ASSERT_NE(0, len)
	{
		TH_LOG("good value for %s not made by ima_hash_xattr()", path);
	}
	switch (state) {
	case STATE_MISSING:
		if (removexattr(path, XATTR_IMA))
			ASSERT_EQ(ENODATA, errno);
		break;
	case STATE_WRONG:
		ima_wrong_xattr(good, wrong);
		ASSERT_EQ(0, setxattr(path, XATTR_IMA, wrong, len, 0))
		{
			TH_LOG("setxattr %s: %s", path, strerror(errno));
		}
		break;
	case STATE_CORRECT:
		ASSERT_EQ(0, setxattr(path, XATTR_IMA, good, len, 0))
		{
			TH_LOG("setxattr %s: %s", path, strerror(errno));
		}
		break;
	}
}

/* The errno an open/exec/mmap of a file in this state must get. */
static inline int expected_errno(const struct cell *cell, enum ima_state state)
{
	return cell->mode == MODE_ENFORCE && state != STATE_CORRECT ? EACCES :
								      0;
}

/*
 * After an access, security.ima must hold exactly: the correct value in
 * fix mode (ima_fix_xattr(), the cell's algorithm) and whatever it held
 * before in every other mode.
 */
static inline void assert_ima_after(struct __test_metadata *const _metadata,
				    const struct cell *cell, const char *path,
				    enum ima_state before, const uint8_t *good)
{
	uint8_t wrong[IMA_XATTR_MAX];
	size_t off, len = ima_xattr_len(good, &off);

	if (cell->mode == MODE_FIX || before == STATE_CORRECT) {
		assert_ima_is(_metadata, path, good, len);
	} else if (before == STATE_MISSING) {
		assert_no_ima(_metadata, path);
	} else {
		ima_wrong_xattr(good, wrong);
		assert_ima_is(_metadata, path, wrong, len);
	}
}

/* ---- audit records: how log mode tells itself apart from off ---- */

/*
 * A failed appraisal is logged ("audit: type=1800 ... cause=missing-hash
 * ... name=\"<path>\"") in enforce, fix and log mode alike; without auditd
 * the record reaches the kernel log through kauditd, asynchronously.
 *
 * ima_appraise=off is only off under a custom policy.  Under the builtin
 * (or legacy) appraise_tcb policy, its "appraise func=POLICY_CHECK" rule
 * makes ima_update_policy_flags() OR IMA_APPRAISE_POLICY into ima_appraise,
 * so IMA_APPRAISE stays in ima_policy_flag: files are still appraised and
 * failures logged, but neither denied (no IMA_APPRAISE_ENFORCE) nor
 * repaired (no IMA_APPRAISE_FIX): builtin/legacy off behaves as log.
 */
#define AUDIT_WAIT_MS 3000
/* How long "no record" is watched for: kauditd prints within milliseconds. */
#define AUDIT_QUIET_MS 300

/* Whether this cell logs failed appraisals at all (see above). */
static inline bool cell_audits(const struct cell *cell)
{
	return cell->mode != MODE_OFF || cell->policy != POLICY_CUSTOM;
}

/* Opens /dev/kmsg positioned after every record logged so far. */
static inline int kmsg_open(struct __test_metadata *const _metadata)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	ASSERT_LE(0, fd)
	{
		TH_LOG("open /dev/kmsg: %s", strerror(errno));
	}
	ASSERT_LE(0, lseek(fd, 0, SEEK_END));
	return fd;
}

/* Waits up to ms for a record containing both needles; true if one came. */
static inline bool kmsg_wait_ms(int fd, const char *needle1,
				const char *needle2, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char rec[2048];
	int waited;
	ssize_t len;

	for (waited = 0; waited <= ms; waited += 100) {
		while ((len = read(fd, rec, sizeof(rec) - 1)) > 0 ||
		       (len < 0 && errno == EPIPE)) {
			if (len <= 0)
				continue; /* overwritten records: read on */
			rec[len] = '\0';
			if (strstr(rec, needle1) && strstr(rec, needle2))
				return true;
		}
		poll(&pfd, 1, 100);
	}
	return false;
}

static inline bool kmsg_wait_for(int fd, const char *needle1,
				 const char *needle2)
{
	return kmsg_wait_ms(fd, needle1, needle2, AUDIT_WAIT_MS);
}

/*
 * The audit record "<cause> ... name=\"<path>\"" must come if the cell
 * logs failures (cell_audits()), and must not come otherwise.
 */
static inline void assert_cause_logged(struct __test_metadata *const _metadata,
				       const struct cell *cell, int kmsg_fd,
				       const char *path, const char *cause)
{
	char name[PATH_MAX + 8];

	snprintf(name, sizeof(name), "name=\"%s\"", path);
	if (cell_audits(cell)) {
		ASSERT_TRUE(kmsg_wait_for(kmsg_fd, cause, name))
		{
			TH_LOG("%s mode, %s policy: no audit record \"%s\" for %s within %d ms",
			       mode_names[cell->mode],
			       policy_names[cell->policy], cause, path,
			       AUDIT_WAIT_MS);
		}
	} else {
		ASSERT_FALSE(kmsg_wait_ms(kmsg_fd, cause, name, AUDIT_QUIET_MS))
		{
			TH_LOG("off mode, custom policy: IMA is off, yet it logged \"%s\" for %s",
			       cause, path);
		}
	}
}

/*
 * After an access to a file in state before: a missing or wrong
 * security.ima must have been logged with its cause where the cell logs
 * failures, and must not have been where IMA is off (custom policy).
 */
static inline void assert_audited(struct __test_metadata *const _metadata,
				  const struct cell *cell, int kmsg_fd,
				  const char *path, enum ima_state before)
{
	if (before == STATE_CORRECT)
		return;
	assert_cause_logged(_metadata, cell, kmsg_fd, path,
			    before == STATE_MISSING ? "cause=missing-hash" :
						      "cause=invalid-hash");
}

/* ---- files installed next to the test programs ---- */

/* path = <directory of this program>/name (exec_helper, keys/...). */
static inline void sibling_path(char path[PATH_MAX], const char *name)
{
	char exe[PATH_MAX - 256];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	exe[len > 0 ? len : 0] = '\0';
	slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	snprintf(path, PATH_MAX, "%s/%s", slash ? exe : ".", name);
}

/* ---- the scratch filesystem and the custom policy ---- */

static const char *scratch_dir(void)
{
	const char *dir = getenv("IMA_SELFTEST_SCRATCH");

	return dir && *dir ? dir : DEFAULT_SCRATCH;
}

/* The ext4 UUID of the filesystem mounted at dir, as fsuuid= spells it. */
static inline void scratch_fsuuid(struct __test_metadata *const _metadata,
				  const char *dir, char uuid[37])
{
	char dev[PATH_MAX], mnt[PATH_MAX], line[2 * PATH_MAX + 64];
	uint8_t u[16];
	bool found = false;
	FILE *mounts;
	int fd;

	mounts = fopen("/proc/mounts", "re");
	ASSERT_NE(NULL, mounts);
	while (fgets(line, sizeof(line), mounts))
		if (sscanf(line, "%4095s %4095s", dev, mnt) == 2 &&
		    !strcmp(mnt, dir)) {
			found = true;
			break;
		}
	fclose(mounts);
	ASSERT_TRUE(found)
	{
		TH_LOG("%s is not a mount point in /proc/mounts", dir);
	}
	fd = open(dev, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd)
	{
		TH_LOG("open %s: %s", dev, strerror(errno));
	}
	/* s_uuid: offset 0x68 of the superblock, which starts at 1024. */
	ASSERT_EQ(16, pread(fd, u, 16, 1024 + 0x68));
	close(fd);
	snprintf(
		uuid, 37,
		"%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		u[10], u[11], u[12], u[13], u[14], u[15]);
}

/*
 * The runtime policy of the "custom" cells: root-owned files on the
 * scratch filesystem only, one rule per hook.  FILE_CHECK covers opens
 * that read or write ("^": the mask contains it, so O_RDWR and O_APPEND
 * too), but not execve()'s open, whose mask is MAY_EXEC alone: there
 * BPRM_CHECK appraises on its own (the builtin policy's func-less
 * "appraise fowner=0" matches the open already), and a kernel that skips
 * BPRM_CHECK fails exec_test here.  The first write replaces the (empty)
 * boot policy, so it is written once per boot: every later test finds the
 * rules there and appends nothing.
 */
static inline void load_custom_policy(struct __test_metadata *const _metadata,
				      const char *dir)
{
	static const char *const funcs[] = {
		"func=FILE_CHECK mask=^MAY_READ",
		"func=FILE_CHECK mask=^MAY_WRITE",
		"func=BPRM_CHECK",
		"func=MMAP_CHECK mask=MAY_EXEC",
	};
	char uuid[37], rules[1024], current[16384];
	size_t used = 0, done;
	unsigned int i;
	ssize_t len;
	int fd;

	scratch_fsuuid(_metadata, dir, uuid);

	fd = open(IMA_POLICY, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd)
	{
		TH_LOG("open %s: %s (CONFIG_IMA_READ_POLICY?)", IMA_POLICY,
		       strerror(errno));
	}
	len = read(fd, current, sizeof(current) - 1);
	close(fd);
	ASSERT_LE(0, len);
	current[len] = '\0';
	if (strstr(current, uuid))
		return;

	for (i = 0; i < ARRAY_SIZE(funcs); i++)
		used += snprintf(rules + used, sizeof(rules) - used,
				 "appraise %s fsuuid=%s fowner=0\n", funcs[i],
				 uuid);
	fd = open(IMA_POLICY, O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, fd)
	{
		TH_LOG("open %s for writing: %s (CONFIG_IMA_WRITE_POLICY?)",
		       IMA_POLICY, strerror(errno));
	}
	/* ima_write_policy() takes one rule per write() and says how much. */
	for (done = 0; done < used; done += len) {
		len = write(fd, rules + done, used - done);
		ASSERT_LT(0, len)
		{
			TH_LOG("IMA rejected the policy at: %s (%s)",
			       rules + done, strerror(errno));
		}
	}
	ASSERT_EQ(0, close(fd));
}

/* Whether line has the same words as rule, in any order. */
static inline bool same_rule(const char *line, size_t line_len,
			     const char *rule)
{
	char a[512], b[512], *sa, *sb, *wa[32], *wb[32], *tok;
	int na = 0, nb = 0, i, j;

	if (line_len >= sizeof(a) || strlen(rule) >= sizeof(b))
		return false;
	memcpy(a, line, line_len);
	a[line_len] = '\0';
	strcpy(b, rule);
	for (tok = strtok_r(a, "\n\t ", &sa); tok && na < 32;
	     tok = strtok_r(NULL, "\n\t ", &sa))
		wa[na++] = tok;
	for (tok = strtok_r(b, "\n\t ", &sb); tok && nb < 32;
	     tok = strtok_r(NULL, "\n\t ", &sb))
		wb[nb++] = tok;
	if (na != nb)
		return false;
	for (i = 0; i < nb; i++) {
		for (j = 0; j < na; j++)
			if (wa[j] && !strcmp(wa[j], wb[i]))
				break;
		if (j == na)
			return false;
		wa[j] = NULL;
	}
	return true;
}

/*
 * Appends one rule to the custom policy unless the policy already has it
 * (every test binary of a boot shares the policy, and rules cannot be
 * removed).  Write rules the way the policy file shows them (e.g.
 * "mask=MAY_EXEC", "fowner=4242", a lower-case fsuuid=) so that the
 * check finds them.  Custom cells only: a write would replace the
 * builtin policy.
 */
static inline void policy_add_rule(struct __test_metadata *const _metadata,
				   const char *rule)
{
	char current[16384], buf[512], *line, *end;
	struct cell cell;
	ssize_t len;
	int fd;

	ASSERT_EQ(0, read_cell(&cell));
	ASSERT_EQ(POLICY_CUSTOM, cell.policy)
	{
		TH_LOG("policy_add_rule(\"%s\") in a %s-policy cell would replace it",
		       rule, policy_names[cell.policy]);
	}
	fd = open(IMA_POLICY, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd)
	{
		TH_LOG("open %s: %s", IMA_POLICY, strerror(errno));
	}
	len = read(fd, current, sizeof(current) - 1);
	close(fd);
	ASSERT_LE(0, len);
	current[len] = '\0';
	for (line = current; *line; line = *end ? end + 1 : end) {
		end = strchrnul(line, '\n');
		if (same_rule(line, end - line, rule))
			return;
	}
	fd = open(IMA_POLICY, O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, fd)
	{
		TH_LOG("open %s for writing: %s", IMA_POLICY, strerror(errno));
	}
	/* ima_parse_add_rule() takes one '\n'-terminated rule per write(). */
	len = snprintf(buf, sizeof(buf), "%s\n", rule);
	ASSERT_GT(sizeof(buf), len);
	ASSERT_EQ(len, write(fd, buf, len))
	{
		TH_LOG("IMA rejected the rule \"%s\": %s", rule,
		       strerror(errno));
	}
	ASSERT_EQ(0, close(fd));
}

static inline void write_sysctl(struct __test_metadata *const _metadata,
				const char *path, const char *value)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	ASSERT_LE(0, fd)
	{
		TH_LOG("open %s: %s", path, strerror(errno));
	}
	ASSERT_EQ((ssize_t)strlen(value), write(fd, value, strlen(value)));
	EXPECT_EQ(0, close(fd));
}

/*
 * Common fixture setup: returns true if the test must be skipped (after
 * saying why), otherwise the cell is known, the custom policy is loaded
 * where the cell wants one, and dir is a fresh directory on the scratch
 * ext4 filesystem.
 */
static inline bool setup_cell(struct __test_metadata *const _metadata,
			      struct cell *cell, char dir[DIR_MAX],
			      const char *tag)
{
	const char *scratch = scratch_dir();
	struct statfs sfs;

	ASSERT_EQ(0, read_cell(cell));
	if (!cell->harness) {
		SKIP(return true,
			    "not booted by the IMA selftest harness (no %s on the kernel command line): these tests rewrite the IMA policy and security.ima and only run in its guests",
			    IMA_SELFTEST_MARKER);
	}
	ASSERT_EQ(0, geteuid());
	ASSERT_NE(0, cell->hash_algo)
	{
		TH_LOG("ima_hash= on the command line names an algorithm these tests cannot compute (sha1 and sha256 only)");
	}
	/*
	 * kauditd prints records under printk_ratelimit() (10 per 5 s by
	 * default): more would be dropped, and assert_audited() would fail.
	 */
	write_sysctl(_metadata, "/proc/sys/kernel/printk_ratelimit_burst",
		     "10000");
	ASSERT_EQ(0, statfs(scratch, &sfs))
	{
		TH_LOG("scratch filesystem %s: %s", scratch, strerror(errno));
	}
	ASSERT_EQ(EXT4_SUPER_MAGIC, sfs.f_type)
	{
		TH_LOG("%s must be the harness's ext4 scratch disk", scratch);
	}
	if (cell->policy == POLICY_CUSTOM)
		load_custom_policy(_metadata, scratch);

	snprintf(dir, DIR_MAX, "%s/%s.XXXXXX", scratch, tag);
	ASSERT_NE(NULL, mkdtemp(dir))
	{
		TH_LOG("mkdtemp %s: %s", dir, strerror(errno));
	}
	return false;
}

/* Removes the files a test made, then its directory. */
static inline void cleanup_dir(struct __test_metadata *const _metadata,
			       const char *dir, const char *const names[])
{
	char path[PATH_MAX];

	if (!dir[0])
		return;
	for (; *names; names++) {
		snprintf(path, sizeof(path), "%s/%s", dir, *names);
		EXPECT_EQ(0, unlink(path) && errno != ENOENT ? errno : 0);
	}
	EXPECT_EQ(0, rmdir(dir));
}

/* ---- setattr_test (last writer, fput, xattr, setattr area) ---- */

/*
 * uid table, continued.
 * FOWNER_SETATTR_IMASIG: setattr_test's appraise_type=imasig rule, which a
 *                        chown from root moves a hash-labelled file under.
 */
#define FOWNER_SETATTR_IMASIG 4243

#endif /* _IMA_APPRAISE_COMMON_H */
