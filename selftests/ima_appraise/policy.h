/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The IMA policy of the custom cells: the base rules, scoped to the
 * scratch filesystem's fsuuid=, and rules a test appends for itself.
 */

#ifndef _IMA_APPRAISE_POLICY_H
#define _IMA_APPRAISE_POLICY_H

#include <limits.h>
#include <stdint.h>

#include "../kselftest_harness.h"
#include "cell.h"

#define DEFAULT_SCRATCH "/mnt/scratch"
#define IMA_POLICY "/sys/kernel/security/ima/policy"

/*
 * The uid table: file owners that select extra rules of the custom policy
 * (or no rule at all), one per feature, so that rules appended by one test
 * never apply to another test's files.
 *
 * FOWNER_NOT_IN_POLICY:  outside every rule (the base rules are fowner=0,
 *                        the builtin appraise_tcb policy's too).
 * FOWNER_IMASIG:         sig_test's appraise_type=imasig rule.
 * FOWNER_SETATTR_IMASIG: setattr_test's appraise_type=imasig rule, which a
 *                        chown from root moves a hash-labelled file under.
 * FOWNER_BPRM_ONLY:      exec_test's func=BPRM_CHECK rule, the only one
 *                        that covers these files: execve()'s own hook.
 * FOWNER_NOXATTR:        noxattr_test's appraise rule for ramfs.
 * FOWNER_DONT, FOWNER_APPRAISE, FOWNER_MEASURE: rules_test's dont_appraise
 *                        (then appraise), appraise and measure rules.
 * FOWNER_DIRECTIO:       open_test's appraise rule with permit_directio.
 */
#define FOWNER_NOT_IN_POLICY 1000
#define FOWNER_IMASIG 4242
#define FOWNER_SETATTR_IMASIG 4243
#define FOWNER_BPRM_ONLY 4244
#define FOWNER_NOXATTR 4250
#define FOWNER_DONT 4251
#define FOWNER_APPRAISE 4252
#define FOWNER_MEASURE 4253
#define FOWNER_DIRECTIO 4254

static inline const char *scratch_dir(void)
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

/* The policy in force, as securityfs shows it, NUL-terminated. */
static inline void read_policy(struct __test_metadata *const _metadata,
			       char *buf, size_t size)
{
	ssize_t len;
	int fd;

	fd = open(IMA_POLICY, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd)
	{
		TH_LOG("open %s: %s (CONFIG_IMA_READ_POLICY?)", IMA_POLICY,
		       strerror(errno));
	}
	len = read(fd, buf, size - 1);
	close(fd);
	ASSERT_LE(0, len)
	{
		TH_LOG("read %s: %s", IMA_POLICY, strerror(errno));
	}
	buf[len] = '\0';
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
	read_policy(_metadata, current, sizeof(current));
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
	read_policy(_metadata, current, sizeof(current));
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

#endif /* _IMA_APPRAISE_POLICY_H */
