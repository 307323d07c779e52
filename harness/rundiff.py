"""What changed between two runs: new failures and splats, fixed cases,
cells that appeared or vanished, known failures that changed.

    /usr/bin/python3 -m harness diff [--json] RUN_A RUN_B

RUN_A is the baseline, RUN_B the run judged against it; each is a run
directory (build/results/<run-id>/, or a merged one) or a results.json
file kept as a baseline.  A run killed before it reported (its
results.json the placeholder runner.unreported() writes) is read from its
cells' result.json files.  The cells are read as merge.cell_result() reads
them; a cell or case is keyed by its id, a splat by its signature (as
results.splat_groups() groups them).

Kinds of change, by cell, then case or signature:

- new-failure: a case that fails (fail, xpass) in B and did not in A (or
  was not there), or a cell that fails in B (timeout, panic, ...) with no
  new failing case to say why, and passed in A;
- new-splat: a signature B reports in a cell where A did not (known ones,
  matrix.yaml known_splats, are listed but are not new);
- vanished-cell: a cell of A with no result in B (not selected, or in its
  not_run);
- appeared-cell: a cell of B that A did not have;
- fixed: a case that failed in A and passes in B, or a failing cell that
  passes;
- known-changed: a known failure that changed (xfail in one run and not
  in the other, and not above);
- gone-splat: a signature of a cell of A that B no longer reports there;
- case-appeared, case-vanished: the selftests gained or lost a case.

Exit status: 1 if anything new (a new failure, a new splat not known, a
vanished cell), else 0; 2 on bad input.  report.write(run, baseline)
renders render_html(diff_runs(baseline, run)) as a section of report.html.
"""
from __future__ import annotations

import html
import json
from dataclasses import dataclass
from pathlib import Path

from . import merge
from .errors import HarnessError, read_json
from .results import CellResult
from .runner import UNREPORTED
from .status import FAILING, Status

# Kinds, in the order they are shown; the first three make a diff "new".
KINDS = {
    "new-failure": "new failures",
    "new-splat": "new splats",
    "vanished-cell": "cells that vanished",
    "appeared-cell": "cells that appeared",
    "fixed": "fixed",
    "known-changed": "known failures that changed",
    "gone-splat": "splats gone",
    "case-appeared": "cases that appeared",
    "case-vanished": "cases that vanished",
}
NEW_KINDS = ("new-failure", "new-splat", "vanished-cell")


class DiffError(HarnessError):
    """A run or baseline that cannot be compared."""


@dataclass(frozen=True)
class Run:
    label: str                  # the path given
    run_id: str
    cells: dict[str, CellResult]
    incomplete: str = ""        # why it has no verdict ("interrupted", "not_run"), or ""
    not_run: tuple[str, ...] = ()


@dataclass(frozen=True)
class Change:
    kind: str                   # one of KINDS
    cell: str
    what: str = ""              # the case, or the splat's signature ("": the cell)
    before: str = ""            # its status in A
    after: str = ""             # ... in B
    detail: str = ""            # B's reason (A's for what vanished), a splat's title

    @property
    def new(self) -> bool:
        return self.kind in NEW_KINDS and not (self.kind == "new-splat"
                                               and self.detail.startswith("known: "))

    def to_json(self) -> dict:
        return {"kind": self.kind, "cell": self.cell, "what": self.what,
                "before": self.before, "after": self.after, "detail": self.detail,
                "new": self.new}


@dataclass(frozen=True)
class Diff:
    a: Run
    b: Run
    changes: tuple[Change, ...]

    @property
    def new(self) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.new)

    @property
    def exit_status(self) -> int:
        return 1 if self.new else 0

    def by_kind(self) -> dict[str, list[Change]]:
        groups: dict[str, list[Change]] = {k: [] for k in KINDS}
        for c in self.changes:
            groups[c.kind].append(c)
        return {k: v for k, v in groups.items() if v}

    def headline(self) -> str:
        counts = ", ".join(f"{len(v)} {KINDS[k]}" for k, v in self.by_kind().items())
        return (f"{self.b.run_id} against {self.a.run_id}: "
                + (counts if counts else "no change")
                + (f"; NEW: {len(self.new)}" if self.new else ""))

    def text(self) -> str:
        out = [f"A: {self.a.label} ({self.a.run_id}, {len(self.a.cells)} cells)",
               f"B: {self.b.label} ({self.b.run_id}, {len(self.b.cells)} cells)"]
        out += [f"note: {r.label} has no verdict: {r.incomplete}" for r in (self.a, self.b)
                if r.incomplete]
        out.append(self.headline())
        for kind, changes in self.by_kind().items():
            out.append("")
            out.append(f"{KINDS[kind]} ({len(changes)}):")
            out += [f"  {_line(c)}" for c in changes]
        return "\n".join(out) + "\n"

    def to_json(self) -> dict:
        return {"a": {"path": self.a.label, "run_id": self.a.run_id,
                      "incomplete": self.a.incomplete},
                "b": {"path": self.b.label, "run_id": self.b.run_id,
                      "incomplete": self.b.incomplete},
                "new": len(self.new), "changes": [c.to_json() for c in self.changes]}


def _line(c: Change) -> str:
    where = f"{c.cell}: {c.what}" if c.what else c.cell
    states = f" {c.before or '-'} -> {c.after or '-'}" if c.before or c.after else ""
    return f"{where}{states}" + (f": {c.detail}" if c.detail else "")


# ---- reading runs ---------------------------------------------------------------

def load(path: Path) -> Run:
    """A run directory, or a results.json file, as cells by id."""
    doc_path = path / "results.json" if path.is_dir() else path
    if not doc_path.exists():
        raise DiffError(f"{path}: no results.json; give a run directory "
                        "(build/results/<run-id>/) or a results.json kept as a baseline")
    doc = read_json(doc_path, DiffError, "give a results.json the harness wrote")
    if not isinstance(doc, dict) or not isinstance(doc.get("cells"), list) \
            or not isinstance(doc.get("run_id"), str):
        raise DiffError(f"{doc_path}: no run_id and cells; not a results.json of the harness")
    docs = list(doc["cells"])
    if doc.get("interrupted") == UNREPORTED and not docs and path.is_dir():
        # Killed before it reported: what finished is in each cell's result.json.
        docs = [read_json(p, DiffError, "a cell's verdict, as the runner writes it")
                for p in sorted(path.glob("*/result.json"))]
    cells: dict[str, CellResult] = {}
    for i, c in enumerate(docs):
        try:
            cells[c["id"]] = merge.cell_result(c, None)
        except (KeyError, TypeError, ValueError) as e:
            raise DiffError(f"{doc_path}: cells[{i}] is not a cell's result ({type(e).__name__}: "
                            f"{e}); written by another harness version?") from e
    not_run = tuple(doc.get("not_run") or ())
    incomplete = "; ".join(filter(None, (
        f"stopped early: {doc['interrupted']}" if doc.get("interrupted") else "",
        f"{len(not_run)} selected cell(s) with no result" if not_run else "")))
    return Run(str(path), doc["run_id"], cells, incomplete, not_run)


# ---- comparing ------------------------------------------------------------------

def _splats(c: CellResult) -> dict[str, tuple[str, str | None]]:
    """A cell's splats by signature: (title, known)."""
    return {s.signature or f"{s.kind}: {s.title}": (s.title, s.known) for s in c.splats}


def _cases(a: CellResult, b: CellResult) -> list[Change]:
    cell = b.cell.id
    before = {t.name: t for t in a.tests}
    after = {t.name: t for t in b.tests}
    out = []
    for name, t in after.items():
        old = before.get(name)
        if old is None:
            out.append(Change("new-failure" if t.status in FAILING else "case-appeared",
                              cell, name, "", t.status, t.reason))
        elif t.status in FAILING and old.status not in FAILING:
            out.append(Change("new-failure", cell, name, old.status, t.status, t.reason))
        elif old.status in FAILING and t.status == Status.PASS:
            out.append(Change("fixed", cell, name, old.status, t.status, t.reason))
        elif Status.XFAIL in (old.status, t.status) and old.status != t.status:
            out.append(Change("known-changed", cell, name, old.status, t.status,
                              t.reason or old.reason))
    out += [Change("case-vanished", cell, name, t.status, "", t.reason)
            for name, t in before.items() if name not in after]
    return out


def _cell(a: CellResult, b: CellResult, cases: list[Change]) -> list[Change]:
    """The cell's own verdict, where no case's change says it."""
    cell = b.cell.id
    if a.status == b.status:
        return []
    if b.status != Status.PASS and a.status == Status.PASS \
            and not any(c.kind == "new-failure" for c in cases):
        return [Change("new-failure", cell, "", a.status, b.status, b.reason)]
    if b.status == Status.PASS and not any(c.kind == "fixed" for c in cases):
        return [Change("fixed", cell, "", a.status, b.status, a.reason)]
    return []


def _splat_changes(a: CellResult | None, b: CellResult | None) -> list[Change]:
    before = _splats(a) if a else {}
    after = _splats(b) if b else {}
    cell = (b or a).cell.id
    out = [Change("new-splat", cell, sig, "", "", f"known: {known}" if known else title)
           for sig, (title, known) in after.items() if sig not in before]
    out += [Change("gone-splat", cell, sig, "", "", title)
            for sig, (title, _) in before.items() if sig not in after]
    return out


def diff_runs(a: Path | Run, b: Path | Run) -> Diff:
    """B (a run directory or results.json) against the baseline A."""
    ra = a if isinstance(a, Run) else load(Path(a))
    rb = b if isinstance(b, Run) else load(Path(b))
    changes: list[Change] = []
    for cell, cb in rb.cells.items():
        ca = ra.cells.get(cell)
        if ca is None:
            changes.append(Change("appeared-cell", cell, "", "", cb.status, cb.reason))
            failing = [Change("new-failure", cell, t.name, "", t.status, t.reason)
                       for t in cb.tests if t.status in FAILING]
            if cb.status != Status.PASS and not failing:
                failing.append(Change("new-failure", cell, "", "", cb.status, cb.reason))
            changes += failing
        else:
            cases = _cases(ca, cb)
            changes += cases + _cell(ca, cb, cases)
        changes += _splat_changes(ca, cb)
    for cell, ca in ra.cells.items():
        if cell not in rb.cells:
            why = ("no result: " + rb.incomplete) if cell in rb.not_run else "not in B"
            changes.append(Change("vanished-cell", cell, "", ca.status, "", why))
    order = list(KINDS)
    return Diff(ra, rb, tuple(sorted(changes, key=lambda c: order.index(c.kind))))


# ---- output ---------------------------------------------------------------------

def render_html(diff: Diff) -> str:
    """report.html's section on diff: a list per kind of change."""
    e = html.escape
    parts = [f'<section class="diff"><h2>Compared with <code>{e(diff.a.run_id)}</code> '
             f'({e(diff.a.label)})</h2>',
             f'<p class="{"bad" if diff.new else ""}">{e(diff.headline())}</p>']
    for kind, changes in diff.by_kind().items():
        cls = ' class="bad"' if any(c.new for c in changes) else ""
        parts.append(f"<h3{cls}>{e(KINDS[kind])} ({len(changes)})</h3><ul>")
        parts += [f"<li><code>{e(_line(c))}</code></li>" for c in changes]
        parts.append("</ul>")
    parts.append("</section>")
    return "\n".join(parts)


def main(args) -> int:
    """`python3 -m harness diff`: args as __main__ parses them."""
    diff = diff_runs(args.run_a, args.run_b)
    if args.json:
        print(json.dumps(diff.to_json(), indent=2))
    else:
        print(diff.text(), end="")
    return diff.exit_status
