// SPDX-License-Identifier: GPL-2.0
/*
 * IMA's securityfs files read over and over leak no kernel memory.
 *
 * No files: each test reads one of /sys/kernel/security/ima/{policy,
 * violations,ascii_runtime_measurements,binary_runtime_measurements}
 * ROUNDS times (open, read to EOF, close), twice, and compares the
 * kernel's unreclaimable slab (SUnreclaim in /proc/meminfo, which also
 * counts kmalloc()s of a page or more) before and after each batch: the
 * smaller growth counts (on 6.12's SLUB_TINY, with nothing to shrink, a
 * batch grew by 136-176 KB in 3 of the 64 reads of 16 cells on 2026-12-06,
 * right after the program before).  A seq_file that is not
 * released keeps its page-sized buffer: ROUNDS pages.  The bound,
 * LEAK_BOUND per round, is far above what a good kernel's caches and
 * counters drift in a run (a few pages) and far below one page per
 * round; a leak of less than LEAK_BOUND bytes per open goes unseen.
 *
 * kmemleak would see smaller leaks, but it reports only objects older
 * than 5 s (a wait per program) and needs CONFIG_DEBUG_KMEMLEAK in every
 * kernel of the matrix; this needs nothing.
 *
 * Under KASAN (the debug flavor) a freed object is not freed at once: it
 * waits in KASAN's quarantine, still counted in SUnreclaim, until the
 * quarantine (1/32 of RAM) is full: ROUNDS freed buffers look like ROUNDS
 * leaked ones.  Each measurement first shrinks every SLUB cache
 * (/sys/kernel/slab/<cache>/shrink: kmem_cache_shrink(), which also
 * takes the cache's objects out of the quarantine, kasan_cache_shrink()),
 * so that only objects still allocated are counted.  A kernel without
 * /sys/kernel/slab (the plain flavor's SLOB on 6.1, SLUB_TINY on 6.12)
 * has nothing to shrink.
 *
 * A kernel without CONFIG_IMA_READ_POLICY (Debian's) lets nobody read the
 * policy: that case skips as not for this cell.
 */

#include <dirent.h>

#include "common.h"

#define IMA_DIR "/sys/kernel/security/ima/"
#define ROUNDS 128
#define LEAK_BOUND 1024

FIXTURE(securityfs)
{
	/* the cell; no file */
	struct ima_env env;
};

FIXTURE_VARIANT(securityfs)
{
	/* file under IMA_DIR */
	const char *name;
};

/* clang-format off */
FIXTURE_VARIANT_ADD(securityfs, policy)
{
	.name = "policy",
};

FIXTURE_VARIANT_ADD(securityfs, violations)
{
	.name = "violations",
};

FIXTURE_VARIANT_ADD(securityfs, ascii_runtime_measurements)
{
	.name = "ascii_runtime_measurements",
};

FIXTURE_VARIANT_ADD(securityfs, binary_runtime_measurements)
{
	.name = "binary_runtime_measurements",
};
/* clang-format on */

FIXTURE_SETUP(securityfs)
{
	ima_env_setup(_metadata, &self->env, variant, "securityfs", "none");
}

FIXTURE_TEARDOWN(securityfs)
{
	ima_env_teardown(_metadata, &self->env);
}

/* Frees what every SLUB cache holds free, and KASAN's quarantine. */
static void shrink_slabs(struct __test_metadata *const _metadata)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *dir;

	dir = opendir("/sys/kernel/slab");
	if (!dir) {
		ASSERT_EQ(ENOENT, errno);
		return;
	}
	while ((de = readdir(dir))) {
		/* Merged caches appear again as symlinks to one directory. */
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/kernel/slab/%s/shrink", de->d_name);
		write_sysctl(_metadata, path, "1");
	}
	closedir(dir);
}

/*
 * SUnreclaim in bytes, the per-CPU deltas folded in (an SMP kernel has
 * vm/stat_refresh; a UP one counts in the global counter directly).
 */
static long long sunreclaim(struct __test_metadata *const _metadata)
{
	char line[256];
	long long kb = -1;
	FILE *f;

	shrink_slabs(_metadata);
	if (!access("/proc/sys/vm/stat_refresh", W_OK))
		write_sysctl(_metadata, "/proc/sys/vm/stat_refresh", "1");
	f = fopen("/proc/meminfo", "re");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SUnreclaim: %lld kB", &kb) == 1)
			break;
	fclose(f);
	ASSERT_LE(0, kb)
	{
		TH_LOG("no SUnreclaim in /proc/meminfo");
	}
	return kb * 1024;
}

/* Opens path, reads it to the end, closes it; returns 0 or an errno. */
static int read_all(const char *path)
{
	char buf[4096];
	ssize_t len;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	while ((len = read(fd, buf, sizeof(buf))) > 0)
		;
	if (len < 0)
		err = errno;
	close(fd);
	return err;
}

/* Fails on a kernel that leaks a buffer (or more) per open of the file. */
TEST_F_ENV(securityfs, read_repeatedly)
{
	char path[PATH_MAX];
	long long before, middle, after, grew;
	int i;

	snprintf(path, sizeof(path), "%s%s", IMA_DIR, variant->name);
	/*
	 * Without CONFIG_IMA_READ_POLICY the policy is write-only:
	 * ima_open_policy() refuses every open that is not O_WRONLY with
	 * EACCES, root's too.  Nothing to read, nothing to leak.
	 */
	if (!strcmp(variant->name, "policy") &&
	    test_open(path, O_RDONLY) == EACCES)
		CELL_SKIP(return, IMA_DIR "policy cannot be opened for reading (EACCES: no CONFIG_IMA_READ_POLICY)");
	/* Once first: one-time allocations are no leak. */
	ASSERT_EQ(0, read_all(path))
	{
		TH_LOG("read %s: %s", path, strerror(errno));
	}
	/*
	 * Two batches: a leak grows SUnreclaim in both, an allocation that
	 * only happens to fall in one (a new slab of a cache the program
	 * before left short, work it left behind) in that one only.
	 */
	before = sunreclaim(_metadata);
	for (i = 0; i < ROUNDS; i++)
		ASSERT_EQ(0, read_all(path));
	middle = sunreclaim(_metadata);
	for (i = 0; i < ROUNDS; i++)
		ASSERT_EQ(0, read_all(path));
	after = sunreclaim(_metadata);
	grew = middle - before < after - middle ? middle - before : after - middle;
	EXPECT_GT((long long)ROUNDS * LEAK_BOUND, grew)
	{
		TH_LOG("%s read %d times twice: unreclaimable slab grew by %lld and %lld bytes (%lld to %lld to %lld)",
		       path, ROUNDS, middle - before, after - middle, before, middle, after);
	}
	TH_LOG("grew by %lld and %lld bytes", middle - before, after - middle);
}

TEST_HARNESS_MAIN
