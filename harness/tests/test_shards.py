"""N shards of a run, merged, are that run.  test_data/recorded_shards/ is
a real local proof (6 x86_64 cells from one manifest, booted once whole and
once as --shard 1/2 and 2/2; doc/ci.md): the shards
must be what partition() makes of the manifest, and harness/merge.py must
give back the whole run, but for what two boots cannot share (each cell's
time, where its artifacts are).  The whole run is also split anew into 1
to 7 shards, each reported as a shard's run reports, and merged back."""
from __future__ import annotations

import gzip
import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness import matrix, merge, runner
from harness.__main__ import main
from harness.matrix import Cell

REPO = Path(__file__).parents[2]
RECORDED = Path(__file__).parent / "test_data" / "recorded_shards"


def _unpack(name: str, dest: Path) -> Path:
    """A recorded run directory (results.json gzipped) as a run directory."""
    src, out = RECORDED / name, dest / name
    out.mkdir(parents=True)
    for f in src.iterdir():
        if f.suffix == ".gz":
            (out / f.stem).write_bytes(gzip.decompress(f.read_bytes()))
        else:
            shutil.copyfile(f, out / f.name)
    return out


def _per_cell(run_dir: Path) -> dict[str, dict]:
    doc = json.loads((run_dir / "results.json").read_text())
    return {c["id"]: {k: v for k, v in c.items() if k not in ("artifacts", "duration_s")}
            for c in doc["cells"]}


def _junit(run_dir: Path) -> list[tuple]:
    """Every test case's cell, name, outcome and message (not its time, nor
    a failure's log text: results.json does not keep logs)."""
    root = ET.parse(run_dir / "junit.xml").getroot()
    return [(case.get("classname"), case.get("name"),
             *((child.tag, child.get("message")) for child in case))
            for case in root.iter("testcase")]


def _table(run_dir: Path) -> str:
    """summary.txt's table (the program times after it come from the cells'
    timing, compared with the cells)."""
    return (run_dir / "summary.txt").read_text().split("\n\n")[0].rstrip("\n")


def _summary(run_dir: Path) -> str:
    return re.sub(r" +\d+\.\ds(  |$)", r" TIME\1", _table(run_dir), flags=re.M)


def _manifest() -> tuple[list[Cell], dict[str, float]]:
    doc = json.loads((RECORDED / "manifest.json").read_text())
    cells = [Cell(c["arch"], c["variant"], c["mode"], c["policy"], c["hash"], c["setattr"])
             for c in doc["cells"]]
    return cells, {c["id"]: c["expected_s"] for c in doc["cells"]}


def test_the_recorded_shards_are_the_partition_of_their_manifest(tmp_path: Path) -> None:
    cells, expected_s = _manifest()
    shards = [list(_per_cell(_unpack(f"shard-{i}", tmp_path))) for i in (1, 2)]
    assert [[c.id for c in s] for s in matrix.partition(cells, 2, expected_s)] == shards


def test_the_recorded_shards_merged_equal_the_whole_run(tmp_path: Path) -> None:
    one = _unpack("one", tmp_path)
    shards = [_unpack(f"shard-{i}", tmp_path) for i in (2, 1)]
    merge.merge(shards, tmp_path / "merged", matrix.load(REPO / "matrix.yaml"))
    merged = tmp_path / "merged"
    assert list(_per_cell(merged)) == list(_per_cell(one))      # the same order
    assert _per_cell(merged) == _per_cell(one)
    assert _junit(merged) == _junit(one)
    assert _summary(merged) == _summary(one)


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_any_partition_of_the_run_merges_back(tmp_path: Path, n: int) -> None:
    one = _unpack("one", tmp_path)
    doc = json.loads((one / "results.json").read_text())
    cells = {c["id"]: merge.cell_result(c, None) for c in doc["cells"]}
    order = [r.cell for r in cells.values()]
    shards = matrix.partition(order, n, {c["id"]: c["duration_s"] for c in doc["cells"]})
    dirs = []
    for i, shard in enumerate(shards, 1):
        run_dir = tmp_path / f"shard-{i}"
        run_dir.mkdir()
        # A shard's run holds its cells in the order they finished.
        rr = runner.RunResult(f"run-{i}", run_dir, [cells[c.id] for c in reversed(shard)],
                              meta={"shard": {"index": i, "count": n}, "manifest": "m"})
        runner.report_stage(rr, shard, lambda line: None)
        dirs.append(run_dir)
    merge.merge(reversed(dirs), tmp_path / "merged", matrix.load(REPO / "matrix.yaml"))
    merged = tmp_path / "merged"
    assert json.loads((merged / "results.json").read_text())["cells"] == \
        [{**c, "artifacts": None} for c in doc["cells"]]
    assert _junit(merged) == _junit(one)
    assert _table(merged) == _table(one)


# ---- shards that did not finish ----------------------------------------------
# The recorded shard 2 as runner.py leaves it when its run stops half-way:
# a signal (report_stage() with the run's "interrupted" and its finished
# cells) or a kill outright (only unreported()'s placeholder, and the
# result.json of each cell that finished).

def _shard_cells(i: int) -> list[Cell]:
    cells, expected_s = _manifest()
    return matrix.partition(cells, 2, expected_s)[i - 1]


def _stopped(tmp: Path, finished: int, interrupted: str, *, killed: bool = False) -> Path:
    """Recorded shard 2 whose run ended after its first `finished` cells."""
    recorded = _unpack("shard-2", tmp / "recorded")
    doc = json.loads((recorded / "results.json").read_text())
    run_dir = tmp / "shard-2"
    run_dir.mkdir()
    done = [merge.cell_result(c, None) for c in doc["cells"][:finished]]
    rr = runner.RunResult(doc["run_id"], run_dir, [] if killed else done,
                          meta={k: doc[k] for k in ("shard", "manifest")},
                          selected=[c.id for c in _shard_cells(2)])
    if killed:
        runner.unreported(rr)
        for c in done:
            (run_dir / c.cell.id).mkdir()
            (run_dir / c.cell.id / "result.json").write_text(json.dumps(c.to_json()))
    else:
        rr.interrupted = interrupted
        runner.report_stage(rr, _shard_cells(2), lambda line: None)
    return run_dir


def _incomplete(tmp: Path, shard_2: Path) -> tuple[merge.IncompleteRun, Path]:
    out = tmp / "merged"
    with pytest.raises(merge.IncompleteRun) as e:
        merge.merge([shard_2, _unpack("shard-1", tmp)], out, matrix.load(REPO / "matrix.yaml"))
    return e.value, out


def test_a_shard_stopped_by_a_signal_leaves_the_merge_without_a_verdict(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shard_2 = _stopped(tmp_path, 1, "terminated (SIGTERM)")
    ran, lost = _shard_cells(2)[0].id, [c.id for c in _shard_cells(2)[1:]]
    e, out = _incomplete(tmp_path, shard_2)
    assert str(e) == (
        f"no verdict: shard 2/2 ({shard_2}) stopped early: terminated (SIGTERM); "
        f"2 selected cell(s) have no result: {', '.join(lost)}; rerun what did not finish "
        f"and merge again ({out} has what did)")
    # Merged all the same: shard 1's cells and the one shard 2 finished.
    assert [c.cell.id for c in e.cells] == [
        c for c in _per_cell(_unpack("one", tmp_path)) if c not in lost]
    doc = json.loads((out / "results.json").read_text())
    assert (doc["interrupted"], doc["not_run"]) == (
        f"shard 2/2 ({shard_2}): terminated (SIGTERM)", lost)
    assert [s["run_id"] for s in doc["shards"]] == [
        "20261203-160242-30819", "20261203-160103-26736"]
    assert doc["shards"][0]["not_run"] == lost and "not_run" not in doc["shards"][1]
    assert ran in [c["id"] for c in doc["cells"]]
    assert (out / "summary.txt").read_text().endswith(
        f"INCOMPLETE, no verdict: shard 2/2 ({shard_2}) stopped early: terminated (SIGTERM)\n"
        f"INCOMPLETE, no verdict: 2 selected cell(s) have no result: {', '.join(lost)}\n")
    # junit: a failing suite per cell with no result, after the others.
    suites = ET.parse(out / "junit.xml").getroot().findall("testsuite")
    assert [s.get("name") for s in suites[-2:]] == lost
    assert {s.find("testcase/failure").get("message") for s in suites[-2:]} == {
        f"no result: shard 2/2 ({shard_2}) stopped early: terminated (SIGTERM)"}
    page = (out / "report.html").read_text()
    assert "<title>IMA appraisal matrix (INCOMPLETE: no verdict): merged-" in page
    assert (f'<p class="incomplete"><b>INCOMPLETE: no verdict.</b> Stopped early: '
            f'shard 2/2 ({shard_2}): terminated (SIGTERM). 2 selected cell(s) have no '
            f'result: ') in page
    for c in lost:
        assert f'<th class="id" id="{c}">{c}</th><td class="s-none bad"' in page
    assert '<span class="s-none bad">&nbsp;2 no result&nbsp;</span> (of 6)' in page

    assert main(["merge", "--out", str(tmp_path / "again"), str(shard_2),
                 str(tmp_path / "shard-1")]) == 2
    outerr = capsys.readouterr()
    assert outerr.out.endswith(f"report: {tmp_path / 'again' / 'report.html'}\n")
    assert outerr.err == f"error: {str(e).replace(str(out), str(tmp_path / 'again'))}\n"


def test_a_shard_killed_outright_leaves_the_merge_without_a_verdict(tmp_path: Path) -> None:
    # SIGKILL after the shard's first cell: it never wrote its report.
    shard_2 = _stopped(tmp_path, 1, "", killed=True)
    e, out = _incomplete(tmp_path, shard_2)
    every = [c.id for c in _shard_cells(2)]
    assert str(e) == (
        f"no verdict: shard 2/2 ({shard_2}) stopped early: {runner.UNREPORTED}; "
        f"3 selected cell(s) have no result: {', '.join(every)}; rerun what did not finish "
        f"and merge again ({out} has what did)")
    assert [c.cell.id for c in e.cells] == [c.id for c in _shard_cells(1)]
    assert json.loads((out / "results.json").read_text())["not_run"] == every
    assert "3 no result" in (out / "report.html").read_text()


def test_a_shard_that_left_a_selected_cell_without_a_result(tmp_path: Path) -> None:
    # Not interrupted, yet a cell of its selection has no result.
    shard_2 = _stopped(tmp_path, 2, "")
    lost = _shard_cells(2)[2].id
    e, out = _incomplete(tmp_path, shard_2)
    assert str(e) == (f"no verdict: 1 selected cell(s) have no result: {lost}; rerun what "
                      f"did not finish and merge again ({out} has what did)")
    doc = json.loads((out / "results.json").read_text())
    assert ("interrupted" in doc, doc["not_run"]) == (False, [lost])


def test_a_complete_merge_says_nothing_of_gaps(tmp_path: Path) -> None:
    out = tmp_path / "merged"
    merge.merge([_unpack(f"shard-{i}", tmp_path) for i in (1, 2)], out,
                matrix.load(REPO / "matrix.yaml"))
    doc = json.loads((out / "results.json").read_text())
    assert "interrupted" not in doc and "not_run" not in doc
    assert "INCOMPLETE" not in (out / "summary.txt").read_text()
    assert "INCOMPLETE" not in (out / "report.html").read_text()
    assert "no result" not in (out / "junit.xml").read_text()


def test_a_shard_killed_by_an_older_harness(tmp_path: Path) -> None:
    # No placeholder: only the finished cells' result.json.
    shard_2 = _stopped(tmp_path, 1, "", killed=True)
    (shard_2 / "results.json").unlink()
    with pytest.raises(merge.MergeError, match=(
            r"no results.json, but 1 cell\(s\) with a result.json: a run killed before it "
            r"wrote its report")):
        merge.merge([shard_2, _unpack("shard-1", tmp_path)], tmp_path / "merged",
                     matrix.load(REPO / "matrix.yaml"))
