/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of sig_test and overlay_test: the .ima keyring, the signatures
 * the harness staged in keys/ next to the test programs, and rules these
 * tests append to a custom policy.
 */

#ifndef _IMA_APPRAISE_SIG_H
#define _IMA_APPRAISE_SIG_H

#include <sys/syscall.h>

#include "common.h"

/* What harness/keys.py stage_guest_keys() puts in <test dir>/keys/. */
#define KEYS_DIR "keys"
#define KEY_MAX 4096
#define SIG_MAX 1024
#define EVM_IMA_XATTR_DIGSIG 0x03

/* Keyring serials are positive; add_key(2) without libkeyutils. */
typedef int32_t key_serial_t;

/* Path of file name in the keys/ directory next to this program. */
static inline void keys_path(char path[PATH_MAX], const char *name)
{
	char rel[255];

	snprintf(rel, sizeof(rel), "%s/%s", KEYS_DIR, name);
	sibling_path(path, rel);
}

/* Reads keys/<name> into buf; returns its length. */
static inline size_t read_key_file(struct __test_metadata *const _metadata,
				   const char *name, uint8_t *buf, size_t size)
{
	char path[PATH_MAX];
	ssize_t len;
	int fd;

	keys_path(path, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd)
	{
		TH_LOG("open %s: %s (staged by harness/keys.py)", path,
		       strerror(errno));
	}
	len = read(fd, buf, size);
	close(fd);
	ASSERT_LT(0, len);
	ASSERT_GT((ssize_t)size, len)
	{
		TH_LOG("%s is larger than %zu bytes", path, size);
	}
	return len;
}

/* The serial of the .ima keyring, from /proc/keys (it is linked nowhere). */
static inline key_serial_t ima_keyring(struct __test_metadata *const _metadata)
{
	char line[512], type[32], desc[256];
	key_serial_t id = 0;
	unsigned int serial;
	FILE *keys;

	keys = fopen("/proc/keys", "re");
	ASSERT_NE(NULL, keys)
	{
		TH_LOG("open /proc/keys: %s (CONFIG_KEYS, CONFIG_PROC_FS?)",
		       strerror(errno));
	}
	while (fgets(line, sizeof(line), keys))
		if (sscanf(line, "%x %*s %*s %*s %*s %*s %*s %31s %255s",
			   &serial, type, desc) == 3 &&
		    !strcmp(type, "keyring") && !strcmp(desc, ".ima:")) {
			id = serial;
			break;
		}
	fclose(keys);
	ASSERT_LT(0, id)
	{
		TH_LOG("no .ima keyring in /proc/keys (CONFIG_INTEGRITY_TRUSTED_KEYRING?)");
	}
	return id;
}

/* add_key("asymmetric") of keys/<cert> to .ima: 0 or the errno. */
static inline int load_cert(struct __test_metadata *const _metadata,
			    const char *cert)
{
	uint8_t der[KEY_MAX];
	size_t len = read_key_file(_metadata, cert, der, sizeof(der));
	key_serial_t ring = ima_keyring(_metadata);

	if (syscall(__NR_add_key, "asymmetric", NULL, der, len, ring) < 0)
		return errno;
	return 0;
}

/*
 * The test key in .ima; loading it again (every fixture, every program
 * of the boot) replaces the link with an identical key.
 */
static inline void load_ima_key(struct __test_metadata *const _metadata)
{
	ASSERT_EQ(0, load_cert(_metadata, "ima.der"));
}

/* security.ima of path is exactly the signature sig[0..len). */
static inline void expect_sig_is(struct __test_metadata *const _metadata,
				 const char *path, const uint8_t *sig,
				 size_t len)
{
	uint8_t seen[SIG_MAX];
	char seen_hex[3 * 16 + 64];
	ssize_t seen_len = get_ima(path, seen, sizeof(seen));

	EXPECT_TRUE(seen_len == (ssize_t)len && !memcmp(sig, seen, len))
	{
		TH_LOG("%s: security.ima is no longer the signature (%zd bytes: %s...)",
		       path, seen_len,
		       hex(seen, seen_len < 16 ? seen_len : 16, seen_hex,
			   sizeof(seen_hex)));
	}
}

#endif /* _IMA_APPRAISE_SIG_H */
