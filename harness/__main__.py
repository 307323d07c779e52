"""python3 -m harness: every command of the harness, one command line.

    /usr/bin/python3 -m harness --help            the commands, one line each
    /usr/bin/python3 -m harness COMMAND --help    a command's options

The commands that select cells (run, check, build, boot, mutants, bisect,
bisect-run, bench) take the options of harness/selection.py, defined once
with their Make variables; `make <command>` runs `python3 -m harness
--make-vars <command>`, which reads those variables from the environment.
The commands that hand over to pytest, git or deps.sh are in
harness/commands.py, the others here or in the module they name:

- run, check, unit: pytest over harness/matrix_run.py or harness/tests,
  as the Makefile ran it; a run given no selection boots the check tier
  and says first what it leaves out (selection.plain_run()).
- build, boot, merge: the stages of a run for a CI engine: build the
  chosen cells' kernels, selftests and initramfs into a relocatable
  directory (manifest.json), boot one shard of them per machine (the same
  balanced partition on every machine), merge the shards' run directories
  into one run (harness/merge.py; exit 2 if they do not make one run, or a
  shard stopped early or left a cell without a result).
- report, diff, scan: report.html again from results.json
  (harness/report.py); what changed between two runs (harness/rundiff.py,
  exit 1 if anything is new); the splats of any console log or dmesg
  (harness/scan.py, exit 1 if one is not known).
- mutants: the known-bad kernels (mutants) of kernel-patches/regressions/
  on top of their version's series, in the cells of matrix.yaml's
  mutants: section; exit 1 unless each is caught (harness/mutants.py).
- bisect, bisect-run, bisect-check: git bisect run in a kernel tree of
  one's own; its step (harness/bisect.py: exit 0 good, 1 bad, 125 cannot
  tell, 128 stop; scripts/bisect-run is this command for git bisect run);
  the proof that it works (harness/bisect_check.py).
- bench, selftests, deps: measurements (harness/bench.py); the guest's
  /selftests tree only; scripts/deps.sh.

A command that needs PyYAML or pytest and runs on a python3 without them
says so in one line (harness/needs.py).  Exit status: 0 every cell passed,
1 a test failed (a cell failed, timed out or panicked), 2 an
infrastructure error (bad input, a kernel that did not build, a guest that
could not start, an interrupted run, a missing module).
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import (bench, bisect, bisect_check, cases, commands, initramfs, kbuild, matrix as matrix_mod,
               merge, mutants, needs, report, results, rundiff, runner, scan, selection, subproc)
from .archs import ARCHS
from .errors import HarnessError
from .runner import EXIT_INFRASTRUCTURE

REPO = Path(__file__).resolve().parent.parent
_BOTH = ("pytest", "yaml")


@dataclass(frozen=True)
class Command:
    name: str
    help: str                               # its one line in --help
    run: Callable[[argparse.Namespace], int]
    options: Callable[[argparse.ArgumentParser], None]
    needs: tuple[str, ...] = ("yaml",)      # harness/needs.py
    installs: bool = False                  # installs its needs on Debian's python3
    failure: int = EXIT_INFRASTRUCTURE      # its exit status when it cannot run


def _commands() -> dict[str, Command]:
    """Every command, in the order --help lists them."""
    return {c.name: c for c in (
        Command("run", "boot a selection of cells (none: the check tier)", commands.run,
                _run_options, _BOTH),
        Command("check", "unit tests, bisect proof, check tier: what CI runs",
                commands.check, _check_options, _BOTH),
        Command("unit", "the harness's unit tests (no kernel built or booted)",
                commands.unit, _verbose, _BOTH),
        Command("build", "CI's build stage: chosen cells' kernels into a directory", _build,
                _build_options),
        Command("boot", "CI's boot stage: one shard of a build's cells", _boot,
                _boot_options),
        Command("merge", "CI's merge stage: the shards' run directories as one run", _merge,
                _merge_options),
        Command("report", "write a run's report.html again from its results.json", _report,
                _report_options, ()),
        Command("diff", "what changed between two runs (exit 1: anything new)", rundiff.main,
                _diff_options, ()),
        Command("scan", "find and name the splats of any kernel log or dmesg", scan.main,
                _scan_options),
        Command("mutants", "boot the known-bad kernels (mutants): each must be caught",
                _mutants, _mutants_options),
        Command("bisect", "git bisect your kernel tree for a splat or a failing test",
                commands.bisect, _bisect_options, ()),
        # Its needs are found after its command line: bisect-run --help works
        # without pytest, and a step that cannot run stops the bisection.
        Command("bisect-run", "one bisect step: exit 0 good, 1 bad, 125 skip, 128 stop",
                _bisect_run, lambda p: None, (), failure=bisect.ABORT),
        Command("bisect-check", "the bisect proof: it must find a known lockdep regression",
                bisect_check.command, _build_dir, ()),
        Command("bench", "measure builds, the boot floor, the matrix, the edit loop",
                bench.command, bench.add_arguments),
        Command("selftests", "build the guest's /selftests tree only, per arch", _selftests,
                _selftests_options, ()),
        Command("deps", "install missing Debian packages and kernel sources",
                commands.deps, _deps_options, installs=True),
    )}


_DESCRIPTION = """\
The IMA appraisal selftests' harness: builds Debian's kernels (and yours),
boots them in QEMU across the matrix, judges the selftests and kernel logs."""
_EPILOG = """\
make <command> runs each of run, check, unit, mutants, bisect, bisect-check,
bench, selftests, scan and diff, those that build or boot after make deps
(scripts/deps.sh); an option's metavar in capitals is its Make variable:
--archs ARCHS is make run ARCHS=x86_64.

exit status: 0 every cell passed, 1 a test failed (a cell failed, timed out
or panicked), 2 an infrastructure error (bad input, a kernel that did not
build, a guest that could not start, an interrupted run, a missing module);
bisect-run's are git bisect run's."""


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Each command's help on its name's line, the longest name's too
    (argparse measures the commands' names one indent short)."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=20)
        self._action_max_length = 18


def parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The command line, and each command's own parser."""
    top = argparse.ArgumentParser(
        prog="python3 -m harness", epilog=_EPILOG, description=_DESCRIPTION,
        formatter_class=_Formatter)
    top.add_argument("--make-vars", action="store_true",
                     help="options left out take the Make variables of the environment "
                          "(ARCHS=, K=, ...): what make's targets run; first, before COMMAND")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND",
                             title="commands")
    parsers = {}
    for c in _commands().values():
        parsers[c.name] = sub.add_parser(c.name, help=c.help, description=c.help,
                                         add_help=c.name != "bisect-run")
        c.options(parsers[c.name])
    return top, parsers


def _verbose(p: argparse.ArgumentParser) -> None:
    selection.add_argument(p, "-v", "--verbose", make="V", action="store_true",
                           help="pytest -v: one line per item")


def _run_options(p: argparse.ArgumentParser, tier: str = "default: check given no other "
                 "selection, else full") -> None:
    selection.add_options(p, selection.RUN, unset=True, notes={"tier": tier})
    _verbose(p)
    selection.add_argument(p, "pytest_args", make="PYTEST_ARGS", nargs="*",
                           split=selection.pytest_args, help="more of pytest's arguments, "
                           "after --")


def _check_options(p: argparse.ArgumentParser) -> None:
    _run_options(p, "default: check")


def _build_dir(p: argparse.ArgumentParser) -> None:
    selection.add_options(p, ("build_dir",))


def _build_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, required=True, metavar="dir",
                   help="the artifact directory")
    p.add_argument("--part", default="", metavar="name", help="write manifest-PART.json (one machine's "
                   "share of the build, e.g. its arch); boot joins every part in the directory")
    selection.add_options(p, (*selection.AXES, "tier", "make_jobs", "matrix", "build_dir"),
                          notes={"tier": "default: full"})


def _boot_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--manifest", type=Path, required=True, metavar="path",
                   help="a manifest.json, or an artifact directory (all its manifest*.json)")
    p.add_argument("--shard", default="1/1", metavar="i/N",
                   help="boot the i-th of N shards")
    selection.add_options(p, ("jobs", "accel", "matrix", "build_dir"),
                          notes={"build_dir": "where results/ and the scratch disks go"})


def _merge_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("shards", nargs="+", type=Path, metavar="shard_dir")
    p.add_argument("--out", type=Path, required=True, metavar="dir", help="a new directory")
    selection.add_options(p, ("matrix",), notes={"matrix": "whose cell order the merged "
                                                 "run has"})


def _report_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", type=Path, metavar="run_dir")
    p.add_argument("--baseline", type=Path, default=None, metavar="run",
                   help="a run directory or results.json: add a section on what changed "
                        "since (harness/rundiff.py)")


def _diff_options(p: argparse.ArgumentParser) -> None:
    selection.add_argument(p, "run_a", make="A", type=Path, help="the baseline: a run "
                           "directory or a results.json")
    selection.add_argument(p, "run_b", make="B", type=Path, help="the run judged against it")
    p.add_argument("--json", action="store_true", help="one JSON document")


def _scan_options(p: argparse.ArgumentParser) -> None:
    scan.parser_args(p)
    selection.add_options(p, ("matrix",))


def _mutants_options(p: argparse.ArgumentParser) -> None:
    selection.add_argument(p, "names", make="MUTANTS", nargs="*", split=selection.commas,
                           help="mutant variant names (m0015-...), numbers (0015) or patch "
                                "file names (default: all)")
    selection.add_options(p, ("archs", "jobs", "matrix", "build_dir"),
                          notes={"archs": "default: the mutants: section's"})
    selection.add_argument(p, "--version", make="VERSION", default=None,
                           help="the kernel version whose mutants to run (matrix.yaml "
                                "mutants: versions:; default: that of mutants: base:)")
    selection.add_argument(p, "--programs", make="PROGRAMS", default=None,
                           help="comma-separated test programs, the only ones booted "
                                "(default: all); Caught-by: trailers naming others are "
                                "not judged")
    selection.add_argument(p, "--repeat", make="REPEAT", type=int, default=1,
                           help="boot the cells this many times, one run after another, "
                                "and say in how many each mutant was caught")


def _bisect_options(p: argparse.ArgumentParser) -> None:
    selection.add_argument(p, "--good", make="GOOD", help="a commit without it")
    selection.add_argument(p, "--bad", make="BAD", help="a commit with it")
    bisect.add_target(p, required=False)
    selection.add_options(p, selection.BISECT)


def _selftests_options(p: argparse.ArgumentParser) -> None:
    selection.add_argument(p, "archs", make="ARCHS", nargs="*", split=selection.commas,
                           help=f"of {', '.join(ARCHS)} (default: all)")
    _build_dir(p)


def _deps_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-sources", action="store_true",
                   help="no kernel source: what make unit needs")
    _build_dir(p)


def main(argv: list[str]) -> int:
    make_vars = argv[:1] == ["--make-vars"]
    argv = argv[make_vars:]
    top, parsers = parser()
    if make_vars and argv[:1] and argv[0] in parsers:
        argv = [argv[0], *selection.make_argv(parsers[argv[0]], argv[1:], os.environ)]
    if argv[:1] == ["bisect-run"]:
        # Its own parser: its exit statuses are git bisect run's.
        return _dispatch(_commands()["bisect-run"], argparse.Namespace(argv=argv[1:]))
    args = top.parse_args(argv)
    args.make_vars = make_vars
    if args.command == "selftests":
        unknown = [a for a in args.archs if a not in ARCHS]
        if unknown:
            top.error(f"unknown arch {unknown[0]!r}; allowed: {', '.join(ARCHS)}")
    return _dispatch(_commands()[args.command], args)


def _dispatch(command: Command, args: argparse.Namespace) -> int:
    """Runs command; problems are found deep down and reported once, here."""
    try:
        if not (command.installs and needs.debian_python()):
            needs.require(command.name, command.needs)
        return command.run(args)
    except needs.MissingModule as e:
        print(f"error: {e}", file=sys.stderr)
    except ModuleNotFoundError as e:
        if (missing := needs.of_error(command.name, e)) is None:
            raise
        print(f"error: {missing}", file=sys.stderr)
    except HarnessError as e:
        print(f"error: {e}", file=sys.stderr)
    return command.failure


def _bisect_run(args: argparse.Namespace) -> int:
    return bisect.main(args.argv, REPO)


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
    m = matrix_mod.load(args.matrix, **{a: getattr(args, a) for a in selection.AXES})
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
        run = runner.run(runner.RunRequest(m, list(cells), expected, args.build_dir.resolve(),
                                           jobs=args.jobs, programs=programs))
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
        every = {v: mutants.discover(o["patches"], v) for v, o in m.mutants["versions"].items()}
        ids = mutants.cases_of(version, [c.id for c in expected
                                         if not booting or c.suite in booting], every)
        print(mutants.case_table(ids, chosen, runs[0], every=chosen == found))
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
