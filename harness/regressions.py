"""Proof that the tests can fail: boot every deliberately broken kernel
(a variant with `catches:` in matrix.yaml) and check that what it must
break is caught.

A variant is caught when each of its patterns matches something that
failed in its cells: a test name ("open_test/open_file.*_hash.read",
fnmatch) or "splat:<kind>" for a kernel splat (e.g.
"splat:lockdep-circular").  A cell that could not be built or booted
("error") proves nothing and counts against it.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass

from .results import CellResult


@dataclass(frozen=True)
class Verdict:
    variant: str
    caught: bool
    evidence: tuple[str, ...]   # per pattern: what matched it, or why not


def failures(cells: list[CellResult]) -> list[tuple[str, str]]:
    """(name, cell id) of every failed test and every splat."""
    found = []
    for c in cells:
        # A test with no result line (crash, timeout) proves nothing about it.
        found += [(t.name, c.cell.id) for t in c.tests
                  if t.status in ("fail", "xpass") and not t.reason.startswith("no result")]
        found += [(f"splat:{s.kind}", c.cell.id) for s in c.splats]
    return found


def judge(variant: str, patterns: tuple[str, ...], cells: list[CellResult]) -> Verdict:
    errors = [c for c in cells if c.status == "error"]
    if errors or not cells:
        why = errors[0].reason.splitlines()[0] if errors else "no cells ran"
        return Verdict(variant, False, (f"not tested: {why}",))
    failed = failures(cells)
    evidence, caught = [], True
    for pattern in patterns:
        hits = [f"{name} in {cell}" for name, cell in failed if fnmatch.fnmatchcase(name, pattern)]
        if hits:
            evidence.append(f"{pattern}: {hits[0]}" + (f" (+{len(hits) - 1} more)" if len(hits) > 1 else ""))
        else:
            caught = False
            evidence.append(f"{pattern}: NOTHING FAILED")
    return Verdict(variant, caught, tuple(evidence))


def report(verdicts: list[Verdict]) -> str:
    lines = []
    for v in verdicts:
        lines.append(f"{v.variant:<26} {'caught' if v.caught else 'NOT CAUGHT'}")
        lines += [f"    {e}" for e in v.evidence]
    n = sum(v.caught for v in verdicts)
    lines.append(f"regressions: {n} of {len(verdicts)} caught")
    return "\n".join(lines)
