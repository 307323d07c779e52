/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The cell: what the boot under test is, read from /proc/cmdline (the
 * harness marker, ima_appraise=, the policy source, ima_hash= and
 * ima_appraise_setattr=) and, without ima_hash=, the kernel's own hash
 * algorithm from its measurement list; and what that means for IMA.
 */

#ifndef _IMA_APPRAISE_CELL_H
#define _IMA_APPRAISE_CELL_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define IMA_SELFTEST_MARKER "ima_selftest.harness=1"

/* enum hash_algo of include/uapi/linux/hash_info.h */
#define HASH_ALGO_SHA1 2
#define HASH_ALGO_SHA256 4

enum appraise_mode { MODE_ENFORCE, MODE_FIX, MODE_LOG, MODE_OFF };
enum policy_source { POLICY_BUILTIN, POLICY_LEGACY, POLICY_CUSTOM };

static const char *const mode_names[] = { "enforce", "fix", "log", "off" };
static const char *const policy_names[] = { "builtin", "legacy", "custom" };

/* The boot this test runs in, as /proc/cmdline describes it. */
struct cell {
	bool harness;
	enum appraise_mode mode;
	enum policy_source policy;
	/*
	 * What IMA hashes new and repaired files with (enum hash_algo):
	 * ima_hash=, or the kernel's default (kernel_hash_algo())
	 */
	int hash_algo;
	/* ima_appraise_setattr=remove: post_setattr removes security.ima */
	bool setattr_remove;
	/*
	 * The builtin policy has its "appraise func=POLICY_CHECK" rule
	 * (CONFIG_IMA_WRITE_POLICY): false if the harness says
	 * ima_selftest.policy_check=0 (see cell_appraises()).
	 */
	bool policy_check;
};

/* SKIP for a reason the cell states; the harness accepts only these. */
#define CELL_SKIP(statement, fmt, ...) \
	SKIP(statement, "not for this cell: " fmt, ##__VA_ARGS__)

/*
 * Starts the message of a failure that is a test's own clock running out
 * (a kworker that never let go of a file, a kauditd that stopped
 * printing): the harness never takes such a case for the known failure
 * of a kernel (harness/results.py), since the kernel hung instead of
 * doing what the case checks.
 */
#define TIMED_OUT "TIMED OUT: "

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
static inline const char *cmdline_value(const char *cmdline, const char *key,
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

#define IMA_ASCII_MEASUREMENTS \
	"/sys/kernel/security/ima/ascii_runtime_measurements"

/* enum hash_algo of an algorithm name the tests can compute, else 0. */
static inline int hash_algo_of(const char *name)
{
	if (!strcmp(name, "sha1"))
		return HASH_ALGO_SHA1;
	if (!strcmp(name, "sha256"))
		return HASH_ALGO_SHA256;
	return 0;
}

/*
 * The kernel's ima_hash_algo as it booted, for a command line without
 * ima_hash=: CONFIG_IMA_DEFAULT_HASH, SHA-1 in the harness's kernels and
 * SHA-256 in Debian's (or SHA-1, where ima_init_crypto() could not
 * allocate the default).  The first measurement is the boot_aggregate,
 * which ima_add_boot_aggregate() records in ima_hash_algo (a TPM may
 * choose another bank; the guests have none), and the ima-ng and ima-sig
 * templates print its digest as "<algo>:<hex>":
 *
 *   10 <template hash> ima-ng sha256:0000...0000 boot_aggregate
 *
 * The plain "ima" template prints the digest bare: it takes only SHA-1
 * (and MD5) digests, and hash_setup() keeps ima_hash= to those.  Returns
 * an enum hash_algo, or 0 for an algorithm the tests cannot compute or a
 * list that cannot be read (ima_env_setup() then fails, saying so).
 */
static inline int kernel_hash_algo(void)
{
	char line[512], name[32], digest[160], event[32];
	FILE *f;
	int n;

	f = fopen(IMA_ASCII_MEASUREMENTS, "re");
	if (!f)
		return 0;
	n = fgets(line, sizeof(line), f) ?
		    sscanf(line, "%*s %*s %*s %159s %31s", digest, event) :
		    0;
	fclose(f);
	if (n != 2 || strcmp(event, "boot_aggregate"))
		return 0;
	n = strcspn(digest, ":");
	if (!digest[n])
		return HASH_ALGO_SHA1;
	snprintf(name, sizeof(name), "%.*s", n, digest);
	return hash_algo_of(name);
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
	 * ima_hash= (hash_setup()): a name of hash_algo_name[]; without it
	 * the kernel's default, as the kernel reports it.  Only the
	 * algorithms the tests can compute are known; anything else is 0
	 * and ima_env_setup() fails.
	 */
	if (cmdline_value(cmdline, "ima_hash", val, sizeof(val)))
		cell->hash_algo = hash_algo_of(val);
	else
		cell->hash_algo = kernel_hash_algo();

	cell->policy_check = !cmdline_has(cmdline, "ima_selftest.policy_check=0");

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

/*
 * Whether IMA appraises at all in this cell: it then appraises files in
 * policy, logs failures (audit cause=), and labels a file it appraised at
 * its last writer's close (ima_check_last_writer() -> ima_update_xattr()).
 *
 * Only ima_appraise=off under a custom policy turns it off:
 * ima_update_policy_flags() drops IMA_APPRAISE from ima_policy_flag, and
 * process_measurement(), ima_file_free() and ima_inode_post_setattr() all
 * return at once.  Under the builtin (and legacy) appraise_tcb policy its
 * "appraise func=POLICY_CHECK" rule makes ima_update_policy_flags() OR
 * IMA_APPRAISE_POLICY into ima_appraise, so IMA_APPRAISE stays in
 * ima_policy_flag: files are still appraised and failures logged, but
 * neither denied (no IMA_APPRAISE_ENFORCE) nor repaired (no
 * IMA_APPRAISE_FIX): builtin/legacy off behaves as log.  That rule exists
 * only with CONFIG_IMA_WRITE_POLICY: without it (Debian's kernels) off is
 * off under every policy.  A kernel without CONFIG_IMA_READ_POLICY cannot
 * show its policy to the tests, so the harness, which reads the kernel's
 * configuration, says so on the command line (policy_check).
 */
static inline bool cell_appraises(const struct cell *cell)
{
	return cell->mode != MODE_OFF ||
	       (cell->policy != POLICY_CUSTOM && cell->policy_check);
}

#endif /* _IMA_APPRAISE_CELL_H */
