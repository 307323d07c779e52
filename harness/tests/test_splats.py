from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness import splats
from harness.splats import Splat

DATA = Path(__file__).parent / "test_data"


def scan(name: str) -> list[Splat]:
    return splats.scan((DATA / name).read_text())


@pytest.mark.parametrize("name, expected", [
    ("lockdep_circular.log", [
        Splat("lockdep-circular", "possible circular locking dependency: acquiring "
              "&iint->mutex while holding &sb->s_type->i_mutex_key#10", 12)]),
    ("lockdep_reports.log", [
        Splat("lockdep-recursive", "possible recursive locking: acquiring "
              "&iint->mutex while holding &iint->mutex", 3),
        Splat("lockdep-inconsistent", "WARNING: inconsistent lock state", 37),
        Splat("lockdep-rcu", "WARNING: suspicious RCU usage", 68),
        Splat("lockdep-other", "WARNING: bad unlock balance detected!", 88),
        Splat("lockdep-other", "WARNING: exec_test/101 still has locks held!", 106),
        # The BUG line is the cause, not a splat of its own.
        Splat("lockdep-off", "lockdep turned off: BUG: MAX_LOCKDEP_ENTRIES too low!", 119)]),
    ("warn_on.log", [
        Splat("warning", "WARNING at security/integrity/ima/ima_appraise.c:521 "
              "ima_appraise_measurement", 3),
        Splat("warning", "WARNING at security/integrity/ima/ima_main.c:204 "
              "ima_check_last_writer [ima_test]", 42)]),
    # x86: the Oops belongs to the BUG; the panic is reported on its own.
    ("null_deref_panic.log", [
        Splat("bug", "BUG: kernel NULL pointer dereference, address: 0000000000000010", 2),
        Splat("panic", "Kernel panic - not syncing: Fatal exception", 29)]),
    # arm64: an Oops without a BUG line; then a BUG() with its Oops.
    ("arm64_oops.log", [
        Splat("oops", "Internal error: Oops: 0000000096000004 [#1] PREEMPT SMP", 13),
        Splat("bug", "kernel BUG at security/integrity/iint.c:88!", 38)]),
    ("kasan.log", [
        Splat("kasan", "BUG: KASAN: use-after-free in ima_inode_post_setattr", 2)]),
    ("sleep_in_atomic.log", [
        Splat("sleep-in-atomic", "BUG: sleeping function called from invalid context "
              "at kernel/locking/mutex.c:580", 1)]),
    ("panic.log", [
        Splat("panic", "Kernel panic - not syncing: VFS: Unable to mount root fs on "
              "unknown-block(0,0)", 3)]),
    # The sleep-in-atomic BUG cut a TAP line in two; the "# # " lines that
    # merely mention WARNING:, BUG: and Kernel panic are test output.
    ("interleaved.log", [
        Splat("sleep-in-atomic", "BUG: sleeping function called from invalid context "
              "at kernel/locking/mutex.c:580", 18)]),
    ("ktap_pass.log", []),
    ("ktap_results.log", []),
    ("real_aarch64_fix_custom_pass.log", []),
    ("real_x86_64_no_marker.log", []),
])
def test_scan(name: str, expected: list[Splat]) -> None:
    assert scan(name) == expected
    assert splats.scan((DATA / name).read_text().replace("\n", "\r\n")) == expected


def test_lockdep_first() -> None:
    console = "\n".join((DATA / name).read_text() for name in
                        ("warn_on.log", "sleep_in_atomic.log", "lockdep_circular.log"))
    assert [s.kind for s in splats.scan(console)] == [
        "lockdep-circular", "warning", "warning", "sleep-in-atomic"]


def test_selftest_output_is_not_a_splat() -> None:
    console = """# # lockdep: expected no WARNING: possible circular locking dependency detected
# WARNING: CPU: 0 PID: 1 at fs/foo.c:123 func+0x1/0x2
#Kernel panic - not syncing: quoted
ok 1 selftests: ima_appraise: BUG: in a name
"""
    assert splats.scan(console) == []


@pytest.mark.parametrize("headline", [
    "WARNING: possible irq lock inversion dependency detected",
    "WARNING: HARDIRQ-safe -> HARDIRQ-unsafe lock order detected",
    "WARNING: SOFTIRQ-safe -> SOFTIRQ-unsafe lock order detected",
    "WARNING: held lock freed!",
    "BUG: held lock freed!",
    "WARNING: bad unlock balance detected!",
    "WARNING: lock held when returning to user space!",
    "BUG: lock held at task exit time!",
    "WARNING: Nested lock was not taken",
    "[ BUG: Invalid wait context ]",
])
def test_lockdep_other(headline: str) -> None:
    console = (f"[    3.000000] ====\n[    3.000001] {headline}\n"
               "[    3.000002] 6.1.0 #1 Not tainted\n")
    assert splats.scan(console) == [Splat("lockdep-other", headline, 2)]


def test_lockdep_off() -> None:
    console = """[    2.000000] INFO: trying to register non-static key.
[    2.000001] The code is fine but needs lockdep annotation, or maybe
[    2.000002] you didn't initialize this object before use?
[    2.000003] turning off the locking correctness validator.
[    2.000004] CPU: 0 PID: 1 Comm: swapper/0 Not tainted 6.1.0 #1
"""
    assert splats.scan(console) == [Splat(
        "lockdep-off", "lockdep turned off: INFO: trying to register non-static key.", 4)]
    assert splats.scan("[ 1.2] ... turning off the locking correctness validator.") == [
        Splat("lockdep-off", "... turning off the locking correctness validator.", 1)]


def test_circular_without_lock_lines() -> None:
    console = ("[    9.0] WARNING: possible circular locking dependency detected\n"
               "[    9.1] 6.1.0 #1 Not tainted\n")
    assert splats.scan(console) == [Splat(
        "lockdep-circular", "WARNING: possible circular locking dependency detected", 1)]


def test_no_timestamps() -> None:
    console = "\n".join(line.split("] ", 1)[1]
                        for line in (DATA / "warn_on.log").read_text().splitlines())
    assert [s.line for s in splats.scan(console)] == [3, 42]


def test_panic_inside_a_warning() -> None:
    console = """[    5.000000] ------------[ cut here ]------------
[    5.000001] WARNING: CPU: 0 PID: 1 at fs/foo.c:123 func+0x1/0x2
[    5.000002] Modules linked in:
[    5.000003] Kernel panic - not syncing: kernel: panic_on_warn set ...
"""
    assert [s.kind for s in splats.scan(console)] == ["warning", "panic"]


def test_body_is_bounded() -> None:
    # A BUG without a call trace does not hide a later, unrelated one.
    console = "\n".join(["[    1.000000] BUG: workqueue lockup - pool cpus=0"]
                        + ["[    1.000001] pool 0: cpus=0 node=0"] * splats.MAX_BODY
                        + ["[    2.000000] BUG: unable to handle page fault for address: ffff"])
    assert [s.line for s in splats.scan(console)] == [1, splats.MAX_BODY + 2]


def test_lockdep_off_in_the_guests_dmesg_dump() -> None:
    # print_lockdep_off() uses KERN_DEBUG: below the guest's console level,
    # so it only shows in the dump the init prints after its end marker.
    console = ("<<< ima-selftest end rc=0 >>>\n"
               "dmesg: [    5.100000] audit: type=1800 audit(1.2:3): op=appraise_data "
               "cause=missing-hash res=0\n"
               "dmesg: [    5.200000] BUG: MAX_LOCKDEP_CHAIN_HLOCKS too low!\n"
               "dmesg: [    5.200001] turning off the locking correctness validator.\n"
               "dmesg: BUG: MAX_STACK_TRACE_ENTRIES too low!\n")
    assert splats.scan(console) == [
        Splat("lockdep-off", "lockdep turned off: BUG: MAX_LOCKDEP_CHAIN_HLOCKS too low!", 4),
        Splat("bug", "BUG: MAX_STACK_TRACE_ENTRIES too low!", 5)]


def test_kernel_line_right_after_the_runners_prefix() -> None:
    # The console interleaves at any byte: runner.sh's "# " and then a
    # kernel message.  A timestamp means the kernel (tests never print one).
    console = "# [   12.000000] BUG: sleeping function called from invalid context at x.c:1\n"
    assert [s.kind for s in splats.scan(console)] == ["sleep-in-atomic"]


# ---- signatures, times, bodies ---------------------------------------------------

@pytest.mark.parametrize("name, signatures", [
    ("lockdep_circular.log", [
        "lockdep-circular (&iint->mutex, &sb->s_type->i_mutex_key) in process_measurement"]),
    # Recorded from a kernel with the guessing unwinder: stale "? " frames.
    ("real_x86_64_lockdep_deadlock_killed.log", [
        "lockdep-circular (&iint_mutex_key[depth], &sb->s_type->i_mutex_key) in ima_file_free"]),
    ("lockdep_reports.log", [
        "lockdep-recursive (&iint->mutex, &iint->mutex) in ima_check_last_writer",
        "lockdep-inconsistent (ima_queue_lock) in ima_add_template_entry",
        # No lock site: the first frame of the trace outside lockdep.
        "lockdep-rcu in ima_match_policy",
        # The release site is on the line after "at:".
        "lockdep-other: bad unlock balance detected! (&iint->mutex) in process_measurement",
        # No task name and pid: they differ from run to run.
        "lockdep-other: still has locks held! (&iint->mutex) in process_measurement",
        "lockdep-off: BUG: MAX_LOCKDEP_ENTRIES too low!"]),
    # No file:line: it moves with every patch to the file.
    ("warn_on.log", ["warning in ima_appraise_measurement", "warning in ima_check_last_writer"]),
    ("null_deref_panic.log", [
        "bug: kernel NULL pointer dereference in ima_appraise_measurement",
        "panic: Fatal exception"]),
    # arm64: the program counter names the function; the BUG's line number goes.
    ("arm64_oops.log", [
        "oops in ima_appraise_measurement",
        "bug: kernel BUG at security/integrity/iint.c in integrity_inode_free"]),
    ("kasan.log", ["kasan: use-after-free in ima_inode_post_setattr"]),
    # __might_resched and the mutex code are skipped.
    ("sleep_in_atomic.log", ["sleep-in-atomic in ima_match_policy"]),
    ("real_x86_64_init_exit_panic.log", ["panic: Attempted to kill init! exitcode=N"]),
])
def test_signatures(name: str, signatures: list[str]) -> None:
    assert [s.signature for s in scan(name)] == signatures


def test_signature_survives_a_rebuild() -> None:
    # Another build of the same code: other offsets, clone suffixes,
    # addresses, lock-class numbers (#10 is the order of registration),
    # pid and time.
    console = (DATA / "lockdep_circular.log").read_text()
    rebuilt = (console.replace("i_mutex_key#10", "i_mutex_key#7")
               .replace("+0x2a5/0xa50", "+0x1f1/0x9c0").replace("ffff888004b6d2a8", "ff11000002c5e6d0")
               .replace("process_measurement+", "process_measurement.constprop.0+")
               .replace("open_test/97", "open_test/123").replace("[    9.", "[   31."))
    assert rebuilt != console
    [a], [b] = splats.scan(console), splats.scan(rebuilt)
    assert a.signature == b.signature and a.title != b.title


def test_time_and_body() -> None:
    [s] = scan("lockdep_circular.log")
    assert s.time == 9.401229
    # From the "=====" line above the headline to the end of the trace,
    # timestamps kept (scripts/decode_stacktrace.sh reads such lines).
    assert s.body[0] == "[    9.401227] ======================================================"
    assert s.body[1] == "[    9.401229] WARNING: possible circular locking dependency detected"
    assert s.body[-1].endswith("</TASK>")
    assert not any(line.startswith("#") for line in s.body)
    assert splats.scan("BUG: no timestamp\n")[0].time is None


@pytest.mark.parametrize("line, kind, title", [
    ("[   32.123456] watchdog: BUG: soft lockup - CPU#0 stuck for 22s! [open_test:97]",
     "soft-lockup", "BUG: soft lockup - CPU#0 stuck for 22s! [open_test:97]"),
    # runner.sh's "# " before the kernel's timestamp
    ("# [   32.123456] watchdog: BUG: soft lockup - CPU#0 stuck for 22s! [open_test:97]",
     "soft-lockup", "BUG: soft lockup - CPU#0 stuck for 22s! [open_test:97]"),
    ("# # open_test.c:88:[   40.5] rcu: INFO: rcu_sched self-detected stall on CPU",
     "rcu-stall", "INFO: rcu_sched self-detected stall on CPU"),
    ("[   40.5] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:",
     "rcu-stall", "INFO: rcu_preempt detected stalls on CPUs/tasks:"),
    ("[   40.5] rcu: INFO: rcu_preempt detected expedited stalls on CPUs/tasks: {",
     "rcu-stall", "INFO: rcu_preempt detected expedited stalls on CPUs/tasks: {"),
    ("[   61.0] INFO: task open_test:97 blocked for more than 30 seconds.",
     "hung-task", "INFO: task open_test:97 blocked for more than 30 seconds."),
    ("[    3.0] UBSAN: shift-out-of-bounds in security/integrity/ima/ima_main.c:12:5",
     "ubsan", "UBSAN: shift-out-of-bounds in security/integrity/ima/ima_main.c:12:5"),
    ("[    3.0] BUG: KFENCE: use-after-free read in ima_file_free+0x1c/0x40",
     "kfence", "BUG: KFENCE: use-after-free read in ima_file_free"),
    ("[    3.0] kmemleak: unreferenced object 0xffff888003c1e2c0 (size 32):",
     "kmemleak", "unreferenced object 0xffff888003c1e2c0 (size 32):"),
    ("[    3.0] kmemleak: 2 new suspected memory leaks (see /sys/kernel/debug/kmemleak)",
     "kmemleak", "2 new suspected memory leaks (see /sys/kernel/debug/kmemleak)"),
    ("[    3.0] watchdog: Watchdog detected hard LOCKUP on cpu 1",
     "hard-lockup", "Watchdog detected hard LOCKUP on cpu 1"),
])
def test_reports_behind_a_prefix(line: str, kind: str, title: str) -> None:
    assert [(s.kind, s.title) for s in splats.scan(line + "\n")] == [(kind, title)]


def test_a_leak_summary_after_its_objects_is_no_splat_of_its_own() -> None:
    console = """[   70.1] kmemleak: unreferenced object 0xffff888003c1e2c0 (size 32):
[   70.1] kmemleak:   comm "open_test", pid 97, jiffies 4294710000 (age 61.2s)
[   70.1] kmemleak:   backtrace:
[   70.1] kmemleak:     [<ffffffff81234567>] __kmalloc+0x49/0x140
[   70.1] kmemleak:     [<ffffffff81345678>] ima_file_free+0x1c/0x40
[   70.2] kmemleak: 1 new suspected memory leaks (see /sys/kernel/debug/kmemleak)
[  700.2] kmemleak: 1 new suspected memory leaks (see /sys/kernel/debug/kmemleak)
"""
    found = splats.scan(console)
    assert [(s.line, s.signature) for s in found] == [
        (1, "kmemleak in ima_file_free"), (7, "kmemleak: suspected memory leaks")]
    assert len(found[0].body) == 5


def test_save(tmp_path: Path) -> None:
    # A stand-in for the tree's scripts/decode_stacktrace.sh: what it was
    # given, and a file:line on every frame.
    tree = tmp_path / "tree"
    (tree / "scripts").mkdir(parents=True)
    script = tree / "scripts" / "decode_stacktrace.sh"
    script.write_text('#!/bin/sh\necho "args: $* cross=$CROSS_COMPILE"\n'
                      "sed 's/\\(+0x[0-9a-f]*\\/0x[0-9a-f]*\\)$/\\1 fs\\/x.c:1/'\n")
    script.chmod(0o755)
    vmlinux = tmp_path / "vmlinux"
    vmlinux.write_text("ELF")
    found = scan("warn_on.log")
    out = tmp_path / "cell"
    out.mkdir()
    symbols = splats.Symbols(vmlinux, tree, tmp_path / "build", "aarch64-linux-gnu-")
    assert splats.save(out, found, symbols) == []
    assert (out / "splat-1.txt").read_text() == "\n".join(found[0].body) + "\n"
    decoded = (out / "splat-2.decoded.txt").read_text().splitlines()
    assert decoded[0] == f"args: {vmlinux} {tree} {tmp_path / 'build'} cross=aarch64-linux-gnu-"
    assert decoded[1:] == [line + " fs/x.c:1" if re.search(r"\+0x[0-9a-f]+/0x[0-9a-f]+$", line)
                           else line for line in found[1].body]
    assert any(line.endswith(" fs/x.c:1") for line in decoded)

    # Without a vmlinux (an exported artifact directory): bodies only.
    again = tmp_path / "again"
    again.mkdir()
    assert splats.save(again, found, splats.Symbols(tmp_path / "none", tree, tree)) == []
    assert sorted(p.name for p in again.iterdir()) == ["splat-1.txt", "splat-2.txt"]

    # A script that fails: said in decode.log, nothing decoded.
    script.write_text("#!/bin/sh\necho 'addr2line: not found' >&2\nexit 1\n")
    broken = tmp_path / "broken"
    broken.mkdir()
    problems = splats.save(broken, found[:1], symbols)
    assert problems == ["splat-1.txt: scripts/decode_stacktrace.sh failed: exit 1: "
                        "addr2line: not found"]
    assert (broken / "decode.log").read_text() == problems[0] + "\n"
    assert not (broken / "splat-1.decoded.txt").exists()


# Consoles of a kernel made to misbehave on purpose (test_data/recording/).
@pytest.mark.parametrize("name, expected", [
    # A CPU spinning with preemption off: reported every watchdog period,
    # the same signature each time.
    ("real_x86_64_soft_lockup.log", [
        ("soft-lockup", 161, 11.6878, "soft-lockup in rec_thread"),
        ("soft-lockup", 187, 21.287192, "soft-lockup in rec_thread")]),
    # The first stack dumped is the starved grace-period kthread's; the
    # culprit is the one after.
    ("real_x86_64_rcu_stall.log", [
        ("rcu-stall", 160, 10.240573, "rcu-stall in rec_thread")]),
    ("real_x86_64_hung_task.log", [
        ("hung-task", 176, 62.43582, "hung-task in rec_sleep_holding"),
        ("panic", 202, 62.451821, "panic: hung_task: blocked tasks")]),
    # A real ABBA deadlock: lockdep sees it when it happens; 60 s later the
    # hung-task detector reports both tasks and ends the guest.
    ("real_x86_64_abba_deadlock.log", [
        ("lockdep-circular", 176, 2.656109, "lockdep-circular (rec_mutex_a, rec_mutex_b) in rec_abba_b"),
        ("hung-task", 246, 62.435845, "hung-task in rec_abba"),
        ("hung-task", 268, 62.447846, "hung-task in rec_abba_b"),
        ("panic", 288, 62.451846, "panic: hung_task: blocked tasks")]),
    ("real_x86_64_ubsan.log", [
        ("ubsan", 159, 2.00807, "ubsan: shift-out-of-bounds in rec_ubsan"),
        ("ubsan", 176, 2.028072, "ubsan: array-index-out-of-bounds in rec_ubsan")]),
    ("real_x86_64_kfence.log", [
        ("kfence", 169, 2.896117, "kfence: use-after-free read in rec_kfence")]),
    # kmalloc_trace and the slab allocator are skipped; the summary line
    # after the object is no splat of its own.
    ("real_x86_64_kmemleak.log", [
        ("kmemleak", 180, 13.134819, "kmemleak in rec_kmemleak")]),
])
def test_recorded_reports(name: str, expected: list[tuple[str, int, float, str]]) -> None:
    assert [(s.kind, s.line, s.time, s.signature) for s in scan(name)] == expected


@pytest.mark.parametrize("name, first, last", [
    # Framed reports: from the opening "=====" line to the closing one,
    # KFENCE's allocation and free stacks included.
    ("real_x86_64_kfence.log", "=" * 66, "=" * 66),
    ("real_x86_64_ubsan.log", "=" * 80, "=" * 80),
    ("real_x86_64_kmemleak.log", "kmemleak: unreferenced object 0xff11000000b5dcc0 (size 64):",
     "kmemleak:     [<(____ptrval____)>] ret_from_fork+0x1f/0x30"),
    ("real_x86_64_hung_task.log", "INFO: task rec_trigger:28 blocked for more than 30 seconds.",
     " </TASK>"),
])
def test_recorded_bodies(name: str, first: str, last: str) -> None:
    s = scan(name)[0]
    assert (s.body[0].split("] ", 1)[1], s.body[-1].split("] ", 1)[1]) == (first, last)
    if name == "real_x86_64_kfence.log":
        assert any("freed by task 28" in line for line in s.body)


def test_a_report_the_dmesg_dump_repeats_is_one_splat() -> None:
    console = (DATA / "lockdep_circular.log").read_text()
    dump = "".join(f"dmesg: {line}\n" for line in console.splitlines() if line.startswith("["))
    assert splats.scan(console + "<<< ima-selftest end rc=0 >>>\n" + dump) == splats.scan(console)
