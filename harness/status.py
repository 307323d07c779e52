"""The one vocabulary of verdicts, for cases, programs and cells alike.

A Status is a str (StrEnum): it prints, compares and serialises (results.json,
JUnit) as its value, so "pass" in a recorded results.json is Status.PASS.
Which values each level can take is spelled out below, once.
"""
from __future__ import annotations

import enum


class Status(enum.StrEnum):
    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"        # a case or program that did not run its checks
    XFAIL = "xfail"      # a listed known failure that failed by a real `not ok`
    XPASS = "xpass"      # a listed known failure that passed: fails its cell
    TIMEOUT = "timeout"  # a program killed by kselftest's runner, or a cell killed by the harness
    PANIC = "panic"      # a cell whose kernel panicked
    ERROR = "error"      # a cell that could not be built or booted at all


# What each level can be.
CASE_STATUSES = (Status.PASS, Status.FAIL, Status.SKIP, Status.XFAIL, Status.XPASS)
PROGRAM_STATUSES = (Status.PASS, Status.FAIL, Status.SKIP, Status.TIMEOUT)
CELL_STATUSES = (Status.PASS, Status.FAIL, Status.TIMEOUT, Status.PANIC, Status.ERROR)

# The case statuses that fail a cell.
FAILING = frozenset({Status.FAIL, Status.XPASS})
