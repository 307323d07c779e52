"""evaluate() on consoles recorded from real guests (test_data/real_*)."""
from __future__ import annotations

import dataclasses
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness import flavors, kernlog, merge, results
from harness.cases import Case
from harness.tests.recorded import RECORDED_CASES
from harness.matrix import Cell, RacyReason, load
from harness.qemu import BootOutcome

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "test_data"
EXPECTED = RECORDED_CASES
CELL = Cell("aarch64", "stock", "fix", "custom")


def outcome(console: str, timed_out: bool = False) -> BootOutcome:
    return BootOutcome(console, None if timed_out else 0, timed_out, 4.2, ("qemu",))


def real(name: str) -> str:
    return (DATA / name).read_text()


def test_real_passing_cell() -> None:
    r = results.evaluate(CELL, outcome(real("real_aarch64_fix_custom_pass.log")), EXPECTED, "tcg")
    assert (r.status, r.reason, r.splats, r.ended) == ("pass", "", (), True)
    assert r.counts() == {"pass": 15, "fail": 0, "skip": 0, "xfail": 0, "xpass": 0}
    assert [t.name for t in r.tests] == [c.id for c in EXPECTED]


def test_real_guest_without_the_harness_marker_skips_everything() -> None:
    r = results.evaluate(CELL, outcome(real("real_x86_64_no_marker.log")), EXPECTED, "tcg")
    assert r.counts()["skip"] == len(EXPECTED)
    assert all("not booted by the IMA selftest harness" in t.reason for t in r.tests)
    # Skips are right outside the harness, and wrong in a guest it booted.
    assert r.status == "fail"
    assert r.problems == ("15 test(s) skipped in a harness guest: " + r.tests[0].reason,)


def test_a_suite_failing_after_its_cases_passed_fails_the_boot() -> None:
    console = real("real_aarch64_fix_custom_pass.log").replace(
        "ok 2 selftests: ima_appraise: exec_test", "not ok 2 selftests: ima_appraise: exec_test # exit=139")
    r = results.evaluate(CELL, outcome(console), EXPECTED, "tcg")
    assert (r.status, r.counts()["fail"]) == ("fail", 0)
    assert r.problems == ("exec_test: fail exit=139",)


def test_qemu_failing_to_start() -> None:
    out = BootOutcome("qemu-system-aarch64: -drive file=x.img: Could not open 'x.img'\n", 1,
                      False, 0.1, ("qemu",))
    r = results.evaluate(CELL, out, EXPECTED, "tcg")
    assert r.problems == ("QEMU exited with status 1: qemu-system-aarch64: -drive file=x.img: "
                          "Could not open 'x.img'",)


def test_timeout_mid_suite_fails_the_missing_cases() -> None:
    console = real("real_aarch64_fix_custom_pass.log")
    cut = console.index("# selftests: ima_appraise: exec_test")
    r = results.evaluate(CELL, outcome(console[:cut], timed_out=True), EXPECTED, "tcg")
    assert r.status == "timeout"
    assert r.test("open_test/open_file.missing_hash.read").status == "pass"
    missing = r.test("exec_test/exec_file.missing_hash.execve")
    assert missing.status == "fail"
    assert missing.reason == "no result: the guest was killed at the 4s timeout"


def test_a_splat_fails_the_cell_even_if_every_test_passed() -> None:
    console = real("real_aarch64_fix_custom_pass.log")
    splat = (DATA / "lockdep_circular.log").read_text()
    r = results.evaluate(CELL, outcome(console + splat), EXPECTED, "tcg")
    assert r.status == "fail"
    assert r.counts()["pass"] == 15
    assert [s.kind for s in r.splats] == ["lockdep-circular"]
    assert r.reason.startswith("kernel splat: lockdep-circular: possible circular locking")


def test_no_begin_marker() -> None:
    r = results.evaluate(CELL, outcome("Linux version 6.1.192\n"), EXPECTED, "tcg")
    assert r.status == "fail"
    assert r.tests[0].reason == "no result: the suite never started (see console.log)"


def test_reports(tmp_path: Path) -> None:
    ok = results.evaluate(CELL, outcome(real("real_aarch64_fix_custom_pass.log")), EXPECTED, "tcg")
    bad = results.error_cell(Cell("x86_64", "patched", "log", "builtin"),
                             "kernel-patches/0001-x.patch does not apply")
    results.write_json(tmp_path / "results.json", "run-1", [ok, bad], {"boot": 8.01})
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["run_id"] == "run-1" and doc["timings"] == {"boot": 8.01}
    assert {k: doc["cells"][0][k] for k in ("id", "arch", "kernel", "mode", "policy",
                                            "accel", "status")} == {
        "id": "aarch64-stock-fix-custom-sha1-keep", "arch": "aarch64", "kernel": "stock", "mode": "fix",
        "policy": "custom", "accel": "tcg", "status": "pass"}
    assert doc["cells"][1]["status"] == "error"
    results.write_junit(tmp_path / "junit.xml", [ok, bad])
    root = ET.parse(tmp_path / "junit.xml").getroot()
    assert [s.get("failures") for s in root] == ["0", "1"]
    table = results.summary_table([ok, bad])
    assert "aarch64-stock-fix-custom-sha1-keep" in table and table.endswith("cells: 1 pass, 1 error (of 2)")


def test_real_panic_before_the_suite() -> None:
    # Recorded with rdinit=/bin/false: PID 1 exits, the kernel panics, and
    # panic=-1 with -no-reboot ends QEMU.
    r = results.evaluate(CELL, outcome(real("real_x86_64_init_exit_panic.log")), EXPECTED, "tcg")
    assert r.status == "panic"
    assert r.reason == "Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000100"
    assert {t.reason for t in r.tests} == {"no result: the kernel panicked"}


def test_real_regression_failure_keeps_the_tests_own_diagnostics() -> None:
    # skip-exec-appraisal kernel, x86_64, enforce, custom policy.
    cell = Cell("x86_64", "skip-exec-appraisal", "enforce", "custom")
    r = results.evaluate(cell, outcome(real("real_x86_64_skip_exec_enforce_custom_fail.log")),
                         EXPECTED, "tcg")
    assert r.status == "fail"
    assert [t.name for t in r.tests if t.status == "fail"] == [
        "exec_test/exec_file.missing_hash.execve", "exec_test/exec_file.wrong_hash.execve"]
    assert r.test("exec_test/exec_file.missing_hash.execve").log == (
        "exec_test.c:93:execve:Expected expected_errno(&self->cell, variant->state) (13) "
        "== test_execve(self->path) (-1)",
        "execve: Test terminated by assertion")
    assert r.splats == () and r.ended


def test_real_lockdep_splat_then_hang() -> None:
    # A kernel that held i_rwsem around the whole last-writer update: lockdep
    # reported the inversion, then the tests hung until QEMU was killed.
    r = results.evaluate(Cell("x86_64", "lockdep-iint-inversion", "enforce", "builtin"),
                         outcome(real("real_x86_64_lockdep_deadlock_killed.log"), timed_out=True),
                         EXPECTED, "tcg")
    assert r.status == "timeout"
    assert [(s.kind, s.title) for s in r.splats] == [
        ("lockdep-circular", "possible circular locking dependency: acquiring "
         "&iint_mutex_key[depth] while holding &sb->s_type->i_mutex_key#7")]
    assert r.test("open_test/open_file.missing_hash.read").log[-1] == "read: Test terminated by timeout"
    assert r.test("mmap_test/mmap_file.correct_hash.prot_read").reason.startswith("no result: the guest was killed")


def test_known_failures_are_xfail_and_unexpected_passes_xpass() -> None:
    def known(name: str) -> str | None:
        return "known bug in 6.1.192" if name.startswith("exec_test/") else None
    console = real("real_aarch64_fix_custom_pass.log").replace(
        "ok 1 exec_file.missing_hash.execve", "not ok 1 exec_file.missing_hash.execve")
    r = results.evaluate(CELL, outcome(console), EXPECTED, "tcg", known=known)
    assert r.test("exec_test/exec_file.missing_hash.execve").status == "xfail"
    # The program's failed exit is accounted for by its xfail: no problem.
    assert not any(p.startswith("exec_test") for p in r.problems)
    assert r.test("exec_test/exec_file.missing_hash.execve").reason.startswith(
        "known failure: known bug in 6.1.192")
    xpass = r.test("exec_test/exec_file.wrong_hash.execve")
    assert xpass.status == "xpass" and "known bug in 6.1.192" in xpass.reason
    assert r.status == "fail" and r.counts()["xfail"] == 1 and r.counts()["xpass"] == 2


def test_a_racy_known_failure_may_pass_or_fail() -> None:
    """racy: true (matrix.RacyReason): failing is xfail, passing (the race
    was not hit) is a pass, not an xpass; a plain known failure next to it
    still xpasses."""
    def known(name: str) -> str | None:
        if name.startswith("exec_test/"):
            return RacyReason("closers on two CPUs miss the last writer")
        return "plain" if name == "open_test/open_file.missing_hash.read" else None
    console = real("real_aarch64_fix_custom_pass.log").replace(
        "ok 1 exec_file.missing_hash.execve", "not ok 1 exec_file.missing_hash.execve")
    r = results.evaluate(CELL, outcome(console), EXPECTED, "tcg", known=known)
    assert r.test("exec_test/exec_file.missing_hash.execve").status == "xfail"
    hit_not = r.test("exec_test/exec_file.wrong_hash.execve")
    assert (hit_not.status, hit_not.reason) == (
        "pass", "passed: its race was not hit this time (a known failure when it is: "
                "closers on two CPUs miss the last writer)")
    assert r.test("open_test/open_file.missing_hash.read").status == "xpass"
    assert r.counts()["xpass"] == 1


def test_a_failed_assert_of_a_known_failure_is_xfail() -> None:
    # A failed ASSERT_*() ends its case with abort(): "Test terminated by
    # assertion" is a failure by the test's own checks, not a crash.
    cell = Cell("x86_64", "skip-exec-appraisal", "enforce", "custom")
    r = results.evaluate(cell, outcome(real("real_x86_64_skip_exec_enforce_custom_fail.log")),
                         EXPECTED, "tcg", known=lambda n: "bug" if n.endswith("_hash.execve")
                         and "correct" not in n else None)
    assert r.test("exec_test/exec_file.missing_hash.execve").status == "xfail"
    assert r.test("exec_test/exec_file.wrong_hash.execve").status == "xfail"
    assert r.status == "pass"


def test_a_known_failure_must_fail_by_its_own_check() -> None:
    # failing: (matrix.KnownReason) names the check: the same case failing
    # by another check fails the cell; by that check (every failed-check
    # line matching), it is xfail.
    from harness.matrix import KnownReason
    cell = Cell("x86_64", "skip-exec-appraisal", "enforce", "custom")
    console = real("real_x86_64_skip_exec_enforce_custom_fail.log")

    def judged(failing: str) -> results.CellResult:
        return results.evaluate(cell, outcome(console), EXPECTED, "tcg", known=lambda n: (
            KnownReason("bug", failing) if n.endswith("_hash.execve") and "correct" not in n
            else None))
    right = judged(r"Expected expected_errno\(.*\) \(13\) == test_execve")
    assert [t.status for t in right.tests if "_hash.execve" in t.name][:2] == ["xfail", "xfail"]
    assert right.status == "pass"
    wrong = judged(r"Expected 0 \(0\) == get_ima")
    t = wrong.test("exec_test/exec_file.missing_hash.execve")
    assert t.status == "fail" and wrong.status == "fail"
    assert t.reason == ("failed by another check than its known failure's: exec_test.c:93:"
                        "execve:Expected expected_errno(&self->cell, variant->state) (13) == "
                        "test_execve(self->path) (-1) (known to fail by /Expected 0 \\(0\\) "
                        "== get_ima/: bug)")


SKIPPING = "exec_test/exec_file.missing_hash.execve"


@pytest.mark.parametrize("edit, skip_reason, status, reason", [
    # a skip the matrix expects: a skip
    ("ok 1 exec_file.missing_hash.execve # SKIP not for this cell: no policy", "needs rules",
     "skip", "not for this cell: no policy"),
    # a skip where it must run
    ("ok 1 exec_file.missing_hash.execve # SKIP not for this cell: no policy", None, "fail",
     "skipped where it must run (not for this cell: no policy); matrix.yaml skips: expects "
     "no skip of it in this cell"),
    # a run where it must skip
    ("ok 1 exec_file.missing_hash.execve", "needs rules", "fail",
     "ran where it must skip itself: needs rules (matrix.yaml skips:); its skip condition, or "
     "the entry, is wrong"),
    # a skip after a failed check (6.1's kselftest_harness.h: SKIP() sets passed)
    ("# exec_test.c:93:execve:Expected 13 == -1\r\n# ok 1 exec_file.missing_hash.execve # "
     "SKIP not for this cell: no policy", "needs rules", "fail",
     "skipped after a failed check: exec_test.c:93:execve:Expected 13 == -1 (skip: not for "
     "this cell: no policy)"),
])
def test_skips_are_judged_against_the_matrix(edit: str, skip_reason: str | None, status: str,
                                             reason: str) -> None:
    console = real("real_aarch64_fix_custom_pass.log").replace(
        "# ok 1 exec_file.missing_hash.execve", edit if edit.startswith("#") else "# " + edit, 1)
    r = results.evaluate(CELL, outcome(console), EXPECTED, "tcg",
                         expected_skip=lambda n: skip_reason if n == SKIPPING else None)
    t = r.test(SKIPPING)
    assert (t.status, t.reason) == (status, reason)
    assert r.status == ("pass" if status == "skip" else "fail")


def test_a_skip_the_cell_explains_is_no_problem() -> None:
    console = real("real_aarch64_fix_custom_pass.log").replace(
        "ok 1 exec_file.missing_hash.execve",
        "ok 1 exec_file.missing_hash.execve # SKIP not for this cell: needs a custom policy")
    r = results.evaluate(CELL, outcome(console), EXPECTED, "tcg")
    assert r.test("exec_test/exec_file.missing_hash.execve").status == "skip"
    assert (r.status, r.problems) == ("pass", ())


def test_a_program_failing_only_on_known_failures_passes_its_cell() -> None:
    console = real("real_aarch64_fix_custom_pass.log").replace(
        "ok 1 exec_file.missing_hash.execve", "not ok 1 exec_file.missing_hash.execve")
    console = console.replace("ok 2 selftests: ima_appraise: exec_test",
                              "not ok 2 selftests: ima_appraise: exec_test # exit=1")
    assert "not ok 2 selftests: ima_appraise: exec_test # exit=1" in console
    r = results.evaluate(CELL, outcome(console), EXPECTED, "tcg",
                         known=lambda n: "bug" if n == "exec_test/exec_file.missing_hash.execve"
                         else None)
    assert (r.status, r.problems) == ("pass", ())


# Only a real `not ok` of a listed test is an xfail: how it failed matters.

def _known_exec_missing(name: str) -> str | None:
    return "bug" if name == "exec_test/exec_file.missing_hash.execve" else None


def _exec_case_failing_with(*log: str) -> str:
    console = real("real_aarch64_fix_custom_pass.log")
    ran = "# #            OK  exec_file.missing_hash.execve\n# ok 1 exec_file.missing_hash.execve"
    assert ran in console
    return console.replace(ran, "".join(f"# # {line}\n" for line in log)
                           + "# #          FAIL  exec_file.missing_hash.execve\n"
                           + "# not ok 1 exec_file.missing_hash.execve").replace(
        "ok 2 selftests: ima_appraise: exec_test",
        "not ok 2 selftests: ima_appraise: exec_test # exit=1")


def test_a_known_failure_that_crashed_is_a_failure() -> None:
    console = _exec_case_failing_with(
        "execve: Test terminated unexpectedly by signal 11")
    r = results.evaluate(CELL, outcome(console), EXPECTED, "tcg", known=_known_exec_missing)
    t = r.test("exec_test/exec_file.missing_hash.execve")
    assert t.status == "fail"
    assert t.reason == ("execve: Test terminated unexpectedly by signal 11 (a known failure of "
                        "this kernel, but it must fail by its checks, not like this: bug)")
    assert r.status == "fail"


def test_a_known_failure_that_timed_out_is_a_failure() -> None:
    console = _exec_case_failing_with("execve: Test terminated by timeout")
    r = results.evaluate(CELL, outcome(console), EXPECTED, "tcg", known=_known_exec_missing)
    assert r.test("exec_test/exec_file.missing_hash.execve").status == "fail"
    assert r.status == "fail"


def test_a_known_failure_failing_by_its_checks_is_xfail() -> None:
    console = _exec_case_failing_with(
        "exec_test.c:88:execve:Expected 13 (13) == test_execve(...) (0)",
        "execve: Test failed at step #3")
    r = results.evaluate(CELL, outcome(console), EXPECTED, "tcg", known=_known_exec_missing)
    assert r.test("exec_test/exec_file.missing_hash.execve").status == "xfail"
    assert (r.status, r.problems) == ("pass", ())


def test_a_program_that_crashed_fails_its_cell_despite_an_xfail() -> None:
    # The case said `not ok` by its checks (xfail), then the program itself
    # died of a signal: exit=139 is not what a known failure explains.
    console = _exec_case_failing_with("execve: Test failed at step #3").replace(
        "not ok 2 selftests: ima_appraise: exec_test # exit=1",
        "not ok 2 selftests: ima_appraise: exec_test # exit=139")
    r = results.evaluate(CELL, outcome(console), EXPECTED, "tcg", known=_known_exec_missing)
    assert r.test("exec_test/exec_file.missing_hash.execve").status == "xfail"
    assert r.status == "fail"
    assert r.problems == ("exec_test: fail exit=139",)


def test_a_known_failure_with_no_result_is_a_failure() -> None:
    # The guest was killed before mmap_test reported anything.
    r = results.evaluate(CELL, outcome(real("real_x86_64_lockdep_deadlock_killed.log"), timed_out=True),
                         EXPECTED, "tcg",
                         known=lambda n: "bug" if n == "mmap_test/mmap_file.correct_hash.prot_read"
                         else None)
    t = r.test("mmap_test/mmap_file.correct_hash.prot_read")
    assert t.status == "fail"
    assert t.reason.startswith("no result: the guest was killed")
    assert t.reason.endswith("(a known failure of this kernel, but it must fail by its checks, "
                             "not like this: bug)")


def _with_splat(cell: Cell, splat_log: str = "lockdep_circular.log",
                known_splat=lambda sig, at_boot: None) -> results.CellResult:
    console = real("real_aarch64_fix_custom_pass.log") + real(splat_log)
    return results.evaluate(cell, outcome(console), EXPECTED, "tcg", known_splat=known_splat)


SIG = "lockdep-circular (&iint->mutex, &sb->s_type->i_mutex_key) in process_measurement"


def test_a_known_splat_does_not_fail_its_cell() -> None:
    def known(sig: str, at_boot: bool) -> str | None:
        return "inversion in 6.1.192" if sig == SIG else None
    r = _with_splat(CELL, known_splat=known)
    assert (r.status, r.reason) == ("pass", "")
    assert r.splats[0].known == "inversion in 6.1.192"
    # Any other splat still fails it.
    r = _with_splat(CELL, "warn_on.log", known_splat=known)
    assert r.status == "fail" and r.reason.startswith("kernel splat: warning: ")


def test_splats_in_results_json(tmp_path: Path) -> None:
    cells = [_with_splat(Cell("aarch64", "stock", mode, "custom")) for mode in ("fix", "log")]
    cells.append(_with_splat(Cell("aarch64", "stock", "enforce", "custom"), "warn_on.log",
                             known_splat=lambda sig, at_boot: "why" if sig ==
                             "warning in ima_check_last_writer" else None))
    results.write_json(tmp_path / "results.json", "run-1", cells, {})
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["cells"][0]["splats"] == [{
        "kind": "lockdep-circular",
        "title": "possible circular locking dependency: acquiring &iint->mutex while holding "
                 "&sb->s_type->i_mutex_key#10",
        "signature": SIG, "time": 9.401229, "line": 339, "test": None, "console": "console.log",
        "body": "aarch64-stock-fix-custom-sha1-keep/splat-1.txt"}]
    assert doc["cells"][2]["splats"][1]["known"] == "why"
    assert doc["splat_groups"] == [
        {"signature": SIG, "kind": "lockdep-circular",
         "title": doc["cells"][0]["splats"][0]["title"], "count": 2,
         "cells": ["aarch64-stock-fix-custom-sha1-keep", "aarch64-stock-log-custom-sha1-keep"],
         "first": {"cell": "aarch64-stock-fix-custom-sha1-keep", "test": None,
                   "time": 9.401229}, "known": None},
        {"signature": "warning in ima_appraise_measurement", "kind": "warning",
         "title": "WARNING at security/integrity/ima/ima_appraise.c:521 ima_appraise_measurement",
         "count": 1, "cells": ["aarch64-stock-enforce-custom-sha1-keep"],
         "first": {"cell": "aarch64-stock-enforce-custom-sha1-keep", "test": None,
                   "time": 6.283114}, "known": None},
        {"signature": "warning in ima_check_last_writer", "kind": "warning",
         "title": "WARNING at security/integrity/ima/ima_main.c:204 ima_check_last_writer "
                  "[ima_test]", "count": 1, "cells": ["aarch64-stock-enforce-custom-sha1-keep"],
         "first": {"cell": "aarch64-stock-enforce-custom-sha1-keep", "test": None,
                   "time": 6.301524}, "known": "why"}]
    assert results.splat_summary(cells) == f"""3 distinct splats:
  {SIG}
    in 2 cells, first in aarch64-stock-fix-custom-sha1-keep at 9.401s
  warning in ima_appraise_measurement
    in 1 cell, first in aarch64-stock-enforce-custom-sha1-keep at 6.283s
  warning in ima_check_last_writer (known: why)
    in 1 cell, first in aarch64-stock-enforce-custom-sha1-keep at 6.302s"""
    attributed = [dataclasses.replace(c, splats=tuple(
        dataclasses.replace(s, test="open_test/appraise.correct_hash.read") for s in c.splats))
        for c in cells[:2]]
    assert results.splat_summary(attributed).endswith(
        "first in aarch64-stock-fix-custom-sha1-keep at open_test/appraise.correct_hash.read")
    assert "3 distinct splats:" in results.summary_text(cells)


def _arrived(console: str, seconds: float) -> tuple[float, ...]:
    """Host arrival times spread evenly over a boot of `seconds`."""
    n = len(console.split("\n"))
    return tuple(seconds * (i + 1) / n for i in range(n))


def test_real_guest_clock_ahead_of_the_host_is_an_infrastructure_error() -> None:
    # x86_64-stock-fix-builtin-sha256-keep, 2026-12-04: its TSC calibrated
    # at 28 MHz on a loaded host; the cell took 8.0 s of host time while
    # its printk clock reached 361 s and race_test's case hit kselftest's
    # 30 s timeout at once.
    console = real("real_x86_64_tsc_miscalibrated.log")
    out = dataclasses.replace(outcome(console), duration_s=8.0,
                              line_times=_arrived(console, 8.0))
    why = results.clock_ahead(out)
    assert why is not None and "tsc: Detected 28.093 MHz processor" in why
    r = results.evaluate(Cell("x86_64", "stock", "fix", "builtin"), out, EXPECTED, "tcg")
    assert r.status == "error"
    assert r.reason.startswith("the guest's clock ran ahead of the host's")


def _arrived_after_stamps(console: str) -> tuple[float, ...]:
    """Each line arrives a little after the time it is stamped with."""
    stamps = {line.number: line.time for line in kernlog.console_lines(console)}
    times = []
    last = 0.5
    for number in range(1, len(console.split("\n")) + 1):
        last = max(last, stamps.get(number, 0.0) + 0.5)
        times.append(last)
    return tuple(times)


def test_real_guest_clock_behind_its_qemu_is_fine() -> None:
    # A whole x86_64 run with printk times (the aarch64 recording below
    # has none, so it cannot show a clock either way).
    stamped = real("real_x86_64_stock_enforce_custom_whole_log.log")
    assert len(kernlog.console_lines(stamped)) > 400
    out = dataclasses.replace(outcome(stamped), line_times=_arrived_after_stamps(stamped))
    assert results.clock_ahead(out) is None
    # One line stamped 6 s after it arrived is a clock that ran ahead.
    times = list(out.line_times)
    late = kernlog.console_lines(stamped)[200]
    times[late.number - 1] = late.time - 6.0
    assert results.clock_ahead(dataclasses.replace(out, line_times=tuple(times))) is not None
    console = real("real_aarch64_fix_custom_pass.log")
    out = dataclasses.replace(outcome(console), line_times=_arrived_after_stamps(console))
    assert results.clock_ahead(out) is None
    assert results.evaluate(CELL, out, EXPECTED, "tcg").status == "pass"
    # Without host times (an old results.json, a unit test) nothing is said.
    assert results.clock_ahead(outcome(console)) is None


def test_a_guest_hung_at_boot_times_out_and_says_where_it_stopped() -> None:
    out = BootOutcome(real("real_x86_64_debug_hung_at_boot.log"), None, True, 480.3, ("qemu",),
                      not_ready=True)
    r = results.evaluate(CELL, out, EXPECTED, "tcg")
    assert r.status == "timeout"
    # Kept in results.json, and read back by a merge of shards.
    assert r.hung_at_boot == r.problems[0]
    assert merge.cell_result(r.to_json(), None).hung_at_boot == r.hung_at_boot
    # A results.json from before the message was kept says true.
    old = r.to_json() | {"hung_at_boot": True}
    assert merge.cell_result(old, None).hung_at_boot == results.HUNG_AT_BOOT
    killed = dataclasses.replace(out, not_ready=False)     # at the cell's own timeout
    assert not results.evaluate(CELL, killed, EXPECTED, "tcg").hung_at_boot
    assert "hung_at_boot" not in results.evaluate(CELL, killed, EXPECTED, "tcg").to_json()
    assert r.problems[0] == ("guest hung at boot: its init did not begin within 480s "
                             "(last console line: [   86.224821] random: crng init done)")
    assert {t.status for t in r.tests} == {"fail"}
    assert {t.reason for t in r.tests} == {
        "no result: the guest hung at boot (killed at 480s, its init never began)"}


# A selftest that ran out of its own time bound (TIMED_OUT of
# selftests/ima_appraise/common.h): race_test's final_fput_from_kthread
# in the form it prints it, after the failed ASSERT_EQ that logs it.
_OWN_TIMEOUT = (
    "race_test.c:867:execve:Expected 0 (0) == res->call[0] (101)",
    "race_test.c:871:execve:enforce mode: round 2: racer 1 (final fput): execve after "
    "the last reference went: TIMED OUT: ETXTBSY: write access still held after 10000 ms",
    "execve: Test terminated by assertion")


def test_a_known_failure_that_ran_out_of_its_own_time_is_a_failure() -> None:
    """A case whose own clock ran out saw the kernel hang, not the wrong
    result a known failure names: never xfail, plain or racy."""
    console = _exec_case_failing_with(*_OWN_TIMEOUT)
    for why in ("bug", RacyReason("bug")):
        r = results.evaluate(CELL, outcome(console), EXPECTED, "tcg",
                             known=lambda n: why if n == "exec_test/exec_file.missing_hash"
                             ".execve" else None)
        t = r.test("exec_test/exec_file.missing_hash.execve")
        assert t.status == "fail"
        assert t.reason == (
            f"timed out by its own clock: {_OWN_TIMEOUT[1]} (a known failure of this kernel, "
            "but it must fail by its checks, not by running out of time: bug)")
        assert r.status == "fail"
    # Not a known failure: a failure as any other, with its own reason.
    r = results.evaluate(CELL, outcome(console), EXPECTED, "tcg")
    assert r.test("exec_test/exec_file.missing_hash.execve").status == "fail"


def test_the_timed_out_token_is_the_selftests_own() -> None:
    """Both sides of the contract spell it the same."""
    headers = sorted((REPO / "selftests" / "ima_appraise").glob("*.h"))
    defined = [m[1] for h in headers
               for m in re.finditer(r'^#define\s+TIMED_OUT\s+"([^"]*)"', h.read_text(), re.M)]
    assert defined == [results.TIMED_OUT]


def test_an_abort_without_a_failed_check_is_a_crash() -> None:
    """6.1's harness ends a failed ASSERT_*() with abort(), after its
    "Expected ..." line; a glibc abort (heap corruption, assert()) prints
    the same "terminated by assertion" line without one."""
    console = _exec_case_failing_with("free(): double free detected in tcache 2",
                                      "execve: Test terminated by assertion")
    r = results.evaluate(CELL, outcome(console), EXPECTED, "tcg", known=_known_exec_missing)
    t = r.test("exec_test/exec_file.missing_hash.execve")
    assert t.status == "fail"
    assert t.reason == (
        "execve: Test terminated by assertion, with no failed ASSERT/EXPECT before it "
        "(an abort() of its own: glibc's heap checks, assert()) (a known failure of this "
        "kernel, but it must fail by its checks, not like this: bug)")
    assert r.status == "fail"
    # With the failed check's line before it, it is the test's own verdict.
    console = _exec_case_failing_with("exec_test.c:93:execve:Expected 13 (13) == "
                                      "test_execve(self->path) (-1)",
                                      "execve: Test terminated by assertion")
    r = results.evaluate(CELL, outcome(console), EXPECTED, "tcg", known=_known_exec_missing)
    assert r.test("exec_test/exec_file.missing_hash.execve").status == "xfail"
    assert r.status == "pass"


# A real console of Debian's own linux-image-7.2.13+deb14-amd64 (7.2.13-1),
# booted as it ships with its modules' cpio: no lockdep, no .ima keyring,
# no IMA_READ_POLICY or IMA_WRITE_POLICY.  Its 181 cases were the suite's
# then, read from the console itself.
DEBIAN_72 = "real_x86_64_debian_7.2_enforce_builtin.log"


def _console_cases(console: str) -> tuple[Case, ...]:
    found = re.findall(r"ima_selftest: begin (\w+)/(\S+)", console)
    return tuple(Case(suite, name) for suite, name in dict.fromkeys(found))


def test_debians_own_72_is_judged_by_the_matrix() -> None:
    """The debian-7.2 variant's known failures and skips (matrix.yaml)
    judge Debian's shipped kernel: the cell passes, every failure it
    expects is a known one and failed by the check that entry names,
    and every skip is one the matrix expects (the kernel's missing
    lockdep, keyring and policy files, and the boot policy's own)."""
    console = real(DEBIAN_72)
    expected = _console_cases(console)
    assert len(expected) == 181
    variant = load(REPO / "matrix.yaml").variants["debian-7.2"]
    cell = Cell("x86_64", "debian-7.2", "enforce", "builtin")
    r = results.evaluate(
        cell, outcome(console), expected, "tcg",
        known=lambda name: variant.expected_failure(cell, name),
        known_splat=lambda sig, at_boot: variant.known_splat(cell, sig, at_boot),
        missing_coverage=flavors.SHIPPED.missing_coverage,
        expected_skip=lambda name: variant.expected_skip(cell, name))
    assert (r.status, r.reason, r.splats) == ("pass", "", ())
    assert r.counts() == {"pass": 132, "fail": 0, "skip": 31, "xfail": 18, "xpass": 0}
    # Without its known failures the same console fails the cell.
    bare = results.evaluate(cell, outcome(console), expected, "tcg",
                            missing_coverage=flavors.SHIPPED.missing_coverage,
                            expected_skip=lambda name: variant.expected_skip(cell, name))
    assert bare.status == "fail" and bare.counts()["fail"] == 18
