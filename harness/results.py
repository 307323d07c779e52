"""From a boot's console to a cell verdict, and from verdicts to
results.json, JUnit XML and the summary table."""
from __future__ import annotations

import dataclasses
import enum
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path


from . import kernlog, ktap, splats as splat_scanner, timing as timing_mod
from .cases import Case
from .matrix import Cell, RacyReason
from .qemu import BootOutcome
from .splats import Splat, decoded_file, splat_file
from .status import CASE_STATUSES, CELL_STATUSES, FAILING, Status


@dataclass(frozen=True)
class TestResult:
    name: str               # "<program>/<case>", e.g. "open_test/open_file.missing_hash.read"
    status: Status          # one of CASE_STATUSES
    reason: str = ""
    log: tuple[str, ...] = ()


@dataclass(frozen=True)
class CellResult:
    cell: Cell
    accel: str
    status: Status          # one of CELL_STATUSES
    reason: str
    duration_s: float
    splats: tuple[Splat, ...] = ()
    tests: tuple[TestResult, ...] = ()
    artifacts: Path | None = None
    ended: bool = False     # the guest printed its end marker
    problems: tuple[str, ...] = ()  # boot-level failures (see _boot_problems)
    timing: timing_mod.CellTiming | None = None   # boot floor and per-program seconds
    # Programs to boot again (a continuation boot): the last boot lost
    # lockdep, or panicked, before they started.
    rerun: tuple[str, ...] = ()
    boots: int = 1
    # Its first boot was killed at its boot_timeout (qemu.BootOutcome.not_ready):
    # it ran no program, so it says nothing of the kernel's verdicts.  (A
    # continuation boot that hangs leaves only its own programs without a
    # result, which mutants.py already counts as no proof.)  The problem
    # that says so (HUNG_AT_BOOT ...), or "".
    hung_at_boot: str = ""

    def counts(self) -> dict[str, int]:
        counts = {s: 0 for s in CASE_STATUSES}
        for t in self.tests:
            counts[t.status] += 1
        return counts

    def test(self, name: str) -> TestResult | None:
        return next((t for t in self.tests if t.name == name), None)

    def to_json(self) -> dict:
        c = self.cell
        return {"id": c.id, "arch": c.arch, "kernel": c.variant, "mode": c.mode,
                "policy": c.policy, "hash": c.hash, "setattr": c.setattr, "accel": self.accel, "status": self.status,
                "reason": self.reason, "duration_s": round(self.duration_s, 2),
                "splats": [s.to_json() | {"body": f"{c.id}/{splat_file(n)}"}
                           | ({"decoded": f"{c.id}/{decoded_file(n)}"} if self.artifacts
                              and (self.artifacts / decoded_file(n)).is_file() else {})
                           for n, s in enumerate(self.splats, 1)],
                "tests": [{"name": t.name, "status": t.status, **({"reason": t.reason} if t.reason else {})}
                          for t in self.tests],
                "artifacts": str(self.artifacts) if self.artifacts else None,
                **({"boots": self.boots} if self.boots > 1 else {}),
                **({"hung_at_boot": self.hung_at_boot} if self.hung_at_boot else {}),
                **({"timing": self.timing.to_json()} if self.timing else {})}


def error_cell(cell: Cell, reason: str, accel: str = "none") -> CellResult:
    return CellResult(cell, accel, Status.ERROR, reason, 0.0, problems=(reason,))


# How the reason of a case with no result line starts (mutants.py: such a
# failure proves nothing about the case itself).
NO_RESULT_PREFIX = "no result"
# How the problem of a guest killed at its boot_timeout starts (it ran no
# program: mutants.py counts its cell as not tested).
HUNG_AT_BOOT = "guest hung at boot"


def _why_missing(outcome: BootOutcome, run: ktap.GuestRun, suite: str,
                 found: list[Splat]) -> str:
    if outcome.not_ready:
        return (f"{NO_RESULT_PREFIX}: the guest hung at boot (killed at "
                f"{outcome.duration_s:.0f}s, its init never began)")
    if outcome.timed_out:
        return f"{NO_RESULT_PREFIX}: the guest was killed at the {outcome.duration_s:.0f}s timeout"
    if any(s.kind == "panic" for s in found):
        return f"{NO_RESULT_PREFIX}: the kernel panicked"
    if not run.began:
        return f"{NO_RESULT_PREFIX}: the suite never started (see console.log)"
    s = next((s for s in run.suites if s.name == suite), None)
    if s is None:
        return f"{NO_RESULT_PREFIX}: {suite} never ran"
    return f"{NO_RESULT_PREFIX} line from {suite} ({s.status}{': ' + s.reason if s.reason else ''})"


# A SKIP whose reason starts so is the cell's own choice (CELL_SKIP in
# selftests/ima_appraise/common.h: "needs a custom-policy cell"); any other
# SKIP in a harness guest means it lacks something, and fails the cell.
CELL_SKIP_PREFIX = "not for this cell: "

# runner.sh's directive for a program that exited with KSFT_FAIL.
_KSFT_FAIL = "exit=1"


# How kselftest_harness.h reports a case that did not end by its own
# verdict (__wait_for_test()): killed by its timeout, by a signal, or by
# abort().  Such a `not ok` is a crash, not the failure a known-failure
# entry expects.
_CRASHED = re.compile(r": Test (terminated by timeout|terminated unexpectedly by signal \d+|"
                      r"ended in some other way.*)$")
# SIGABRT is how every failed ASSERT_*() of the harness ends its case
# (__test_check_assert() calls abort()), i.e. a failure by the test's own
# checks, but also how glibc ends one whose heap it found corrupt, or a
# failed assert(): the two print the same line.  Only the first comes after
# __EXPECT()'s report of the failed check, a TH_LOG line (ktap.py took its
# "# " off) "<file>:<line>:<test>:Expected ..." (or "Expected '...'" of
# the string checks).
_ABORTED = re.compile(r": Test terminated by assertion$")
_FAILED_CHECK = re.compile(r"[^:\s]+:\d+:[^:\s]+:Expected ")

# What a selftest puts in the message of a failure that is its own clock
# running out (a kworker that never let go of a file, a kauditd that
# stopped printing): the other side of this contract is TIMED_OUT in
# selftests/ima_appraise/common.h (defined in its cell.h), the two must
# spell it the same.  The kernel hung instead of doing what the case
# checks, so such a case is never the known failure of a kernel.  The
# token may follow a prefix of the message (race_test names the round and
# the racer first), and any line of the case's log counts: one taken for
# a timeout that was none fails loudly, the other way a hang would pass
# for an expected failure.
TIMED_OUT = "TIMED OUT: "


def _failed_checks(t: TestResult) -> list[str]:
    """The lines of t's log that report a failed ASSERT/EXPECT, stripped."""
    return [line.strip() for line in t.log if _FAILED_CHECK.match(line.strip())]


def crash_of(t: TestResult) -> str | None:
    """How a failed case crashed (its harness line), or None if it failed by
    its own checks."""
    if crash := next((line.strip() for line in t.log if _CRASHED.search(line)), None):
        return crash
    aborted = next((line.strip() for line in t.log if _ABORTED.search(line)), None)
    if aborted and not _failed_checks(t):
        return (f"{aborted}, with no failed ASSERT/EXPECT before it (an abort() of its own: "
                "glibc's heap checks, assert())")
    return None


class _Ending(enum.Enum):
    """How a failed case ended other than by its own checks."""
    NO_RESULT = "no result line"
    CRASHED = "crashed"
    OWN_CLOCK = "ran out of its own time"
    NO_CHECK = "no failed check in its log"


def _ended_otherwise(t: TestResult) -> tuple[_Ending, str] | None:
    """How a failed case proves nothing of its own checks, the first that
    applies, and what says so: its reason (NO_RESULT), crash_of()
    (CRASHED), its TIMED_OUT line (OWN_CLOCK), its reason or a sentence
    (NO_CHECK); None: a failed ASSERT/EXPECT of its own is in its log."""
    if t.reason.startswith(NO_RESULT_PREFIX):
        return _Ending.NO_RESULT, t.reason
    if crash := crash_of(t):
        return _Ending.CRASHED, crash
    if late := timed_out_of(t):
        return _Ending.OWN_CLOCK, late
    if not _failed_checks(t):
        return _Ending.NO_CHECK, t.reason or "no failed ASSERT/EXPECT in its log"
    return None


def not_by_its_checks(t: TestResult) -> str | None:
    """Why a failed case proves nothing of its own checks (it crashed, ran
    out of its clock, had no result, or only a kernel splat failed it), or
    None: a failed ASSERT/EXPECT of its own is in its log."""
    how = _ended_otherwise(t)
    return how[1] if how else None


def _other_check(t: TestResult, failing: str) -> str | None:
    """The first failed-check line of t's log that failing (a known
    failure's pattern, matrix.KnownReason) does not match, or "no failed
    check in its log" if it has none; None if all match or failing is
    empty."""
    if not failing:
        return None
    checks = _failed_checks(t)
    if not checks:
        return "no failed check in its log"
    return next((c for c in checks if not re.search(failing, c)), None)


# expected_skip(test name): why it skips itself in the cell, or None.
SkipCheck = Callable[[str], "str | None"]


def _judge_skip(t: TestResult, why: str | None) -> TestResult:
    """t judged against the skips the matrix expects of it in its cell (why:
    the reason, None if it must run): a skip after a failed check, a skip
    where it must run, and a run where it must skip each fail it."""
    if t.status == Status.SKIP:
        if checks := _failed_checks(t):
            return TestResult(t.name, Status.FAIL, f"skipped after a failed check: {checks[0]} "
                              f"(skip: {t.reason})", t.log)
        if why is None:
            return TestResult(t.name, Status.FAIL, f"skipped where it must run ({t.reason}); "
                              "matrix.yaml skips: expects no skip of it in this cell", t.log)
        return t
    if why is not None and t.status in (Status.PASS, Status.XPASS):
        return TestResult(t.name, Status.FAIL, f"ran where it must skip itself: {why} "
                          "(matrix.yaml skips:); its skip condition, or the entry, is wrong",
                          t.log)
    return t


def timed_out_of(t: TestResult) -> str | None:
    """The line of the case's log that says it ran out of its own time
    (TIMED_OUT), or None."""
    return next((line.strip() for line in t.log if TIMED_OUT in line), None)


def _expect(t: TestResult, why: str | None) -> TestResult:
    """t judged against a known failure (why: its reason, None if none).
    Only a real `not ok` becomes xfail: a missing result (the guest or the
    program crashed, or was killed) or a case that crashed or timed out
    (kselftest's timeout or its own) stays a failure, with what happened
    (not_by_its_checks(); a `not ok` with no failed check in its log is
    judged by the known failure's pattern, _other_check())."""
    if why is None:
        return t
    if t.status == Status.FAIL:
        how, what = _ended_otherwise(t) or (None, "")
        if how in (_Ending.NO_RESULT, _Ending.CRASHED):
            return TestResult(t.name, Status.FAIL, f"{what} (a known failure of this kernel, "
                              f"but it must fail by its checks, not like this: {why})", t.log)
        if how == _Ending.OWN_CLOCK:
            return TestResult(t.name, Status.FAIL, f"timed out by its own clock: {what} (a "
                              "known failure of this kernel, but it must fail by its checks, "
                              f"not by running out of time: {why})", t.log)
        if other := _other_check(t, getattr(why, "failing", "")):
            return TestResult(t.name, Status.FAIL, f"failed by another check than its known "
                              f"failure's: {other} (known to fail by /{why.failing}/: {why})",
                              t.log)
        return TestResult(t.name, Status.XFAIL, f"known failure: {why} (failed: {t.reason})"
                          if t.reason else f"known failure: {why}", t.log)
    if t.status == Status.PASS and isinstance(why, RacyReason):
        return TestResult(t.name, Status.PASS, f"passed: its race was not hit this time "
                          f"(a known failure when it is: {why})", t.log)
    if t.status == Status.PASS:
        return TestResult(t.name, Status.XPASS, f"passed, but is a known failure of this kernel: "
                          f"{why} (fixed? drop it from known_failures in matrix.yaml)", t.log)
    return t


# Extra boots a cell may take to run, with lockdep on, the programs that
# ran after it went off (or after a panic): each shows the next splat.
CONTINUATION_BOOTS = 3

# Reports after which lockdep turns itself off (debug_locks_off(): its own
# reports and limits, oops_enter(), a taint that makes it unreliable).
_LOCKDEP_KILLERS = ("lockdep-", "bug", "oops", "kasan", "panic")


@dataclass(frozen=True)
class Boot:
    """One boot of a cell: how it went, and which programs it ran."""
    outcome: BootOutcome
    programs: tuple[str, ...]       # in the order the guest ran them
    console: str = "console.log"    # its console, in the cell's directory


@dataclass(frozen=True)
class _Seen:
    """What one boot's console says."""
    boot: Boot
    run: ktap.GuestRun
    log: kernlog.KernelLog
    splats: tuple[Splat, ...]
    marks: tuple[kernlog.Mark, ...]


# known_splat(signature, at_boot): why a splat is expected in the cell
# (matrix.Variant.known_splat), or None; at_boot: it came before the
# boot's first program started.
KnownSplatCheck = Callable[[str, bool], str | None]


def _read_boot(boot: Boot, known_splat: KnownSplatCheck) -> _Seen:
    console = boot.outcome.console
    run = ktap.parse(console)
    log = kernlog.read(console)
    marks = kernlog.marks(log)
    # A splat is at boot only if the log shows it before the first start
    # mark: one without a time, or in a boot with no start mark, cannot be
    # placed before a test, and a known_splats entry with at_boot: true
    # must not accept a report a test caused.
    first = next(((m.time, m.line) for m in marks if m.what == "start"), None)
    found = []
    for sp in splat_scanner.scan(log.scan_text):
        test = kernlog.case_at(marks, sp.time, sp.line) if sp.time is not None else None
        at_boot = sp.time is not None and first is not None and (sp.time, sp.line) < first
        found.append(dataclasses.replace(sp, test=test, console=boot.console,
                                         known=known_splat(sp.signature, at_boot)))
    return _Seen(boot, run, log, tuple(found), marks)


def _no_reason(name: str) -> str | None:
    return None


def _no_known_splat(signature: str, at_boot: bool) -> str | None:
    return None


def _no_missing_coverage(console: str) -> list[str]:
    return []


@dataclass(frozen=True)
class VerdictContext:
    """What a cell's boots are judged against (evaluate_boots()): the cell,
    the cases it must report, and what the matrix expects of its kernel.

    known(test name) says why that test is expected to fail in this cell
    (matrix.Variant.expected_failure), or None; known_splat(signature,
    at_boot) the same of a splat (matrix.Variant.known_splat; at_boot:
    printed before the boot's first program started): such a splat fails
    neither the cell nor its test.  missing_coverage(console) names the
    detectors of the cell's flavor (harness/flavors.py) a boot's console
    does not show running: each fails the cell.  expected_skip(test name)
    says why that test skips itself in this cell
    (matrix.Variant.expected_skip), or None: it must run (see
    _judge_skip); without it, skips are not judged case by case."""
    cell: Cell
    expected: tuple[Case, ...]
    accel: str
    artifacts: Path | None = None       # the cell's directory of the run
    known: Callable[[str], str | None] = _no_reason
    known_splat: KnownSplatCheck = _no_known_splat
    missing_coverage: Callable[[str], list[str]] = _no_missing_coverage
    expected_skip: SkipCheck | None = None


def evaluate(cell: Cell, outcome: BootOutcome, expected: tuple[Case, ...], accel: str,
             artifacts: Path | None = None, **checks: Callable) -> CellResult:
    """One boot that ran every program of expected; checks: known,
    known_splat, missing_coverage and expected_skip of VerdictContext."""
    programs = tuple(dict.fromkeys(c.suite for c in expected))
    return evaluate_boots(VerdictContext(cell, expected, accel, artifacts, **checks),
                          [Boot(outcome, programs)])


def evaluate_boots(ctx: VerdictContext, boots: list[Boot]) -> CellResult:
    """The cell's verdict from its boots: the first, then its continuation
    boots, each running the programs the one before lost lockdep (or
    panicked) before.  Each boot's cases are judged against the known
    failures and skips (_boot_tests()), then merged across the boots
    (_case_results()) and failed by the splats made while they ran
    (_failed_by_splats()); what fails the cell besides its cases
    (_boot_problems_of(), _continuation()) and its status
    (_cell_status()) come after."""
    seen = [_read_boot(b, ctx.known_splat) for b in boots]
    tested = [_boot_tests(ctx, sv) for sv in seen]
    problems = _boot_problems_of(ctx, seen, tested)
    found = tuple(sp for sv in seen for sp in sv.splats)
    tests = _failed_by_splats(_case_results(ctx, seen, tested), found)
    rerun, uncovered = _continuation(seen)
    problems += uncovered
    outcomes = [sv.boot.outcome for sv in seen]
    clocks = [c for c in map(clock_ahead, outcomes) if c]
    infra = [p for sv in seen for p in sv.log.problems]
    failed = [t for t in tests if t.status in FAILING]
    status = _cell_status(outcomes, found, clocks, bool(problems or failed), infra)
    problems = clocks + problems + infra
    reason = problems[0] if problems else (
        f"{len(failed)} test(s) failed: " + ", ".join(t.name for t in failed[:3]) if failed else "")
    # Rounded as results.json keeps it: a summary made from a merge of shards'
    # results.json (harness/merge.py) then prints the same tenths.
    return CellResult(ctx.cell, ctx.accel, status, reason,
                      round(sum(o.duration_s for o in outcomes), 2), found,
                      tuple(tests), ctx.artifacts, all(sv.run.ended for sv in seen),
                      tuple(problems), _timing(seen), rerun, len(boots),
                      _hung_at_boot(outcomes[0]) if outcomes else "")


def _boot_cases(ctx: VerdictContext, sv: _Seen) -> tuple[Case, ...]:
    """The expected cases of the programs this boot ran."""
    return tuple(c for c in ctx.expected if c.suite in sv.boot.programs)


def _boot_tests(ctx: VerdictContext, sv: _Seen) -> list[TestResult]:
    """One boot's results of its cases (_boot_cases()), each judged against
    the cell's known failures (_expect()) and the skips the matrix expects
    (_judge_skip()); a case it did not report fails, saying why
    (_why_missing()).  Then the cases it reported that the sources do not
    have, as they are."""
    tests: list[TestResult] = []
    seen = set()
    for case in _boot_cases(ctx, sv):
        r = sv.run.case(case.suite, case.name)
        seen.add((case.suite, case.name))
        if r is None:
            t = TestResult(case.id, Status.FAIL,
                           _why_missing(sv.boot.outcome, sv.run, case.suite, list(sv.splats)))
        else:
            t = TestResult(case.id, r.status, r.reason, r.log)
        t = _expect(t, ctx.known(case.id))
        tests.append(_judge_skip(t, ctx.expected_skip(case.id)) if ctx.expected_skip else t)
    for suite in sv.run.suites:  # reported but not in the sources: still shown
        for r in suite.cases:
            if (suite.name, r.name) not in seen:
                tests.append(TestResult(f"{suite.name}/{r.name}", r.status, r.reason, r.log))
    return tests


def _boot_problems_of(ctx: VerdictContext, seen: list[_Seen],
                      tested: list[list[TestResult]]) -> list[str]:
    """What fails the cell in each boot besides its cases' results
    (_boot_problems(): hangs, panics, unknown splats, programs that ended
    badly; _coverage_problems(): lockdep lost unexplained, cases without
    markers; the flavor's detectors missing), a continuation boot's
    prefixed with its number and console."""
    problems: list[str] = []
    for n, (sv, boot_tests) in enumerate(zip(seen, tested), 1):
        prefix = f"boot {n} ({sv.boot.console}): " if n > 1 else ""
        problems += [prefix + p for p in _boot_problems(sv.boot.outcome, sv.run, sv.splats,
                                                        boot_tests, _boot_cases(ctx, sv))]
        problems += [prefix + p for p in _coverage_problems(sv, boot_tests)]
        if missing := ctx.missing_coverage(sv.boot.outcome.console):
            problems.append(f"{prefix}the kernel ran without {', '.join(missing)}: the "
                            "flavor's checks were not in force")
    return problems


def _case_results(ctx: VerdictContext, seen: list[_Seen],
                  tested: list[list[TestResult]]) -> list[TestResult]:
    """Each case's one result from the boots that ran it (_merged()), in
    the order of the expected cases (those the sources do not have last)."""
    runs: dict[str, list[tuple[int, str, TestResult]]] = {}
    for n, (sv, boot_tests) in enumerate(zip(seen, tested), 1):
        for t in boot_tests:
            runs.setdefault(t.name, []).append((n, sv.boot.console, t))
    order = {c.id: i for i, c in enumerate(ctx.expected)}
    return sorted((_merged(r) for r in runs.values()),
                  key=lambda t: order.get(t.name, len(order)))


def _failed_by_splats(tests: list[TestResult], found: tuple[Splat, ...]) -> list[TestResult]:
    """tests, each case during which the kernel made a report that is not
    a known splat of the cell failed by it (_failed_by())."""
    by_name = {t.name: t for t in tests}
    for sp in found:
        if sp.test in by_name and not sp.known:
            by_name[sp.test] = _failed_by(by_name[sp.test], sp)
    return list(by_name.values())


def _continuation(seen: list[_Seen]) -> tuple[tuple[str, ...], list[str]]:
    """The programs to boot again with lockdep on (_rerun() of the last
    boot), and the problems of those no further boot would cover: lockdep
    lost again to a report an earlier boot made, or at boot again, or the
    cell out of continuation boots (CONTINUATION_BOOTS)."""
    rerun = _rerun(seen[-1])
    stopper = _stopper(seen)
    boots = len(seen)
    if rerun and stopper:
        return (), [f"{', '.join(rerun)} ran without lockdep: boot {boots} lost it "
                    f"again to {stopper.kind}: {stopper.title}, reported by an earlier "
                    "boot; another boot would only show it again"]
    if rerun and boots > 1 and _lost_at_boot(seen[-1]):
        return (), [f"{', '.join(rerun)} ran without lockdep: boot {boots} lost it "
                    "at boot too, before the first program; another boot would only "
                    "lose it again"]
    if rerun and boots > CONTINUATION_BOOTS:
        return (), [f"{', '.join(rerun)} ran without lockdep in the last of the cell's "
                    f"{boots} boots: not covered ({CONTINUATION_BOOTS} continuation "
                    "boots at most)"]
    return rerun, []


def _cell_status(outcomes: list[BootOutcome], found: tuple[Splat, ...], clocks: list[str],
                 failing: bool, infra: list[str]) -> Status:
    """The cell's status, the first that applies: a boot timed out, the
    kernel panicked, a guest's clock cannot be trusted (clocks: an error,
    neither its failures nor its passes stand), a problem or a failed case
    (failing), the kernel log's own problems (infra: an error), else a
    pass."""
    if any(o.timed_out for o in outcomes):
        return Status.TIMEOUT
    if any(sp.kind == "panic" for sp in found):
        return Status.PANIC
    if clocks:
        return Status.ERROR
    if failing:
        return Status.FAIL
    if infra:
        return Status.ERROR
    return Status.PASS


def _merged(runs: list[tuple[int, str, TestResult]]) -> TestResult:
    """A case's result from the boots that ran it ((boot number, console,
    result), in boot order): the last one's, unless an earlier boot failed
    it by a real result (its `not ok`, xfail or not, not a missing one).
    A program runs again in a continuation boot because lockdep was off
    (or the guest panicked) when it ran, which takes nothing from what its
    checks saw then: a pass later does not undo that failure, and a known
    failure (racy or not) that failed by its checks once is an xfail.  A
    failure beats an xfail (a crash is never what a known failure
    expects), an earlier one a later one of the same status."""
    *_, (last_n, last_console, last) = runs
    failed = [r for r in runs if r[2].status == Status.XFAIL
              or (r[2].status == Status.FAIL and not r[2].reason.startswith(NO_RESULT_PREFIX))]
    stands = next((r for r in failed if r[2].status == Status.FAIL),
                  failed[0] if failed else None)
    if stands is None or stands[0] == last_n:
        return last
    n, console, t = stands
    again = last.reason if last.reason.startswith(NO_RESULT_PREFIX) else last.status
    return TestResult(t.name, t.status, f"failed in boot {n} ({console})"
                      + (f": {t.reason}" if t.reason else "")
                      + f"; boot {last_n} ({last_console}) ran it again: {again}", t.log)


def _failed_by(t: TestResult, sp: Splat) -> TestResult:
    """t, failed by a kernel report made while it ran."""
    why = f"kernel splat: {sp.kind}: {sp.title}"
    if t.status == Status.FAIL and t.reason:
        why += f" (and it failed: {t.reason})"
    return TestResult(t.name, Status.FAIL, why, t.log)


def _coverage_problems(sv: _Seen, tests: list[TestResult]) -> list[str]:
    """Lockdep lost without a report that says why, and cases whose
    markers are missing from a whole kernel log."""
    problems = []
    cov = kernlog.coverage(sv.marks)
    if cov.lost:
        if not _loss_splats(sv):
            problems.append(f"lockdep went off {cov.where()} and no kernel report in the log "
                            "says why: what ran after it was not checked for lock-order bugs")
    if sv.log.from_dump and sv.run.ended:
        begun = {m.name for m in sv.marks if m.what == "begin"}
        unmarked = [t.name for t in tests if t.status == Status.PASS and t.name not in begun]
        if unmarked:
            problems.append(f"{len(unmarked)} case(s) passed without an 'ima_selftest: begin' "
                            f"marker in the kernel log (first: {unmarked[0]}): a splat in "
                            "them could not be attributed (selftests/ima_appraise/mark.h)")
    return problems


def _loss_splats(sv: _Seen) -> list[Splat]:
    """The reports that can have turned lockdep off where this boot's
    markers saw it go off."""
    cov = kernlog.coverage(sv.marks)
    if cov.off_from is None:
        return []
    lo = (cov.on_until.time, cov.on_until.line) if cov.on_until else (-1.0, 0)
    hi = (cov.off_from.time, cov.off_from.line)
    return [sp for sp in sv.splats if sp.kind.startswith(_LOCKDEP_KILLERS)
            and sp.time is not None and lo < (sp.time, sp.line) <= hi]


def _rerun(sv: _Seen) -> tuple[str, ...]:
    """The programs of this boot to run again in a continuation boot: the
    ones after the last that started with lockdep on, if lockdep went off
    or the kernel panicked (never after a timeout: another would cost the
    whole timeout again).  Lockdep lost at boot, before any program, to a
    report: all of them (a report at boot may be a chance one; a second
    boot that loses it at boot ends the cell).  After a panic before any
    program, or a silent loss: none."""
    cov = kernlog.coverage(sv.marks)
    panicked = any(sp.kind == "panic" for sp in sv.splats)
    if sv.boot.outcome.timed_out or not (cov.lost or panicked):
        return ()
    # After a panic alone (lockdep on, or not built in), whatever started.
    ran = cov.started_on if cov.lost else {m.name for m in sv.marks if m.what == "start"}
    on = [i for i, p in enumerate(sv.boot.programs) if p in ran]
    if on:
        return sv.boot.programs[on[-1] + 1:]
    return sv.boot.programs if _lost_at_boot(sv) and _loss_splats(sv) and not panicked else ()


def _lost_at_boot(sv: _Seen) -> bool:
    cov = kernlog.coverage(sv.marks)
    return cov.lost and cov.on_until is None


def _stopper(seen: list[_Seen]) -> Splat | None:
    """The report that ended the last boot's coverage, if an earlier boot
    reported it already (a regression hit by every program)."""
    earlier = {sp.signature for sv in seen[:-1] for sp in sv.splats}
    last = _loss_splats(seen[-1]) or [sp for sp in seen[-1].splats if sp.kind == "panic"]
    return next((sp for sp in last if sp.signature in earlier), None)


def _timing(seen: list[_Seen]) -> timing_mod.CellTiming | None:
    """The first boot's floor; each program's time from the last boot that
    ran it."""
    times = [timing_mod.parse(sv.boot.outcome.console, sv.boot.outcome.line_times)
             for sv in seen]
    if len(times) == 1:
        return times[0]
    programs: dict[str, timing_mod.ProgramTime] = {}
    for t in times:
        for p in t.programs:
            programs[p.name] = p
    return timing_mod.CellTiming(times[0].boot_s, tuple(programs.values()))


# How far a line's printk time may run ahead of the host seconds since
# QEMU started at which it arrived: the guest cannot have run longer than
# its QEMU, so anything past buffering and rounding is a broken clock.
CLOCK_SLACK_S = 5.0


def clock_ahead(outcome: BootOutcome) -> str | None:
    """Why the guest's clock cannot be trusted (a line stamped well after
    the host time at which it arrived), or None.  Seen on x86_64 under
    TCG on a loaded host: the TSC calibrated against an emulated PIT whose
    reads came late ("tsc: Fast TSC calibration failed", "tsc: Detected
    28.093 MHz processor" for a 2096 MHz TSC), so every guest second was
    a fraction of a real one and kselftest's timeouts and the race tests'
    time bounds fired at once.  No verdict of such a guest is true."""
    lines = kernlog.console_lines(outcome.console)
    ahead = [(line.time - outcome.line_times[line.number - 1], line) for line in lines
             if line.number <= len(outcome.line_times)]
    if not ahead or (worst := max(ahead, key=lambda a: a[0]))[0] <= CLOCK_SLACK_S:
        return None
    stamped, host = worst[1].time, worst[1].time - worst[0]
    tsc = next((line.text for line in lines if line.text.startswith("tsc: Detected")), None)
    return (f"the guest's clock ran ahead of the host's: a line stamped {stamped:.1f}s "
            f"arrived {host:.1f}s after QEMU started"
            + (f" ({tsc})" if tsc else "")
            + "; its timeouts and time bounds fired early, so no verdict of it stands")


def _hung_at_boot(outcome: BootOutcome) -> str:
    """The problem of a guest killed at its boot_timeout, or ""."""
    if not outcome.not_ready:
        return ""
    return (f"{HUNG_AT_BOOT}: its init did not begin within {outcome.duration_s:.0f}s "
            f"(last console line: {outcome.last_line})")


def _boot_problems(outcome: BootOutcome, run: ktap.GuestRun, found: tuple[Splat, ...],
                   tests: list[TestResult], expected: tuple[Case, ...]) -> list[str]:
    """What fails a cell besides its expected cases' own results: these
    fail its test_boot item, so no selection of cases can hide them."""
    problems = []
    if hang := _hung_at_boot(outcome):
        problems.append(hang)
    elif outcome.timed_out:
        problems.append(f"guest did not finish within {outcome.duration_s:.0f}s")
    problems += [s.title for s in found if s.kind == "panic"]
    problems += [f"kernel splat: {s.kind}: {s.title}" for s in found
                 if s.kind != "panic" and not s.known]
    if not outcome.timed_out and outcome.returncode not in (0, None):
        problems.append(f"QEMU exited with status {outcome.returncode}: {outcome.last_line}")
    if not run.ended and not problems:
        problems.append("the guest stopped before the end marker (see console.log)")
    if run.exit_code:
        problems.append(f"the guest's init reported rc={run.exit_code} (125: scratch disk "
                        "not mounted; see console.log)" if run.exit_code == 125 else
                        f"the guest's init reported rc=126: no test program to run "
                        "(kselftest-list.txt) or ksft-run not executable; see console.log"
                        if run.exit_code == 126 else
                        f"the guest's runner (make run_tests or ksft-run) exited "
                        f"{run.exit_code}")
    expected_ids = {c.id for c in expected}
    # kselftest_harness.h exits 1 (KSFT_FAIL) when a case said `not ok`,
    # expectedly (xfail) or not: the cases' own results account for that.
    # Any other end of a program (a signal's exit=139, the runner's TIMEOUT,
    # no result line) is a problem of its own, known failures or not.
    failed_suites = {t.name.split("/")[0] for t in tests
                     if t.name in expected_ids
                     and t.status in (Status.FAIL, Status.XPASS, Status.XFAIL)}
    problems += [f"{s.name}: {s.status} {s.reason}".strip() for s in run.suites
                 if s.status in (Status.FAIL, Status.TIMEOUT)
                 and not (s.status == Status.FAIL and s.reason == _KSFT_FAIL
                          and s.name in failed_suites)]
    problems += [f"{t.name}: failed, and is not in the sources (harness/cases.py missed it?)"
                 for t in tests if t.name not in expected_ids and t.status in FAILING]
    skipped = [t for t in tests
               if t.status == Status.SKIP and not t.reason.startswith(CELL_SKIP_PREFIX)]
    if skipped:
        # The harness booted this guest for these tests: a SKIP means it
        # lacks something the tests need, which is the harness's failure.
        problems.append(f"{len(skipped)} test(s) skipped in a harness guest: {skipped[0].reason}")
    return problems


# ---- reports ------------------------------------------------------------------

def write_json(path: Path, run_id: str, cells: list[CellResult], timings: dict[str, float],
               extra: dict | None = None) -> None:
    doc = {"run_id": run_id, "cells": [c.to_json() for c in cells],
           "splat_groups": [g.to_json() for g in splat_groups(cells)],
           "timings": {k: round(v, 2) for k, v in timings.items()}, **(extra or {})}
    path.write_text(json.dumps(doc, indent=2) + "\n")


def write_junit(path: Path, cells: list[CellResult], not_run: Sequence[str] = (),
                why: str = "") -> None:
    """junit.xml: a suite per cell, and after them one that fails per
    selected cell with no result (not_run: the run stopped early, why)."""
    root = ET.Element("testsuites", name="ima-appraise-matrix")
    for c in cells:
        counts = c.counts()
        suite = ET.SubElement(root, "testsuite", name=c.cell.id, tests=str(len(c.tests) + 1),
                              failures=str(counts[Status.FAIL] + (c.status != Status.PASS)),
                              skipped=str(counts[Status.SKIP]), time=f"{c.duration_s:.2f}")
        boot = ET.SubElement(suite, "testcase", classname=c.cell.id, name="boot")
        if c.status != Status.PASS:
            ET.SubElement(boot, "failure", message=f"{c.status}: {c.reason}")
        for t in c.tests:
            case = ET.SubElement(suite, "testcase", classname=c.cell.id, name=t.name)
            if t.status in FAILING:
                fail = ET.SubElement(case, "failure", message=t.reason or t.status)
                fail.text = "\n".join(t.log)
            elif t.status in (Status.SKIP, Status.XFAIL):
                ET.SubElement(case, "skipped", message=t.reason)
    root.extend(no_result_suite(c, why) for c in not_run)
    ET.indent(root)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def no_result_suite(cell_id: str, why: str) -> ET.Element:
    """The junit suite of a selected cell with no result: its boot failed,
    so that a run without a verdict is not green in a junit reader."""
    suite = ET.Element("testsuite", name=cell_id, tests="1", failures="1", skipped="0",
                       time="0.00")
    boot = ET.SubElement(suite, "testcase", classname=cell_id, name="boot")
    ET.SubElement(boot, "failure", message=f"no result: {why or 'not run'}")
    return suite


@dataclass(frozen=True)
class SplatGroup:
    """The splats of one signature, across the cells of a run."""
    signature: str
    first: Splat
    first_cell: str
    cells: tuple[str, ...]      # every cell it occurred in, in run order
    count: int                  # how often in all (a cell may have it more than once)

    def where(self) -> str:
        at = (f"at {self.first.test}" if self.first.test
              else f"at {self.first.time:.3f}s" if self.first.time is not None else "")
        return f"first in {self.first_cell} {at}".rstrip()

    def to_json(self) -> dict:
        return {"signature": self.signature, "kind": self.first.kind, "title": self.first.title,
                "count": self.count, "cells": list(self.cells),
                "first": {"cell": self.first_cell, "test": self.first.test,
                          "time": self.first.time},
                "known": self.first.known}


def splat_groups(cells: list[CellResult]) -> list[SplatGroup]:
    """The run's splats grouped by signature, in order of first occurrence."""
    groups: dict[str, SplatGroup] = {}
    for c in cells:
        for s in c.splats:
            key = s.signature or f"{s.kind}: {s.title}"
            g = groups.get(key)
            if g is None:
                groups[key] = SplatGroup(key, s, c.cell.id, (c.cell.id,), 1)
            else:
                in_cells = g.cells if c.cell.id in g.cells else (*g.cells, c.cell.id)
                groups[key] = dataclasses.replace(g, cells=in_cells, count=g.count + 1)
    return list(groups.values())


def splat_summary(cells: list[CellResult]) -> str:
    """'1 distinct splat, in 14 cells, ...': one line per signature."""
    groups = splat_groups(cells)
    lines = [f"{len(groups)} distinct splat{'s' if len(groups) > 1 else ''}:"]
    for g in groups:
        n = len(g.cells)
        known = f" (known: {g.first.known})" if g.first.known else ""
        lines.append(f"  {g.signature}{known}\n"
                     f"    in {n} cell{'s' if n > 1 else ''}, {g.where()}")
    return "\n".join(lines)


def summary_text(cells: list[CellResult]) -> str:
    """summary.txt: the table, the splats by signature, then where the
    cells' time went per program."""
    splats = splat_summary(cells) + "\n\n" if any(c.splats for c in cells) else ""
    return (summary_table(cells) + "\n\n" + splats
            + timing_mod.summary([(c.cell.id, c.timing) for c in cells if c.timing]) + "\n")


def no_result_line(missing: Sequence[str]) -> str:
    """summary.txt's line for selected cells that have no result: a run
    with such cells has no verdict."""
    return (f"INCOMPLETE, no verdict: {len(missing)} selected cell(s) have no result: "
            f"{', '.join(missing)}\n")


def summary_table(cells: list[CellResult]) -> str:
    width = max([len(c.cell.id) for c in cells] + [4])
    lines = [f"{'cell':<{width}}  accel  status   pass fail skip xfail xpass   time  notes"]
    for c in cells:
        n = c.counts()
        note = c.reason.splitlines()[0] if c.reason else ""
        lines.append(f"{c.cell.id:<{width}}  {c.accel:<5}  {c.status:<7} {n['pass']:>5} "
                     f"{n['fail']:>4} {n['skip']:>4} {n['xfail']:>5} {n['xpass']:>5} "
                     f"{c.duration_s:>5.1f}s  {note}"[:220].rstrip())
    total = {s: sum(1 for c in cells if c.status == s) for s in CELL_STATUSES}
    lines.append("cells: " + ", ".join(f"{v} {k}" for k, v in total.items() if v)
                 + f" (of {len(cells)})")
    return "\n".join(lines)
