"""N shards of a run, merged, are that run.  test_data/recorded_shards/ is
a real local proof (6 x86_64 cells from one manifest, booted once whole and
once as --shard 1/2 and 2/2; README "Stages, shards and CI"): the shards
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
