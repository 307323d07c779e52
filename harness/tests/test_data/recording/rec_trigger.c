// SPDX-License-Identifier: GPL-2.0
/*
 * Recording-kernel trigger: rec_trigger=<kind> on the command line makes
 * the kernel produce one kind of report, so its real console can be kept
 * as a golden log for the harness's splat parser.
 */
#include <linux/delay.h>
#include <linux/init.h>
#include <linux/jiffies.h>
#include <linux/kfence.h>
#include <linux/kthread.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>

static char rec_kind[32];
static int rec_seconds = 12;

static int __init rec_trigger_setup(char *str)
{
	strscpy(rec_kind, str, sizeof(rec_kind));
	return 1;
}
__setup("rec_trigger=", rec_trigger_setup);

static int __init rec_seconds_setup(char *str)
{
	return kstrtoint(str, 0, &rec_seconds) == 0;
}
__setup("rec_seconds=", rec_seconds_setup);

static DEFINE_MUTEX(rec_mutex_a);
static DEFINE_MUTEX(rec_mutex_b);
static void *rec_leak;

static noinline void rec_spin(void)
{
	unsigned long end = jiffies + rec_seconds * HZ;

	preempt_disable();
	while (time_before(jiffies, end))
		cpu_relax();
	preempt_enable();
	pr_info("rec_trigger: spin done\n");
}

static noinline void rec_sleep_holding(struct mutex *m)
{
	mutex_lock(m);
	set_current_state(TASK_UNINTERRUPTIBLE);
	schedule();
	mutex_unlock(m);
}

static int rec_abba_b(void *unused)
{
	mutex_lock(&rec_mutex_b);
	msleep(500);
	mutex_lock(&rec_mutex_a);
	mutex_unlock(&rec_mutex_a);
	mutex_unlock(&rec_mutex_b);
	return 0;
}

static noinline void rec_abba(void)
{
	mutex_lock(&rec_mutex_a);
	kthread_run(rec_abba_b, NULL, "rec_abba_b");
	msleep(200);
	mutex_lock(&rec_mutex_b);
	mutex_unlock(&rec_mutex_b);
	mutex_unlock(&rec_mutex_a);
}

static noinline int rec_ubsan(void)
{
	volatile int shift = 40;
	volatile int index = 5;
	int table[4] = { 1, 2, 3, 4 };

	return (1 << shift) + table[index];
}

static noinline void rec_kfence(void)
{
	unsigned long end = jiffies + 60 * HZ;
	char *p;

	for (;;) {
		p = kmalloc(32, GFP_KERNEL);
		if (is_kfence_address(p))
			break;
		kfree(p);
		if (time_after(jiffies, end)) {
			pr_info("rec_trigger: no KFENCE object\n");
			return;
		}
		msleep(1);
	}
	kfree(p);
	pr_info("rec_trigger: read %d\n", READ_ONCE(p[3]));
}

static noinline void rec_kmemleak(void)
{
	rec_leak = kmalloc(48, GFP_KERNEL);
	strscpy(rec_leak, "rec_trigger leak", 48);
	WRITE_ONCE(rec_leak, NULL);
}

static int rec_thread(void *unused)
{
	pr_info("rec_trigger: %s\n", rec_kind);
	if (!strcmp(rec_kind, "spin"))
		rec_spin();
	else if (!strcmp(rec_kind, "hung"))
		rec_sleep_holding(&rec_mutex_a);
	else if (!strcmp(rec_kind, "abba"))
		rec_abba();
	else if (!strcmp(rec_kind, "ubsan"))
		pr_info("rec_trigger: %d\n", rec_ubsan());
	else if (!strcmp(rec_kind, "kfence"))
		rec_kfence();
	else if (!strcmp(rec_kind, "kmemleak"))
		rec_kmemleak();
	return 0;
}

static int __init rec_trigger_init(void)
{
	if (rec_kind[0])
		kthread_run(rec_thread, NULL, "rec_trigger");
	return 0;
}
late_initcall(rec_trigger_init);
