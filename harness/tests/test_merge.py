"""merge on a real recorded run (test_data/run-x86_64/: four x86_64 cells,
stock and patched, enforce and fix, builtin policy; consoles and
kernel.config trimmed), split into shards the way separate machines would
have booted them."""
from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness import matrix as matrix_mod, merge, results
from harness.qemu import BootOutcome
from harness.tests.recorded import RECORDED_CASES
from harness.__main__ import main
from harness.matrix import Cell

REPO = Path(__file__).resolve().parents[2]
RUN = Path(__file__).parent / "test_data" / "run-x86_64"
MATRIX = matrix_mod.load(REPO / "matrix.yaml")


def recorded() -> dict:
    return json.loads((RUN / "results.json").read_text())


def split(tmp: Path, parts: list[list[int]], *, marks: bool = True) -> list[Path]:
    """The recorded run as shards, each with the cells at the given indices
    (in that order), its own junit.xml and artifacts, as --shard i/N
    writes them."""
    doc = recorded()
    suites = {s.get("name"): s for s in ET.parse(RUN / "junit.xml").getroot()}
    dirs = []
    for i, indices in enumerate(parts, 1):
        d = tmp / f"shard-{i}"
        d.mkdir()
        cells = [doc["cells"][j] for j in indices]
        shard = {**doc, "run_id": f"shard-{i}", "cells": cells}
        if marks:
            shard["shard"] = {"index": i, "count": len(parts)}
        (d / "results.json").write_text(json.dumps(shard, indent=2) + "\n")
        root = ET.Element("testsuites", name="ima-appraise-matrix")
        root.extend(suites[c["id"]] for c in cells)
        ET.ElementTree(root).write(d / "junit.xml", encoding="utf-8", xml_declaration=True)
        for c in cells:
            shutil.copytree(RUN / c["id"], d / c["id"])
        dirs.append(d)
    return dirs


def without_artifacts(cells: list[dict]) -> list[dict]:
    return [{k: v for k, v in c.items() if k != "artifacts"} for c in cells]


def test_the_recorded_run_is_what_the_tests_assume() -> None:
    doc = recorded()
    assert [c["id"] for c in doc["cells"]] == [
        "x86_64-stock-enforce-builtin-sha1-keep", "x86_64-stock-fix-builtin-sha1-keep",
        "x86_64-patched-enforce-builtin-sha1-keep", "x86_64-patched-fix-builtin-sha1-keep"]
    assert [c["status"] for c in doc["cells"]] == ["fail", "fail", "pass", "pass"]
    assert {t["status"] for c in doc["cells"] for t in c["tests"]} == {"pass", "skip", "fail"}


def test_shards_merged_equal_the_single_run(tmp_path: Path) -> None:
    # Shard 2 is given first and each shard's cells are out of matrix order.
    shards = split(tmp_path, [[3, 0], [2, 1]])
    out = tmp_path / "merged"
    cells = merge.merge([shards[1], shards[0]], out, MATRIX)

    doc = json.loads((out / "results.json").read_text())
    assert without_artifacts(doc["cells"]) == without_artifacts(recorded()["cells"])
    assert [c["artifacts"] for c in doc["cells"]] == [str(out.resolve() / c.cell.id)
                                                      for c in cells]
    assert (out / "junit.xml").read_bytes() == (RUN / "junit.xml").read_bytes()
    # Recorded before summary.txt had per-program times: today's runner
    # appends their table, empty for cells without "timing".
    assert (out / "summary.txt").read_text() == (RUN / "summary.txt").read_text() + "\n\n"
    for c in doc["cells"]:
        for name in ("console.log", "qemu-cmdline.sh", "kernel.config", "patches.txt"):
            assert (out / c["id"] / name).read_bytes() == (RUN / c["id"] / name).read_bytes()
    assert "merged from 2 shard(s): <code>shard-2</code>, <code>shard-1</code>" in (
        out / "report.html").read_text()


def test_run_level_fields_of_a_merge(tmp_path: Path) -> None:
    out = tmp_path / "merged"
    merge.merge(split(tmp_path, [[0, 1], [2, 3]]), out, MATRIX)
    doc, single = json.loads((out / "results.json").read_text()), recorded()
    assert list(doc) == [*single, "shards"]
    assert doc["run_id"] == "merged-shard-1+shard-2"
    assert doc["timings"] == {k: round(2 * v, 2) for k, v in single["timings"].items()}
    assert (doc["builds"], doc["accel"]) == (single["builds"], single["accel"])
    assert [(s["run_id"], s["shard"]) for s in doc["shards"]] == [
        ("shard-1", {"index": 1, "count": 2}), ("shard-2", {"index": 2, "count": 2})]


def test_the_cells_of_a_run_document_round_trip() -> None:
    for doc in recorded()["cells"]:
        r = merge.cell_result(doc, Path(doc["artifacts"]))
        assert r.to_json() == doc


def test_matrix_order_puts_unknown_variants_last_by_name() -> None:
    key = merge.matrix_order(MATRIX)
    cells = [Cell("x86_64", "m0002-b", "enforce", "builtin"),
             Cell("x86_64", "m0001-a", "off", "custom"),
             Cell("x86_64", "patched", "enforce", "builtin"),
             Cell("aarch64", "stock", "fix", "custom"),
             Cell("x86_64", "stock", "enforce", "builtin")]
    assert [c.variant for c in sorted(cells, key=key)] == [
        "stock", "patched", "m0001-a", "m0002-b", "stock"]


def refused(shards: list[Path], tmp: Path) -> str:
    with pytest.raises(merge.MergeError) as e:
        merge.merge(shards, tmp / "merged", MATRIX)
    assert not (tmp / "merged").exists()
    return str(e.value)


def test_a_cell_in_two_shards(tmp_path: Path) -> None:
    a, b = split(tmp_path, [[0, 1], [1, 2, 3]])
    assert refused([a, b], tmp_path) == (
        f"cell x86_64-stock-fix-builtin-sha1-keep is in two shards: {a}/results.json and "
        f"{b}/results.json; each cell must be booted by exactly one shard")


def test_a_missing_shard(tmp_path: Path) -> None:
    a, _, c = split(tmp_path, [[0], [1, 2], [3]])
    assert refused([c, a], tmp_path) == (
        "shard(s) 2/3 missing: got 1/3, 3/3; give every shard's run directory "
        "(or rerun the missing ones)")


def test_shards_of_different_splits(tmp_path: Path) -> None:
    a, b = split(tmp_path, [[0, 1], [2, 3]])
    doc = json.loads((b / "results.json").read_text())
    (b / "results.json").write_text(json.dumps({**doc, "shard": {"index": 2, "count": 3}}))
    assert refused([a, b], tmp_path) == (
        f"the shards split different runs: {a}/results.json is 1/2, {b}/results.json is 2/3")


def test_the_same_shard_twice(tmp_path: Path) -> None:
    a, _ = split(tmp_path, [[0, 1], [2, 3]])
    assert refused([a, a], tmp_path) == f"{a} given twice"


def test_shards_that_booted_different_kernels(tmp_path: Path) -> None:
    a, b = split(tmp_path, [[0, 2], [1, 3]])
    config = b / "x86_64-patched-fix-builtin-sha1-keep" / "kernel.config"
    config.write_text(config.read_text() + "CONFIG_DEBUG_PAGEALLOC=y\n")
    assert refused([a, b], tmp_path) == (
        "the shards booted different x86_64-patched kernels: "
        f"{a}/x86_64-patched-enforce-builtin-sha1-keep/kernel.config and {config} differ; "
        "merge only shards booted from one build")


def test_a_patch_moved_to_another_path_is_the_same_kernel(tmp_path: Path) -> None:
    a, b = split(tmp_path, [[0, 2], [1, 3]])
    patches = b / "x86_64-patched-fix-builtin-sha1-keep" / "patches.txt"
    patches.write_text(patches.read_text().replace("/", "/elsewhere/"))
    merge.merge([a, b], tmp_path / "merged", MATRIX)


def test_shards_from_different_manifests(tmp_path: Path) -> None:
    a, b = split(tmp_path, [[0, 1], [2, 3]])
    for d, digest in ((a, "sha256:1111"), (b, "sha256:2222")):
        doc = json.loads((d / "results.json").read_text())
        (d / "results.json").write_text(json.dumps({**doc, "manifest": digest}))
    assert refused([a, b], tmp_path) == (
        f"{b}/results.json and {a}/results.json come from different manifests "
        "('sha256:2222' and 'sha256:1111'); merge the shards of one build")


def test_not_a_run_directory(tmp_path: Path) -> None:
    assert refused([tmp_path], tmp_path) == (
        f"{tmp_path}: no results.json; give run directories (build/results/<run-id>/), "
        "one per shard")


def test_an_interrupted_shard(tmp_path: Path) -> None:
    a, b = split(tmp_path, [[0, 1], [2, 3]])
    (b / "results.json").write_text('{"run_id": "x", "cells": [')
    assert refused([a, b], tmp_path).startswith(
        f"{b}/results.json: not valid JSON (")


def test_junit_of_another_run(tmp_path: Path) -> None:
    a, b = split(tmp_path, [[0, 1], [2, 3]])
    shutil.copyfile(a / "junit.xml", b / "junit.xml")
    assert refused([a, b], tmp_path) == (
        f"{b}/junit.xml: its test suites ['x86_64-stock-enforce-builtin-sha1-keep', "
        "'x86_64-stock-fix-builtin-sha1-keep'] are not the cells of "
        f"{b}/results.json ['x86_64-patched-enforce-builtin-sha1-keep', "
        "'x86_64-patched-fix-builtin-sha1-keep']; are they from two runs?")


def test_into_an_existing_directory(tmp_path: Path) -> None:
    shards = split(tmp_path, [[0, 1], [2, 3]])
    (tmp_path / "merged").mkdir()
    with pytest.raises(merge.MergeError, match=r"merged exists; merge into a new directory$"):
        merge.merge(shards, tmp_path / "merged", MATRIX)


def test_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shards = split(tmp_path, [[3], [2]])     # the two patched cells, which passed
    out = tmp_path / "merged"
    assert main(["merge", "--out", str(out), *map(str, shards)]) == 0
    assert capsys.readouterr().out == (
        (out / "summary.txt").read_text() + f"report: {out / 'report.html'}\n")
    assert [c["id"] for c in json.loads((out / "results.json").read_text())["cells"]] == [
        "x86_64-patched-enforce-builtin-sha1-keep", "x86_64-patched-fix-builtin-sha1-keep"]
    assert main(["merge", "--out", str(out), *map(str, shards)]) == 2
    assert capsys.readouterr().err == f"error: {out} exists; merge into a new directory\n"


def test_the_command_exits_1_when_a_merged_cell_failed(tmp_path: Path) -> None:
    shards = split(tmp_path, [[0, 1], [2, 3]])
    assert main(["merge", "--out", str(tmp_path / "m"), *map(str, shards)]) == 1


def test_the_command_exits_2_when_a_kernel_did_not_build(tmp_path: Path) -> None:
    a, b = split(tmp_path, [[0, 1], [2, 3]])
    doc = json.loads((b / "results.json").read_text())
    doc["cells"][1]["status"] = "error"
    (b / "results.json").write_text(json.dumps(doc))
    assert main(["merge", "--out", str(tmp_path / "m"), str(a), str(b)]) == 2


def test_a_merged_summary_prints_the_durations_a_single_run_prints(tmp_path: Path) -> None:
    # 8.649 s prints as 8.6, but results.json keeps 8.65, which prints as 8.7.
    console = (Path(__file__).parent / "test_data" / "real_aarch64_fix_custom_pass.log").read_text()
    cell = results.evaluate(Cell("aarch64", "stock", "fix", "custom"),
                            BootOutcome(console, 0, False, 8.649, ()), RECORDED_CASES, "tcg")
    results.write_json(tmp_path / "results.json", "r", [cell], {})
    [doc] = json.loads((tmp_path / "results.json").read_text())["cells"]
    assert (results.summary_table([merge.cell_result(doc, None)])
            == results.summary_table([cell]))


def test_a_merged_summary_prints_the_program_times_a_single_run_prints(tmp_path: Path) -> None:
    console = (Path(__file__).parent / "test_data" / "real_aarch64_fix_custom_pass.log").read_text()
    # Each program takes 8.649 s, which prints as 8.6; results.json keeps
    # 8.65, which prints as 8.7.
    stamps, now = [], 0.0
    for line in console.split("\n"):
        now += 8.649 if " selftests: ima_appraise: " in line and "ok " in line else 0.0
        stamps.append(now)
    cell = results.evaluate(Cell("aarch64", "stock", "fix", "custom"),
                            BootOutcome(console, 0, False, 30.0, (), tuple(stamps)), RECORDED_CASES, "tcg")
    assert cell.timing and cell.timing.programs
    results.write_json(tmp_path / "results.json", "r", [cell], {})
    [doc] = json.loads((tmp_path / "results.json").read_text())["cells"]
    assert "timing" in doc
    assert (results.summary_text([merge.cell_result(doc, None)])
            == results.summary_text([cell]))


def test_a_status_this_harness_does_not_know(tmp_path: Path) -> None:
    a, b = split(tmp_path, [[0, 1], [2, 3]])
    doc = json.loads((b / "results.json").read_text())
    doc["cells"][0]["tests"][5]["status"] = "flaky"
    (b / "results.json").write_text(json.dumps(doc))
    assert refused([a, b], tmp_path) == (
        f"{b}/results.json: unknown status x86_64-patched-enforce-builtin-sha1-keep/"
        f"{doc['cells'][0]['tests'][5]['name']}: 'flaky' (a cell is one of pass, fail, "
        "timeout, panic, error; a case one of pass, fail, skip, xfail, xpass); written by "
        "another harness version?")
