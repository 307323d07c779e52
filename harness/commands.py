"""The commands of `python3 -m harness` that hand over to another program:
run and check (pytest over harness/matrix_run.py, as make run's recipe
ran it), unit (pytest over harness/tests), bisect (git bisect run of
scripts/bisect-run) and deps (scripts/deps.sh).  Each builds its command
line in a function of its own, so what it runs is unit-tested without
running it; the last program of a command replaces the harness's process
(exec), so its exit status, its signals and its output are the
command's, as they were make's.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from . import matrix as matrix_mod, selection, subproc
from .errors import HarnessError

REPO = Path(__file__).resolve().parent.parent
MATRIX_RUN = "harness/matrix_run.py"
UNIT_TESTS = "harness/tests"


def _pytest(args: argparse.Namespace) -> list[str]:
    return [sys.executable, "-m", "pytest", "-v" if args.verbose else "-q", "-p",
            "no:cacheprovider"]


def unit_argv(args: argparse.Namespace) -> list[str]:
    return [*_pytest(args), UNIT_TESTS]


def run_argv(args: argparse.Namespace) -> list[str]:
    """pytest's command line for a run of the matrix: make run's recipe,
    with the options args has (paths absolute: pytest runs in REPO)."""
    return [*_pytest(args), "-rfE", MATRIX_RUN, *selection.forward(args, selection.RUN),
            *args.pytest_args]


def plain(args: argparse.Namespace) -> bool:
    """Whether a run was given no selection at all: no option of
    selection.CELLS, and no pytest argument that selects (-k, -m,
    --deselect, a test id)."""
    selecting = ("-k", "-m", "--deselect")
    return not selection.given(args, selection.SELECTING) and not any(
        a.startswith(selecting) or "::" in a or a.endswith(".py") for a in args.pytest_args)


def _exec(argv: list[str]) -> int:
    """Becomes argv, in REPO (where make ran it)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.chdir(REPO)
    os.execv(argv[0], argv)
    return 2    # not reached


def run(args: argparse.Namespace) -> int:
    """make run: a run given no selection boots the check tier, and says
    first what it boots, what it leaves out and how to run everything."""
    if plain(args):
        m = matrix_mod.load(args.matrix or selection.OPTIONS["matrix"].default)
        print(selection.plain_run(m, args.make_vars) + "\n", flush=True)
        args.tier = selection.PLAIN_TIER
    return _exec(run_argv(args))


def check_steps(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    """make check's steps before its run: what each is, its command line."""
    build = args.build_dir or selection.OPTIONS["build_dir"].default
    return [("the unit tests", unit_argv(args)),
            ("the bisect proof", [sys.executable, "-m", "harness", "bisect-check",
                                  selection.OPTIONS["build_dir"].spell(build)])]


def check(args: argparse.Namespace) -> int:
    """make check: the unit tests, the bisect proof, then the check tier
    (or TIER=) of the selection; the first step that fails ends it."""
    with subproc.session():
        for what, argv in check_steps(args):
            status = subproc.run(argv, cwd=REPO).returncode
            if status:
                print(f"check: {what} failed (exit {status}); nothing after them ran",
                      file=sys.stderr)
                return status
    args.tier = args.tier or "check"
    return _exec(run_argv(args))


def unit(args: argparse.Namespace) -> int:
    return _exec(unit_argv(args))


def deps_argv(args: argparse.Namespace) -> tuple[list[str], dict[str, str]]:
    """scripts/deps.sh and its environment, as make deps runs it."""
    build = os.path.abspath(args.build_dir)
    env = {**os.environ, "DEBDIR": f"{build}/debs/arm64", "BUILD": build,
           "PYTHON": sys.executable}
    if args.no_sources:
        env["SOURCES"] = "no"
    return ["sh", str(REPO / "scripts" / "deps.sh")], env


def deps(args: argparse.Namespace) -> int:
    argv, env = deps_argv(args)
    sys.stdout.flush()
    os.chdir(REPO)
    os.execve("/bin/sh", argv, env)
    return 2    # not reached


_BISECT_NEEDS = ("bisect needs --kernel-tree (KERNEL_TREE=), --good (GOOD=), --bad (BAD=) "
                 "and --splat (SPLAT=) or --test (TEST=)")


def bisect_run_argv(args: argparse.Namespace) -> list[str]:
    """The command git bisect run runs at each step: scripts/bisect-run, in
    the kernel tree (its default --kernel-tree)."""
    names = [n for n in selection.BISECT if n != "kernel_tree"]
    what = [f"--splat={args.splat}"] if args.splat else [f"--test={args.test}"]
    return [str(REPO / "scripts" / "bisect-run"), *what, *selection.forward(args, names)]


def _git(tree: str, *argv: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", tree, *argv], **kwargs)


def bisect(args: argparse.Namespace) -> int:
    """make bisect: git bisect start BAD GOOD, git bisect run of
    bisect-run, and the last lines of the log; the tree is left at the
    bisection.  A step's exit statuses pass through bisect-run, not here."""
    if not (args.kernel_tree and args.good and args.bad and (args.splat or args.test)):
        raise HarnessError(_BISECT_NEEDS)
    tree = os.path.abspath(os.path.expanduser(args.kernel_tree))
    if status := _git(tree, "bisect", "start", args.bad, args.good).returncode:
        return status
    with subproc.session():
        status = subproc.run(["git", "-C", tree, "bisect", "run",
                              *bisect_run_argv(args)]).returncode
    if status:
        return status
    log = _git(tree, "bisect", "log", stdout=subprocess.PIPE, text=True).stdout
    print("\n".join(log.splitlines()[-3:]))
    print(f"the tree is left at the bisection; end it with: git -C {tree} bisect reset")
    return 0
