"""Runs a set of matrix cells end to end: kernels, selftests, initramfs,
accelerator, then the boots (in parallel, one guest CPU each), and writes
build/results/<run-id>/.  Parsing happens in results.py, not here."""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import threading
import time
import uuid as uuidlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from . import initramfs, kbuild, keys, qemu, report, results, timing
from .archs import ARCHS
from .cases import Case
from .errors import HarnessError
from . import matrix as matrix_mod
from .matrix import Cell, Matrix
from .results import CellResult
from .status import Status

Log = Callable[[str], None]


@dataclass
class RunResult:
    run_id: str
    run_dir: Path
    cells: list[CellResult]
    timings: dict[str, float] = field(default_factory=dict)
    builds: list[dict] = field(default_factory=list)


class _Timer:
    def __init__(self, timings: dict[str, float], phase: str) -> None:
        self.timings, self.phase = timings, phase

    def __enter__(self) -> None:
        self.start = time.monotonic()

    def __exit__(self, *exc: object) -> None:
        self.timings[self.phase] = self.timings.get(self.phase, 0.0) + time.monotonic() - self.start


def fragments(repo: Path, arch: str, build: Path) -> tuple[Path, ...]:
    cfg = repo / "kernel-patches" / "config"
    return (cfg / "common.config", cfg / f"{arch}.config",
            keys.ensure(build) / "trusted-keys.config")


@contextlib.contextmanager
def _exclusive(build: Path, log: Log):
    """One run at a time per build directory: two would rebuild the same
    initramfs and scratch disks under each other."""
    build.mkdir(parents=True, exist_ok=True)
    with open(build / ".lock", "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            log(f"{build} is in use by another run (pid {f.read().strip() or '?'}); "
                "waiting for it (or use another BUILD= directory)")
            fcntl.flock(f, fcntl.LOCK_EX)
        f.truncate(0)
        f.write(str(os.getpid()))
        f.flush()
        yield


def run(matrix: Matrix, cells: list[Cell], expected: tuple[Case, ...], repo: Path,
        build: Path, *, jobs: int | None = None, accel: str = "auto",
        log: Log = print, programs: dict[str, tuple[str, ...]] | None = None) -> RunResult:
    """programs: per cell id, the only test programs to run in it (default:
    all), e.g. what 'pytest -k' left of it."""
    with _exclusive(build, log):
        return _run(matrix, cells, expected, repo, build, jobs or os.cpu_count() or 1,
                    accel, log, programs or {})


def _run(matrix: Matrix, cells: list[Cell], expected: tuple[Case, ...], repo: Path,
         build: Path, jobs: int, accel: str, log: Log,
         programs: dict[str, tuple[str, ...]]) -> RunResult:
    t_start = time.monotonic()
    timings: dict[str, float] = {}
    run_id = datetime.now().strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}"
    run_dir = build / "results" / run_id
    run_dir.mkdir(parents=True)
    latest = build / "results" / "latest"
    latest.unlink(missing_ok=True)
    latest.symlink_to(run_id)

    broken: dict[tuple[str, str], str] = {}     # (arch, variant) -> why it cannot boot
    kernels: dict[tuple[str, str], kbuild.Kernel] = {}
    initrds: dict[str, Path] = {}
    accels: dict[str, qemu.AccelChoice] = {}
    builds: list[dict] = []

    with _Timer(timings, "extract"):
        pristine = kbuild.extract(build)

    for arch_name in dict.fromkeys(c.arch for c in cells):
        arch = ARCHS[arch_name]
        variants = list(dict.fromkeys(c.variant for c in cells if c.arch == arch_name))
        sources: dict[str, tuple[Path, tuple[Path, ...]]] = {}   # variant -> tree, patches
        for v in variants:
            variant = matrix.variants[v]
            try:
                patches = (kbuild.read_series(variant.series) if variant.series else ()) \
                    + variant.patches
            except HarnessError as e:
                broken[(arch_name, v)] = str(e)
                continue
            sources[v] = (variant.tree or pristine, patches)
        plan = kbuild.plan(build, arch, sources,
                           {v: fragments(repo, arch_name, build) for v in sources})
        built: dict[Path, kbuild.Kernel | str] = {}   # out dir -> kernel, or why it failed
        for v, k in plan.items():
            if k.out not in built:
                log(f"kernel {arch_name}-{k.variant}: building "
                    f"({len(k.patches)} patch(es)) ...")
                t = time.monotonic()
                try:
                    with _Timer(timings, f"kernel:{arch_name}-{k.variant}"):
                        v_k = matrix.variants[k.variant]
                        # Only EXTRA_PATCHES may need fuzz: our own patches apply exactly.
                        done, compiled = kbuild.build_kernel(
                            build, k, jobs, workspace=in_workspace(v_k),
                            lenient=v_k.patches if v_k.name == matrix_mod.EXTRA_VARIANT else ())
                    built[k.out] = done
                    secs = time.monotonic() - t
                    builds.append({"kernel": f"{arch_name}-{k.variant}", "compiled_objects": compiled,
                                   "seconds": round(secs, 1)})
                    log(f"kernel {arch_name}-{k.variant}: {compiled} object(s) compiled "
                        f"in {secs:.0f}s")
                except HarnessError as e:
                    built[k.out] = str(e)
                    log(f"kernel {arch_name}-{k.variant}: FAILED\n{e}")
            outcome = built[k.out]
            if isinstance(outcome, str):
                broken[(arch_name, v)] = outcome
            else:
                kernels[(arch_name, v)] = outcome
                if v != k.variant:
                    kbuild.link_alias(build, arch, v, outcome)

        try:
            with _Timer(timings, "selftests"):
                stage = initramfs.build_selftests(repo, pristine, arch, build, jobs)
            with _Timer(timings, "initramfs"):
                initrds[arch_name] = initramfs.build_initramfs(repo, build, arch, stage)
        except HarnessError as e:
            log(f"initramfs {arch_name}: FAILED\n{e}")
            for v in variants:
                broken.setdefault((arch_name, v), str(e))
            continue

        some = next((k for (a, _), k in kernels.items() if a == arch_name), None)
        if some:
            try:
                with _Timer(timings, "accel"):
                    accels[arch_name] = qemu.choose_accel(
                        arch, some.image, initrds[arch_name], build / "accel.json", accel)
                log(f"accel {arch_name}: {accels[arch_name].accel} "
                    f"({accels[arch_name].reason})")
            except HarnessError as e:
                for v in variants:
                    broken.setdefault((arch_name, v), str(e))

    lock = threading.Lock()
    done_count = [0]

    def one(cell: Cell) -> CellResult:
        key = (cell.arch, cell.variant)
        if key in broken:
            result = results.error_cell(cell, broken[key])
        else:
            try:
                result = _boot_cell(matrix, cell, kernels[key], initrds[cell.arch],
                                    accels[cell.arch].accel, expected, run_dir, build,
                                    programs.get(cell.id, ()))
            except (HarnessError, OSError) as e:
                # One cell's trouble (a full disk, say) must not lose the run.
                result = results.error_cell(cell, f"{type(e).__name__}: {e}")
        with lock:
            done_count[0] += 1
            n = result.counts()
            log(f"[{done_count[0]:>3}/{len(cells)}] {cell.id:<40} {result.status:<7} "
                f"{n['pass']} passed, {n['fail']} failed, {n['skip']} skipped"
                + "".join(f", {n[k]} {k}" for k in (Status.XFAIL, Status.XPASS) if n[k])
                + f" ({result.duration_s:.1f}s){'  ' + result.reason.splitlines()[0] if result.reason else ''}")
        return result

    log(f"booting {len(cells)} cell(s), {jobs} at a time")
    times = build / "cell-times.json"
    with _Timer(timings, "boot"):
        pool = ThreadPoolExecutor(max_workers=jobs)
        try:
            finished = {r.cell.id: r for r in
                        pool.map(one, timing.longest_first(cells, timing.load_times(times)))}
        except KeyboardInterrupt:
            pool.shutdown(wait=False, cancel_futures=True)   # boot no further cells
            raise
        pool.shutdown()
    cell_results = [finished[c.id] for c in cells]
    timing.save_times(times, {r.cell.id: r.duration_s for r in cell_results
                              if r.status in (Status.PASS, Status.FAIL) and r.cell.id not in programs})
    timings["total"] = time.monotonic() - t_start

    rr = RunResult(run_id, run_dir, cell_results, timings, builds)
    results.write_json(run_dir / "results.json", run_id, cell_results, timings,
                       {"builds": builds, "accel": {a: {"accel": c.accel, "reason": c.reason}
                                                    for a, c in accels.items()}})
    results.write_junit(run_dir / "junit.xml", cell_results)
    (run_dir / "summary.txt").write_text(results.summary_text(cell_results))
    report.write(run_dir)
    return rr


def in_workspace(variant: matrix_mod.Variant) -> bool:
    """Whether a variant takes its turn in the shared workspace build (see
    kbuild) rather than a tree and build of its own: every variant of
    Debian's tree does."""
    return variant.workspace or variant.tree is None


def programs_to_boot(selected: list[tuple[Cell, Case]],
                     expected: tuple[Case, ...]) -> dict[str, tuple[str, ...]]:
    """Per cell id, the test programs its selected cases are in, in the
    suite's order, where that is not all of them: the guest runs only those
    (a fast edit-test loop)."""
    chosen: dict[str, set[str]] = {}
    for cell, case in selected:
        chosen.setdefault(cell.id, set()).add(case.suite)
    every = tuple(dict.fromkeys(c.suite for c in expected))
    return {cell: tuple(p for p in every if p in progs)
            for cell, progs in chosen.items() if len(progs) < len(every)}


def program_times(cells: list[CellResult]) -> str:
    return timing.summary([(c.cell.id, c.timing) for c in cells if c.timing])


def _boot_cell(matrix: Matrix, cell: Cell, kernel: kbuild.Kernel, initrd: Path, accel: str,
               expected: tuple[Case, ...], run_dir: Path, build: Path,
               programs: tuple[str, ...] = ()) -> CellResult:
    out = run_dir / cell.id
    out.mkdir(parents=True, exist_ok=True)
    disk = build / "scratch" / f"{cell.id}.img"
    # A UUID derived from the cell id: the same cell gets the same fsuuid=
    # rules run after run, which keeps logs comparable.
    fsuuid = str(uuidlib.UUID(bytes=hashlib.sha256(cell.id.encode()).digest()[:16], version=4))
    qemu.make_scratch_disk(disk, fsuuid)
    cmdline = f"{qemu.HARNESS_MARKER} {cell.cmdline()}"
    if programs:
        # The guest's init runs only these (initramfs/init), and only their
        # cases are expected.
        cmdline += f" {qemu.PROGRAMS_PARAM}={','.join(programs)}"
        expected = tuple(c for c in expected if c.suite in programs)
    req = qemu.BootRequest(ARCHS[cell.arch], kernel.image, initrd, disk, cmdline, accel,
                           matrix.memory, matrix.timeout)
    (out / "qemu-cmdline.sh").write_text("#!/bin/sh\n# Boots this cell again by hand.\n"
                                         + qemu.shell_quoted(qemu.command(req)) + "\n")
    shutil.copyfile(kernel.config, out / "kernel.config")
    (out / "patches.txt").write_text(
        f"variant {cell.variant}: {kernel.tree}\n"
        + "".join(f"{p}  sha256:{hashlib.sha256(p.read_bytes()).hexdigest()}\n"
                  for p in kernel.patches))
    outcome = qemu.boot(req, out / "console.log")
    variant = matrix.variants[cell.variant]
    return results.evaluate(cell, outcome, expected, accel, out,
                            known=lambda name: variant.expected_failure(cell, name))
