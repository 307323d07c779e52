"""Command-line entry points that are not the pytest matrix.

    /usr/bin/python3 -m harness selftests [ARCH ...]

builds the guest's /selftests tree for each arch (default: all) under
build/selftests/<arch>/, ready to copy into a guest of your own.

    /usr/bin/python3 -m harness mutants [--archs A,B] [NAME ...]

boots every known-bad patch of kernel-patches/regressions/ on top of the
series, in the cells of matrix.yaml's mutants: section (x86_64 unless told
otherwise), and fails unless each is caught (harness/mutants.py).  NAME is
a mutant's variant name (m0001-...) or its patch file name.

    /usr/bin/python3 -m harness report RUN_DIR [--baseline RUN_OR_RESULTS_JSON]

writes RUN_DIR/report.html again from RUN_DIR/results.json (harness/report.py),
with a section on what changed since the baseline if one is given.

    /usr/bin/python3 -m harness scan LOG [--variant V] [--vmlinux FILE] [--json]

finds the kernel splats of any console log or dmesg, names them by
signature, matches them against a variant's known_splats and decodes their
traces (harness/scan.py); exits 1 if one is not known.

    /usr/bin/python3 -m harness diff [--json] RUN_A RUN_B

says what changed from run A (or a baseline results.json) to run B: new
failures and splats, fixed cases, cells that appeared or vanished
(harness/rundiff.py); exits 1 if anything is new.

    /usr/bin/python3 -m harness merge --out DIR SHARD_DIR ...

merges the run directories of shards into DIR as one run (harness/merge.py);
exits 2 if the shards do not make one run, or if a shard stopped early or
left a selected cell without a result (merged all the same, naming them:
no verdict), else as that run would: 1 if a cell failed, 2 if a cell could
not be built or booted.

    /usr/bin/python3 -m harness build --out DIR [--tier T] [--archs A,B] ...
    /usr/bin/python3 -m harness boot --manifest DIR/manifest.json [--shard i/N]

are the stages of `make run` for a CI engine: build the kernels, selftests
and initramfs of the chosen cells into DIR (relocatable: manifest.json
names everything relative to it), then boot one shard of its cells per
machine (the same partition on every machine: longest expected first,
balanced), each writing build/results/<run-id>/ as `make run` does.

    /usr/bin/python3 -m harness bisect-run --splat TEXT | --test CASE [--archs ...] [-k EXPR]

builds the kernel tree in the current directory (or --kernel-tree) as the
variant "local", boots the chosen cells and exits as `git bisect run`
wants: 0 good, 1 bad, 125 cannot tell, 128 stop (harness/bisect.py);
scripts/bisect-run is this command for `git bisect run`.

Exit status: 0 every cell passed, 1 a test failed (a cell failed, timed
out or panicked), 2 an infrastructure error (bad input, a kernel that did
not build, a guest that could not start, an interrupted run).
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import sys
from pathlib import Path

from . import (bisect, cases, initramfs, kbuild, matrix as matrix_mod, merge, mutants, report, results,
               rundiff, runner, scan, subproc)
from .archs import ARCHS
from .errors import HarnessError, count_arg
from .runner import EXIT_INFRASTRUCTURE

_AXES = ("archs", "modes", "policies", "hashes", "setattr", "variants")

REPO = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> int:
    if argv[:1] == ["bisect-run"]:
        # Its own parser: its exit statuses are git bisect run's.
        return bisect.main(argv[1:], REPO)
    parser = argparse.ArgumentParser(prog="python3 -m harness")
    sub = parser.add_subparsers(dest="command", required=True)
    st = sub.add_parser("selftests", help="build build/selftests/<arch>/")
    st.add_argument("archs", nargs="*", metavar="ARCH", help=f"one of {', '.join(ARCHS)}")
    st.add_argument("--build-dir", type=Path, default=REPO / "build")
    for command in ("mutants", "regressions"):
        rg = sub.add_parser(command, help="check every known-bad patch is caught")
        rg.add_argument("names", nargs="*", metavar="NAME",
                        help="mutant variant names or patch file names (default: all)")
        rg.add_argument("--archs", default=None,
                        help="comma-separated (default: the mutants: section's)")
        rg.add_argument("--jobs", type=count_arg("JOBS"), default=None,
                        help="guest CPUs at once")
        rg.add_argument("--version", default=None,
                        help="the kernel version whose mutants to run (matrix.yaml "
                             "mutants: versions:; default: that of mutants: base:)")
        rg.add_argument("--programs", default=None,
                        help="comma-separated test programs, the only ones booted "
                             "(default: all); Caught-by: trailers naming others are "
                             "not judged")
        rg.add_argument("--repeat", type=int, default=1,
                        help="boot the cells this many times, one run after another, "
                             "and say in how many each mutant was caught")
        rg.add_argument("--matrix", type=Path, default=REPO / "matrix.yaml")
        rg.add_argument("--build-dir", type=Path, default=REPO / "build")
    rp = sub.add_parser("report", help="write RUN_DIR/report.html from its results.json")
    rp.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    rp.add_argument("--baseline", type=Path, default=None, help="a run directory or "
                    "results.json: add a section on what changed since (harness/rundiff.py)")
    mg = sub.add_parser("merge", help="merge shards' run directories into one run")
    mg.add_argument("shards", nargs="+", type=Path, metavar="SHARD_DIR")
    mg.add_argument("--out", type=Path, required=True, help="a new directory")
    mg.add_argument("--matrix", type=Path, default=REPO / "matrix.yaml",
                    help="whose cell order the merged run has")
    bd = sub.add_parser("build", help="build stage: kernels, selftests, initramfs into "
                        "an artifact directory with a manifest.json")
    bd.add_argument("--out", type=Path, required=True, help="the artifact directory")
    bd.add_argument("--part", default="", help="write manifest-PART.json (one machine's "
                    "share of the build, e.g. its arch); boot joins every part in the directory")
    bd.add_argument("--tier", default="full", choices=matrix_mod.TIERS)
    for axis in _AXES:
        bd.add_argument(f"--{axis}", default=None, help="comma-separated, replacing the matrix's")
    bd.add_argument("--make-jobs", type=count_arg("MAKE_JOBS"), default=None,
                    help="make -j (default: CPUs)")
    bd.add_argument("--matrix", type=Path, default=REPO / "matrix.yaml")
    bd.add_argument("--build-dir", type=Path, default=REPO / "build")
    bt = sub.add_parser("boot", help="boot stage: one shard of a manifest's cells")
    bt.add_argument("--manifest", type=Path, required=True,
                    help="a manifest.json, or an artifact directory (all its manifest*.json)")
    bt.add_argument("--shard", default="1/1", help="i/N: boot the i-th of N shards")
    bt.add_argument("--jobs", type=count_arg("JOBS"), default=None,
                    help="guest CPUs at once (default: CPUs)")
    bt.add_argument("--accel", default="auto", choices=("auto", "tcg", "kvm"))
    bt.add_argument("--matrix", type=Path, default=REPO / "matrix.yaml")
    bt.add_argument("--build-dir", type=Path, default=REPO / "build",
                    help="where results/ and the scratch disks go")
    sc = sub.add_parser("scan", help="find, name and match the kernel splats of any "
                        "console log or dmesg (exit 1: a splat not known)")
    scan.parser_args(sc)
    sc.add_argument("--matrix", type=Path, default=REPO / "matrix.yaml")
    df = sub.add_parser("diff", help="what changed between two runs, or a run and a baseline "
                        "results.json (exit 1: anything new)")
    df.add_argument("run_a", type=Path, metavar="RUN_A", help="the baseline: a run directory "
                    "or a results.json")
    df.add_argument("run_b", type=Path, metavar="RUN_B", help="the run judged against it")
    df.add_argument("--json", action="store_true", help="one JSON document")
    args = parser.parse_args(argv)
    if args.command == "selftests":
        unknown = [a for a in args.archs if a not in ARCHS]
        if unknown:
            parser.error(f"unknown arch {unknown[0]!r}; allowed: {', '.join(ARCHS)}")
    command = {"mutants": _mutants, "regressions": _mutants, "report": _report,
               "merge": _merge, "build": _build, "boot": _boot,
               "selftests": _selftests, "scan": scan.main, "diff": rundiff.main}[args.command]
    # Problems are found deep down and reported once, here.
    try:
        return command(args)
    except HarnessError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_INFRASTRUCTURE


def _selftests(args: argparse.Namespace) -> int:
    build = args.build_dir.resolve()
    tree = kbuild.extract(build)
    for name in args.archs or ARCHS:
        stage = initramfs.build_selftests(REPO, tree, ARCHS[name], build, jobs=2)
        print(f"{name}: {stage}")
    return 0


def _report(args: argparse.Namespace) -> int:
    print(report.write(args.run_dir, args.baseline))
    return 0


def _merge(args: argparse.Namespace) -> int:
    incomplete: merge.IncompleteRun | None = None
    try:
        cells = merge.merge(args.shards, args.out, matrix_mod.load(args.matrix))
    except merge.IncompleteRun as e:    # merged all the same: what finished can be read
        cells, incomplete = e.cells, e
    print((args.out / "summary.txt").read_text(), end="")
    print(f"report: {args.out / 'report.html'}")
    if incomplete:
        print(f"error: {incomplete}", file=sys.stderr)
        return EXIT_INFRASTRUCTURE
    # As that run would: 2 if a cell could not be built or booted.
    return runner.exit_status(cells)


def _build(args: argparse.Namespace) -> int:
    m = matrix_mod.load(args.matrix, **{a: getattr(args, a) for a in _AXES})
    cells = list(matrix_mod.tier_cells(m, args.tier))
    expected = cases.expected_cases(REPO / "selftests")
    build = args.build_dir.resolve()
    timings: dict[str, float] = {}
    with runner.exclusive(build, print), subproc.session():
        art = runner.build_stage(m, cells, REPO, build, args.make_jobs or os.cpu_count() or 1,
                                 timings, print)
        path = runner.export(art, cells, expected, m,
                             runner.expected_seconds(cells, build, m),
                             args.out.resolve(), args.part)
    print(f"{len(cells)} cell(s), {len(art.kernels)} kernel(s), "
          f"{len(art.broken)} broken: {path}")
    return EXIT_INFRASTRUCTURE if art.broken else 0


def _boot(args: argparse.Namespace) -> int:
    i, n = matrix_mod.parse_shard(args.shard)
    man = runner.load_manifest(args.manifest.resolve())
    m = matrix_mod.load(args.matrix)
    if hashlib.sha256(args.matrix.read_bytes()).hexdigest() != man.matrix_sha256:
        # known_failures come from the matrix file: another one judges otherwise.
        raise HarnessError(f"{args.matrix} differs from the one {man.path} was built "
                           "with: boot from the same commit as the build stage")
    # The build's selection (make_path() goes by it), limits and memory.
    m = dataclasses.replace(matrix_mod.narrowed(m, man.cells), timeout=man.timeout,
                            boot_timeout=man.boot_timeout, memory=man.memory)
    shard = matrix_mod.partition(man.cells, n, man.expected_s)[i - 1]
    print(f"shard {i}/{n}: {len(shard)} of {len(man.cells)} cell(s), "
          f"{sum(man.expected_s[c.id] for c in shard):.0f}s expected")
    run = runner.boot_only(m, shard, man, args.build_dir.resolve(), shard=(i, n),
                           jobs=args.jobs, accel=args.accel)
    print(results.summary_table(run.cells) if run.cells else "no cell in this shard")
    print(f"results: {run.run_dir}")
    return run.exit_status


def _mutants(args: argparse.Namespace) -> int:
    m = matrix_mod.load(args.matrix)
    if m.mutants is None:
        raise HarnessError(f"{args.matrix}: no mutants: section")
    version = args.version or m.variants[m.mutants["base"]].version
    if version not in m.mutants["versions"]:
        raise HarnessError(f"VERSION={version}: no mutants for that kernel version in "
                           f"{args.matrix}; there are: {', '.join(m.mutants['versions'])}")
    own = m.mutants["versions"][version]
    found = mutants.discover(own["patches"], version)
    by_name = {mu.variant: mu for mu in found} | {mu.patch.name: mu for mu in found}
    # MUTANTS=0015: the number alone, as regressions/README names them.
    by_name |= {mu.patch.name.split("-", 1)[0]: mu for mu in found}
    for name in args.names:
        if name not in by_name:
            raise HarnessError(f"no mutant {name!r} in {own['patches']}; there are: "
                               + ", ".join(mu.variant for mu in found))
    chosen = list(dict.fromkeys(by_name[n] for n in args.names)) if args.names else found
    base = m.variants[own["base"]]
    variants = dict(m.variants)
    bases = {mu.variant: mutants.flavored_base(mu, base, m.variants) for mu in chosen}
    for mu in chosen:
        variants[mu.variant] = mutants.as_variant(mu, bases[mu.variant])
    plain = [mu.variant for mu in chosen if bases[mu.variant] is base]
    m = dataclasses.replace(m, variants=variants)
    cells = list(matrix_mod.mutant_cells(m, plain, archs=args.archs)) if plain else []
    # A mutant of another flavor boots the cells the matrix gives the
    # variant it is built on, on the mutants: section's arches.
    archs = matrix_mod._Names(()).axis(matrix_mod._split(args.archs), "archs", "--archs") \
        if args.archs else m.mutants["archs"]
    for mu in chosen:
        if bases[mu.variant] is not base:
            cells += [dataclasses.replace(c, variant=mu.variant) for c in m.cells
                      if c.variant == bases[mu.variant].name and c.arch in archs]
    if args.repeat < 1:
        raise HarnessError(f"--repeat={args.repeat}: boot the cells at least once (REPEAT=1)")
    expected = cases.expected_cases(REPO / "selftests")
    programs, booting = {}, ()
    if args.programs:
        chosen_programs = matrix_mod._split(args.programs)
        known = tuple(dict.fromkeys(c.suite for c in expected))
        for p in chosen_programs:
            if p not in known:
                raise HarnessError(f"PROGRAMS: no test program {p!r} in selftests/ima_appraise; "
                                   f"there are: {', '.join(known)}")
        booting = tuple(p for p in known if p in chosen_programs)
        programs = {c.id: booting for c in cells}
        for mu in chosen:
            if not any(mutants.booted(p, booting) for p in mu.caught_by):
                raise HarnessError(f"PROGRAMS={args.programs}: {mu.variant} is caught by "
                                   f"{', '.join(mu.caught_by)}, none of them booted")
    notes = {mu.variant: mu.summary + (f"; exposed in: {mu.exposed_in}" if mu.exposed_in else "")
             for mu in chosen}
    runs, dirs = [], []
    for i in range(args.repeat):
        if args.repeat > 1:
            print(f"mutants: run {i + 1} of {args.repeat}", flush=True)
        run = runner.run(m, list(cells), expected, REPO, args.build_dir.resolve(),
                         jobs=args.jobs, programs=programs)
        runs.append([mutants.judge(mu.variant, mu.caught_by,
                                   [c for c in run.cells if c.cell.variant == mu.variant],
                                   booting)
                     for mu in chosen])
        dirs.append(run.run_dir)
        if args.repeat > 1:
            # Each run's verdict as it ends: an interrupted measurement keeps them.
            print(f"mutants: run {i + 1} of {args.repeat}: "
                  + ", ".join(f"{v.variant} {'caught' if v.caught else 'NOT CAUGHT'}"
                              for v in runs[-1]) + f" ({run.run_dir})", flush=True)
    if args.repeat == 1:
        print(mutants.report(runs[0], notes))
        print(f"results: {dirs[0]}")
    else:
        print(mutants.tally(runs, notes))
        for i, d in enumerate(dirs):
            print(f"results of run {i + 1}: {d}")
    return 0 if all(v.caught for verdicts in runs for v in verdicts) else 1


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt as e:
        # The runner wrote the reports of what finished, and said where.
        print(str(e) or "interrupted", file=sys.stderr)     # "terminated (SIGTERM)"
        sys.exit(EXIT_INFRASTRUCTURE)
