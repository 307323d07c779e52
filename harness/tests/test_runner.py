"""The runner's decisions and stages without QEMU: the programs a cell
boots, per-cell results written as they come, reports kept when a run
stops early, exit statuses, the manifest, and the accelerator probe's
verdicts."""
from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness import ktap, matrix, qemu, results, runner
from harness.cases import Case
from harness.errors import ConfigError, count_arg
from harness.matrix import Cell
from harness.runner import Artifacts, BuiltKernel
from harness.status import Status

REPO = Path(__file__).parents[2]

EXPECTED = (Case("open_test", "a"), Case("open_test", "b"), Case("exec_test", "c"),
            Case("mmap_test", "d"))
ONE = Cell("x86_64", "patched", "enforce", "custom")
TWO = Cell("x86_64", "patched", "fix", "custom")


def test_a_cell_boots_only_the_programs_of_its_selected_cases() -> None:
    selected = [(ONE, EXPECTED[3]), (ONE, EXPECTED[1])]
    # In the suite's own order, not the selection's.
    assert runner.programs_to_boot(selected, EXPECTED) == {ONE.id: ("open_test", "mmap_test")}


def test_a_cell_with_every_program_selected_runs_them_all() -> None:
    selected = [(TWO, c) for c in EXPECTED[1:]]
    assert runner.programs_to_boot(selected, EXPECTED) == {}


CASES = (Case("open_test", "open_file.missing_hash.read"),)
PASS_CONSOLE = """\
[    0.092110] Lock dependency validator: Copyright (c) 2006 Red Hat, Inc., Ingo Molnar
<<< ima-selftest begin >>>
TAP version 13
1..1
# selftests: ima_appraise: open_test
# TAP version 13
# 1..1
# ok 1 open_file.missing_hash.read
# # PASSED: 1 / 1 tests passed.
ok 1 selftests: ima_appraise: open_test
<<< ima-selftest end rc=0 >>>
"""


def _matrix() -> matrix.Matrix:
    return matrix.load(REPO / "matrix.yaml", archs="x86_64", variants="patched",
                       modes="enforce,fix", policies="custom", hashes="sha1",
                       setattr="remove")


def _artifacts(tmp_path: Path) -> Artifacts:
    image, config, initrd = tmp_path / "bzImage", tmp_path / "config", tmp_path / "x86_64.cpio"
    for p in (image, config, initrd):
        p.write_text(p.name)
    return Artifacts(kernels={("x86_64", "patched"): BuiltKernel(image, config, "variant patched\n")},
                     initrds={"x86_64": initrd})


# The requests fake_qemu's boot() was given.
BOOTED: list[qemu.BootRequest] = []


@pytest.fixture
def fake_qemu(monkeypatch: pytest.MonkeyPatch):
    """qemu.boot answers with a passing console, or runs what is queued for
    the cell (an exception to raise)."""
    plan: dict[str, BaseException] = {}
    BOOTED.clear()

    def boot(req: qemu.BootRequest, console_log: Path) -> qemu.BootOutcome:
        BOOTED.append(req)
        for cell, exc in plan.items():
            if f"/{cell}.img" in str(req.disk):
                raise exc
        console_log.write_text(PASS_CONSOLE)
        return qemu.BootOutcome(PASS_CONSOLE, 0, False, 1.0, ("qemu",))

    monkeypatch.setattr(qemu, "boot", boot)
    monkeypatch.setattr(qemu, "make_scratch_disk", lambda path, uuid: None)
    monkeypatch.setattr(qemu, "choose_accel",
                        lambda *a, **k: qemu.AccelChoice("tcg", "test"))
    return plan


def _boot(tmp_path: Path, art: Artifacts, cells: list[Cell]) -> runner.RunResult:
    m = _matrix()
    man = runner.Manifest(tmp_path / "manifest.json", tuple(cells), {c.id: 1.0 for c in cells},
                          CASES, art, "", m.timeout, m.memory)
    return runner.boot_only(m, cells, man, tmp_path / "build", jobs=2, log=lambda line: None)


def test_each_cell_writes_its_result_and_the_reports_follow(tmp_path: Path, fake_qemu) -> None:
    cells = list(_matrix().cells)
    rr = _boot(tmp_path, _artifacts(tmp_path), cells)
    assert [r.status for r in rr.cells] == ["pass", "pass"]
    assert rr.exit_status == runner.EXIT_PASS
    for c in cells:
        doc = json.loads((rr.run_dir / c.id / "result.json").read_text())
        assert (doc["id"], doc["status"]) == (c.id, "pass")
    doc = json.loads((rr.run_dir / "results.json").read_text())
    assert [c["id"] for c in doc["cells"]] == [c.id for c in cells]
    assert "interrupted" not in doc
    # Every cell's guest must begin its init within the matrix's boot_timeout.
    assert {(r.ready, r.ready_timeout_s, r.timeout_s) for r in BOOTED} == {
        (ktap.began, 120, 480)}


def test_an_unexpected_exception_in_a_cell_is_that_cells_error(tmp_path: Path, fake_qemu) -> None:
    cells = list(_matrix().cells)
    fake_qemu[cells[0].id] = ZeroDivisionError("a harness bug")
    rr = _boot(tmp_path, _artifacts(tmp_path), cells)
    assert [(r.status, r.reason) for r in rr.cells] == [
        ("error", "ZeroDivisionError: a harness bug"), ("pass", "")]
    assert rr.exit_status == runner.EXIT_INFRASTRUCTURE


def test_ctrl_c_keeps_every_finished_cell_and_the_reports(tmp_path: Path, fake_qemu) -> None:
    cells = list(_matrix().cells)
    fake_qemu[cells[1].id] = KeyboardInterrupt()
    m = _matrix()
    man = runner.Manifest(tmp_path / "manifest.json", tuple(cells),
                          # cells[0] is longer: it boots first, and finishes
                          {cells[0].id: 2.0, cells[1].id: 1.0}, CASES, _artifacts(tmp_path),
                          "", m.timeout, m.memory)
    with pytest.raises(KeyboardInterrupt):
        runner.boot_only(m, cells, man, tmp_path / "build", jobs=1, log=lambda line: None)
    run_dir = (tmp_path / "build" / "results" / "latest").resolve()
    assert json.loads((run_dir / cells[0].id / "result.json").read_text())["status"] == "pass"
    doc = json.loads((run_dir / "results.json").read_text())
    assert [c["id"] for c in doc["cells"]] == [cells[0].id]
    assert (doc["interrupted"], doc["not_run"]) == ("interrupted (Ctrl-C)", [cells[1].id])
    assert (f"the run stopped early: interrupted (Ctrl-C); 1 cell(s) did not run: "
            f"{cells[1].id}\n") in (run_dir / "summary.txt").read_text()
    assert "INCOMPLETE: no verdict.</b> Stopped early: interrupted (Ctrl-C)." in \
        (run_dir / "report.html").read_text()


def test_a_kernel_that_did_not_build_makes_its_cells_errors(tmp_path: Path, fake_qemu) -> None:
    art = _artifacts(tmp_path)
    art.broken[("x86_64", "patched")] = "0003.patch does not apply"
    rr = _boot(tmp_path, art, list(_matrix().cells))
    assert {(r.status, r.reason) for r in rr.cells} == {("error", "0003.patch does not apply")}
    assert rr.exit_status == runner.EXIT_INFRASTRUCTURE


def test_a_run_killed_outright_leaves_a_results_json_without_a_verdict(
        tmp_path: Path, fake_qemu, monkeypatch: pytest.MonkeyPatch) -> None:
    # What is on disk while a guest boots is what a SIGKILL then leaves.
    cells = list(_matrix().cells)
    on_disk: list[tuple[dict, str]] = []
    boot = qemu.boot

    def look(req: qemu.BootRequest, console_log: Path) -> qemu.BootOutcome:
        run_dir = console_log.parent.parent
        on_disk.append((json.loads((run_dir / "results.json").read_text()),
                        (run_dir / "junit.xml").read_text()))
        return boot(req, console_log)
    monkeypatch.setattr(qemu, "boot", look)
    m = _matrix()
    man = runner.Manifest(tmp_path / "manifest.json", tuple(cells), {c.id: 1.0 for c in cells},
                          CASES, _artifacts(tmp_path), "", m.timeout, m.memory,
                          digest="sha256:m")
    rr = runner.boot_only(m, cells, man, tmp_path / "build", shard=(2, 3), jobs=1,
                          log=lambda line: None)
    doc, junit = on_disk[0]
    assert (doc["cells"], doc["interrupted"], doc["not_run"]) == (
        [], runner.UNREPORTED, [c.id for c in cells])
    assert (doc["shard"], doc["manifest"]) == ({"index": 2, "count": 3}, "sha256:m")
    assert junit.count(f'<failure message="no result: {runner.UNREPORTED}"') == 2
    # The report replaces it.
    doc = json.loads((rr.run_dir / "results.json").read_text())
    assert "interrupted" not in doc and "not_run" not in doc
    assert "no result" not in (rr.run_dir / "junit.xml").read_text()
    assert rr.exit_status == runner.EXIT_PASS


def test_a_run_that_left_a_selected_cell_without_a_result_has_no_verdict(
        tmp_path: Path) -> None:
    rr = runner.RunResult("r", tmp_path, [results.CellResult(ONE, "tcg", Status.PASS, "", 1.0)],
                          selected=[ONE.id, TWO.id])
    runner.report_stage(rr, [ONE, TWO], lambda line: None)
    assert rr.missing == [TWO.id]
    assert rr.exit_status == runner.EXIT_INFRASTRUCTURE
    doc = json.loads((tmp_path / "results.json").read_text())
    assert ("interrupted" in doc, doc["not_run"]) == (False, [TWO.id])
    assert (tmp_path / "summary.txt").read_text().endswith(
        f"INCOMPLETE, no verdict: 1 selected cell(s) have no result: {TWO.id}\n")
    assert ('<failure message="no result: the run ended without it"'
            in (tmp_path / "junit.xml").read_text())
    page = (tmp_path / "report.html").read_text()
    assert "<h1>IMA appraisal matrix (INCOMPLETE: no verdict)</h1>" in page
    assert f'<th class="id" id="{TWO.id}">{TWO.id}</th><td class="s-none bad"' in page


@pytest.mark.parametrize("statuses, interrupted, expected", [
    (["pass", "pass"], "", 0),
    (["pass", "fail"], "", 1),
    (["timeout"], "", 1),
    (["panic", "pass"], "", 1),
    (["fail", "error"], "", 2),
    (["pass"], "interrupted (Ctrl-C)", 2),
    ([], "BuildError: no tarball", 2),
])
def test_exit_status(statuses: list[str], interrupted: str, expected: int) -> None:
    cell = _matrix().cells[0]
    cells = [results.CellResult(cell, "tcg", s, "", 1.0) for s in statuses]
    assert runner.exit_status(cells, interrupted) == expected
    # A selected cell without a result: no verdict, whatever the others say.
    assert runner.exit_status(cells, interrupted, ["x86_64-other"]) == 2


def test_the_manifest_is_relocatable(tmp_path: Path) -> None:
    m = _matrix()
    cells = list(m.cells)
    art = _artifacts(tmp_path)
    art.broken[("x86_64", "stock")] = "why"
    path = runner.export(art, cells, CASES, m, {c.id: 12.34 for c in cells}, tmp_path / "a")
    (tmp_path / "a").rename(tmp_path / "moved")
    man = runner.load_manifest(tmp_path / "moved" / "manifest.json")
    assert man.cells == tuple(cells)
    assert man.cases == CASES
    assert man.expected_s == {c.id: 12.3 for c in cells}
    k = man.artifacts.kernels[("x86_64", "patched")]
    assert (k.image, k.image.read_text(), k.patches) == \
        (tmp_path / "moved" / "kernels" / "x86_64-patched" / "bzImage", "bzImage",
         "variant patched\n")
    assert man.artifacts.initrds == {"x86_64": tmp_path / "moved" / "initramfs" / "x86_64.cpio"}
    assert man.artifacts.broken == {("x86_64", "stock"): "why"}
    assert (man.timeout, man.boot_timeout) == (m.timeout, m.boot_timeout) == (480, 120)
    assert path.name == "manifest.json"


def test_a_manifest_keeps_its_boot_timeout_and_checks_it(tmp_path: Path) -> None:
    m = dataclasses.replace(_matrix(), boot_timeout=90)
    path = runner.export(_artifacts(tmp_path), list(m.cells), CASES, m,
                         {c.id: 1.0 for c in m.cells}, tmp_path)
    assert runner.load_manifest(path).boot_timeout == 90
    doc = json.loads(path.read_text())
    del doc["boot_timeout"]         # a manifest written before the key
    path.write_text(json.dumps(doc))
    assert runner.load_manifest(path).boot_timeout == matrix.DEFAULT_BOOT_TIMEOUT
    doc["boot_timeout"] = True
    path.write_text(json.dumps(doc))
    with pytest.raises(ConfigError) as e:
        runner.load_manifest(path)
    assert str(e.value).startswith(f"{path}: damaged manifest (ValueError: boot_timeout: "
                                   "expected a positive integer, found True)")


def test_an_artifact_directory_carries_what_decodes_splats(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A shard boots from a moved artifact directory, on a machine without
    # the build: its splats still get file:line, from the vmlinux and the
    # tree's scripts/decode_stacktrace.sh (a stand-in here, as in
    # test_splats.py) that the directory carries.
    from harness import splats
    tree = tmp_path / "tree"
    (tree / "scripts").mkdir(parents=True)
    (tree / "scripts" / "decode_stacktrace.sh").write_text(
        '#!/bin/sh\necho "args: $*"\nsed \'s/\\(+0x[0-9a-f]*\\/0x[0-9a-f]*\\)$/\\1 fs\\/x.c:1/\'\n')
    (tree / "scripts" / "decode_stacktrace.sh").chmod(0o755)
    (tree / "scripts" / "decodecode").write_text("#!/bin/sh\n")
    (tree / "vmlinux").write_text("ELF")
    art = _artifacts(tmp_path)
    k = art.kernels[("x86_64", "patched")]
    art.kernels[("x86_64", "patched")] = BuiltKernel(
        k.image, k.config, k.patches, splats.Symbols(tree / "vmlinux", tree, tree / "o"))
    m = _matrix()
    cells = list(m.cells)[:1]
    runner.export(art, cells, CASES, m, {cells[0].id: 1.0}, tmp_path / "a")
    moved = tmp_path / "moved"
    (tmp_path / "a").rename(moved)
    man = runner.load_manifest(moved)
    sym = man.artifacts.kernels[("x86_64", "patched")].symbols
    assert sym == splats.Symbols(moved / "kernels" / "x86_64-patched" / "vmlinux",
                                 moved / "kernels" / "x86_64-patched",
                                 moved / "kernels" / "x86_64-patched", "", str(tree))
    assert sym.vmlinux.read_text() == "ELF"

    console = PASS_CONSOLE + (REPO / "harness" / "tests" / "test_data" / "warn_on.log").read_text()

    def boot(req: qemu.BootRequest, console_log: Path) -> qemu.BootOutcome:
        console_log.write_text(console)
        return qemu.BootOutcome(console, 0, False, 1.0, ("qemu",))

    monkeypatch.setattr(qemu, "boot", boot)
    monkeypatch.setattr(qemu, "make_scratch_disk", lambda path, uuid: None)
    monkeypatch.setattr(qemu, "choose_accel", lambda *a, **kw: qemu.AccelChoice("tcg", "test"))
    (tree / "vmlinux").unlink()     # the build machine's copy is not used
    rr = runner.boot_only(m, cells, man, tmp_path / "build", jobs=1, log=lambda line: None)
    [cell] = rr.cells
    assert [s.kind for s in cell.splats][:1] == ["warning"]
    decoded = (rr.run_dir / cells[0].id / "splat-1.decoded.txt").read_text().splitlines()
    # The moved vmlinux; the file names' prefix as on the build machine.
    assert decoded[0] == f"args: {sym.vmlinux} {tree} {sym.tree}"
    assert any(line.endswith("process_measurement+0x7c5/0xa50 fs/x.c:1") for line in decoded)
    assert not (rr.run_dir / cells[0].id / "decode.log").exists()

    (sym.tree / "scripts" / "decodecode").unlink()
    with pytest.raises(ConfigError) as e:
        runner.load_manifest(moved)
    assert str(e.value) == (f"{moved / 'manifest.json'}: {sym.tree / 'scripts' / 'decodecode'} "
                            "is missing: copy the whole artifact directory, not only the "
                            "manifest")


def test_manifest_errors(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    with pytest.raises(ConfigError) as e:
        runner.load_manifest(path)
    assert str(e.value) == (f"{path}: cannot read it (No such file or directory); "
                            "make the manifest with 'python3 -m harness build --out DIR'")
    m = _matrix()
    runner.export(_artifacts(tmp_path), list(m.cells), CASES, m,
                  {c.id: 1.0 for c in m.cells}, tmp_path)
    (tmp_path / "initramfs" / "x86_64.cpio").unlink()
    with pytest.raises(ConfigError) as e:
        runner.load_manifest(path)
    assert str(e.value) == (f"{path}: {tmp_path / 'initramfs' / 'x86_64.cpio'} is missing: "
                            "copy the whole artifact directory, not only the manifest")
    path.write_text('{"format": 1, "cells": [{"arch": "x86_64"}]}')
    with pytest.raises(ConfigError) as e:
        runner.load_manifest(path)
    assert str(e.value).startswith(f"{path}: damaged manifest (KeyError: 'variant')")


def test_expected_seconds_from_earlier_runs(tmp_path: Path) -> None:
    cells = list(matrix.load(REPO / "matrix.yaml", archs="x86_64,aarch64", variants="stock",
                             modes="off", policies="custom", hashes="sha1",
                             setattr="keep").cells)
    (tmp_path / "cell-times.json").write_text(json.dumps({cells[0].id: 21.5}))
    assert runner.expected_seconds(cells, tmp_path) == {cells[0].id: 21.5, cells[1].id: 120.0}


def test_a_full_run_records_its_cells_times(tmp_path: Path, fake_qemu) -> None:
    cells = list(_matrix().cells)
    rr = _boot(tmp_path, _artifacts(tmp_path), cells)
    assert runner.expected_seconds(cells, tmp_path / "build") == \
        {c.id: r.duration_s for c, r in zip(cells, rr.cells)}


# ---- the accelerator probe ------------------------------------------------------

def _probe(console: str, rc: int | None, timed_out: bool, secs: float) -> qemu.BootOutcome:
    return qemu.BootOutcome(console, rc, timed_out, secs, ("/usr/bin/qemu-system-x86_64", "-accel", "kvm"))


def test_probe_qemu_aborting_at_once_says_so() -> None:
    console = ("qemu-system-x86_64: error: failed to set MSR 0x10a to 0x2000000000\n"
               "qemu-system-x86_64: ../target/i386/kvm/kvm.c:3196: kvm_buf_set_msrs: "
               "Assertion `ret == cpu->kvm_msr_buf->nmsrs' failed.\n")
    assert qemu.probe_verdict(_probe(console, -6, False, 0.4)) == (
        False, "QEMU with KVM exited at once (0.4s, status -6): "
        "qemu-system-x86_64: error: failed to set MSR 0x10a to 0x2000000000")


def test_probe_guest_hanging_says_so() -> None:
    console = "SeaBIOS (version 1.16.2-debian-1.16.2-1)\nBooting from ROM..\n"
    assert qemu.probe_verdict(_probe(console, None, True, 20.0)) == (
        False, "a KVM probe guest did not boot within 20s (last console line: Booting from ROM..)")


def test_probe_guest_booting() -> None:
    assert qemu.probe_verdict(_probe(f"x\n{qemu.PROBE_MARKER}\n", 0, False, 1.25)) == \
        (True, "a KVM probe guest booted in 1.2s")


def test_manifest_parts_in_one_directory_are_one_manifest(tmp_path: Path) -> None:
    m = matrix.load(REPO / "matrix.yaml", variants="patched", modes="enforce",
                    policies="custom", hashes="sha1", setattr="remove")
    x86, arm = [c for c in m.cells if c.arch == "x86_64"], [c for c in m.cells if c.arch == "aarch64"]
    art = _artifacts(tmp_path)
    runner.export(art, x86, CASES, m, {c.id: 10.0 for c in x86}, tmp_path / "a", "x86_64")
    arm_art = Artifacts(kernels={("aarch64", "patched"): art.kernels[("x86_64", "patched")]},
                        initrds={"aarch64": art.initrds["x86_64"]})
    runner.export(arm_art, arm, CASES, m, {c.id: 20.0 for c in arm}, tmp_path / "a", "aarch64")
    man = runner.load_manifest(tmp_path / "a")
    assert sorted(c.id for c in man.cells) == sorted(c.id for c in m.cells)
    assert set(man.artifacts.kernels) == {("x86_64", "patched"), ("aarch64", "patched")}
    assert man.expected_s == {x86[0].id: 10.0, arm[0].id: 20.0}
    runner.export(art, x86, CASES, m, {c.id: 10.0 for c in x86}, tmp_path / "a", "again")
    with pytest.raises(ConfigError) as e:
        runner.load_manifest(tmp_path / "a")
    assert str(e.value) == (f"cell {x86[0].id} is in both {tmp_path / 'a' / 'manifest-again.json'}"
                            f" and {tmp_path / 'a' / 'manifest-x86_64.json'}: give each part "
                            "other arches or variants")


def test_each_variant_is_built_from_its_versions_tree(monkeypatch, tmp_path: Path) -> None:
    from harness import initramfs, kbuild
    m = matrix.load(REPO / "matrix.yaml", archs="x86_64", modes="enforce",
                    policies="custom", variants="patched-6.12,stock")
    extracted, built, selftests = [], [], []

    def extract(build: Path, tarball: Path | None = None, version: str = "6.1") -> Path:
        extracted.append(version)
        return tmp_path / f"linux-source-{version}"

    def build_kernel(build: Path, k: kbuild.Kernel, jobs: int, workspace: bool = False,
                     lenient: tuple[Path, ...] = (), overlay: object = None
                     ) -> tuple[kbuild.Kernel, int]:
        built.append((k.variant, k.tree.name, k.version, [p.name for p in k.patches][:1]))
        return k, 0

    monkeypatch.setattr(kbuild, "extract", extract)
    monkeypatch.setattr(kbuild, "build_kernel", build_kernel)
    monkeypatch.setattr(runner, "fragments", lambda repo, arch, build, flavor="plain", version=(): ())
    monkeypatch.setattr(runner.keys, "ensure", lambda build: build)
    monkeypatch.setattr(initramfs, "build_selftests",
                        lambda repo, tree, arch, build, jobs: selftests.append(tree.name))
    monkeypatch.setattr(initramfs, "build_initramfs", lambda *a: tmp_path / "initrd")
    runner.build_stage(m, list(m.cells), REPO, tmp_path, 1, {}, lambda msg: None)
    assert extracted == ["6.1", "6.12"]
    # The versions build side by side: in either order.
    assert sorted(built) == [
        ("patched-6.12", "linux-source-6.12", "6.12",
         ["0002-ima-add-ima_appraise_setattr-to-remove-security.ima.patch"]),
        ("stock", "linux-source-6.1", "6.1", [])]
    # One initramfs per arch: the selftests are built against 6.1's headers.
    assert selftests == ["linux-source-6.1"]


def test_a_guest_whose_clock_ran_ahead_boots_once_more(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # The first boot of each cell comes back with its printk clock 100 s
    # ahead of the host's (results.clock_ahead); the second is fine.  The
    # first console is kept beside the second.
    fast = PASS_CONSOLE.replace(
        "TAP version 13\n", "[  100.000000] tsc: Detected 28.093 MHz processor\nTAP version 13\n", 1)
    boots: list[str] = []

    def boot(req: qemu.BootRequest, console_log: Path) -> qemu.BootOutcome:
        text = fast if str(req.disk) not in boots else PASS_CONSOLE
        boots.append(str(req.disk))
        console_log.write_text(text)
        return qemu.BootOutcome(text, 0, False, 1.0, ("qemu",),
                                tuple(0.1 for _ in text.split("\n")))

    disks: list[Path] = []
    monkeypatch.setattr(qemu, "boot", boot)
    monkeypatch.setattr(qemu, "make_scratch_disk", lambda path, uuid: disks.append(path))
    monkeypatch.setattr(qemu, "choose_accel", lambda *a, **k: qemu.AccelChoice("tcg", "test"))
    cells = list(_matrix().cells)
    rr = _boot(tmp_path, _artifacts(tmp_path), cells)
    assert [r.status for r in rr.cells] == ["pass", "pass"]
    assert len(boots) == 4 and len(disks) == 4      # each cell on a fresh disk twice
    for c in cells:
        assert "28.093 MHz" in (rr.run_dir / c.id / "console-clock.log").read_text()
        assert "28.093 MHz" not in (rr.run_dir / c.id / "console.log").read_text()


@pytest.mark.parametrize("text", ["0", "-1", "two", ""])
def test_jobs_must_count_something(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as e:
        count_arg("JOBS")(text)
    assert str(e.value) == (f"JOBS={text}: a whole number of 1 or more (leave it out for "
                            "the number of CPUs)")
    assert count_arg("JOBS")("3") == 3


def test_make_run_stops_at_jobs_of_zero(tmp_path: Path) -> None:
    """JOBS=-1 was a traceback from the thread pool after the builds."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only",
         "harness/matrix_run.py", "--jobs=-1", f"--build-dir={tmp_path / 'build'}"],
        cwd=Path(runner.__file__).resolve().parent.parent, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, timeout=120)
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR, proc.stdout
    assert "argument --jobs: JOBS=-1: a whole number of 1 or more" in proc.stdout
    assert not (tmp_path / "build").exists()
