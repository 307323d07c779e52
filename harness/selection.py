"""The selection model, defined once: the options that choose which cells
a command builds or boots (arches, modes, policies, hashes, setattr
semantics, variants, tier, -k, a kernel tree of one's own, extra patches
and their base) and how (jobs, make -j, accelerator, profile, the matrix
file, the build directory), each with its help, its type and its Make
variable.

add_options() puts them on a command's parser (python3 -m harness run,
check, build, boot, mutants, bisect, bisect-run, bench), pytest_options()
on the pytest plugin's (harness/conftest.py), so `python3 -m pytest
harness/matrix_run.py` takes the same ones.  The Makefile passes none of
them: its targets run `python3 -m harness --make-vars <command>`, and
make_argv() turns the Make variables of make's command line (make exports
them to its recipes) into options.  Each option's metavar is its Make
variable, so --help says both spellings.

plain_run() is what a run given no selection boots, and the paragraph
that says so.  Nothing here needs PyYAML or pytest.
"""
from __future__ import annotations

import argparse
import os
import shlex
import textwrap
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import matrix as matrix_mod
from .archs import ARCHS
from .errors import count_arg
from .flavors import PLAIN

REPO = Path(__file__).resolve().parent.parent


def hz(text: str) -> int:
    """--profile's rate: a whole number of samples a second, 1 to 1000."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= 1000:
        raise argparse.ArgumentTypeError(
            f"PROFILE={text}: a rate in samples a second, 1 to 1000 (e.g. PROFILE=200)")
    return n


@dataclass(frozen=True)
class Option:
    flag: str                   # --archs, or -k
    make: str                   # its Make variable, and its metavar ("" for none)
    help: str
    type: Callable[[str], Any] | None = None
    choices: tuple[str, ...] | None = None
    default: Any = None
    paths: bool = False         # a path, or space-separated paths: made absolute when passed on
    metavar: str = ""           # when there is no Make variable

    @property
    def dest(self) -> str:
        return "keyword" if self.flag == "-k" else self.flag.lstrip("-").replace("-", "_")

    def kwargs(self, unset: bool = False) -> dict[str, Any]:
        """add_argument()'s keywords; unset: default None, so that a
        command can tell an option given from one left out."""
        kw = {"dest": self.dest, "help": self.help, "metavar": self.make or self.metavar,
              "default": None if unset else self.default}
        kw.update({k: v for k, v in (("type", self.type), ("choices", self.choices)) if v})
        return kw

    def spell(self, value: Any) -> str:
        """The one argument that passes value on to another command line."""
        if self.paths:
            value = " ".join(os.path.abspath(os.path.expanduser(p)) for p in str(value).split())
        return f"-k{value}" if self.flag == "-k" else f"{self.flag}={value}"


def _axis(name: str, what: str, values: Iterable[str]) -> Option:
    return Option(f"--{name}", name.upper(), f"comma-separated {what}, replacing the "
                  f"matrix's own ({', '.join(values)})")


# Which cells.
CELLS = (
    _axis("archs", "arches", ARCHS),
    _axis("modes", "ima_appraise= modes", matrix_mod.MODES),
    _axis("policies", "policies", matrix_mod.POLICIES),
    _axis("hashes", "hashes", matrix_mod.HASHES),
    _axis("setattr", "setattr semantics", matrix_mod.SETATTR),
    Option("--variants", "VARIANTS", "comma-separated kernel variants of matrix.yaml, "
           "replacing the matrix's own"),
    Option("--tier", "TIER", "full: every cell; covering: one cell per arch x variant x "
           "mode x policy, every hash and setattr value, the cells mutants are caught in "
           "(harness/matrix.py covering_tier); check: the covering cells of the kernels "
           "matrix.yaml's check: names (what make check boots)",
           choices=matrix_mod.TIERS, default="full"),
    Option("-k", "K", "pytest -k expression over <cell>/<program>/<case>, e.g. 'aarch64 and "
           "exec_test': only the cells with a chosen case boot, each running only the "
           "programs of its chosen cases"),
    Option("--kernel-tree", "KERNEL_TREE", "a kernel source tree of your own: boots it as "
           "variant 'local'", type=Path, paths=True),
    Option("--extra-patches", "EXTRA_PATCHES", "space-separated patch files: boots variant "
           "'extra' (BASE's series, default patched's, and these patches on top)", paths=True),
    Option("--base", "BASE", "the variant EXTRA_PATCHES go on top of (default: patched), "
           "e.g. patched-7.2 or stock-7.2-debug"),
)
# How they are built and booted.
RUNNING = (
    Option("--jobs", "JOBS", "guest CPUs booted at once (default: CPUs)",
           type=count_arg("JOBS")),
    Option("--make-jobs", "MAKE_JOBS", "make -j for kernels and selftests (default: CPUs)",
           type=count_arg("MAKE_JOBS")),
    Option("--accel", "ACCEL", "QEMU accelerator: auto (KVM if a KVM guest boots, else TCG), "
           "tcg or kvm", choices=("auto", "tcg", "kvm"), default="auto"),
    Option("--profile", "PROFILE", "sample each guest's vCPUs PROFILE times a second through "
           "QEMU's gdbstub into its cell's profile.txt (harness/profile.py; e.g. 200)",
           type=hz, default=0),
)
# Where.
FILES = (
    Option("--matrix", "", "the matrix file (default: matrix.yaml)", type=Path,
           default=REPO / "matrix.yaml", paths=True, metavar="file"),
    Option("--build-dir", "BUILD", "the build output directory (default: build)", type=Path,
           default=REPO / "build", paths=True),
)
OPTIONS = {o.dest: o for o in CELLS + RUNNING + FILES}
AXES = ("archs", "modes", "policies", "hashes", "setattr", "variants")
# What each kind of command takes.
SELECTING = tuple(o.dest for o in CELLS)
RUN = tuple(OPTIONS)
PYTEST = tuple(d for d in RUN if d != "keyword")     # pytest has its own -k
BISECT = ("kernel_tree", *AXES[:5], "keyword", "jobs", "make_jobs", "accel", "build_dir")


def options(names: Iterable[str]) -> list[Option]:
    return [OPTIONS[n] for n in names]


# ---- on a command line ---------------------------------------------------------

def bind(parser: argparse.ArgumentParser, action: argparse.Action, var: str,
         split: Callable[[str], list[str]] | None = None) -> argparse.Action:
    """Under --make-vars, action takes the Make variable var when the
    command line leaves it out; split makes a list of a positional's value."""
    if not hasattr(parser, "make_vars"):
        parser.make_vars = []       # type: ignore[attr-defined]
    parser.make_vars.append((var, action, split))     # type: ignore[attr-defined]
    return action


def add_argument(parser: argparse.ArgumentParser, *flags: str, make: str = "",
                 split: Callable[[str], list[str]] | None = None, group=None,
                 **kwargs: Any) -> argparse.Action:
    """parser.add_argument() (into group, if given) of an option with a
    Make variable: its metavar says the variable's name, a flag's help
    says var=1."""
    if make and kwargs.get("action") == "store_true":
        kwargs["help"] = f"{kwargs.get('help', '')} ({make}=1)"
    elif make:
        kwargs.setdefault("metavar", make)
    action = (group or parser).add_argument(*flags, **kwargs)
    return bind(parser, action, make, split) if make else action


def commas(value: str) -> list[str]:
    """A list of names: MUTANTS=0015,0031, ARCHS=x86_64,aarch64 (or spaces)."""
    return value.replace(",", " ").split()


def add_options(parser: argparse.ArgumentParser, names: Iterable[str], *, unset: bool = False,
                defaults: Mapping[str, Any] | None = None,
                notes: Mapping[str, str] | None = None) -> None:
    """The options names (dests of OPTIONS) on parser, in groups: which
    cells, how, where.  defaults replace the table's, notes are added to
    its help; unset leaves every default None (see Option.kwargs)."""
    names = list(names)
    titles = (("which cells (a metavar is the option's Make variable)", CELLS),
              ("how they build and boot", RUNNING), ("files", FILES))
    for title, table in titles:
        mine = [o for o in table if o.dest in names]
        group = parser.add_argument_group(title) if mine else None
        for o in mine:
            kw = o.kwargs(unset)
            if defaults and o.dest in defaults:
                kw["default"] = defaults[o.dest]
            if notes and o.dest in notes:
                kw["help"] = f"{kw['help']} ({notes[o.dest]})"
            add_argument(parser, o.flag, make=o.make, group=group, **kw)


def pytest_options(group) -> None:
    """The options of a run on pytest's option group (harness/conftest.py)."""
    for o in options(PYTEST):
        group.addoption(o.flag, **o.kwargs())


def given(args: argparse.Namespace, names: Iterable[str]) -> dict[str, Any]:
    """The options among names that args has a value of."""
    return {n: v for n in names if (v := getattr(args, n, None)) not in (None, "")}


def forward(args: argparse.Namespace, names: Iterable[str]) -> list[str]:
    """The options among names that args has, as arguments for another
    command line (pytest's, bisect-run's), paths made absolute: the child
    may run elsewhere."""
    return [OPTIONS[n].spell(v) for n, v in given(args, names).items()]


def make_argv(parser: argparse.ArgumentParser, argv: list[str],
              environ: Mapping[str, str]) -> list[str]:
    """argv of parser's command with what the environment's Make variables
    give: their options first (argv's own come later and win), their
    positionals last.  An empty variable is unset, as make's $(if) has it."""
    opts: list[str] = []
    positionals: list[str] = []
    for var, action, split in getattr(parser, "make_vars", ()):
        value = environ.get(var, "")
        if not value:
            continue
        if not action.option_strings:
            positionals += split(value) if split else [value]
        elif action.nargs == 0:     # a flag: V=1
            if value != "0":
                opts.append(action.option_strings[0])
        else:
            flag = action.option_strings[0]
            opts.append(f"{flag}{value}" if len(flag) == 2 else f"{flag}={value}")
    dashes = ["--"] if any(p.startswith("-") and p != "-" for p in positionals) \
        and "--" not in argv else []
    return [*opts, *argv, *dashes, *positionals]


def pytest_args(value: str) -> list[str]:
    """PYTEST_ARGS=: split as the shell splits a make recipe's line."""
    return shlex.split(value)


# ---- a run given no selection --------------------------------------------------

PLAIN_TIER = "check"


def _kernels(cells: Iterable[matrix_mod.Cell]) -> list[tuple[str, str]]:
    return list(dict.fromkeys((c.arch, c.variant) for c in cells))


def _builds(m: matrix_mod.Matrix, cells: Iterable[matrix_mod.Cell]) -> int:
    """Cold kernel builds: one per arch, version and flavor (the variants of
    one take turns in its workspace)."""
    return len({(c.arch, m.variants[c.variant].version, m.variants[c.variant].flavor)
                for c in cells if m.variants[c.variant].image is None})   # a Debian image: none


def _names(m: matrix_mod.Matrix, variants: list[str]) -> str:
    """'stock-6.12, patched-6.12 and 6 debug variants': more than two of a
    flavor other than plain are counted, not named."""
    by_flavor: dict[str, list[str]] = {}
    for v in variants:
        by_flavor.setdefault(m.variants[v].flavor, []).append(v)
    names = []
    for flavor, of in by_flavor.items():
        names += of if flavor == PLAIN or len(of) <= 2 else [f"{len(of)} {flavor} variants"]
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]


def _kernel_list(m: matrix_mod.Matrix, kernels: list[tuple[str, str]]) -> str:
    """'stock and patched on x86_64 and aarch64; stock-7.2 on x86_64'."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for variant in dict.fromkeys(v for _, v in kernels):
        groups.setdefault(tuple(a for a in ARCHS if (a, variant) in kernels), []).append(variant)
    return "; ".join(f"{_names(m, vs)} on {' and '.join(archs)}" for archs, vs in groups.items())


def plain_run(m: matrix_mod.Matrix, make: bool) -> str:
    """What a run given no selection boots (the check tier of m: the
    covering cells of the kernels its check: section names), what it leaves
    out, and how to run everything; make: spelled as make's variables."""
    chosen = matrix_mod.tier_cells(m, PLAIN_TIER)
    kernels = _kernels(chosen)
    mine = set(kernels)
    others = [k for k in _kernels(m.cells) if k not in mine]
    more = sum((c.arch, c.variant) in mine for c in m.cells) - len(chosen)
    elsewhere = sum((c.arch, c.variant) not in mine for c in m.cells)
    run, full, some = (("make run", "make run TIER=full", "VARIANTS=, ARCHS=, K=, TIER=")
                       if make else ("python3 -m harness run", "python3 -m harness run "
                                     "--tier full", "--variants, --archs, -k, --tier"))
    whose = f"the kernels {m.path.name}'s check: names" if m.check else "every kernel"
    text = (f"{run} with no selection: the check tier, the covering cells of {whose}, "
            f"{len(chosen)} cells of {len(kernels)} kernels ({_kernel_list(m, kernels)}), "
            f"{_builds(m, chosen)} cold kernel builds the first time.  Left out: {more} "
            "more cells of these kernels (their full tier)")
    if others:
        text += (f" and {elsewhere} cells of {len(others)} other kernels "
                 f"({_kernel_list(m, others)})")
    text += (f".  Everything, {len(m.cells)} cells and {_builds(m, m.cells)} cold builds: "
             f"{full}; any selection ({some}, ...) replaces this default.")
    return textwrap.fill(text, 78, break_on_hyphens=False)
