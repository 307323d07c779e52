"""`make bench`: where the time goes on this machine, measured in one run.

    /usr/bin/python3 -m harness bench [--build-dir build/bench] [--archs ...]
        [--variants ...] [--modes ...] [--policies ...] [--hashes ...] [--setattr ...] [--no-cold]
        [--stages builds,floor,matrix,edit]

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
   types it, checked to have compiled the edit and booted that cell alone.

Each line of the report is written to bench.txt as it is measured.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import cases, kbuild, initramfs, matrix as matrix_mod, qemu, runner, selection, subproc
from .archs import ARCHS
from .errors import HarnessError
from .status import Status

REPO = Path(__file__).resolve().parent.parent
# The edit loop's cell and program: a custom-policy enforce cell, where
# open_test's verdicts are strictest.
LOOP_CELL = dict(ARCHS="x86_64", MODES="enforce", POLICIES="custom", HASHES="sha1",
                 SETATTR="remove")
LOOP_PROGRAM = "open_test"
LOOP_FILE = "security/integrity/ima/ima_appraise.c"
STAGES = ("builds", "floor", "matrix", "edit")


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
    pristine = kbuild.extract(build, m.sources[v.version].tarball(build), version=v.version)
    k = kbuild.plan(build, ARCHS[arch], {variant: (v.tree or pristine, patches)},
                    {variant: runner.fragments(REPO, arch, build, v.flavor,
                                               m.source_of(variant).config)},
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


# The Makefile's knobs: its own variables, and every Make variable a
# command reads under --make-vars (harness/selection.py).  make hands those
# of its own command line (make bench ARCHS=... VARIANTS=...) on to every
# make it starts, in MAKEFLAGS and the environment: the edit loop's 'make
# run' must not see them (it once booted bench's VARIANTS instead of the
# edit, and compiled nothing).
MAKE_KNOBS = frozenset({
    "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES", "MAKELEVEL", "K", "ARCHS", "VARIANTS", "MODES",
    "POLICIES", "HASHES", "SETATTR", "JOBS", "MAKE_JOBS", "TIER", "ACCEL", "KERNEL_TREE",
    "EXTRA_PATCHES", "BASE", "BUILD", "BENCH_BUILD", "NO_COLD", "MUTANTS", "PROGRAMS", "REPEAT",
    "VERSION", "GOOD", "BAD", "SPLAT", "TEST", "V", "STAGES", "PROFILE", "LOG", "VARIANT",
    "VMLINUX", "A", "B", "PYTEST_ARGS"})


def loop_cell_id() -> str:
    c = LOOP_CELL
    return matrix_mod.Cell(c["ARCHS"], matrix_mod.EXTRA_VARIANT, c["MODES"], c["POLICIES"],
                           c["HASHES"], c["SETATTR"]).id


def check_edit_loop(output: str, where: Path) -> None:
    """That the edit loop's 'make run' (its output) measured the edit: it
    compiled the edited kernel and booted that kernel's one cell, and
    nothing else.  HarnessError naming the log (where) if not."""
    kernel = f"{LOOP_CELL['ARCHS']}-{matrix_mod.EXTRA_VARIANT}"
    compiled = re.search(rf"^kernel {re.escape(kernel)}: (\d+) object\(s\) compiled", output,
                         re.M)
    booted = re.findall(r"^\[\s*\d+/\d+\] (\S+)", output, re.M)
    if not compiled or not int(compiled[1]):
        raise HarnessError(f"the edit loop's 'make run' did not compile kernel {kernel} "
                           f"(the edit's): nothing was measured; see {where}")
    if booted != [loop_cell_id()]:
        raise HarnessError(f"the edit loop's 'make run' booted {', '.join(booted) or 'nothing'}, "
                           f"not {loop_cell_id()} alone: nothing was measured; see {where}")


def _edit_loop(build: Path, n: int) -> float:
    """Seconds from a changed patch to 'make run's verdict on one program."""
    patch = build / "bench-edit.patch"
    tree = kbuild.extract(build)
    lines = (tree / LOOP_FILE).read_text().splitlines(keepends=True)
    # A one-line change that differs every time, from any earlier bench's
    # too: kbuild must recompile the file and relink, as after any edit.
    patch.write_text(f"--- a/{LOOP_FILE}\n+++ b/{LOOP_FILE}\n@@ -1,1 +1,2 @@\n"
                     f"+/* make bench: edit {n} at {time.time_ns()} */\n {lines[0]}")
    cmd = ["make", "--no-print-directory", "-C", str(REPO), "run", f"BUILD={build}",
           f"EXTRA_PATCHES={patch}", f"K={LOOP_PROGRAM}", "JOBS=1",
           *(f"{k}={v}" for k, v in LOOP_CELL.items())]
    env = {k: v for k, v in os.environ.items() if k not in MAKE_KNOBS}
    t = time.monotonic()
    proc = subproc.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       env=env)
    secs = time.monotonic() - t
    log = build / "logs" / f"bench-edit-{n}.log"
    log.write_text(proc.stdout)
    if proc.returncode:
        raise HarnessError(f"the edit loop's 'make run' failed (exit {proc.returncode}); "
                           f"see {log}")
    check_edit_loop(proc.stdout, log)
    return secs


def _stages(text: str) -> set[str]:
    """--stages: a comma list of STAGES."""
    stages = set(text.split(","))
    if not stages <= set(STAGES):
        raise argparse.ArgumentTypeError(
            f"{', '.join(sorted(stages - set(STAGES)))}: no such stage; the stages are "
            f"{', '.join(STAGES)}")
    return stages


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """bench's options (python3 -m harness bench, and python3 -m harness.bench)."""
    selection.add_options(parser, (*selection.AXES, "matrix", "build_dir"),
                          defaults={"build_dir": REPO / "build" / "bench"},
                          notes={"build_dir": "here build/bench: the cold builds delete "
                                 "its kernels"})
    selection.add_argument(parser, "--no-cold", make="NO_COLD", action="store_true",
                           help="skip the cold builds (keep what the bench directory has)")
    selection.add_argument(parser, "--stages", make="STAGES", type=_stages,
                           default=",".join(STAGES),
                           help=f"comma list of the stages to run, of {', '.join(STAGES)}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness.bench")
    add_arguments(parser)
    return command(parser.parse_args(argv))


def command(args: argparse.Namespace) -> int:
    """The bench in a session of its own: a SIGTERM stops its builds, its
    guests and its inner 'make run' too."""
    try:
        with subproc.session():
            return bench(args)
    except KeyboardInterrupt as e:
        print(f"bench: {e or 'interrupted'}; bench.txt keeps what was measured before",
              file=sys.stderr)
        return 2


def bench(args: argparse.Namespace) -> int:
    stages = args.stages
    build = args.build_dir.resolve()
    narrowed = selection.given(args, selection.AXES)
    try:
        m = matrix_mod.load(args.matrix, **narrowed)
        kernels = list(dict.fromkeys((c.arch, c.variant) for c in m.cells))
        # stock first: the other variants may share its work.
        kernels.sort(key=lambda k: (k[0], k[1] != "stock"))
        # Written line by line: a stage that fails keeps the ones before it,
        # and a run of some stages keeps the runs before it.
        build.mkdir(parents=True, exist_ok=True)
        out = (build / "bench.txt").open("a")
        asked = " ".join([*(f"{k}={v}" for k, v in narrowed.items()),
                          *(["--no-cold"] if args.no_cold else []),
                          f"--stages={','.join(s for s in STAGES if s in stages)}"])
        print(f"# make bench, {time.strftime('%Y-%m-%d %H:%M:%S')}: {asked}",
              file=out, flush=True)
        say = lambda line: (print(line, flush=True), print(line, file=out, flush=True))  # noqa: E731

        if "builds" in stages and not args.no_cold:
            for d in ("kernel", "src"):
                shutil.rmtree(build / d, ignore_errors=True)
            t = time.monotonic()
            kbuild.extract(build)
            say(f"extract: {time.monotonic() - t:.0f}s")
        builds = {}
        for when in () if "builds" not in stages else \
                (() if args.no_cold else ("cold",)) + ("warm",):
            for arch, variant in kernels:
                b = _build(build, m, arch, variant)
                builds[(when, b.kernel)] = b
                say(f"build {when} {b.kernel}: {b.seconds:.0f}s, {b.objects} object(s) compiled")

        floors = {}
        for arch, variant in kernels if "floor" in stages else ():
            f = _floor(build, arch, variant)
            floors[f.kernel] = f
            say(f"floor {f.kernel}: init after {f.to_init_s:.1f}s, QEMU gone after "
                f"{f.total_s:.1f}s")

        if "matrix" in stages:
            _matrix(m, narrowed, floors, build, say)
        if "edit" in stages:
            loops = [_edit_loop(build, n) for n in (1, 2)]
            say(f"edit loop ({LOOP_FILE} one line -> {LOOP_PROGRAM} verdict in "
                f"{loop_cell_id()}, via 'make run'): " + ", ".join(f"{s:.1f}s" for s in loops))
        print(f"bench: {build / 'bench.txt'}")
    except HarnessError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


def _matrix(m: matrix_mod.Matrix, narrowed: dict[str, str], floors: dict[str, Floor],
            build: Path, say: Callable[[str], object]) -> None:
    """The selected cells booted warm, each against its kernel's floor."""
    cells = list(m.cells)
    t = time.monotonic()
    run = runner.run(runner.RunRequest(m, cells, cases.expected_cases(REPO / "selftests"),
                                       build, jobs=os.cpu_count(), log=print))
    wall = time.monotonic() - t
    say(f"matrix {'(subset: ' + ' '.join(f'{k}={v}' for k, v in narrowed.items()) + ')' if narrowed else '(full)'}: "
        f"{len(cells)} cells in {wall:.0f}s wall ({os.cpu_count()} at a time), "
        f"{sum(r.status == Status.PASS for r in run.cells)} pass")
    say(f"{'cell':<44} {'time':>6} {'floor':>6} {'work':>6}")
    for r in sorted(run.cells, key=lambda r: -r.duration_s):
        f = floors.get(f"{r.cell.arch}-{r.cell.variant}")
        floor, work = (f"{f.total_s:>5.1f}s", f"{r.duration_s - f.total_s:>5.1f}s") if f \
            else ("    -", "    -")
        say(f"{r.cell.id:<44} {r.duration_s:>5.1f}s {floor} {work}  {r.status}")
    say(runner.program_times(run.cells))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
