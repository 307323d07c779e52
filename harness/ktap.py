"""Parse a guest's serial console into kselftest results.

The guest init prints BEGIN_MARKER, runs `make -C /selftests run_tests` or
ksft-run (initramfs/init) and prints "<<< ima-selftest end rc=N >>>" with its
exit code.  In between, tools/testing/selftests/kselftest/runner.sh (or
ksft-run, which prints the same) prints one top-level TAP result per test
binary (a "suite" here) and prefixes the binary's own TAP output with "# ":

    # selftests: ima_appraise: open_test        <- suite header
    # 1..3                                      <- the binary's plan
    # #  RUN           appraise.wrong_hash.read ...
    # # open_test.c:88:read:Expected 13 (13) == test_open(...) (0)
    # not ok 2 appraise.wrong_hash.read         <- a case
    not ok 1 selftests: ima_appraise: open_test # exit=1

A case's log is what its binary printed as "# ..." (or as plain text) after
the case's RUN line, or else after the previous case's result, less the
harness's "OK name"/"FAIL name" line; TAP nested deeper than one level stays
in the log, unparsed.  Linux 6.1's kselftest_harness.h prints a skipped case
as "ok 3 # SKIP reason", without a name: the name then comes from the RUN line.

A result directive's first word sets the status (for a case SKIP, XFAIL, TODO
= xfail, XPASS; for a suite SKIP, TIMEOUT) and the rest of it is the reason,
e.g. "45 seconds" for "# TIMEOUT 45 seconds"; any other directive ("# exit=1")
is the reason as a whole.

Kernel messages share the console.  Lines starting with a printk timestamp
are dropped; a message that interrupted a line (the serial console interleaves
the kernel's output with userspace's at any byte) is cut out and the two
halves of the line are joined again.  So a test must not print kernel log lines with
their timestamps: the rest of that line would be lost and the next line glued
onto it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .status import Status

BEGIN_MARKER = "<<< ima-selftest begin >>>"
NO_RESULT = "no result line (guest crashed or was killed)"

# "[   12.345678] ", and with CONFIG_PRINTK_CALLER "[   12.345678][    T1] ".
PRINTK_TIMESTAMP = re.compile(r"\[ *\d+\.\d+\](?:\[ *[CT]\d+\])? ?")

_END_MARKER = re.compile(r"<<< ima-selftest end rc=(-?\d+) >>>")
_VERSION = re.compile(r"K?TAP version \d+")
_PLAN = re.compile(r"1\.\.(\d+)\s*(?:#\s*(?:SKIP\b)?\s*(.*))?", re.IGNORECASE)
_RESULT = re.compile(r"(not )?ok (\d+)\b([^#]*)(?:#\s*(.*))?")
_RUN = re.compile(r"\s*RUN\s+(\S+) \.\.\.")
_RAN = re.compile(r"\s*(?:OK|FAIL)\s+(\S+)")     # repeats the result line
_SUITE_HEADER = re.compile(r"# (selftests: .*)")

# First word of a result directive -> status; any other directive (e.g.
# "exit=1", "error ...") leaves the status to "ok"/"not ok" and is the reason.
_CASE_DIRECTIVES = {"SKIP": Status.SKIP, "XFAIL": Status.XFAIL, "TODO": Status.XFAIL,
                    "XPASS": Status.XPASS}
_SUITE_DIRECTIVES = {"SKIP": Status.SKIP, "TIMEOUT": Status.TIMEOUT}


@dataclass(frozen=True)
class CaseResult:
    name: str                   # "appraise.missing_hash.read"
    status: Status              # one of status.CASE_STATUSES
    reason: str = ""            # directive text, e.g. "not booted by the harness"
    log: tuple[str, ...] = ()   # the case's diagnostic lines, "# " removed


@dataclass(frozen=True)
class SuiteResult:
    name: str                   # "open_test"
    status: Status              # one of status.PROGRAM_STATUSES
    reason: str
    planned: int | None         # the binary's "1..N", None if not seen
    cases: tuple[CaseResult, ...]


@dataclass(frozen=True)
class GuestRun:
    began: bool
    ended: bool
    exit_code: int | None       # rc= of the end marker
    suites: tuple[SuiteResult, ...]

    def case(self, suite: str, name: str) -> CaseResult | None:
        return next((c for s in self.suites if s.name == suite
                     for c in s.cases if c.name == name), None)


def console_lines(console: str) -> list[str]:
    """The console's lines with kernel messages cut out, without "\\r" and
    trailing blanks."""
    lines = []
    head = ""   # the part of a line before a kernel message interrupted it
    for raw in console.split("\n"):
        line = raw.strip("\r")
        m = PRINTK_TIMESTAMP.search(line)
        if m:
            head += line[:m.start()]
        else:
            lines.append((head + line).rstrip())
            head = ""
    if head:
        lines.append(head.rstrip())
    return lines


def _section(console: str) -> tuple[list[str], int | None] | None:
    """(the lines between the markers, the end marker's rc), or None without a
    begin marker.  Without an end marker: the lines to the end, and None."""
    lines = console_lines(console)
    if BEGIN_MARKER not in lines:
        return None
    start = lines.index(BEGIN_MARKER) + 1
    for i in range(start, len(lines)):
        if m := _END_MARKER.fullmatch(lines[i]):
            return lines[start:i], int(m[1])
    return lines[start:], None


def began(console: str) -> bool:
    """Whether the guest's init has printed BEGIN_MARKER (its programs are
    about to run): the console of a guest that booted."""
    return BEGIN_MARKER in console_lines(console)


def extract_section(console: str) -> list[str]:
    """The kselftest output: see _section()."""
    section = _section(console)
    return section[0] if section else []


def _result(ok: bool, directive: str, statuses: dict[str, Status]) -> tuple[Status, str]:
    """(status, reason) of a result line."""
    word, _, rest = directive.partition(" ")
    status = statuses.get(word.upper())
    if status is None:
        return (Status.PASS if ok else Status.FAIL), directive
    return status, rest.strip()


def _suite_name(description: str) -> str:
    """"selftests: ima_appraise: open_test" -> "open_test"."""
    return description.strip().rsplit(": ", 1)[-1]


@dataclass
class _OpenSuite:
    """A suite whose header was seen and whose result line was not (yet)."""
    name: str
    planned: int | None = None
    skip_reason: str = ""       # from "1..0 # SKIP reason"
    cases: list[CaseResult] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    running: str = ""           # name on the last RUN line

    def feed(self, line: str) -> None:
        """Takes one line of the binary's output, runner.sh's "# " removed."""
        if m := _RESULT.fullmatch(line):
            status, reason = _result(not m[1], m[4] or "", _CASE_DIRECTIVES)
            name = m[3].strip().removeprefix("- ") or self.running or f"#{m[2]}"
            self.cases.append(CaseResult(name, status, reason, tuple(self.log)))
            self.log.clear()
            self.running = ""
        elif m := _PLAN.fullmatch(line):
            if self.planned is None:
                self.planned = int(m[1])
                self.skip_reason = m[2] or ""
        elif not _VERSION.fullmatch(line):
            text = line[2:] if line.startswith("# ") else line.removeprefix("#")
            if m := _RUN.fullmatch(text):
                self.running = m[1]
                self.log.clear()
            elif not ((m := _RAN.fullmatch(text)) and m[1] == self.running):
                self.log.append(text)

    def close(self, status: Status, reason: str) -> SuiteResult:
        if status == Status.SKIP and not reason:
            reason = self.skip_reason
        return SuiteResult(self.name, status, reason, self.planned, tuple(self.cases))


def parse(console: str) -> GuestRun:
    section = _section(console)
    if section is None:
        return GuestRun(began=False, ended=False, exit_code=None, suites=())
    lines, exit_code = section
    suites: list[SuiteResult] = []
    current: _OpenSuite | None = None
    for line in lines:
        if m := _RESULT.fullmatch(line):
            name = _suite_name(m[3])
            if current is None or current.name != name:
                if current:
                    suites.append(current.close(Status.FAIL, NO_RESULT))
                current = _OpenSuite(name)
            suites.append(current.close(*_result(not m[1], m[4] or "", _SUITE_DIRECTIVES)))
            current = None
        elif m := _SUITE_HEADER.fullmatch(line):
            if current:
                suites.append(current.close(Status.FAIL, NO_RESULT))
            current = _OpenSuite(_suite_name(m[1]))
        elif current and (line == "#" or line.startswith("# ")):
            current.feed(line[2:])
    if current:
        suites.append(current.close(Status.FAIL, NO_RESULT))
    return GuestRun(began=True, ended=exit_code is not None,
                    exit_code=exit_code, suites=tuple(suites))
