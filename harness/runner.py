"""Runs a set of matrix cells in three stages, each usable on its own (a CI
engine schedules them on different machines: `python3 -m harness build`,
`boot --shard i/N`, `merge`):

- build: kernels, selftests, initramfs (and the test keys they hold), for
  the arches and variants of the cells; export() copies what a boot needs
  into a relocatable artifact directory described by manifest.json;
- boot: the guests, in parallel (one CPU each), longest expected first;
  each cell's verdict is written to <run>/<cell>/result.json the moment it
  is known, so an exception or a Ctrl-C loses no finished cell;
- report: results.json, junit.xml, summary.txt of the cells that ran.

Parsing happens in results.py, not here."""
from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import time
import uuid as uuidlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from . import flavors, images, initramfs, kbuild, keys, ktap, ktree, profile, qemu, report
from . import results
from . import splats, subproc, timing
from . import matrix as matrix_mod
from .archs import ARCHS
from .cases import Case
from .errors import ConfigError, HarnessError, read_json
from .matrix import Cell, Matrix
from .results import CellResult
from .status import Status

Log = Callable[[str], None]
REPO = Path(__file__).resolve().parent.parent

# Exit statuses of the harness's commands (pytest's matrix_run.py, python3 -m harness).
EXIT_PASS = 0
EXIT_TEST_FAILURE = 1       # a cell failed, timed out or panicked: the kernel's fault
EXIT_INFRASTRUCTURE = 2     # a kernel did not build, a guest could not start, or the run
                            # was interrupted: the verdict is incomplete

MANIFEST = "manifest.json"
MANIFEST_FORMAT = 1
# Expected seconds per cell when no earlier run timed it, about what one
# took on 2 TCG cores: what the longest-first order and the shards balance.
_GUESS_S = {"x86_64": 30.0, "aarch64": 60.0}


@dataclass(frozen=True)
class BuiltKernel:
    """A kernel as the boot stage needs it."""
    image: Path
    config: Path
    patches: str    # the cell's patches.txt: the tree and each patch with its sha256
    # To decode its splats' stack traces (an artifact directory carries
    # the vmlinux and the tree's decoding scripts: export()).
    symbols: splats.Symbols | None = None
    # Its own initramfs, instead of the arch's: a Debian image's (the arch's
    # with the package's modules appended: harness/images.py).
    initrd: Path | None = None
    # A Debian image's symbols, fetched (its -dbg package) only when a
    # splat is to be decoded.
    dbg: Callable[[], splats.Symbols] | None = None


@dataclass
class Artifacts:
    """What the build stage made, per (arch, variant) and per arch."""
    kernels: dict[tuple[str, str], BuiltKernel] = field(default_factory=dict)
    initrds: dict[str, Path] = field(default_factory=dict)
    broken: dict[tuple[str, str], str] = field(default_factory=dict)   # why it cannot boot
    builds: list[dict] = field(default_factory=list)
    # Per variant built from a git tree of one's own: its describe and commit.
    trees: dict[str, dict] = field(default_factory=dict)


@dataclass
class RunResult:
    run_id: str
    run_dir: Path
    cells: list[CellResult]
    timings: dict[str, float] = field(default_factory=dict)
    builds: list[dict] = field(default_factory=list)
    interrupted: str = ""   # why the run stopped before every cell ran
    accels: dict[str, qemu.AccelChoice] = field(default_factory=dict)
    meta: dict = field(default_factory=dict)   # more for results.json: shard, manifest
    selected: list[str] = field(default_factory=list)   # the ids of the cells it was to run

    @property
    def missing(self) -> list[str]:
        """The selected cells with no result."""
        ran = {r.cell.id for r in self.cells}
        return [c for c in self.selected if c not in ran]

    @property
    def exit_status(self) -> int:
        return exit_status(self.cells, self.interrupted, self.missing)


def exit_status(cells: list[CellResult], interrupted: str = "",
                missing: Sequence[str] = ()) -> int:
    """A run that stopped early or left a selected cell without a result
    has no verdict (2), whatever its finished cells say."""
    if interrupted or missing or any(c.status == Status.ERROR for c in cells):
        return EXIT_INFRASTRUCTURE
    if any(c.status != Status.PASS for c in cells):
        return EXIT_TEST_FAILURE
    return EXIT_PASS


class _Timer:
    def __init__(self, timings: dict[str, float], phase: str) -> None:
        self.timings, self.phase = timings, phase

    def __enter__(self) -> None:
        self.start = time.monotonic()

    def __exit__(self, *exc: object) -> None:
        self.timings[self.phase] = self.timings.get(self.phase, 0.0) + time.monotonic() - self.start


def fragments(repo: Path, arch: str, build: Path,
              flavor: str = flavors.PLAIN, version: tuple[Path, ...] = ()) -> tuple[Path, ...]:
    """version: the kernel version's own fragments (matrix.yaml sources:)."""
    cfg = repo / "kernel-patches" / "config"
    return (cfg / "common.config", cfg / f"{arch}.config",
            *flavors.FLAVORS[flavor].fragment_paths(cfg, arch), *version,
            keys.ensure(build) / "trusted-keys.config")


@contextlib.contextmanager
def exclusive(build: Path, log: Log) -> Iterator[None]:
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


def new_run_dir(build: Path) -> tuple[str, Path]:
    run_id = datetime.now().strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}"
    run_dir = build / "results" / run_id
    run_dir.mkdir(parents=True)
    latest = build / "results" / "latest"
    latest.unlink(missing_ok=True)
    latest.symlink_to(run_id)
    return run_id, run_dir


@dataclass(frozen=True)
class RunRequest:
    """A run: which cells to build and boot, and how (run(), boot_only(),
    boot_stage())."""
    matrix: Matrix
    cells: Sequence[Cell]
    expected: tuple[Case, ...]          # the test cases of every cell
    build: Path                         # the build directory
    jobs: int | None = None             # guest CPUs booted at once (None: the CPUs)
    make_jobs: int | None = None        # make -j (None: the CPUs)
    accel: str = "auto"
    log: Log = print
    # Per cell id, the only test programs to run in it (default: all),
    # e.g. what 'pytest -k' left of it.
    programs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Sample each guest's vCPUs this often into its cell's profile.txt
    # (harness/profile.py); 0: not at all.
    profile_hz: int = 0
    repo: Path = REPO                   # the selftests and kernel patches

    @property
    def guest_cpus(self) -> int:
        """The guest CPUs booted at once."""
        return self.jobs or _cpus()


def run(req: RunRequest) -> RunResult:
    """build, boot, report.  An exception or a KeyboardInterrupt still
    writes the reports of the cells that finished, then propagates."""
    def stages(rr: RunResult) -> None:
        art = build_stage(req.matrix, list(req.cells), req.repo, req.build,
                          req.make_jobs or _cpus(), rr.timings, req.log)
        rr.builds = art.builds
        if why := nothing_to_boot(list(req.cells), art):
            # Said once; the cells are "error" (bisect: skip this commit).
            req.log(f"ERROR: {why}")
            rr.meta["nothing_built"] = why
            rr.cells.extend(results.error_cell(c, f"its kernel did not build: {why}")
                            for c in req.cells)
            return
        if art.trees:
            rr.meta["kernel_trees"] = art.trees
        expected_s = expected_seconds(list(req.cells), req.build, req.matrix)
        with _Timer(rr.timings, "boot"):
            boot_stage(req, art, expected_s, rr)
    return _reported(req, stages)


def nothing_to_boot(cells: list[Cell], art: Artifacts) -> str:
    """Why nothing can boot, when no selected cell has a kernel, else "":
    a configuration error in one's own tree (KERNEL_TREE=), a patch that
    does not apply, is one error before anything boots, not an error in
    every cell and every case of it (conftest.py runs no item then)."""
    if not cells or not all((c.arch, c.variant) in art.broken for c in cells):
        return ""
    why: dict[str, list[str]] = {}
    for key in dict.fromkeys((c.arch, c.variant) for c in cells):
        why.setdefault(art.broken[key], []).append("-".join(key))
    return "nothing to boot: no kernel of the selection was built\n" + "\n".join(
        f"{', '.join(kernels)}: {reason}" for reason, kernels in why.items())


def boot_only(matrix: Matrix, cells: list[Cell], manifest: Manifest, build: Path, *,
              shard: tuple[int, int] = (1, 1), jobs: int | None = None, accel: str = "auto",
              log: Log = print) -> RunResult:
    """boot and report cells (shard i of N) from an artifact directory."""
    req = RunRequest(matrix, cells, manifest.cases, build, jobs=jobs, accel=accel, log=log)

    def stages(rr: RunResult) -> None:
        rr.builds = manifest.artifacts.builds
        with _Timer(rr.timings, "boot"):
            boot_stage(req, manifest.artifacts, manifest.expected_s, rr)
    return _reported(req, stages, {"shard": {"index": shard[0], "count": shard[1]},
                                   "manifest": manifest.digest})


def _cpus() -> int:
    return os.cpu_count() or 1


def _reported(req: RunRequest, stages: Callable[[RunResult], None],
              meta: dict | None = None) -> RunResult:
    with exclusive(req.build, req.log), subproc.session():
        t_start = time.monotonic()
        run_id, run_dir = new_run_dir(req.build)
        rr = RunResult(run_id, run_dir, [], meta=dict(meta or {}),
                       selected=[c.id for c in req.cells])
        unreported(rr)
        try:
            stages(rr)
        except BaseException as e:
            # "terminated (SIGTERM)", "interrupted (Ctrl-C)", "BuildError: ..."
            rr.interrupted = (str(e) if isinstance(e, (subproc.Terminated, subproc.Stopped))
                              else "interrupted (Ctrl-C)" if isinstance(e, KeyboardInterrupt)
                              else f"{type(e).__name__}: {e}")
            raise
        finally:
            rr.timings["total"] = time.monotonic() - t_start
            report_stage(rr, list(req.cells), req.log)
        return rr


# ---- build ------------------------------------------------------------------

def build_stage(matrix: Matrix, cells: list[Cell], repo: Path, build: Path, make_jobs: int,
                timings: dict[str, float], log: Log) -> Artifacts:
    """The kernels of the cells' arches and variants, and each arch's
    selftests and initramfs.  What fails to build is recorded in broken:
    the cells that need it become "error" cells, the others still boot."""
    art = Artifacts()
    # The selftests are built against the default version's kselftest
    # headers, whatever kernels boot them: one initramfs per arch.
    # (A Debian image builds nothing: no tree of its version is needed.)
    versions = dict.fromkeys([kbuild.DEFAULT_VERSION, *(
        matrix.variants[c.variant].version for c in cells if c.variant in matrix.variants
        and matrix.variants[c.variant].image is None)])
    with _Timer(timings, "extract"):
        pristine = {v: kbuild.extract(build, matrix.sources[v].tarball(build), version=v)
                    for v in versions}
    keys.ensure(build)      # before the threads below, which all need it
    arches = list(dict.fromkeys(c.arch for c in cells))
    # Each kernel version takes its turns in a workspace of its own, so the
    # versions build side by side: a build leaves a core idle in its serial
    # steps (the vmlinux links, kallsyms, objtool, compressing the image),
    # which another version's build fills.  Within a version the kernels
    # take turns, arch by arch.  A tree of one's own may take 6.1's.  Each
    # flavor has its workspaces too, and builds beside the others.
    groups: dict[tuple[str, str], list[tuple[str, list[str]]]] = {}
    for arch_name in arches:
        for v in dict.fromkeys(c.variant for c in cells if c.arch == arch_name):
            variant = matrix.variants.get(v)
            if variant is not None and variant.image is not None:
                continue
            group = (variant.version if variant else kbuild.DEFAULT_VERSION,
                     variant.flavor if variant else flavors.PLAIN)
            turns = groups.setdefault(group, [])
            if not turns or turns[-1][0] != arch_name:
                turns.append((arch_name, []))
            turns[-1][1].append(v)

    kb = KernelBuilds(matrix, repo, build, make_jobs, pristine, timings, art, log)

    def build_group(turns: list[tuple[str, list[str]]]) -> None:
        for arch_name, variants in turns:
            _build_kernels(kb, arch_name, variants)

    with ThreadPoolExecutor(max_workers=max(len(groups), 1)) as pool:
        for f in [pool.submit(build_group, turns) for turns in groups.values()]:
            f.result()
    for arch_name in arches:
        variants = list(dict.fromkeys(c.variant for c in cells if c.arch == arch_name))
        arch = ARCHS[arch_name]
        try:
            with _Timer(timings, "selftests"):
                stage = initramfs.build_selftests(repo, pristine[kbuild.DEFAULT_VERSION], arch,
                                                  build, make_jobs)
            with _Timer(timings, "initramfs"):
                art.initrds[arch_name] = initramfs.build_initramfs(repo, build, arch, stage)
        except HarnessError as e:
            log(f"initramfs {arch_name}: FAILED\n{e}")
            for v in variants:
                art.broken.setdefault((arch_name, v), str(e))
            continue
        for v in variants:
            if matrix.variants[v].image is not None:
                with _Timer(timings, f"image:{arch_name}-{v}"):
                    _image_kernel(kb, arch_name, v)
    return art


@dataclass(frozen=True)
class KernelBuilds:
    """What the build stage's kernels share (_build_kernels(), _build_one(),
    _image_kernel()); they add to timings and art as they go."""
    matrix: Matrix
    repo: Path
    build: Path                 # the build directory
    make_jobs: int
    pristine: dict[str, Path]   # per kernel version, Debian's tree of it, unpacked
    timings: dict[str, float]
    art: Artifacts              # each kernel built, or why it cannot boot
    log: Log


def _image_kernel(kb: KernelBuilds, arch_name: str, v: str) -> None:
    """A Debian image as it ships: the package fetched (once) and unpacked,
    its vmlinuz, and the arch's initramfs with the package's modules
    appended.  Nothing is built.  The default version's tree's
    scripts/decode_stacktrace.sh decodes its splats with the -dbg vmlinux."""
    build, art, log = kb.build, kb.art, kb.log
    tree = kb.pristine[kbuild.DEFAULT_VERSION]
    arch, image = ARCHS[arch_name], kb.matrix.variants[v].image
    assert image is not None
    try:
        root = images.fetch(image, arch, build, say=lambda t: log(f"kernel {arch_name}-{v}: {t}"))
        kernel = images.unpacked(root)
        mods = images.modules_cpio(kernel, build / "initramfs" / f"modules-{arch_name}-{v}.cpio")
        initrd = images.guest_initrd(art.initrds[arch_name], mods,
                                     build / "initramfs" / f"{arch_name}-{v}.cpio")
    except HarnessError as e:
        log(f"kernel {arch_name}-{v}: FAILED\n{e}")
        art.broken[(arch_name, v)] = str(e)
        return
    log(f"kernel {arch_name}-{v}: {image.describe(arch)} as it ships ({kernel.release}), "
        "nothing built")

    def dbg() -> splats.Symbols:
        vmlinux = images.dbg_vmlinux(image, arch, build, kernel.release, say=log)
        return splats.Symbols(vmlinux, tree, vmlinux.parent, arch.cross_compile)

    art.kernels[(arch_name, v)] = BuiltKernel(
        kernel.vmlinuz, kernel.config,
        f"variant {v}: {image.describe(arch)} ({kernel.release}), as it ships\n",
        None, initrd, dbg)


def _build_kernels(kb: KernelBuilds, arch_name: str, variants: list[str]) -> None:
    """The kernels of variants for one arch, in turns of their workspaces."""
    matrix, build, art, pristine = kb.matrix, kb.build, kb.art, kb.pristine
    arch = ARCHS[arch_name]
    sources: dict[str, tuple[Path, tuple[Path, ...]]] = {}   # variant -> tree, patches
    for v in variants:
        variant = matrix.variants[v]
        try:
            patches = (kbuild.read_series(variant.series) if variant.series else ()) \
                + variant.patches
        except HarnessError as e:
            art.broken[(arch_name, v)] = str(e)
            continue
        sources[v] = (variant.tree or pristine[variant.version], patches)
    plan = kbuild.plan(build, arch, sources,
                       {v: fragments(kb.repo, arch_name, build, matrix.variants[v].flavor,
                                     matrix.source_of(v).config)
                        for v in sources},
                       {v: matrix.variants[v].version for v in sources},
                       {v: matrix.variants[v].flavor for v in sources})
    built: dict[Path, kbuild.Kernel | str] = {}   # out dir -> kernel, or why it failed
    for v, k in plan.items():
        if k.out not in built:
            # A tree of one's own is compared with its version's (ktree.overlay).
            built[k.out] = _build_one(kb, k)
        outcome = built[k.out]
        if isinstance(outcome, str):
            art.broken[(arch_name, v)] = outcome
            continue
        if v != k.variant:
            kbuild.link_alias(build, arch, v, outcome)
        tree = art.trees.get(k.variant)
        art.kernels[(arch_name, v)] = BuiltKernel(
            outcome.image, outcome.config,
            (f"variant {v}: {tree['path']} at {tree['describe']} ({tree['commit']})\n"
             if tree else f"variant {v}: {outcome.tree}\n")
            + "".join(f"{p}  sha256:{hashlib.sha256(p.read_bytes()).hexdigest()}\n"
                      for p in outcome.patches),
            splats.Symbols(outcome.vmlinux, outcome.tree, outcome.out, arch.cross_compile))


def _build_one(kb: KernelBuilds, k: kbuild.Kernel) -> kbuild.Kernel | str:
    """Builds k; the kernel, or why it did not build."""
    matrix, art, log = kb.matrix, kb.art, kb.log
    name = f"{k.arch.name}-{k.variant}"
    v = matrix.variants[k.variant]
    pristine = kb.pristine[v.version]
    overlay = None
    if v.tree is not None:
        if tree_id := ktree.identify(v.tree):
            art.trees[v.name] = tree_id.to_json()
            log(f"kernel {name}: {v.tree} at {tree_id.describe} ({tree_id.commit})")
        overlay, how = ktree.overlay(pristine, v.tree)
        log(f"kernel {name}: {how}")
    log(f"kernel {name}: building ({len(k.patches)} patch(es)) ...")
    t = time.monotonic()
    try:
        with _Timer(kb.timings, f"kernel:{name}"):
            # Only EXTRA_PATCHES may need fuzz: our own patches apply exactly.
            done, compiled = kbuild.build_kernel(
                kb.build, k, kb.make_jobs, workspace=in_workspace(v),
                lenient=v.patches if v.name == matrix_mod.EXTRA_VARIANT else (),
                overlay=overlay)
    except HarnessError as e:
        log(f"kernel {name}: FAILED\n{e}")
        return str(e)
    secs = time.monotonic() - t
    art.builds.append({"kernel": name, "compiled_objects": compiled, "seconds": round(secs, 1),
                       **({"tree": art.trees[v.name]} if v.name in art.trees else {})})
    log(f"kernel {name}: {compiled} object(s) compiled in {secs:.0f}s")
    return done


# ---- artifact directory -------------------------------------------------------

def expected_seconds(cells: list[Cell], build: Path,
                     matrix: Matrix | None = None) -> dict[str, float]:
    """Per cell id, how long its last full run on this build directory took
    (build/cell-times.json, see boot_stage), else a guess from its arch;
    off-custom cells take about twice as long (their tests wait for
    records that never come), and a flavor's cells its time_factor."""
    known = timing.load_times(build / "cell-times.json")

    def factor(c: Cell) -> float:
        v = matrix.variants.get(c.variant) if matrix else None
        return flavors.FLAVORS[v.flavor].time_factor if v else 1

    return {c.id: known.get(c.id, _GUESS_S.get(c.arch, 30.0) * factor(c)
                            * (2 if (c.mode, c.policy) == ("off", "custom") else 1))
            for c in cells}


def export(art: Artifacts, cells: list[Cell], expected: tuple[Case, ...], matrix: Matrix,
           expected_s: dict[str, float], out: Path, part: str = "") -> Path:
    """Copies what booting cells needs into out (kernels/<arch>-<variant>/:
    the image, its .config, and its vmlinux and the tree's decoding scripts
    so that splats get file:line on a machine without the build;
    initramfs/<arch>.cpio) and writes out/manifest.json: the cells, their
    expected times, the test cases, and paths relative to out, so the
    directory can move to another machine.  With part (an arch, say, built
    on a machine of its own), manifest-<part>.json: the parts' directories
    copied into one are one artifact directory (load_manifest)."""
    out.mkdir(parents=True, exist_ok=True)
    kernels, initrds, broken = {}, {}, {}
    for (arch, variant), k in art.kernels.items():
        d = out / "kernels" / f"{arch}-{variant}"
        d.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(k.image, d / k.image.name)
        shutil.copyfile(k.config, d / "config")
        kernels[f"{arch}-{variant}"] = {"image": str((d / k.image.name).relative_to(out)),
                                        "config": str((d / "config").relative_to(out)),
                                        "patches": k.patches}
        if k.initrd:
            shutil.copyfile(k.initrd, d / "initrd.cpio")
            kernels[f"{arch}-{variant}"]["initrd"] = str((d / "initrd.cpio").relative_to(out))
        sym = k.symbols
        if sym and sym.vmlinux.is_file() and all(p.is_file() for p in sym.scripts):
            shutil.copyfile(sym.vmlinux, d / "vmlinux")
            (d / "scripts").mkdir(exist_ok=True)
            for script in sym.scripts:
                shutil.copy(script, d / "scripts" / script.name)     # with its x bit
            kernels[f"{arch}-{variant}"]["symbols"] = {
                "vmlinux": str((d / "vmlinux").relative_to(out)),
                "tree": str(d.relative_to(out)),
                "basepath": sym.source_root}
    for arch, initrd in art.initrds.items():
        dest = out / "initramfs" / initrd.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(initrd, dest)
        initrds[arch] = str(dest.relative_to(out))
    for (arch, variant), why in art.broken.items():
        broken[f"{arch}-{variant}"] = why
    doc = {"format": MANIFEST_FORMAT,
           "matrix_sha256": hashlib.sha256(matrix.path.read_bytes()).hexdigest(),
           "timeout": matrix.timeout, "boot_timeout": matrix.boot_timeout,
           "memory": matrix.memory,
           "cells": [{**{k: getattr(c, k) for k in ("arch", "variant", "mode", "policy",
                                                    "hash", "setattr")},
                      "id": c.id, "expected_s": round(expected_s[c.id], 1)} for c in cells],
           "cases": [c.id for c in expected],
           "kernels": kernels, "initramfs": initrds, "broken": broken, "builds": art.builds}
    path = out / (f"manifest-{part}.json" if part else MANIFEST)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    tmp.replace(path)
    return path


@dataclass(frozen=True)
class Manifest:
    path: Path
    cells: tuple[Cell, ...]
    expected_s: dict[str, float]
    cases: tuple[Case, ...]
    artifacts: Artifacts
    matrix_sha256: str
    timeout: int
    memory: int
    digest: str = ""    # sha256 of manifest.json: which build a shard's results are of
    boot_timeout: int = matrix_mod.DEFAULT_BOOT_TIMEOUT


def load_manifest(path: Path) -> Manifest:
    """A manifest written by export(), with its paths made absolute; or, for
    an artifact directory, all its manifest*.json parts as one."""
    if not path.is_dir():
        return _load_part(path)
    parts = [_load_part(p) for p in sorted(path.glob("manifest*.json"))]
    if not parts:
        raise ConfigError(f"{path}: no manifest*.json in this directory; make one with "
                          "'python3 -m harness build --out DIR'")
    first = parts[0]
    for p in parts[1:]:
        for what in ("matrix_sha256", "cases", "timeout", "boot_timeout", "memory"):
            if getattr(p, what) != getattr(first, what):
                raise ConfigError(f"{p.path} and {first.path} differ in {what}: build "
                                  "every part from the same commit and matrix")
    cells: dict[Cell, Path] = {}
    art = Artifacts()
    for p in parts:
        for c in p.cells:
            if c in cells:
                raise ConfigError(f"cell {c.id} is in both {cells[c]} and {p.path}: "
                                  "give each part other arches or variants")
            cells[c] = p.path
        art.kernels |= p.artifacts.kernels
        art.initrds |= p.artifacts.initrds
        art.broken |= p.artifacts.broken
        art.builds += p.artifacts.builds
    return Manifest(path, tuple(cells), {k: v for p in parts for k, v in p.expected_s.items()},
                    first.cases, art, first.matrix_sha256, first.timeout, first.memory,
                    hashlib.sha256("".join(p.digest for p in parts).encode()).hexdigest(),
                    first.boot_timeout)


def _load_part(path: Path) -> Manifest:
    where = str(path)
    doc = read_json(path, ConfigError, "make the manifest with "
                    "'python3 -m harness build --out DIR'")
    if not isinstance(doc, dict) or doc.get("format") != MANIFEST_FORMAT:
        raise ConfigError(f"{where}: format {doc.get('format') if isinstance(doc, dict) else None!r}"
                          f", expected {MANIFEST_FORMAT}: rebuild it with this harness")
    base = path.parent
    try:
        cells = tuple(Cell(c["arch"], c["variant"], c["mode"], c["policy"], c["hash"],
                           c["setattr"]) for c in doc["cells"])
        art = Artifacts(builds=list(doc.get("builds", [])))
        for name, k in doc["kernels"].items():
            arch, variant = name.split("-", 1)
            sym = k.get("symbols")
            art.kernels[(arch, variant)] = BuiltKernel(
                base / k["image"], base / k["config"], k["patches"],
                splats.Symbols(base / sym["vmlinux"], base / sym["tree"], base / sym["tree"],
                               ARCHS[arch].cross_compile if arch in ARCHS else "",
                               sym["basepath"]) if sym else None,
                base / k["initrd"] if "initrd" in k else None)
        art.initrds = {a: base / p for a, p in doc["initramfs"].items()}
        for name, why in doc["broken"].items():
            arch, variant = name.split("-", 1)
            art.broken[(arch, variant)] = why
        cases = tuple(Case(*c.split("/", 1)) for c in doc["cases"])
        m = Manifest(path, cells, {c["id"]: float(c["expected_s"]) for c in doc["cells"]},
                     cases, art, doc["matrix_sha256"],
                     matrix_mod.positive_int(doc["timeout"], "timeout", ValueError),
                     matrix_mod.positive_int(doc["memory"], "memory", ValueError),
                     hashlib.sha256(path.read_bytes()).hexdigest(),
                     # A manifest from before boot_timeout: the default.
                     matrix_mod.positive_int(doc.get("boot_timeout", matrix_mod.DEFAULT_BOOT_TIMEOUT),
                                             "boot_timeout", ValueError))
    except (KeyError, TypeError, ValueError) as e:
        raise ConfigError(f"{where}: damaged manifest ({type(e).__name__}: {e}); "
                          "rebuild it with 'python3 -m harness build --out DIR'") from None
    missing = [p for p in (*(k.image for k in art.kernels.values()), *art.initrds.values(),
                           *(k.initrd for k in art.kernels.values() if k.initrd),
                           *(f for k in art.kernels.values() if k.symbols
                             for f in (k.symbols.vmlinux, *k.symbols.scripts)))
               if not p.is_file()]
    if missing:
        raise ConfigError(f"{where}: {missing[0]} is missing: copy the whole artifact "
                          "directory, not only the manifest")
    return m


# ---- boot -------------------------------------------------------------------

def _choose_accels(art: Artifacts, arches: list[str], build: Path, accel: str,
                   timings: dict[str, float], log: Log) -> dict[str, qemu.AccelChoice]:
    accels = {}
    for arch in arches:
        some = next((k for (a, _), k in art.kernels.items() if a == arch), None)
        if some is None or arch not in art.initrds:
            continue
        try:
            with _Timer(timings, "accel"):
                accels[arch] = qemu.choose_accel(ARCHS[arch], some.image, art.initrds[arch],
                                                 build / "accel.json", accel)
            log(f"accel {arch}: {accels[arch].accel} ({accels[arch].reason})")
        except HarnessError as e:
            log(f"accel {arch}: FAILED: {e}")
            for key in art.kernels:
                if key[0] == arch:
                    art.broken.setdefault(key, str(e))
    return accels


class Slots:
    """The guest CPUs booted at once (JOBS), which the cells' threads take
    and give back.  A guest of several vCPUs (the debug flavor) takes as
    many slots, so that its vCPUs really run at the same time on the
    host's cores, which is what its races need.  Cells take theirs in the
    order of their turns: a cell waiting for two slots is not overtaken by
    the one-slot cells after it, which would keep it waiting to the end.
    Once stopped (Ctrl-C, an error), no waiting cell gets any."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self._changed = threading.Condition()
        self._free = jobs
        self._waiting: list[int] = []     # the turns of the cells waiting
        self._stopping = False

    @property
    def waiting(self) -> tuple[int, ...]:
        """The turns of the cells waiting for their slots."""
        with self._changed:
            return tuple(self._waiting)

    def need(self, cpus: int) -> int:
        """The slots a guest of cpus vCPUs takes: all of them at most."""
        return min(self.jobs, cpus)

    def take(self, turn: int, need: int) -> bool:
        """Waits until no earlier turn waits and need slots are free, and
        takes them; False, having taken none, if the run stopped first."""
        with self._changed:
            self._waiting.append(turn)
            self._changed.wait_for(lambda: self._stopping or (
                self._free >= need and min(self._waiting) == turn))
            self._waiting.remove(turn)
            if not self._stopping:
                self._free -= need
            self._changed.notify_all()
            return not self._stopping

    def give_back(self, need: int) -> None:
        with self._changed:
            self._free += need
            self._changed.notify_all()

    def stop(self) -> None:
        with self._changed:
            self._stopping = True
            self._changed.notify_all()


def boot_stage(req: RunRequest, art: Artifacts, expected_s: Mapping[str, float],
               rr: RunResult) -> list[CellResult]:
    """Boots req's cells from what art holds, req.guest_cpus guest CPUs at a
    time, longest expected (expected_s) first, appending each verdict to
    rr.cells (and writing it to <run_dir>/<cell>/result.json) as soon as
    it is known.  One cell's trouble, expected (a HarnessError) or not,
    makes that cell an "error" and the others still run.  rr.accels gets
    the accelerator chosen per arch, rr.timings the time it took."""
    matrix, cells, build, jobs, log = req.matrix, req.cells, req.build, req.guest_cpus, req.log
    run_dir, done, accels = rr.run_dir, rr.cells, rr.accels
    accels.update(_choose_accels(art, list(dict.fromkeys(c.arch for c in cells)), build,
                                 req.accel, rr.timings, log))
    # Longest first: the last guests to finish are then short ones.
    order = sorted(cells, key=lambda c: (-expected_s.get(c.id, 0.0), c.id))
    lock = threading.Lock()
    slots = Slots(jobs)

    def one(turn: int, cell: Cell) -> CellResult:
        key = (cell.arch, cell.variant)
        if key in art.broken or cell.arch not in accels or key not in art.kernels:
            why = art.broken.get(key, f"no kernel or initramfs for {cell.arch}-{cell.variant}")
            return results.error_cell(cell, why)
        variant = matrix.variants.get(cell.variant)
        need = slots.need(flavors.FLAVORS[variant.flavor].cpus if variant else 1)
        if not slots.take(turn, need):
            return results.error_cell(cell, "not booted: the run was stopped")
        try:
            kernel = art.kernels[key]
            return _boot_cell(CellBoot(matrix, cell, kernel,
                                       kernel.initrd or art.initrds[cell.arch],
                                       accels[cell.arch].accel, run_dir / cell.id, build,
                                       req.profile_hz),
                              req.expected, req.programs.get(cell.id, ()))
        except Exception as e:   # noqa: BLE001 - the cell is an error, the run goes on
            return results.error_cell(cell, f"{type(e).__name__}: {e}")
        except BaseException:
            # KeyboardInterrupt, SystemExit: the run stops, before the
            # slots this cell frees start another.
            slots.stop()
            raise
        finally:
            slots.give_back(need)

    def finished(result: CellResult) -> None:
        out = run_dir / result.cell.id
        out.mkdir(parents=True, exist_ok=True)
        tmp = out / "result.json.tmp"
        tmp.write_text(json.dumps(result.to_json(), indent=1) + "\n")
        tmp.replace(out / "result.json")
        with lock:
            done.append(result)
            n = result.counts()
            log(f"[{len(done):>3}/{len(cells)}] {result.cell.id:<40} {result.status:<7} "
                f"{n['pass']} passed, {n['fail']} failed, {n['skip']} skipped"
                + "".join(f", {n[k]} {k}" for k in (Status.XFAIL, Status.XPASS) if n[k])
                + f" ({result.duration_s:.1f}s"
                + (f", {result.boots} boots)" if result.boots > 1 else ")")
                + (f"  {result.reason.splitlines()[0]}" if result.reason else ""))

    log(f"booting {len(cells)} cell(s), {jobs} at a time")
    pool = ThreadPoolExecutor(max_workers=jobs)
    pending: set[Future] = {pool.submit(one, turn, c) for turn, c in enumerate(order)}
    try:
        while pending:
            ready, pending = wait(pending, return_when=FIRST_COMPLETED)
            # Keep every finished cell before raising what stopped another.
            for f in ready:
                if f.exception() is None:
                    finished(f.result())
            for f in ready:
                if f.exception() is not None:
                    raise f.exception()
    finally:
        # On Ctrl-C the guests got the SIGINT too; boot no further cells,
        # not even those waiting for a slot.
        if pending:
            slots.stop()
        pool.shutdown(wait=not pending, cancel_futures=True)
        # What the next run's order (and a manifest's shards) go by: full runs only.
        timing.save_times(build / "cell-times.json",
                          {r.cell.id: r.duration_s for r in done
                           if r.status in (Status.PASS, Status.FAIL)
                           and r.cell.id not in req.programs})
    return done


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


@dataclass(frozen=True)
class CellBoot:
    """One cell on its kernel: what each of its boots takes (_boot_cell(),
    _boot_once())."""
    matrix: Matrix
    cell: Cell
    kernel: BuiltKernel
    initrd: Path
    accel: str
    out: Path               # the cell's directory of the run
    build: Path             # the build directory: its scratch disks
    profile_hz: int = 0     # see RunRequest

    @property
    def variant(self) -> matrix_mod.Variant | None:
        return self.matrix.variants.get(self.cell.variant)

    @property
    def flavor(self) -> flavors.Flavor:
        variant = self.variant
        return flavors.FLAVORS[variant.flavor if variant else flavors.PLAIN]


def _boot_cell(cb: CellBoot, expected: tuple[Case, ...],
               programs: tuple[str, ...] = ()) -> CellResult:
    """Boots the cell, then again (continuation boots, at most
    results.CONTINUATION_BOOTS) with only the programs that ran after
    lockdep went off or the kernel panicked, until each ran with lockdep
    on: every distinct splat costs one boot.  Boot n keeps console-n.log
    and qemu-cmdline-n.sh.  programs: the only ones to run (default: all
    of expected's)."""
    cell, kernel, accel, out = cb.cell, cb.kernel, cb.accel, cb.out
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(kernel.config, out / "kernel.config")
    (out / "patches.txt").write_text(kernel.patches)
    variant = cb.variant

    def known(name: str) -> str | None:
        return variant.expected_failure(cell, name) if variant else None

    def known_splat(signature: str, at_boot: bool) -> str | None:
        return variant.known_splat(cell, signature, at_boot) if variant else None

    def expected_skip(name: str) -> str | None:
        return variant.expected_skip(cell, name) if variant else None

    if programs:
        # Only their cases are expected.
        expected = tuple(c for c in expected if c.suite in programs)
    every = tuple(dict.fromkeys(c.suite for c in expected))
    boots = [_boot_once(cb, every, 1, select=bool(programs))]
    # A Debian image is judged by what its configuration has: no lockdep.
    coverage = (flavors.SHIPPED if variant and variant.image else cb.flavor).missing_coverage
    ctx = results.VerdictContext(cell, expected, accel, out, known, known_splat, coverage,
                                 expected_skip)
    result = results.evaluate_boots(ctx, boots)
    while result.rerun:
        boots.append(_boot_once(cb, result.rerun, len(boots) + 1, select=True))
        result = results.evaluate_boots(ctx, boots)
    symbols = kernel.symbols
    if result.splats and symbols is None and kernel.dbg is not None:
        try:
            symbols = kernel.dbg()
        except HarnessError as e:     # the splats are kept, undecoded
            (out / "decode.log").write_text(f"no debug symbols: {e}\n")
    splats.save(out, result.splats, symbols)
    return result


# What the guest cannot read from the kernel it runs: without
# CONFIG_IMA_WRITE_POLICY the builtin appraise_tcb policy has no "appraise
# func=POLICY_CHECK" rule, so nothing ORs IMA_APPRAISE_POLICY into
# ima_appraise and ima_appraise=off is off under it too (Debian's kernels;
# selftests cell.h, cell_appraises()).  Without CONFIG_IMA_READ_POLICY the
# guest cannot read the policy to see it.
NO_POLICY_CHECK = "ima_selftest.policy_check=0"


def kernel_facts(config: Path) -> str:
    """The command line that tells the guest what its kernel's
    configuration decides and the guest cannot see (NO_POLICY_CHECK)."""
    try:
        text = config.read_text(errors="replace")
    except FileNotFoundError:
        # A stand-in kernel of a unit test; a real one always has its
        # .config (the cell's kernel.config is copied from it first).
        return ""
    return "" if re.search(r"^CONFIG_IMA_WRITE_POLICY=y$", text, re.M) else NO_POLICY_CHECK


def _boot_once(cb: CellBoot, programs: tuple[str, ...], n: int,
               select: bool) -> results.Boot:
    """Boot n of the cell, running programs (all of them unless select);
    profiled into profile[-n].txt at cb.profile_hz if that is not 0."""
    matrix, cell, kernel, out, profile_hz = cb.matrix, cb.cell, cb.kernel, cb.out, cb.profile_hz
    disk = cb.build / "scratch" / f"{cell.id}.img"
    # A UUID derived from the cell id: the same cell gets the same fsuuid=
    # rules run after run, which keeps logs comparable.
    fsuuid = str(uuidlib.UUID(bytes=hashlib.sha256(cell.id.encode()).digest()[:16], version=4))
    qemu.make_scratch_disk(disk, fsuuid)
    variant, flavor = cb.variant, cb.flavor
    cmdline = " ".join(filter(None, (qemu.HARNESS_MARKER, flavor.cmdline(cell.arch),
                                     images.boot_args(cell.hash)
                                     if variant and variant.image else "",
                                     kernel_facts(kernel.config), cell.cmdline(),
                                     qemu.MAKE_RUNNER if matrix_mod.make_path(matrix, cell)
                                     else "")))
    if select:
        # The guest's init runs only these, in this order (initramfs/init).
        cmdline += f" {qemu.PROGRAMS_PARAM}={','.join(programs)}"
    req = qemu.BootRequest(ARCHS[cell.arch], kernel.image, cb.initrd, disk, cmdline, cb.accel,
                           matrix.memory, matrix.timeout * flavor.timeout_factor, flavor.cpus,
                           ready=ktap.began,
                           ready_timeout_s=matrix.boot_timeout * flavor.timeout_factor,
                           dump=disk.with_suffix(".kmsg"))
    suffix = "" if n == 1 else f"-{n}"
    (out / f"qemu-cmdline{suffix}.sh").write_text(
        "#!/bin/sh\n# Boots this cell again by hand.  The kernel log's dump at the end goes\n"
        f"# to {req.dump} (its text ends at the first NUL byte).\n"
        + qemu.shell_quoted(qemu.command(req)) + "\n")
    console = f"console{suffix}.log"

    def booted() -> qemu.BootOutcome:
        if not profile_hz:
            return qemu.boot(req, out / console)
        return _boot_profiled(req, out / console, profile_hz, kernel,
                              f"{cell.id}{f' (boot {n})' if n > 1 else ''}",
                              out / f"profile{suffix}.txt")

    outcome = booted()
    if results.clock_ahead(outcome):
        # A guest clock broken by the host's load at its calibration
        # (results.clock_ahead): boot once more on a fresh disk, keeping
        # the first console; a second broken clock fails the cell.
        (out / console).replace(out / f"console{suffix}-clock.log")
        for kept in ("txt", "json"):
            with contextlib.suppress(FileNotFoundError):
                (out / f"profile{suffix}.{kept}").replace(out / f"profile{suffix}-clock.{kept}")
        qemu.make_scratch_disk(disk, fsuuid)
        outcome = booted()
    return results.Boot(outcome, programs, console)


def _boot_profiled(req: qemu.BootRequest, console: Path, hz: int, kernel: BuiltKernel,
                   title: str, path: Path) -> qemu.BootOutcome:
    """qemu.boot() with a gdbstub socket that a profile.Sampler samples
    through; the profile goes to path.  A profile that cannot be taken or
    written says why in its file, and never turns the cell into an error."""
    # A unix socket's path has a length limit (108 bytes) that a build
    # directory's may exceed: the socket lives in a directory of its own.
    with tempfile.TemporaryDirectory(prefix="ima-gdb-") as tmp:
        req = dataclasses.replace(req, gdb_socket=Path(tmp) / "gdb.sock")
        sampler = profile.Sampler(req.gdb_socket, req.arch, hz, title)
        sampler.start()
        try:
            outcome = qemu.boot(req, console)
        finally:
            sampler.stop()
    try:
        profile.write(path, title, sampler, kernel.symbols)
    except Exception as e:  # noqa: BLE001 - a view, whatever went wrong
        with contextlib.suppress(OSError):
            path.write_text(f"no profile of {title}: {type(e).__name__}: {e}\n")
    return outcome


# ---- report -----------------------------------------------------------------

# What results.json says of a run until its report replaces it: all a run
# killed outright (SIGKILL, a lost machine) leaves of its own, beside the
# result.json of each cell that finished.
UNREPORTED = "killed before it reported (or still running)"


def unreported(rr: RunResult) -> None:
    """Writes, before anything boots, the results.json and junit.xml of a
    run that has no result yet: interrupted, every selected cell not run.
    report_stage() replaces them; a run killed before that leaves these,
    and merge names its shard and its cells."""
    results.write_json(rr.run_dir / "results.json", rr.run_id, [], {},
                       {**rr.meta, "interrupted": UNREPORTED, "not_run": list(rr.selected)})
    results.write_junit(rr.run_dir / "junit.xml", [], rr.selected, UNREPORTED)


def report_stage(rr: RunResult, cells: list[Cell], log: Log) -> None:
    """results.json, junit.xml and summary.txt of the cells that finished;
    a run that stopped early, or left a selected cell without a result,
    says so and lists what did not run."""
    order = {c: i for i, c in enumerate(cells)}
    rr.cells.sort(key=lambda r: order.get(r.cell, len(order)))
    ran = {r.cell.id for r in rr.cells}
    missing = [c.id for c in cells if c.id not in ran]
    extra: dict = {"builds": rr.builds,
                   "accel": {a: {"accel": c.accel, "reason": c.reason}
                             for a, c in rr.accels.items()}, **rr.meta}
    if rr.interrupted:
        extra["interrupted"] = rr.interrupted
    if rr.interrupted or missing:
        extra["not_run"] = missing
    results.write_json(rr.run_dir / "results.json", rr.run_id, rr.cells, rr.timings, extra)
    results.write_junit(rr.run_dir / "junit.xml", rr.cells, missing,
                        rr.interrupted or "the run ended without it")
    summary = results.summary_text(rr.cells) if rr.cells else "no cell finished\n"
    if rr.interrupted:
        summary += (f"the run stopped early: {rr.interrupted}; "
                    f"{len(missing)} cell(s) did not run"
                    + (f": {', '.join(missing)}" if missing else "") + "\n")
    elif missing:
        summary += results.no_result_line(missing)
    (rr.run_dir / "summary.txt").write_text(summary)
    try:
        report.write(rr.run_dir)
    except (HarnessError, OSError) as e:    # the page is a view: the run's files stand
        log(f"report.html not written: {e}")
    try:
        for f in profile.write_run(rr.run_dir, {r.cell.id: r.cell.arch for r in rr.cells}):
            log(f"profile: {f}")
    except (HarnessError, OSError) as e:    # a view too
        log(f"the run's profiles not written: {e}")
    if rr.interrupted:
        log(f"{rr.interrupted}: reports of the {len(rr.cells)} finished cell(s) "
            f"in {rr.run_dir}")
    elif missing:
        log(results.no_result_line(missing).rstrip("\n"))
