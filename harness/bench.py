"""`make bench`: where the time goes on this machine, measured in one run.

    /usr/bin/python3 -m harness.bench [--build-dir build/bench] [--archs ...]
        [--variants ...] [--modes ...] [--policies ...] [--hashes ...] [--setattr ...] [--no-cold]

In a build directory of its own (default build/bench; the kernel trees and
builds there are deleted for the cold builds, keys and packages are kept):

1. builds: every kernel of the selected matrix cold (nothing built yet;
   stock first, so the other variants of Debian's tree are workspace turns
   after it), then again warm (nothing changed);
2. floor: per kernel, a bare boot to the guest's init and out again (the
   KVM probe's path through initramfs/init), which every cell pays;
3. matrix: the selected cells (the whole matrix unless narrowed) booted
   warm, each cell's time against its kernel's floor;
4. edit loop: a one-line change to an IMA .c file (EXTRA_PATCHES) to the
   verdict of one program in one cell, through 'make run' as a developer
   types it.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from . import cases, kbuild, initramfs, matrix as matrix_mod, qemu, runner
from .archs import ARCHS
from .errors import HarnessError
from .status import Status

REPO = Path(__file__).resolve().parent.parent
AXES = ("archs", "variants", "modes", "policies", "hashes", "setattr")
# The edit loop's cell and program: a custom-policy enforce cell, where
# open_test's verdicts are strictest.
LOOP_CELL = dict(ARCHS="x86_64", MODES="enforce", POLICIES="custom", HASHES="sha1",
                 SETATTR="remove")
LOOP_PROGRAM = "open_test"
LOOP_FILE = "security/integrity/ima/ima_appraise.c"


@dataclass(frozen=True)
class BuildTime:
    kernel: str
    seconds: float
    objects: int


@dataclass(frozen=True)
class Floor:
    kernel: str
    to_init_s: float        # QEMU start to the probe line of the guest's init
    total_s: float          # ... to QEMU's exit


def _build(build: Path, m: matrix_mod.Matrix, arch: str, variant: str) -> BuildTime:
    v = m.variants[variant]
    patches = (kbuild.read_series(v.series) if v.series else ()) + v.patches
    pristine = kbuild.extract(build, version=v.version)
    k = kbuild.plan(build, ARCHS[arch], {variant: (v.tree or pristine, patches)},
                    {variant: runner.fragments(REPO, arch, build, v.flavor)},
                    {variant: v.version}, {variant: v.flavor})[variant]
    t = time.monotonic()
    _, compiled = kbuild.build_kernel(build, k, os.cpu_count() or 1,
                                      workspace=runner.in_workspace(v))
    return BuildTime(f"{arch}-{variant}", time.monotonic() - t, compiled)


def _floor(build: Path, arch: str, variant: str) -> Floor:
    a = ARCHS[arch]
    stage = initramfs.build_selftests(REPO, kbuild.extract(build), a, build,
                                      os.cpu_count() or 1)
    initrd = initramfs.build_initramfs(REPO, build, a, stage)
    image = build / "kernel" / f"{arch}-{variant}" / a.image
    req = qemu.BootRequest(a, image, initrd, None, "ima_selftest.probe=1", "tcg", 512, 120)
    out = qemu.boot(req, build / "logs" / f"floor-{arch}-{variant}.log")
    lines = out.console.split("\n")
    at = next((i for i, line in enumerate(lines) if qemu.PROBE_MARKER in line), None)
    if at is None or at >= len(out.line_times):
        raise HarnessError(f"the probe boot of {arch}-{variant} never reached init; see "
                           f"{build / 'logs' / f'floor-{arch}-{variant}.log'}")
    return Floor(f"{arch}-{variant}", out.line_times[at], out.duration_s)


def _edit_loop(build: Path, n: int) -> float:
    """Seconds from a changed patch to 'make run's verdict on one program."""
    patch = build / "bench-edit.patch"
    tree = kbuild.extract(build)
    lines = (tree / LOOP_FILE).read_text().splitlines(keepends=True)
    # A one-line change that differs every time: kbuild must recompile the
    # file and relink, as after any edit.
    patch.write_text(f"--- a/{LOOP_FILE}\n+++ b/{LOOP_FILE}\n@@ -1,1 +1,2 @@\n"
                     f"+/* make bench: edit {n} */\n {lines[0]}")
    cmd = ["make", "--no-print-directory", "-C", str(REPO), "run", f"BUILD={build}",
           f"EXTRA_PATCHES={patch}", f"K={LOOP_PROGRAM}", "JOBS=1",
           *(f"{k}={v}" for k, v in LOOP_CELL.items())]
    t = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    secs = time.monotonic() - t
    (build / "logs" / f"bench-edit-{n}.log").write_text(proc.stdout)
    if proc.returncode:
        raise HarnessError(f"the edit loop's 'make run' failed (exit {proc.returncode}); "
                           f"see {build / 'logs' / f'bench-edit-{n}.log'}")
    return secs


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness.bench")
    parser.add_argument("--build-dir", type=Path, default=REPO / "build" / "bench")
    parser.add_argument("--matrix", type=Path, default=REPO / "matrix.yaml")
    for axis in AXES:
        parser.add_argument(f"--{axis}", default=None, help="comma list narrowing the matrix")
    parser.add_argument("--no-cold", action="store_true",
                        help="skip the cold builds (keep what the bench directory has)")
    args = parser.parse_args(argv)
    build = args.build_dir.resolve()
    narrowed = {a: getattr(args, a) for a in AXES if getattr(args, a)}
    try:
        m = matrix_mod.load(args.matrix, **narrowed)
        kernels = list(dict.fromkeys((c.arch, c.variant) for c in m.cells))
        # stock first: the other variants may share its work.
        kernels.sort(key=lambda k: (k[0], k[1] != "stock"))
        report: list[str] = []
        say = lambda line: (print(line, flush=True), report.append(line))  # noqa: E731

        if not args.no_cold:
            for d in ("kernel", "src"):
                shutil.rmtree(build / d, ignore_errors=True)
            t = time.monotonic()
            kbuild.extract(build)
            say(f"extract: {time.monotonic() - t:.0f}s")
        builds = {}
        for when in (() if args.no_cold else ("cold",)) + ("warm",):
            for arch, variant in kernels:
                b = _build(build, m, arch, variant)
                builds[(when, b.kernel)] = b
                say(f"build {when} {b.kernel}: {b.seconds:.0f}s, {b.objects} object(s) compiled")

        floors = {}
        for arch, variant in kernels:
            f = _floor(build, arch, variant)
            floors[f.kernel] = f
            say(f"floor {f.kernel}: init after {f.to_init_s:.1f}s, QEMU gone after "
                f"{f.total_s:.1f}s")

        cells = list(m.cells)
        t = time.monotonic()
        run = runner.run(m, cells, cases.expected_cases(REPO / "selftests"), REPO, build,
                         jobs=os.cpu_count(), log=print)
        wall = time.monotonic() - t
        say(f"matrix {'(subset: ' + ' '.join(f'{k}={v}' for k, v in narrowed.items()) + ')' if narrowed else '(full)'}: "
            f"{len(cells)} cells in {wall:.0f}s wall ({os.cpu_count()} at a time), "
            f"{sum(r.status == Status.PASS for r in run.cells)} pass")
        say(f"{'cell':<44} {'time':>6} {'floor':>6} {'work':>6}")
        for r in sorted(run.cells, key=lambda r: -r.duration_s):
            floor = floors[f"{r.cell.arch}-{r.cell.variant}"].total_s
            say(f"{r.cell.id:<44} {r.duration_s:>5.1f}s {floor:>5.1f}s "
                f"{r.duration_s - floor:>5.1f}s  {r.status}")
        say(runner.program_times(run.cells))

        loops = [_edit_loop(build, n) for n in (1, 2)]
        say(f"edit loop ({LOOP_FILE} one line -> {LOOP_PROGRAM} verdict in "
            f"{'-'.join(LOOP_CELL.values())}, via 'make run'): "
            + ", ".join(f"{s:.1f}s" for s in loops))
        (build / "bench.txt").write_text("\n".join(report) + "\n")
        print(f"bench: {build / 'bench.txt'}")
    except HarnessError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
