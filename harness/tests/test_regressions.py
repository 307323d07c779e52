from __future__ import annotations

from pathlib import Path

from harness import regressions, results
from harness.cases import expected_cases
from harness.matrix import Cell
from harness.qemu import BootOutcome

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "test_data"
EXPECTED = expected_cases(REPO / "selftests")


def evaluate(log: str, cell: Cell, timed_out: bool = False) -> results.CellResult:
    outcome = BootOutcome((DATA / log).read_text(), None if timed_out else 0, timed_out, 4.0, ())
    return results.evaluate(cell, outcome, EXPECTED, "tcg")


def test_caught_by_named_tests() -> None:
    cell = evaluate("real_x86_64_skip_exec_enforce_custom_fail.log",
                    Cell("x86_64", "skip-exec-appraisal", "enforce", "custom"))
    v = regressions.judge("skip-exec-appraisal", ("exec_test/exec_file.*_hash.execve",), [cell])
    assert v.caught
    assert v.evidence == ("exec_test/exec_file.*_hash.execve: exec_test/exec_file.missing_hash."
                          "execve in x86_64-skip-exec-appraisal-enforce-custom (+1 more)",)


def test_not_caught_when_a_pattern_matches_nothing() -> None:
    cell = evaluate("real_aarch64_fix_custom_pass.log", Cell("aarch64", "x", "fix", "custom"))
    v = regressions.judge("x", ("open_test/*",), [cell])
    assert not v.caught
    assert v.evidence == ("open_test/*: NOTHING FAILED",)
    assert regressions.report([v]).endswith("regressions: 0 of 1 caught")


def test_caught_by_a_splat() -> None:
    cell = evaluate("real_x86_64_lockdep_deadlock_killed.log",
                    Cell("x86_64", "lockdep-iint-inversion", "enforce", "builtin"), timed_out=True)
    assert regressions.judge("l", ("splat:lockdep-circular",), [cell]).caught


def test_a_kernel_that_did_not_build_proves_nothing() -> None:
    cell = results.error_cell(Cell("x86_64", "v", "fix", "custom"), "0001.patch does not apply\nhunk")
    v = regressions.judge("v", ("*",), [cell])
    assert not v.caught and v.evidence == ("not tested: 0001.patch does not apply",)
