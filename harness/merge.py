"""Merge the results of shards (runs that each booted part of one matrix
selection) into what a single run of all their cells writes.

    /usr/bin/python3 -m harness merge --out DIR SHARD_DIR ...

Each SHARD_DIR is a run directory (build/results/<run-id>/): results.json,
junit.xml and one artifacts directory per cell.  DIR gets results.json,
junit.xml, summary.txt and report.html, with the cells in matrix order, and
a copy of every cell's artifacts (hard links where the filesystem allows).

Equal to a single run means: the same cells in the same order with the same
per-cell documents (but "artifacts", which points into DIR), byte-equal
junit.xml and summary.txt.  What belongs to a run as a whole cannot be equal
and is documented instead: run_id is "merged-" plus the shards' run ids;
timings adds each phase over the shards (machine time, not wall time);
builds and accel keep the first shard's entry per kernel or arch; "shards"
lists every shard's own run_id, path, shard, timings, builds and accel.

Inputs that would not make one run are refused (MergeError, naming the
files): a cell in two shards, shards that booted different kernels (by
kernel.config and patch digests) or came from different manifests, and a
shard missing from a sharded run (results.json's "shard": {"index": i,
"count": N}, i from 1, as --shard i/N).

A merge of shards that did not all finish has no verdict: a shard that
stopped early (results.json's "interrupted": Ctrl-C, SIGTERM, or the
placeholder a run killed outright leaves, runner.unreported()) or that
left selected cells without a result ("not_run"; a shard's selection is
its cells and those) is still merged, so that what did finish can be
read, but the merged results.json carries "interrupted" (each such shard)
and "not_run" (every selected cell with no result), summary.txt and
report.html say so, and merge() raises IncompleteRun naming them all
(exit 2).
"""
from __future__ import annotations

import json
import os
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from . import report, results
from .errors import HarnessError, read_json
from .matrix import Cell, Matrix
from .results import CellResult, TestResult
from .splats import Splat
from .status import CASE_STATUSES, CELL_STATUSES, Status
from .timing import CellTiming

# Run-level keys of results.json that are not per cell (see the docstring).
RUN_KEYS = ("run_id", "timings", "builds", "accel", "shard", "manifest", "interrupted",
            "not_run")


class MergeError(HarnessError):
    """The shards given do not make one run."""


class IncompleteRun(MergeError):
    """The shards were merged, but not every one finished: the merged run
    has no verdict.  cells: the merged cells, as merge() returns them."""

    def __init__(self, message: str, cells: list[CellResult]) -> None:
        super().__init__(message)
        self.cells = cells


@dataclass(frozen=True)
class Shard:
    path: Path              # the run directory
    doc: dict               # its results.json
    junit: ET.Element       # its junit.xml's root

    def where(self, name: str = "results.json") -> str:
        return str(self.path / name)


def load_shard(path: Path) -> Shard:
    doc_path = path / "results.json"
    if not doc_path.is_file():
        finished = sorted(p.parent.name for p in path.glob("*/result.json"))
        if finished:
            raise MergeError(f"{path}: no results.json, but {len(finished)} cell(s) with a "
                             "result.json: a run killed before it wrote its report (by a "
                             "harness older than its placeholder results.json); rerun the "
                             "shard")
        raise MergeError(f"{path}: no results.json; give run directories "
                         "(build/results/<run-id>/), one per shard")
    doc = read_json(doc_path, MergeError, "was the shard's run interrupted before it "
                    "wrote its results?")
    for key, kind in (("run_id", str), ("cells", list)):
        if not isinstance(doc.get(key) if isinstance(doc, dict) else None, kind):
            raise MergeError(f"{doc_path}: no {key!r} ({kind.__name__}); not a results.json "
                             "written by the harness")
    if not isinstance(doc.get("interrupted", ""), str) or not (
            isinstance(doc.get("not_run", []), list)
            and all(isinstance(c, str) for c in doc.get("not_run", []))):
        raise MergeError(f"{doc_path}: \"interrupted\" is {doc.get('interrupted')!r} and "
                         f"\"not_run\" {doc.get('not_run')!r}; expected a reason and a list "
                         "of cell ids")
    for i, c in enumerate(doc["cells"]):
        missing = [k for k in ("id", "arch", "kernel", "mode", "policy", "status", "tests")
                   if not isinstance(c, dict) or k not in c]
        if missing:
            raise MergeError(f"{doc_path}: cells[{i}] has no {', '.join(missing)}")
        odd = [f"{c['id']}: {c['status']!r}"] if c["status"] not in CELL_STATUSES else []
        odd += [f"{c['id']}/{t.get('name')}: {t.get('status')!r}" for t in c["tests"]
                if t.get("status") not in CASE_STATUSES]
        if odd:
            raise MergeError(f"{doc_path}: unknown status {odd[0]} (a cell is one of "
                             f"{', '.join(CELL_STATUSES)}; a case one of "
                             f"{', '.join(CASE_STATUSES)}); written by another harness version?")
    junit_path = path / "junit.xml"
    try:
        junit = ET.parse(junit_path).getroot()
    except (OSError, ET.ParseError) as e:
        raise MergeError(f"{junit_path}: cannot read it ({e}); every shard writes one "
                         "next to its results.json") from e
    suites = [s.get("name") for s in junit.iter("testsuite")]
    cells = [c["id"] for c in doc["cells"]]
    # A run that stopped early fails a suite per cell it did not run
    # (older harnesses left them out).
    if suites not in (cells, cells + doc.get("not_run", [])):
        raise MergeError(f"{junit_path}: its test suites {suites} are not the cells of "
                         f"{doc_path} {cells}; are they from two runs?")
    return Shard(path, doc, junit)


def _hang(value: object) -> str:
    """results.json's hung_at_boot: the problem that says the first boot
    hung (results.json files written before 6558f45 hold only true)."""
    if value is True:
        return results.HUNG_AT_BOOT
    return value if isinstance(value, str) else ""


def cell_result(doc: dict, artifacts: Path | None) -> CellResult:
    """The CellResult that results.CellResult.to_json() wrote doc from (but
    for the tests' logs and the splats' bodies, which it leaves out)."""
    cell = Cell(doc["arch"], doc["kernel"], doc["mode"], doc["policy"],
                doc.get("hash", "sha1"), doc.get("setattr", "keep"))
    tests = tuple(TestResult(t["name"], Status(t["status"]), t.get("reason", ""))
                  for t in doc["tests"])
    splats = tuple(Splat.from_json(s) for s in doc.get("splats", ()))
    timing = CellTiming.from_json(doc["timing"]) if doc.get("timing") else None
    return CellResult(cell, doc.get("accel", "none"), Status(doc["status"]), doc.get("reason", ""),
                      float(doc.get("duration_s", 0.0)), splats, tests, artifacts,
                      timing=timing, boots=int(doc.get("boots", 1)),
                      hung_at_boot=_hang(doc.get("hung_at_boot")))


def _same_build(shards: Sequence[Shard]) -> None:
    """Every shard booted the same kernel for each arch and variant: same
    kernel.config, same patches (by digest: paths differ between machines)."""
    seen: dict[str, tuple[str, Path]] = {}
    for shard in shards:
        if "manifest" in shard.doc and shard.doc["manifest"] != shards[0].doc.get("manifest"):
            raise MergeError(f"{shard.where()} and {shards[0].where()} come from different "
                             f"manifests ({shard.doc['manifest']!r} and "
                             f"{shards[0].doc.get('manifest')!r}); merge the shards of one build")
        for c in shard.doc["cells"]:
            d = shard.path / c["id"]
            kernel = f"{c['arch']}-{c['kernel']}"
            for name in ("kernel.config", "patches.txt"):
                try:
                    text = (d / name).read_text()
                except OSError:
                    continue    # an error cell's kernel did not build: nothing booted
                if name == "patches.txt":
                    text = "\n".join(w for w in text.split() if w.startswith("sha256:"))
                first = seen.setdefault(f"{kernel} {name}", (text, d / name))
                if first[0] != text:
                    raise MergeError(f"the shards booted different {kernel} kernels: "
                                     f"{first[1]} and {d / name} differ; merge only shards "
                                     "booted from one build")


def _complete(shards: Sequence[Shard]) -> None:
    marks = [s.doc.get("shard") for s in shards]
    if not any(marks):
        return
    for s, mark in zip(shards, marks):
        if not (isinstance(mark, dict) and isinstance(mark.get("index"), int)
                and isinstance(mark.get("count"), int) and 1 <= mark["index"] <= mark["count"]):
            raise MergeError(f"{s.where()}: \"shard\" is {mark!r}; expected "
                             "{\"index\": i, \"count\": N} with 1 <= i <= N in every shard")
    counts = {m["count"] for m in marks}
    if len(counts) > 1:
        raise MergeError("the shards split different runs: " + ", ".join(
            f"{s.where()} is {m['index']}/{m['count']}" for s, m in zip(shards, marks)))
    count = counts.pop()
    by_index: dict[int, Shard] = {}
    for s, m in zip(shards, marks):
        if m["index"] in by_index:
            raise MergeError(f"shard {m['index']}/{count} given twice: "
                             f"{by_index[m['index']].path} and {s.path}")
        by_index[m["index"]] = s
    missing = [i for i in range(1, count + 1) if i not in by_index]
    if missing:
        raise MergeError(f"shard(s) {', '.join(f'{i}/{count}' for i in missing)} missing: "
                         f"got {', '.join(f'{i}/{count}' for i in sorted(by_index))}; "
                         "give every shard's run directory (or rerun the missing ones)")


def _label(shard: Shard) -> str:
    mark = shard.doc.get("shard")
    return f"shard {mark['index']}/{mark['count']} ({shard.path})" if mark else str(shard.path)


def _gaps(shards: Sequence[Shard], cells: dict[str, tuple[Shard, dict]]
          ) -> tuple[list[tuple[str, str]], list[str]]:
    """What keeps the merged run from a verdict: each shard that stopped
    early ("shard i/N (path)", why), and every selected cell with no
    result, by shard index (_complete() checked the marks)."""
    def index(s: Shard) -> int:
        return s.doc["shard"]["index"] if s.doc.get("shard") else 0
    stopped: list[tuple[str, str]] = []
    missing: list[str] = []
    for s in sorted(shards, key=index):
        if s.doc.get("interrupted"):
            stopped.append((_label(s), s.doc["interrupted"]))
        missing += [c for c in s.doc.get("not_run", ()) if c not in cells and c not in missing]
    return stopped, missing


def _once(shards: Sequence[Shard]) -> dict[str, tuple[Shard, dict]]:
    cells: dict[str, tuple[Shard, dict]] = {}
    for shard in shards:
        for c in shard.doc["cells"]:
            if c["id"] in cells:
                raise MergeError(f"cell {c['id']} is in two shards: "
                                 f"{cells[c['id']][0].where()} and {shard.where()}; "
                                 "each cell must be booted by exactly one shard")
            cells[c["id"]] = (shard, c)
    return cells


def matrix_order(matrix: Matrix) -> Callable[[Cell], tuple]:
    """A sort key putting cells in the order a run of matrix boots them:
    by arch, variant, mode, policy, hash and setattr, each in the matrix's
    order.  Variants it does not list (mutants, extra, local) come after its
    own, by name, as `make mutants` boots them."""
    axes = ("arch", "variant", "mode", "policy", "hash", "setattr")
    rank = {a: list(dict.fromkeys(getattr(c, a) for c in matrix.cells)) for a in axes}
    rank["variant"] += [v for v in matrix.variants if v not in rank["variant"]]

    def key(cell: Cell) -> tuple:
        return tuple((0, rank[a].index(v), "") if v in rank[a] else (1, 0, v)
                     for a, v in ((a, getattr(cell, a)) for a in axes))
    return key


def _link_tree(src: Path, dst: Path) -> None:
    def link(s: str, d: str) -> None:
        try:
            os.link(s, d)
        except OSError:
            shutil.copy2(s, d)
    shutil.copytree(src, dst, copy_function=link, symlinks=True)


def merge(shard_dirs: Iterable[Path], out: Path, matrix: Matrix) -> list[CellResult]:
    """Writes the merged run to out (which must not exist yet); returns its
    cells in matrix order."""
    dirs = [Path(p) for p in shard_dirs]
    if not dirs:
        raise MergeError("no shard directories given")
    resolved = [p.resolve() for p in dirs]
    twice = next((p for i, p in enumerate(resolved) if p in resolved[:i]), None)
    if twice:
        raise MergeError(f"{twice} given twice")
    if out.exists():
        raise MergeError(f"{out} exists; merge into a new directory")
    shards = [load_shard(p) for p in dirs]
    cells = _once(shards)
    _complete(shards)
    _same_build(shards)

    in_matrix = matrix_order(matrix)
    order = sorted(cells, key=lambda i: in_matrix(cell_result(cells[i][1], None).cell))
    out.mkdir(parents=True)
    merged: list[CellResult] = []
    docs: list[dict] = []
    suites: dict[str, ET.Element] = {s.get("name"): s for shard in shards
                                     for s in shard.junit.iter("testsuite")
                                     if cells.get(s.get("name"), (None,))[0] is shard}
    for cell_id in order:
        shard, doc = cells[cell_id]
        artifacts = None
        if (shard.path / cell_id).is_dir():
            artifacts = out.resolve() / cell_id
            _link_tree(shard.path / cell_id, artifacts)
        docs.append({**doc, "artifacts": str(artifacts) if artifacts else None})
        merged.append(cell_result(doc, artifacts))

    stopped, missing = _gaps(shards, cells)
    run = _run_doc(shards, docs, stopped, missing)
    (out / "results.json").write_text(json.dumps(run, indent=2) + "\n")

    root = ET.Element(shards[0].junit.tag, shards[0].junit.attrib)
    root.extend(suites[i] for i in order)
    reasons = {c: f"{_label(s)} stopped early: {s.doc['interrupted']}"
               for s in shards if s.doc.get("interrupted") for c in s.doc.get("not_run", ())}
    root.extend(results.no_result_suite(c, reasons.get(c, "")) for c in missing)
    ET.indent(root)
    ET.ElementTree(root).write(out / "junit.xml", encoding="utf-8", xml_declaration=True)
    incomplete = bool(stopped or missing)
    summary = results.summary_text(merged) if merged or not incomplete else "no cell finished\n"
    if incomplete:
        summary += "".join(f"INCOMPLETE, no verdict: {shard} stopped early: {why}\n"
                           for shard, why in stopped)
        summary += results.no_result_line(missing) if missing else ""
    (out / "summary.txt").write_text(summary)
    report.write(out)
    if incomplete:
        raise IncompleteRun(
            "no verdict: "
            + "".join(f"{shard} stopped early: {why}; " for shard, why in stopped)
            + (f"{len(missing)} selected cell(s) have no result: {', '.join(missing)}; "
               if missing else "")
            + f"rerun what did not finish and merge again ({out} has what did)", merged)
    return merged


def _run_doc(shards: Sequence[Shard], cells: list[dict], stopped: list[tuple[str, str]],
             missing: list[str]) -> dict:
    """results.json of the merged run: its cells, and what belongs to the
    run as a whole made from the shards' (see the module's docstring)."""
    first = shards[0].doc
    run = {"run_id": "merged-" + "+".join(s.doc["run_id"] for s in shards),
           "cells": cells,
           "timings": _sum_timings(s.doc.get("timings", {}) for s in shards)}
    for key in ("builds", "accel"):
        if key in first:
            run[key] = _first_per(key, [s.doc for s in shards])
    run.update({k: v for k, v in first.items() if k not in run and k not in RUN_KEYS})
    if "manifest" in first:
        run["manifest"] = first["manifest"]
    if stopped:
        run["interrupted"] = "; ".join(f"{shard}: {why}" for shard, why in stopped)
    if stopped or missing:
        run["not_run"] = missing
    run["shards"] = [{"path": str(s.path), **{k: s.doc[k] for k in RUN_KEYS if k in s.doc}}
                     for s in shards]
    return run


def _sum_timings(timings: Iterable[dict[str, float]]) -> dict[str, float]:
    total: dict[str, float] = {}
    for t in timings:
        for phase, secs in t.items():
            total[phase] = round(total.get(phase, 0.0) + secs, 2)
    return total


def _first_per(key: str, docs: list[dict]) -> list | dict:
    if isinstance(docs[0][key], dict):      # accel: per arch
        out: dict = {}
        for d in docs:
            for arch, v in d.get(key, {}).items():
                out.setdefault(arch, v)
        return out
    seen: dict[str, dict] = {}               # builds: per kernel
    for d in docs:
        for b in d.get(key, []):
            seen.setdefault(b.get("kernel", ""), b)
    return list(seen.values())
