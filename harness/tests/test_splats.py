from __future__ import annotations

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
