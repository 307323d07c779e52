"""`git bisect run` on a kernel tree of one's own: build the checked-out
commit as the variant "local" (KERNEL_TREE=), boot the chosen cells and
programs, and say whether the commit has the chosen splat or test failure.

    cd ~/linux && git bisect start BAD GOOD
    git bisect run ~/ima-tests/scripts/bisect-run --archs x86_64 --modes enforce \\
        --policies custom -k fput_test --splat 'circular locking dependency'

Exit status, as `git bisect run` reads it:

    0    good: absent, and every chosen cell ran to its end with lockdep on
    1    bad: the splat was printed, or the test failed
    125  cannot tell (git bisect skips the commit): the kernel did not build,
         a guest could not boot, timed out or panicked, the test never ran,
         or lockdep was already off (an earlier lockdep report, BUG or Oops)
         before the target could show
    128  stop the bisection: a bad command line, a selection that boots
         nothing, the harness itself failed, or Ctrl-C

The verdict is judged from the run's results.json alone (judge()), so it
can be checked on recorded results.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from . import cases, ktree, runner, selection
from .results import NO_RESULT_PREFIX
from .status import Status

if TYPE_CHECKING:
    import pytest

GOOD = 0
BAD = 1
SKIP = 125
ABORT = 128

# Splat kinds after which lockdep reports nothing more: lockdep turns
# itself off after its first report, and a BUG, Oops or KASAN report taints
# the kernel with LOCKDEP_NOW_UNRELIABLE ("Disabling lock debugging due to
# kernel taint").  A WARNING keeps it on.
_LOCKDEP_ENDERS = ("bug", "oops", "kasan", "panic")


def _ends_lockdep(splat: dict) -> bool:
    return splat.get("kind", "").startswith("lockdep") or splat.get("kind") in _LOCKDEP_ENDERS


@dataclass(frozen=True)
class Target:
    """What makes a commit bad: a splat (a substring of its title or
    signature, or its kind, e.g. lockdep-circular) or a failing test (an
    fnmatch pattern over "<program>/<case>")."""
    splat: str = ""
    test: str = ""

    def __post_init__(self) -> None:
        if bool(self.splat) == bool(self.test):
            raise ValueError("a bisection target is a splat or a test, exactly one")

    def __str__(self) -> str:
        return f"splat {self.splat!r}" if self.splat else f"test {self.test!r}"

    def matches_splat(self, splat: dict) -> bool:
        return bool(self.splat) and (self.splat == splat.get("kind")
                                     or self.splat in splat.get("title", "")
                                     or self.splat in (splat.get("signature") or ""))

    def matches_test(self, name: str) -> bool:
        return bool(self.test) and fnmatch.fnmatchcase(name, self.test)


@dataclass(frozen=True)
class Verdict:
    code: int       # GOOD, BAD, SKIP or ABORT
    reason: str

    @property
    def word(self) -> str:
        return {GOOD: "good", BAD: "bad", SKIP: "skip"}.get(self.code, "abort")


def _splat_line(cell: dict, s: dict) -> str:
    where = f" during {s['test']}" if s.get("test") else ""
    return f"{s.get('kind')} '{s.get('signature') or s.get('title')}' in {cell['id']}{where}"


def _incomplete(cell: dict) -> str | None:
    """Why a cell's run cannot show the absence of anything, or None."""
    status = cell.get("status")
    if status == Status.ERROR:
        return f"{cell['id']} could not be built or booted: {_first(cell.get('reason'))}"
    if status in (Status.TIMEOUT, Status.PANIC):
        return f"{cell['id']} did not run to its end ({status}): {_first(cell.get('reason'))}"
    tests = cell.get("tests", [])
    if not tests:
        return f"{cell['id']} ran no test"
    missing = [t["name"] for t in tests if t.get("reason", "").startswith(NO_RESULT_PREFIX)]
    if missing:
        return (f"{cell['id']}: {len(missing)} case(s) have no result, e.g. {missing[0]} "
                f"({next(t['reason'] for t in tests if t['name'] == missing[0])})")
    return None


def _first(text: str | None) -> str:
    return (text or "").splitlines()[0] if text else ""


def _lockdep_lost(cell: dict, target: Target, before: int | None = None) -> str | None:
    """The report that turned lockdep off in cell: anywhere (before is
    None), or before the case at index before of its tests, i.e. attributed
    to an earlier case, or to none (at boot, between cases).  Anywhere,
    because a splat looked for may hide behind another in the program that
    lost lockdep (continuation boots rerun only the programs after it): to
    bisect past a known splat, select only the program that shows yours."""
    tests = cell.get("tests", [])
    index = {t["name"]: i for i, t in enumerate(tests)}
    for s in cell.get("splats", []):
        if not _ends_lockdep(s) or target.matches_splat(s):
            continue
        if before is not None and s.get("test") in index and index[s["test"]] >= before:
            continue    # attributed to the target or a later case
        if before is not None and "test" not in s:
            continue    # results from before attribution: cannot tell it came first
        return f"lockdep was turned off by {_splat_line(cell, s)}"
    return None


def judge(doc: dict, target: Target) -> Verdict:
    """The verdict on one commit from its run's results.json."""
    cells = doc.get("cells", [])
    if doc.get("interrupted"):
        return Verdict(SKIP, f"the run stopped early: {doc['interrupted']}")
    if not cells:
        return Verdict(SKIP, "no cell ran")
    if target.splat:
        return _judge_splat(cells, target)
    return _judge_test(cells, target)


def _judge_splat(cells: list[dict], target: Target) -> Verdict:
    hits = [(c, s) for c in cells for s in c.get("splats", []) if target.matches_splat(s)]
    if hits:
        return Verdict(BAD, "; ".join(_splat_line(c, s) for c, s in hits))
    unknown = [why for c in cells
               if (why := _incomplete(c) or _lockdep_lost(c, target))]
    if unknown:
        return Verdict(SKIP, f"no {target}, but " + "; ".join(unknown))
    return Verdict(GOOD, f"no {target} in {', '.join(c['id'] for c in cells)}")


def _judge_test(cells: list[dict], target: Target) -> Verdict:
    failed, passed, unknown = [], [], []
    for c in cells:
        if c.get("status") == Status.ERROR:
            unknown.append(_incomplete(c))
            continue
        tests = c.get("tests", [])
        for i, t in enumerate(tests):
            if not target.matches_test(t["name"]):
                continue
            where = f"{t['name']} in {c['id']}"
            reason = t.get("reason", "")
            if t["status"] == Status.SKIP or reason.startswith(NO_RESULT_PREFIX):
                unknown.append(f"{where} did not run: {reason or t['status']}")
            elif off := _lockdep_lost(c, target, before=i):
                unknown.append(f"{where}: {off} before it")
            elif t["status"] in (Status.FAIL, Status.XFAIL):
                failed.append(f"{where} failed: {_first(reason) or t['status']}")
            else:
                passed.append(where)
    if failed:
        return Verdict(BAD, "; ".join(failed))
    if unknown:
        return Verdict(SKIP, "; ".join(unknown))
    if not passed:
        return Verdict(SKIP, f"no case matching {target.test!r} in "
                       + ", ".join(c["id"] for c in cells))
    return Verdict(GOOD, f"{len(passed)} run(s) of {target} passed: " + ", ".join(passed[:3]))


def judge_file(results_json: Path, target: Target) -> Verdict:
    return judge(json.loads(results_json.read_text()), target)


# ---- the command ---------------------------------------------------------------

class _Parser(argparse.ArgumentParser):
    """argparse says 2 for a bad command line, which git bisect run would
    take for "bad": stop the bisection instead."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(ABORT, f"{self.prog}: error: {message} (exit {ABORT}: stops git bisect run)\n")


def add_target(ap: argparse.ArgumentParser, required: bool = True) -> None:
    """--splat or --test, one of them (make bisect's SPLAT= or TEST=)."""
    what = ap.add_mutually_exclusive_group(required=required)
    selection.add_argument(ap, "--splat", make="SPLAT", default="", group=what,
                           help="bad when a splat whose title or signature contains this, or "
                                "whose kind is this (lockdep-circular), is printed")
    selection.add_argument(ap, "--test", make="TEST", default="", group=what,
                           help="bad when this case fails (<program>/<case>, fnmatch pattern)")


def parse_args(argv: list[str], repo: Path) -> argparse.Namespace:
    ap = _Parser(prog="bisect-run", description="Build the checked-out commit of a kernel "
                 "tree as variant 'local', boot the chosen cells, and exit 0 (good), 1 (bad), "
                 "125 (cannot tell) or 128 (stop) for git bisect run.")
    add_target(ap)
    selection.add_options(ap, selection.BISECT, defaults={"kernel_tree": Path.cwd()},
                          notes={"kernel_tree": "default: the current directory, where git "
                                 "bisect run starts the command"})
    args = ap.parse_args(argv)
    tree = args.kernel_tree.expanduser().resolve()
    if problem := ktree.source_tree_problem(tree, "--kernel-tree (KERNEL_TREE=)"):
        ap.error(problem)
    args.kernel_tree = tree
    if args.test:
        names = [c.id for c in cases.expected_cases(repo / "selftests")]
        if not any(fnmatch.fnmatchcase(n, args.test) for n in names):
            near = [n for n in names if args.test.split("/")[0] in n][:3]
            ap.error(f"--test {args.test!r} matches no case of selftests/ima_appraise"
                     + (f" (there are e.g. {', '.join(near)})" if near else
                        "; cases are <program>/<fixture>.<variant>.<test>"))
    return args


class _RunOf:
    """Catches the matrix run of an in-process pytest session."""
    run: runner.RunResult | None = None

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        from . import conftest
        self.run = conftest.run_of(session.config)


def main(argv: list[str], repo: Path) -> int:
    args = parse_args(argv, repo)
    # Here, after the command line (and its --help): the judging above
    # works without pytest.
    import pytest

    target = Target(splat=args.splat, test=args.test)
    tree_id = ktree.identify(args.kernel_tree)
    what = f"{tree_id.describe} ({tree_id.commit})" if tree_id else str(args.kernel_tree)
    print(f"bisect-run: {what}: looking for {target}", flush=True)
    pytest_args = [str(repo / "harness" / "matrix_run.py"), "-q", "--tb=no",
                   "-p", "no:cacheprovider", "--tier=full", "--variants=local",
                   *selection.forward(args, selection.BISECT)]
    grab = _RunOf()
    status = pytest.main(pytest_args, plugins=[grab])
    if grab.run is None:
        why = {pytest.ExitCode.USAGE_ERROR: "a bad selection or matrix (see above)",
               pytest.ExitCode.NO_TESTS_COLLECTED: "the selection boots no cell",
               pytest.ExitCode.INTERRUPTED: "interrupted, or the harness failed (see above)"}
        verdict = Verdict(ABORT, why.get(status, f"pytest exited {int(status)} (see above)"))
    else:
        results_json = grab.run.run_dir / "results.json"
        verdict = judge_file(results_json, target)
        doc = json.loads(results_json.read_text())
        doc["bisect"] = {"target": str(target), "verdict": verdict.word, "exit": verdict.code,
                         "reason": verdict.reason}
        results_json.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"bisect-run: {what}: {verdict.word} (exit {verdict.code}): {verdict.reason}",
          flush=True)
    return verdict.code
