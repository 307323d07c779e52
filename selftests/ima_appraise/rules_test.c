// SPDX-License-Identifier: GPL-2.0
/*
 * Rules a test writes: dont_appraise takes files out of an appraise rule
 * that follows it, and a measure rule measures without appraising.
 *
 * Layout, one per test, on the scratch ext4 filesystem:
 *
 * <scratch>/rules.XXXXXX/
 *     data    CONTENTS, wrong security.ima, owned by the variant's uid
 *
 * Rules, appended once per boot in this order (custom cells only: writing
 * a rule replaces appraise_tcb), each scoped to the scratch fsuuid= and a
 * uid of its own:
 *
 *   dont_appraise                                      fowner=FOWNER_DONT
 *   appraise func=FILE_CHECK mask=^MAY_READ            fowner=FOWNER_DONT
 *   appraise func=FILE_CHECK mask=^MAY_READ            fowner=FOWNER_APPRAISE
 *   measure  func=FILE_CHECK mask=^MAY_READ            fowner=FOWNER_MEASURE
 *
 * The first matching appraise or dont_appraise rule decides: a file of
 * FOWNER_DONT is not appraised although an appraise rule matches it; the
 * same rule alone (FOWNER_APPRAISE) appraises as usual.  A file of
 * FOWNER_MEASURE is measured (an entry "<algo>:<digest> <path>" in
 * ascii_runtime_measurements, even with ima_appraise=off) and not
 * appraised: opened in every mode, its wrong label kept, nothing logged.
 */

#include "common.h"

#define CONTENTS "IMA appraisal selftest: rules written by a test\n"

static const char data_name[] = "data";

FIXTURE(rules)
{
	/* env.path is data, env.good its correct security.ima */
	struct ima_env env;
};

FIXTURE_VARIANT(rules)
{
	/* owner of data: which rule covers it */
	uid_t owner;
};

/* clang-format off */
FIXTURE_VARIANT_ADD(rules, dont_appraise)
{
	.owner = FOWNER_DONT,
};

FIXTURE_VARIANT_ADD(rules, appraise)
{
	.owner = FOWNER_APPRAISE,
};

FIXTURE_VARIANT_ADD(rules, measure)
{
	.owner = FOWNER_MEASURE,
};
/* clang-format on */

static void add_rules(struct __test_metadata *const _metadata)
{
	static const struct {
		const char *action;
		uid_t owner;
	} rules[] = {
		{ "dont_appraise", FOWNER_DONT },
		{ "appraise func=FILE_CHECK mask=^MAY_READ", FOWNER_DONT },
		{ "appraise func=FILE_CHECK mask=^MAY_READ", FOWNER_APPRAISE },
		{ "measure func=FILE_CHECK mask=^MAY_READ", FOWNER_MEASURE },
	};
	char rule[256], uuid[37];
	unsigned int i;

	scratch_fsuuid(_metadata, scratch_dir(), uuid);
	for (i = 0; i < ARRAY_SIZE(rules); i++) {
		snprintf(rule, sizeof(rule), "%s fsuuid=%s fowner=%d",
			 rules[i].action, uuid, rules[i].owner);
		policy_add_rule(_metadata, rule);
	}
}

FIXTURE_SETUP(rules)
{
	struct ima_env *env = &self->env;

	if (ima_env_setup(_metadata, env, variant, "rules", data_name))
		return;
	if (env->cell.policy != POLICY_CUSTOM) {
		env->skip = true;
		CELL_SKIP(return, "a %s policy cannot be extended",
				policy_names[env->cell.policy]);
	}
	add_rules(_metadata);
	env->good_len = ima_hash_xattr(&env->cell, CONTENTS, strlen(CONTENTS),
				       env->good);
	create_file(_metadata, env->path, CONTENTS, strlen(CONTENTS));
	/* Owner first: a chown may remove the label (setattr=remove). */
	ASSERT_EQ(0, chown(env->path, variant->owner, variant->owner));
	set_ima_state(_metadata, env->path, STATE_WRONG, env->good);
}

FIXTURE_TEARDOWN(rules)
{
	ima_env_teardown(_metadata, &self->env);
}

/*
 * Whether the measurement list has an entry "<algo>:<hex> <path>" for
 * good, the correct value of path in this cell (ima-ng template: the
 * digest of the contents, in the algorithm IMA hashed with).
 */
static bool measured(struct __test_metadata *const _metadata,
		     const struct cell *cell, const uint8_t *good,
		     const char *path)
{
	char want[PATH_MAX + 160], line[PATH_MAX + 512];
	size_t off, len = ima_xattr_len(good, &off), used, i;
	bool found = false;
	FILE *f;

	used = snprintf(want, sizeof(want), " %s:",
			cell->hash_algo == HASH_ALGO_SHA256 ? "sha256" :
							      "sha1");
	for (i = off; i < len; i++)
		used += snprintf(want + used, sizeof(want) - used, "%02x",
				 good[i]);
	snprintf(want + used, sizeof(want) - used, " %s\n", path);
	f = fopen(IMA_ASCII_MEASUREMENTS, "re");
	ASSERT_NE(NULL, f)
	{
		TH_LOG("open %s: %s", IMA_ASCII_MEASUREMENTS, strerror(errno));
	}
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, want) != NULL;
	fclose(f);
	return found;
}

/*
 * dont_appraise: fails on a kernel that ignores dont_appraise rules (or
 * drops them when written): enforce denies, fix relabels, the open is
 * logged.  appraise: the same rule without dont_appraise before it
 * appraises as usual.  measure: fails on a kernel that does not measure
 * (no entry), or appraises what a measure rule covers.
 */
TEST_F_ENV(rules, open)
{
	struct ima_env *env = &self->env;
	bool appraised = variant->owner == FOWNER_APPRAISE;

	ima_env_watch(_metadata, env);
	ASSERT_EQ(appraised ? expected_errno(&env->cell, STATE_WRONG) : 0,
		  test_open(env->path, O_RDONLY))
	{
		TH_LOG("%s mode: open of a badly labelled file owned by %d",
		       mode_names[env->cell.mode], variant->owner);
	}
	if (appraised) {
		expect_ima_after(_metadata, &env->cell, env->path, STATE_WRONG,
				 env->good);
		expect_audited(_metadata, &env->cell, &env->log, env->path,
			       STATE_WRONG);
	} else {
		expect_ima_kept(_metadata, env->path, STATE_WRONG, env->good);
		expect_not_logged(_metadata, &env->log, env->path, NULL);
	}
	EXPECT_EQ(variant->owner == FOWNER_MEASURE,
		  measured(_metadata, &env->cell, env->good, env->path))
	{
		TH_LOG("%s in %s", env->path, IMA_ASCII_MEASUREMENTS);
	}
}

TEST_HARNESS_MAIN
