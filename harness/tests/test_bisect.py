"""bisect-run's verdicts (harness/bisect.py) on results.json documents, and
the end-to-end check's reading of git bisect run's output."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest

from harness import bisect
from harness.bisect import ABORT, BAD, GOOD, SKIP, Target

CELL = "x86_64-local-enforce-custom-sha1-keep"
CIRCULAR = ("possible circular locking dependency: acquiring &iint->mutex while holding "
            "&mm->mmap_lock")


def _cell(status="pass", splats=(), tests=None, reason=""):
    tests = tests if tests is not None else [
        {"name": "fput_test/deferred_fput.munmap", "status": "pass"},
        {"name": "fput_test/deferred_fput.exit", "status": "pass"},
    ]
    return {"id": CELL, "status": status, "reason": reason, "splats": list(splats),
            "tests": tests}


def _doc(*cells):
    return {"run_id": "r", "cells": list(cells)}


def _verdict(doc, **target):
    return bisect.judge(doc, Target(**target))


def test_target_is_one_of_splat_or_test():
    with pytest.raises(ValueError):
        Target()
    with pytest.raises(ValueError):
        Target(splat="x", test="y")


@pytest.mark.parametrize("pattern", ["lockdep-circular", "circular locking",
                                     "possible deadlock in remove_vma"])
def test_a_matching_splat_is_bad(pattern):
    splat = {"kind": "lockdep-circular", "title": CIRCULAR,
             "signature": "possible deadlock in remove_vma",
             "test": "fput_test/deferred_fput.munmap"}
    v = _verdict(_doc(_cell("fail", [splat])), splat=pattern)
    assert (BAD, f"lockdep-circular 'possible deadlock in remove_vma' in {CELL} during "
                 "fput_test/deferred_fput.munmap") == (v.code, v.reason)


def test_a_bad_splat_counts_even_when_the_guest_then_timed_out():
    splat = {"kind": "lockdep-circular", "title": CIRCULAR}
    assert BAD == _verdict(_doc(_cell("timeout", [splat])), splat="circular").code


def test_absent_in_a_clean_run_is_good():
    v = _verdict(_doc(_cell()), splat="lockdep-circular")
    assert (GOOD, f"no splat 'lockdep-circular' in {CELL}") == (v.code, v.reason)


def test_another_lockdep_report_first_means_cannot_tell():
    other = {"kind": "lockdep-recursive", "title": "possible recursive locking detected"}
    v = _verdict(_doc(_cell("fail", [other])), splat="lockdep-circular")
    assert v.code == SKIP
    assert v.reason == (f"no splat 'lockdep-circular', but lockdep was turned off by "
                        f"lockdep-recursive 'possible recursive locking detected' in {CELL}")


@pytest.mark.parametrize("kind", ["bug", "oops", "lockdep-off"])
def test_a_bug_or_oops_also_ends_lockdep(kind):
    assert SKIP == _verdict(_doc(_cell("fail", [{"kind": kind, "title": "x"}])),
                            splat="lockdep-circular").code


def test_a_warning_keeps_lockdep_on():
    warn = {"kind": "warning", "title": "WARNING at fs/inode.c:1"}
    assert GOOD == _verdict(_doc(_cell("fail", [warn])), splat="lockdep-circular").code


@pytest.mark.parametrize("status, reason, why", [
    ("error", "x86_64-local: make bzImage failed\nmore", "could not be built or booted: "
     "x86_64-local: make bzImage failed"),
    ("timeout", "guest did not finish within 480s", "did not run to its end (timeout): "
     "guest did not finish within 480s"),
    ("panic", "Kernel panic - not syncing: x", "did not run to its end (panic): "
     "Kernel panic - not syncing: x"),
])
def test_a_cell_that_did_not_run_through_cannot_tell(status, reason, why):
    v = _verdict(_doc(_cell(status, reason=reason)), splat="lockdep-circular")
    assert (SKIP, f"no splat 'lockdep-circular', but {CELL} {why}") == (v.code, v.reason)


def test_a_case_without_result_cannot_tell():
    tests = [{"name": "fput_test/deferred_fput.munmap", "status": "fail",
              "reason": "no result: fput_test never ran"}]
    v = _verdict(_doc(_cell("fail", tests=tests)), splat="lockdep-circular")
    assert v.code == SKIP
    assert "1 case(s) have no result, e.g. fput_test/deferred_fput.munmap" in v.reason


def test_nothing_ran_cannot_tell():
    assert SKIP == _verdict(_doc(), splat="x").code
    assert SKIP == _verdict(_doc(_cell(tests=[])), splat="x").code
    interrupted = {**_doc(_cell()), "interrupted": "interrupted (Ctrl-C)"}
    assert SKIP == _verdict(interrupted, splat="x").code


def test_test_target_failing_is_bad():
    tests = [{"name": "fput_test/deferred_fput.munmap", "status": "fail",
              "reason": "lockdep reported a problem"},
             {"name": "fput_test/deferred_fput.exit", "status": "pass"}]
    v = _verdict(_doc(_cell("fail", tests=tests)), test="fput_test/deferred_fput.*")
    assert (BAD, f"fput_test/deferred_fput.munmap in {CELL} failed: lockdep reported a "
                 "problem") == (v.code, v.reason)


def test_test_target_passing_is_good():
    v = _verdict(_doc(_cell()), test="fput_test/deferred_fput.munmap")
    assert (GOOD, "1 run(s) of test 'fput_test/deferred_fput.munmap' passed: "
                  f"fput_test/deferred_fput.munmap in {CELL}") == (v.code, v.reason)


def test_test_target_that_did_not_run_cannot_tell():
    tests = [{"name": "fput_test/deferred_fput.munmap", "status": "fail",
              "reason": "no result: the guest was killed at the 480s timeout"}]
    v = _verdict(_doc(_cell("timeout", tests=tests)), test="fput_test/*")
    assert (SKIP, f"fput_test/deferred_fput.munmap in {CELL} did not run: no result: the "
                  "guest was killed at the 480s timeout") == (v.code, v.reason)
    assert SKIP == _verdict(_doc(_cell("error", tests=[])), test="fput_test/*").code
    assert SKIP == _verdict(_doc(_cell()), test="open_test/*").code


def test_test_target_after_an_earlier_cases_lockdep_report_cannot_tell():
    """An earlier case's report turned lockdep off: the target's own lockdep
    check fails, which says nothing about this commit."""
    tests = [{"name": "open_test/a.b", "status": "fail", "reason": "splat"},
             {"name": "fput_test/deferred_fput.munmap", "status": "fail",
              "reason": "lockdep is off"}]
    earlier = {"kind": "lockdep-circular", "title": "other", "test": "open_test/a.b"}
    v = _verdict(_doc(_cell("fail", [earlier], tests)), test="fput_test/*")
    assert (SKIP, f"fput_test/deferred_fput.munmap in {CELL}: lockdep was turned off by "
                  f"lockdep-circular 'other' in {CELL} during open_test/a.b before it") \
        == (v.code, v.reason)
    # Its own report is the failure looked for.
    own = dict(earlier, test="fput_test/deferred_fput.munmap")
    assert BAD == _verdict(_doc(_cell("fail", [own], tests)), test="fput_test/*").code
    # One at boot, before any case, came first too.
    boot = dict(earlier, test=None)
    v = _verdict(_doc(_cell("fail", [boot], tests)), test="fput_test/*")
    assert (SKIP, f"fput_test/deferred_fput.munmap in {CELL}: lockdep was turned off by "
                  f"lockdep-circular 'other' in {CELL} before it") == (v.code, v.reason)


def test_a_bad_cell_outweighs_another_that_could_not_run():
    splat = {"kind": "lockdep-circular", "title": CIRCULAR}
    broken = dict(_cell("error", reason="no kernel"), id="aarch64-local-enforce-custom-sha1-keep")
    assert BAD == _verdict(_doc(_cell("fail", [splat]), broken), splat="circular").code
    assert SKIP == _verdict(_doc(_cell(), broken), splat="circular").code


def test_judge_does_not_change_the_document():
    doc = _doc(_cell("fail", [{"kind": "bug", "title": "BUG: x"}]))
    before = copy.deepcopy(doc)
    _verdict(doc, splat="x")
    assert doc == before


def test_bad_command_lines_stop_the_bisection(tmp_path, capsys):
    repo = Path(bisect.__file__).resolve().parent.parent
    tree = tmp_path / "linux"
    tree.mkdir()
    (tree / "Makefile").write_text("")
    (tree / "Kconfig").write_text("")
    for argv, why in ((["--splat", "x", "--test", "y"], "not allowed with"),
                      ([], "one of the arguments --splat --test is required"),
                      (["--splat", "x", "--kernel-tree", str(tmp_path)],
                       f"--kernel-tree (KERNEL_TREE=): {tmp_path} is not the top of a Linux "
                       "source tree (no Makefile and no Kconfig there)"),
                      (["--splat", "x", "--kernel-tree", str(tmp_path / "nope")],
                       f"--kernel-tree (KERNEL_TREE=): {tmp_path / 'nope'}: no such directory"),
                      (["--test", "fput_tst/*", "--kernel-tree", str(tree)],
                       "--test 'fput_tst/*' matches no case of selftests/ima_appraise")):
        with pytest.raises(SystemExit) as e:
            bisect.parse_args(argv, repo)
        assert e.value.code == ABORT, argv
        assert why in capsys.readouterr().err
    args = bisect.parse_args(["--test", "fput_test/*", "--kernel-tree", str(tree)], repo)
    assert (args.test, args.kernel_tree) == ("fput_test/*", tree)


GOOD_ID, BAD_ID = "1" * 40, "2" * 40
BISECT_OUTPUT = f"""\
running  '/repo/scripts/bisect-run' '--splat' 'lockdep-circular'
bisect-run: 1111111 ({GOOD_ID}): looking for splat 'lockdep-circular'
kernel x86_64-local: /b/linux differs from linux-source-6.1 in 2 file(s): a turn of the shared workspace
results: /b/results/20261203-200000-1 (also build/results/latest)
bisect-run: 1111111 ({GOOD_ID}): good (exit 0): no splat 'lockdep-circular' in {CELL}
Bisecting: 0 revisions left to test after this (roughly 1 step)
running  '/repo/scripts/bisect-run' '--splat' 'lockdep-circular'
bisect-run: 2222222 ({BAD_ID}): looking for splat 'lockdep-circular'
bisect-run: 2222222 ({BAD_ID}): bad (exit 1): lockdep-circular 'x' in {CELL}
{BAD_ID} is the first bad commit
commit {BAD_ID}
bisect run success
"""


def test_bisect_check_reads_the_steps():
    from harness import bisect_check
    lines = BISECT_OUTPUT.splitlines()
    times = [(float(i), line) for i, line in enumerate(lines)]
    steps = bisect_check.steps(BISECT_OUTPUT, times)
    assert steps == [
        bisect_check.Step(GOOD_ID, "good", f"no splat 'lockdep-circular' in {CELL}", 3.0,
                          "/b/results/20261203-200000-1"),
        bisect_check.Step(BAD_ID, "bad", f"lockdep-circular 'x' in {CELL}", 1.0, ""),
    ]
    assert bisect_check.first_bad(BISECT_OUTPUT) == BAD_ID
    assert bisect_check.first_bad("bisect run failed:\nexit code 128 from ...") is None
