"""harness/rundiff.py: runs made from the recorded ones (test_data/run-x86_64,
test_data/recorded_shards), changed as a later run would be and written
with results.write_json(), as a run writes them."""
from __future__ import annotations

import dataclasses
import gzip
import json
import shutil
from pathlib import Path

import pytest

from harness import __main__ as cli, merge, report, results, runner
from harness.results import CellResult
from harness.rundiff import Change, diff_runs, load, render_html
from harness.splats import Splat
from harness.status import Status

DATA = Path(__file__).parent / "test_data"
RECORDED = DATA / "run-x86_64"
STOCK = "x86_64-stock-enforce-builtin-sha1-keep"
PATCHED = "x86_64-patched-enforce-builtin-sha1-keep"
# A known failure of stock (made an xfail below: the recorded run's crashed)
# and a case every cell passes.
KNOWN = "lastwriter_test/last_writer.new_file_fchmod_reopen"
PASSING = "open_test/open_file.missing_hash.read"
RUN_ID = "20261203-160934-32126"


def _recorded() -> list[CellResult]:
    doc = json.loads((RECORDED / "results.json").read_text())
    return [merge.cell_result(c, None) for c in doc["cells"]]


def _cells() -> list[CellResult]:
    """The recorded run, its stock known failure failing by its checks."""
    cells = _recorded()
    stock = _test(_one(cells, STOCK), KNOWN, Status.XFAIL, "known failure: IMA_NEW_FILE")
    return _with(cells, STOCK, tests=stock.tests)


def _write(d: Path, run_id: str, cells: list[CellResult], **extra) -> Path:
    d.mkdir(parents=True)
    results.write_json(d / "results.json", run_id, cells, {}, extra or None)
    return d


def _with(cells: list[CellResult], cell_id: str, **changes) -> list[CellResult]:
    return [dataclasses.replace(c, **changes) if c.cell.id == cell_id else c for c in cells]


def _test(c: CellResult, name: str, status: Status, reason: str = "") -> CellResult:
    return dataclasses.replace(c, tests=tuple(results.TestResult(name, status, reason)
                                              if t.name == name else t for t in c.tests))


def _one(cells: list[CellResult], cell_id: str) -> CellResult:
    return next(c for c in cells if c.cell.id == cell_id)


def test_the_recorded_statuses_are_what_the_cases_below_change() -> None:
    cells = _recorded()
    assert _one(cells, STOCK).test(KNOWN).status == Status.FAIL
    assert all(c.test(PASSING).status == Status.PASS for c in cells)


def test_a_run_against_itself(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    diff = diff_runs(RECORDED, RECORDED)
    assert diff.changes == () and diff.exit_status == 0
    assert cli.main(["diff", str(RECORDED), str(RECORDED / "results.json")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == f"{RUN_ID} against {RUN_ID}: no change"


def test_every_kind_of_change(tmp_path: Path) -> None:
    base = _cells()
    a = _write(tmp_path / "a", "run-a", base)
    cells = list(base)
    stock = _one(cells, STOCK)
    # A case newly failing, a known failure that passes, a new splat.
    stock = _test(stock, PASSING, Status.FAIL, "read: expected -EACCES, got 0")
    stock = _test(stock, KNOWN, Status.XPASS, "passed, but is a known failure")
    splat = Splat("lockdep-circular", "possible circular locking dependency: acquiring a "
                  "while holding b", 1200, 12.5, PASSING, signature="lockdep-circular (a, b) "
                  "in ima_file_free")
    stock = dataclasses.replace(stock, splats=(splat,))
    cells = _with(cells, STOCK, tests=stock.tests, splats=stock.splats)
    # A cell that vanished, one that appeared (a copy under another policy).
    gone = "x86_64-stock-fix-builtin-sha1-keep"
    cells = [c for c in cells if c.cell.id != gone]
    extra = dataclasses.replace(_one(cells, PATCHED),
                                cell=dataclasses.replace(_one(cells, PATCHED).cell,
                                                         policy="custom"))
    cells.append(extra)
    # A case that was added, one that went.
    patched = _one(cells, PATCHED)
    patched = dataclasses.replace(patched, tests=patched.tests[1:] + (
        results.TestResult("open_test/open_file.new_case", Status.PASS),))
    cells = _with(cells, PATCHED, tests=patched.tests)
    b = _write(tmp_path / "b", "run-b", cells)

    diff = diff_runs(a, b)
    kinds = {k: [(c.cell, c.what, c.before, c.after) for c in v]
             for k, v in diff.by_kind().items()}
    assert kinds == {
        "new-failure": [(STOCK, PASSING, "pass", "fail"),
                        (STOCK, KNOWN, "xfail", "xpass")],
        "new-splat": [(STOCK, "lockdep-circular (a, b) in ima_file_free", "", "")],
        "vanished-cell": [(gone, "", "fail", "")],
        "appeared-cell": [(extra.cell.id, "", "", "pass")],
        "case-appeared": [(PATCHED, "open_test/open_file.new_case", "", "pass")],
        "case-vanished": [(PATCHED, _one(base, PATCHED).tests[0].name, "pass", "")],
    }
    assert diff.exit_status == 1 and len(diff.new) == 4

    # The other way round: fixed, gone, and the known failure back.
    back = diff_runs(b, a)
    kinds = {k: [(c.cell, c.what, c.before, c.after) for c in v]
             for k, v in back.by_kind().items()}
    assert kinds["fixed"] == [(STOCK, PASSING, "fail", "pass")]
    assert kinds["known-changed"] == [(STOCK, KNOWN, "xpass", "xfail")]
    assert kinds["gone-splat"] == [(STOCK, "lockdep-circular (a, b) in ima_file_free", "", "")]
    assert kinds["vanished-cell"] == [(extra.cell.id, "", "pass", "")]
    assert kinds["appeared-cell"] == [(gone, "", "", "fail")]


def test_a_known_splat_is_listed_not_new(tmp_path: Path) -> None:
    base = _cells()
    a = _write(tmp_path / "a", "run-a", base)
    splat = Splat("kasan", "BUG: KASAN: wild-memory-access in rcu_is_watching", 439, 0.61,
                  signature="kasan: wild-memory-access in rcu_is_watching", known="not IMA")
    b = _write(tmp_path / "b", "run-b", _with(base, PATCHED, splats=(splat,)))
    diff = diff_runs(a, b)
    assert diff.changes == (Change("new-splat", PATCHED, splat.signature, "", "",
                                   "known: not IMA"),)
    assert diff.exit_status == 0


def test_a_cell_that_now_fails_by_itself(tmp_path: Path) -> None:
    # A panic, not a case's failure: the cell's own verdict is the change.
    base = _cells()
    a = _write(tmp_path / "a", "run-a", base)
    b = _write(tmp_path / "b", "run-b", _with(base, PATCHED, status=Status.PANIC,
                                              reason="Kernel panic - not syncing: oops"))
    assert [(c.kind, c.cell, c.what, c.before, c.after, c.detail)
            for c in diff_runs(a, b).changes] == [
        ("new-failure", PATCHED, "", "pass", "panic", "Kernel panic - not syncing: oops")]
    assert [(c.kind, c.what) for c in diff_runs(b, a).changes] == [("fixed", "")]


def test_merged_shards_and_a_shard(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The recorded whole run against one of its shards: the other shard's
    # cells vanished.
    runs = {}
    for name in ("one", "shard-1", "shard-2"):
        d = tmp_path / name
        d.mkdir()
        (d / "results.json").write_bytes(
            gzip.decompress((DATA / "recorded_shards" / name / "results.json.gz").read_bytes()))
        runs[name] = d
    shard2 = [c["id"] for c in json.loads((runs["shard-2"] / "results.json").read_text())["cells"]]
    diff = diff_runs(runs["one"], runs["shard-1"])
    assert [c.cell for c in diff.changes] == shard2
    assert {c.kind for c in diff.changes} == {"vanished-cell"}
    assert cli.main(["diff", str(runs["one"]), str(runs["shard-1"])]) == 1
    out = capsys.readouterr().out
    assert "cells that vanished (3):" in out
    assert f"  {shard2[0]} fail -> -: not in B" in out.splitlines()


def test_a_run_that_stopped_early(tmp_path: Path) -> None:
    base = _cells()
    a = _write(tmp_path / "a", "run-a", base)
    b = _write(tmp_path / "b", "run-b", base[:3], interrupted="interrupted (SIGINT)",
               not_run=[base[3].cell.id])
    diff = diff_runs(a, b)
    assert diff.b.incomplete == "stopped early: interrupted (SIGINT); 1 selected cell(s) " \
                                "with no result"
    assert [(c.kind, c.cell, c.detail) for c in diff.changes] == [
        ("vanished-cell", base[3].cell.id,
         "no result: stopped early: interrupted (SIGINT); 1 selected cell(s) with no result")]
    assert "note: " + str(b) + " has no verdict: stopped early" in diff.text()


def test_a_run_killed_before_it_reported(tmp_path: Path) -> None:
    # runner.unreported()'s placeholder, and each finished cell's result.json.
    base = _recorded()
    b = _write(tmp_path / "b", "run-b", [], interrupted=runner.UNREPORTED,
               not_run=[c.cell.id for c in base])
    for c in base[:2]:
        (b / c.cell.id).mkdir()
        (b / c.cell.id / "result.json").write_text(json.dumps(c.to_json(), indent=1))
    assert list(load(b).cells) == [c.cell.id for c in base[:2]]
    assert [c.cell for c in diff_runs(RECORDED, b).changes] == [c.cell.id for c in base[2:]]


def test_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "other.json").write_text('{"cells": 1}')
    (tmp_path / "oddcell.json").write_text('{"run_id": "x", "cells": [{"id": "c"}]}')
    for path, message in [
        (tmp_path / "empty", "empty: no results.json; give a run directory"),
        (tmp_path / "none", "none: no results.json"),
        (tmp_path / "bad.json", "bad.json: not valid JSON"),
        (tmp_path / "other.json", "other.json: no run_id and cells"),
        (tmp_path / "oddcell.json", "oddcell.json: cells[0] is not a cell's result"),
    ]:
        assert cli.main(["diff", str(RECORDED), str(path)]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.startswith("error: ") and message in err, err


def test_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = _cells()
    a = _write(tmp_path / "a", "run-a", base)
    b = _write(tmp_path / "b", "run-b", base[1:])
    assert cli.main(["diff", "--json", str(a), str(b)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["a"]["run_id"] == "run-a" and doc["new"] == 1
    assert doc["changes"] == [{"kind": "vanished-cell", "cell": STOCK, "what": "",
                               "before": "fail", "after": "", "detail": "not in B",
                               "new": True}]


def test_the_report_shows_the_diff(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    shutil.copytree(RECORDED, run)
    base = _cells()
    baseline = _write(tmp_path / "base", "run-base", _with(
        base, PATCHED, tests=_test(_one(base, PATCHED), PASSING, Status.FAIL).tests))
    page = report.write(run, baseline / "results.json").read_text()
    section = render_html(diff_runs(baseline / "results.json", run))
    assert section in page and "<h3>fixed (1)</h3>" in section
    assert f"<code>{PATCHED}: {PASSING} fail -&gt; pass</code>" in section
    # Without a baseline, no section.
    assert 'class="diff"' not in report.write(run).read_text()
    assert cli.main(["report", str(run), "--baseline", str(baseline)]) == 0
    assert 'class="diff"' in (run / "report.html").read_text()
