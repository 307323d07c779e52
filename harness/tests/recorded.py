"""The selftest cases the consoles in test_data/ were recorded with (the
suite as it was then): the parser's tests must not change whenever a case
is added to selftests/."""
from __future__ import annotations

from harness.cases import Case

_STATES = ("missing_hash", "wrong_hash", "correct_hash")

RECORDED_CASES: tuple[Case, ...] = (
    *(Case("open_test", f"open_file.{s}.{op}") for s in _STATES for op in ("read", "write")),
    *(Case("exec_test", f"exec_file.{s}.execve") for s in _STATES),
    *(Case("mmap_test", f"mmap_file.{s}.{p}") for s in _STATES for p in ("prot_exec", "prot_read")),
)
