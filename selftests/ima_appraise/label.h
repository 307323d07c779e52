/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Files and their security.ima: the value IMA must write for given
 * contents in this cell, a well-formed wrong one, putting a file in a
 * state, and checking what a file carries afterwards.
 */

#ifndef _IMA_APPRAISE_LABEL_H
#define _IMA_APPRAISE_LABEL_H

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "../kselftest_harness.h"
#include "cell.h"
#include "hash.h"

#define XATTR_IMA "security.ima"

/*
 * security.ima of a hash, as ima_fix_xattr() writes it: SHA-1 (and MD5) as
 * IMA_XATTR_DIGEST (01 <digest>), every other algorithm as
 * IMA_XATTR_DIGEST_NG (04 <enum hash_algo> <digest>).
 */
#define IMA_XATTR_DIGEST 0x01
#define IMA_XATTR_DIGEST_NG 0x04
/* Room for any value the tests read: 04 <algo> <sha512 digest>. */
#define IMA_XATTR_MAX 66

/* What security.ima holds when a test accesses the file. */
enum ima_state { STATE_MISSING, STATE_WRONG, STATE_CORRECT };

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

/* Returns the length read, or -errno. */
static inline ssize_t get_ima(const char *path, uint8_t *buf, size_t size)
{
	ssize_t len = getxattr(path, XATTR_IMA, buf, size);

	return len < 0 ? -errno : len;
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
static inline void expect_ima_is(struct __test_metadata *const _metadata,
				 const char *path, const uint8_t *want,
				 size_t len)
{
	char seen_hex[3 * IMA_XATTR_MAX + 64], want_hex[3 * IMA_XATTR_MAX + 64];
	uint8_t seen[IMA_XATTR_MAX + 16];
	ssize_t seen_len = get_ima(path, seen, sizeof(seen));

	EXPECT_TRUE(seen_len == (ssize_t)len && !memcmp(want, seen, len))
	{
		TH_LOG("%s: security.ima is %s, expected %s", path,
		       hex(seen, seen_len, seen_hex, sizeof(seen_hex)),
		       hex(want, len, want_hex, sizeof(want_hex)));
	}
}

/* path must have no security.ima at all. */
static inline void expect_no_ima(struct __test_metadata *const _metadata,
				 const char *path)
{
	char seen_hex[3 * IMA_XATTR_MAX + 64];
	uint8_t seen[IMA_XATTR_MAX + 16];
	ssize_t seen_len = get_ima(path, seen, sizeof(seen));

	EXPECT_EQ(-ENODATA, seen_len)
	{
		TH_LOG("%s: security.ima should be absent, it is %s", path,
		       hex(seen, seen_len, seen_hex, sizeof(seen_hex)));
	}
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

/* security.ima of path is still what set_ima_state() put there. */
static inline void expect_ima_kept(struct __test_metadata *const _metadata,
				   const char *path, enum ima_state state,
				   const uint8_t *good)
{
	uint8_t wrong[IMA_XATTR_MAX] = { 0 };
	size_t off, len = ima_xattr_len(good, &off);

	if (state == STATE_CORRECT) {
		expect_ima_is(_metadata, path, good, len);
	} else if (state == STATE_MISSING) {
		expect_no_ima(_metadata, path);
	} else {
		ima_wrong_xattr(good, wrong);
		expect_ima_is(_metadata, path, wrong, len);
	}
}

/*
 * After an access, security.ima must hold exactly: the correct value in
 * fix mode (ima_fix_xattr(), the cell's algorithm) and whatever it held
 * before in every other mode.
 */
static inline void expect_ima_after(struct __test_metadata *const _metadata,
				    const struct cell *cell, const char *path,
				    enum ima_state before, const uint8_t *good)
{
	expect_ima_kept(_metadata, path,
			cell->mode == MODE_FIX ? STATE_CORRECT : before, good);
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

/*
 * Creates path root-owned with data and the correct security.ima for it
 * in this cell; returns that value in good and its length.
 */
static inline size_t create_labelled(struct __test_metadata *const _metadata,
				     const struct cell *cell, const char *path,
				     const void *data, size_t len,
				     uint8_t good[IMA_XATTR_MAX])
{
	size_t good_len = ima_hash_xattr(cell, data, len, good);

	create_file(_metadata, path, data, len);
	set_ima_state(_metadata, path, STATE_CORRECT, good);
	return good_len;
}

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

#endif /* _IMA_APPRAISE_LABEL_H */
