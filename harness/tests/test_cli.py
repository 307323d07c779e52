"""python3 -m harness: one command line (harness/__main__.py), one set of
selection options with their Make variables (harness/selection.py), what a
run given no selection boots, and a python3 without PyYAML or pytest
(harness/needs.py).  Nothing is built or booted: the programs a command
hands over to are caught, not run."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness import __main__ as cli, commands, matrix, needs, selection, subproc

REPO = Path(__file__).resolve().parents[2]
RECORDED = Path(__file__).parent / "test_data" / "run-x86_64"
MADE_UP = ("yaml", "pytest")


def _harness(*argv: str, block: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """python3 -m harness argv, in a python3 that cannot import block."""
    code = ("import runpy, sys\n"
            f"sys.modules.update(dict.fromkeys({list(block)!r}))\n"
            "runpy.run_module('harness', run_name='__main__', alter_sys=True)\n")
    return subprocess.run([sys.executable, "-c", code, *argv], cwd=REPO, text=True,
                          capture_output=True, env={**os.environ, "COLUMNS": "80"})


def _parse(command: str, argv: list[str] = (), env: dict[str, str] | None = None):
    """command's arguments as python3 -m harness --make-vars parses them."""
    top, parsers = cli.parser()
    args = top.parse_args([command, *selection.make_argv(parsers[command], list(argv),
                                                         env or {})])
    args.make_vars = env is not None
    return args


def _make_vars(parser) -> set[str]:
    return {var for var, _, _ in getattr(parser, "make_vars", ())}


@pytest.fixture(autouse=True)
def _no_make_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """make unit ARCHS=... exports ARCHS, CI's workflow TIER: a test's
    --make-vars reads only what the test sets."""
    for p in cli.parser()[1].values():
        for var in _make_vars(p):
            monkeypatch.delenv(var, raising=False)


# ---- one command line -----------------------------------------------------------

def test_help_lists_every_command_on_a_line_of_its_own() -> None:
    r = _harness("--help")
    assert r.returncode == 0, r.stderr
    listing = r.stdout.split("commands:\n  COMMAND\n")[1].split("\n\n")[0].splitlines()
    assert [line.split()[0] for line in listing] == list(cli._commands())
    helps = [line.split(None, 1)[1] for line in listing]
    assert len(set(helps)) == len(helps)
    assert all(len(line) <= 80 for line in listing), listing
    assert "regressions" not in r.stdout


def test_the_makefile_targets_are_the_harness_commands() -> None:
    makefile = (REPO / "Makefile").read_text()
    recipes = dict(re.findall(r"^([a-z-]+):.*\n((?:\t.*\n)+)", makefile, re.M))
    own = {"help", "deps", "clean", "distclean"}
    assert set(recipes) - own <= set(cli._commands())
    for target in set(recipes) - own:
        assert f"$(H) {target}" in recipes[target], target
    assert "regressions" not in recipes


# Every Make variable each target read when the Makefile spelled them out.
BEFORE = {
    "run": "K ARCHS MODES POLICIES HASHES SETATTR VARIANTS JOBS MAKE_JOBS TIER ACCEL "
           "KERNEL_TREE PROFILE EXTRA_PATCHES BASE BUILD V PYTEST_ARGS",
    "unit": "V",
    "bisect-check": "BUILD",
    "bisect": "KERNEL_TREE GOOD BAD SPLAT TEST ARCHS MODES POLICIES HASHES SETATTR K JOBS "
              "MAKE_JOBS ACCEL BUILD",
    "mutants": "ARCHS JOBS VERSION PROGRAMS REPEAT MUTANTS BUILD",
    "selftests": "ARCHS BUILD",
    "bench": "ARCHS MODES POLICIES HASHES SETATTR VARIANTS NO_COLD STAGES",
    "scan": "LOG VARIANT VMLINUX KERNEL_TREE",
    "diff": "A B",
}
BEFORE["check"] = BEFORE["run"]


@pytest.mark.parametrize("command", sorted(BEFORE))
def test_every_make_variable_still_reaches_its_command(command: str) -> None:
    _, parsers = cli.parser()
    assert set(BEFORE[command].split()) <= _make_vars(parsers[command])


def test_make_run_with_every_variable_runs_what_the_makefile_ran() -> None:
    env = dict(ARCHS="x86_64", MODES="enforce", POLICIES="custom", HASHES="sha1",
               SETATTR="keep", VARIANTS="stock-7.2", JOBS="2", MAKE_JOBS="3", TIER="covering",
               ACCEL="tcg", KERNEL_TREE="/src/linux", PROFILE="200",
               EXTRA_PATCHES="/p/a.patch /p/b.patch", BASE="patched-7.2", BUILD="/b", V="1",
               PYTEST_ARGS="-x --maxfail 2", K="aarch64 and 'exec_test'", LOG="not run's")
    assert commands.run_argv(_parse("run", env=env)) == [
        sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-rfE",
        "harness/matrix_run.py", "--archs=x86_64", "--modes=enforce", "--policies=custom",
        "--hashes=sha1", "--setattr=keep", "--variants=stock-7.2", "--tier=covering",
        "-kaarch64 and 'exec_test'", "--kernel-tree=/src/linux",
        "--extra-patches=/p/a.patch /p/b.patch", "--base=patched-7.2", "--jobs=2",
        "--make-jobs=3", "--accel=tcg", "--profile=200", "--build-dir=/b", "-x", "--maxfail",
        "2"]


def test_the_command_line_wins_over_a_make_variable_and_empty_is_unset() -> None:
    args = _parse("run", ["--archs=aarch64"], {"ARCHS": "x86_64", "MODES": "", "V": "0"})
    assert (args.archs, args.modes, args.verbose) == ("aarch64", None, False)


@pytest.mark.parametrize("command, env, field, value", [
    ("mutants", {"MUTANTS": "0015,0031"}, "names", ["0015", "0031"]),
    ("selftests", {"ARCHS": "x86_64,aarch64"}, "archs", ["x86_64", "aarch64"]),
    ("scan", {"LOG": "-", "KERNEL_TREE": "/t"}, "log", "-"),
    ("diff", {"A": "old", "B": "new"}, "run_b", Path("new")),
    ("bench", {"NO_COLD": "1", "STAGES": "edit"}, "stages", {"edit"}),
    ("bisect", {"GOOD": "v6.1", "SPLAT": "lockdep-circular"}, "splat", "lockdep-circular"),
])
def test_a_make_variable_fills_its_option_or_argument(command, env, field, value) -> None:
    assert getattr(_parse(command, env=env), field) == value


def test_the_options_of_pytest_and_of_run_are_one_definition() -> None:
    class Group:
        def __init__(self) -> None:
            self.options: dict[str, dict] = {}

        def addoption(self, flag: str, **kwargs) -> None:
            self.options[flag] = kwargs

    group = Group()
    selection.pytest_options(group)
    _, parsers = cli.parser()
    run = {a.option_strings[-1]: a for a in parsers["run"]._actions if a.option_strings}
    assert set(group.options) == set(run) - {"-k", "--verbose", "--help"}
    for flag, kw in group.options.items():
        assert run[flag].help.startswith(kw["help"]) and run[flag].metavar == kw["metavar"]
        assert (run[flag].type, run[flag].choices) == (kw.get("type"), kw.get("choices"))


def test_pytest_takes_them() -> None:
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "--co", "-p", "no:cacheprovider",
                        "harness/matrix_run.py", "--archs=x86_64", "--variants=stock-7.2",
                        "--tier=covering", "-k", "open_test and enforce"],
                       cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.match(r"[1-9]\d*/\d+ tests collected \(\d+ deselected\)", r.stdout.splitlines()[-1])


# ---- a run given no selection ---------------------------------------------------

PLAIN_MAKE_RUN = """\
make run with no selection: the check tier, the covering cells of the kernels
matrix.yaml's check: names, 60 cells of 6 kernels (stock and patched on x86_64
and aarch64; stock-7.2 and patched-7.2 on x86_64), 3 cold kernel builds the
first time.  Left out: 96 more cells of these kernels (their full tier) and
228 cells of 22 other kernels (stock-6.12, patched-6.12, debian-6.1,
debian-7.2 and 6 debug variants on x86_64 and aarch64; stock-7.2 and
patched-7.2 on aarch64).  Everything, 384 cells and 12 cold builds: make run
TIER=full; any selection (VARIANTS=, ARCHS=, K=, TIER=, ...) replaces this
default."""


@pytest.fixture
def execs(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """What commands would become (exec), instead of becoming it."""
    became: list[list[str]] = []
    monkeypatch.setattr(commands, "_exec", lambda argv: became.append(argv) or 0)
    return became


def test_a_plain_make_run_boots_the_check_tier_and_says_so_first(execs, capsys) -> None:
    assert cli.main(["--make-vars", "run"]) == 0
    assert capsys.readouterr().out == PLAIN_MAKE_RUN + "\n\n"
    assert execs == [[sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfE",
                      "harness/matrix_run.py", "--tier=check"]]
    assert len(matrix.check_tier(matrix.load(REPO / "matrix.yaml"))) == 60


def test_the_word_that_runs_everything_boots_every_cell(execs, capsys) -> None:
    assert cli.main(["run", "--tier", "full"]) == 0
    assert capsys.readouterr().out == ""
    assert execs[0][-1] == "--tier=full"
    m = matrix.load(REPO / "matrix.yaml")
    assert matrix.tier_cells(m, "full") == m.cells


@pytest.mark.parametrize("argv", [["--variants=stock-7.2"], ["-k", "open_test"],
                                  ["--kernel-tree=/src/linux"], ["--", "-k", "x86_64"],
                                  ["--extra-patches=a.patch"], ["--tier=covering"]])
def test_any_selection_keeps_its_own_meaning(execs, capsys, argv) -> None:
    assert cli.main(["run", *argv]) == 0
    assert capsys.readouterr().out == ""
    # No --tier unless given: pytest's own default (full), as before.
    assert not any(a.startswith("--tier") for a in execs[0]) or "--tier=covering" in argv


def test_options_that_select_nothing_keep_the_default(execs, capsys) -> None:
    assert cli.main(["run", "--jobs=1", "--accel=tcg", "--", "-x"]) == 0
    assert capsys.readouterr().out.startswith("python3 -m harness run with no selection: ")
    assert execs[0][-4:] == ["--tier=check", "--jobs=1", "--accel=tcg", "-x"]


def test_the_plain_run_of_a_matrix_without_check_is_every_kernels_covering_tier(
        tmp_path: Path) -> None:
    text = (REPO / "matrix.yaml").read_text()
    path = tmp_path / "matrix.yaml"
    path.write_text(text[:text.index("\ncheck:")] + text[text.index("\ntimeout:"):])
    for name in ("kernel-patches",):
        (tmp_path / name).symlink_to(REPO / name)
    said = selection.plain_run(matrix.load(path), make=False)
    assert " ".join(said.split()).startswith(
        "python3 -m harness run with no selection: the check tier, the covering cells of "
        "every kernel, 176 cells of 28 kernels")
    assert "other kernels" not in said and "python3 -m harness run --tier full" in said


# ---- check, unit, bisect, deps ---------------------------------------------------

def test_check_is_the_unit_tests_the_bisect_proof_then_the_check_tier(
        execs, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[list[str]] = []
    monkeypatch.setattr(subproc, "run", lambda argv, **kw: ran.append(argv)
                        or subprocess.CompletedProcess(argv, 0))
    assert cli.main(["check", "--build-dir=/b"]) == 0
    assert ran == [[sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    "harness/tests"],
                   [sys.executable, "-m", "harness", "bisect-check", "--build-dir=/b"]]
    assert execs[0][8:] == ["--tier=check", "--build-dir=/b"]
    assert cli.main(["check", "--tier=covering"]) == 0
    assert execs[1][-1] == "--tier=covering"


def test_check_stops_at_the_first_step_that_fails(execs, monkeypatch, capsys) -> None:
    monkeypatch.setattr(subproc, "run", lambda argv, **kw: subprocess.CompletedProcess(argv, 1))
    assert cli.main(["check"]) == 1
    assert capsys.readouterr().err == ("check: the unit tests failed (exit 1); nothing after "
                                       "them ran\n")
    assert not execs


def test_bisect_needs_its_tree_its_ends_and_its_target(capsys) -> None:
    assert cli.main(["bisect", "--kernel-tree=/t", "--good=v1"]) == 2
    assert capsys.readouterr().err == (
        "error: bisect needs --kernel-tree (KERNEL_TREE=), --good (GOOD=), --bad (BAD=) and "
        "--splat (SPLAT=) or --test (TEST=)\n")


def test_bisect_hands_git_bisect_run_the_step_with_the_selection() -> None:
    args = _parse("bisect", env=dict(KERNEL_TREE="/t", GOOD="v1", BAD="HEAD", TEST="x/y",
                                     ARCHS="x86_64", K="fput_test", BUILD="b"))
    assert commands.bisect_run_argv(args) == [
        str(REPO / "scripts" / "bisect-run"), "--test=x/y", "--archs=x86_64", "-kfput_test",
        "--accel=auto", f"--build-dir={os.path.abspath('b')}"]


def test_deps_runs_the_script_as_make_deps_does() -> None:
    argv, env = commands.deps_argv(_parse("deps", ["--no-sources", "--build-dir=/b"]))
    assert argv == ["sh", str(REPO / "scripts" / "deps.sh")]
    assert (env["DEBDIR"], env["BUILD"], env["PYTHON"], env["SOURCES"]) == \
        ("/b/debs/arm64", "/b", sys.executable, "no")


# ---- a python3 without PyYAML or pytest ----------------------------------------

def test_help_needs_neither_pyyaml_nor_pytest() -> None:
    code = ("import json, sys\n"
            "sys.modules.update(dict.fromkeys(['yaml', 'pytest']))\n"
            "from harness.__main__ import main, _commands\n"
            "codes = {}\n"
            "for argv in (['--help'], *([c, '--help'] for c in _commands())):\n"
            "    try:\n"
            "        main(argv)\n"
            "    except SystemExit as e:\n"
            "        codes[' '.join(argv)] = e.code\n"
            "print(json.dumps(codes), file=sys.stderr)\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    codes = json.loads(r.stderr.splitlines()[-1])
    assert len(codes) == len(cli._commands()) + 1
    assert set(codes.values()) == {0}, codes


@pytest.mark.parametrize("argv", [
    ["run"], ["check"], ["unit"], ["build", "--out=x"], ["boot", "--manifest=x"],
    ["merge", "--out=x", "y"], ["scan", "log"], ["mutants"], ["bench"],
    ["--make-vars", "run"],
])
def test_a_command_says_which_module_it_lacks_in_one_line(argv: list[str]) -> None:
    r = _harness(*argv, block=MADE_UP)
    assert r.returncode == 2
    assert r.stdout == "" and "Traceback" not in r.stderr and r.stderr.count("\n") == 1
    command = argv[-1] if argv[0] == "--make-vars" else argv[0]
    assert r.stderr.startswith(f"error: {sys.executable} has no module ")
    assert (f", which python3 -m harness {command} needs: run make deps first (it installs "
            "python3-") in r.stderr


def test_a_bisect_step_without_pytest_stops_the_bisection(tmp_path: Path) -> None:
    for name in ("Makefile", "Kconfig"):
        (tmp_path / name).write_text("")
    r = _harness("bisect-run", "--splat=x", f"--kernel-tree={tmp_path}", block=MADE_UP)
    assert r.returncode == 128, r.stderr
    assert r.stderr == (f"error: {sys.executable} has no module pytest, which python3 -m "
                        "harness bisect-run needs: run make deps first (it installs "
                        "python3-pytest)\n")


def test_what_to_do_depends_on_the_python3() -> None:
    debian = ["/usr/lib/python3/dist-packages"]
    assert needs.message("run", ["yaml", "pytest"], "/usr/bin/python3", debian) == (
        "/usr/bin/python3 has no module yaml (PyYAML) and pytest, which python3 -m harness "
        "run needs: run make deps first (it installs python3-yaml and python3-pytest)")
    pyenv = "/root/.pyenv/versions/3.11.7/bin/python3"
    assert needs.message("check", ["pytest"], pyenv, []) == (
        f"{pyenv} has no module pytest, which python3 -m harness check needs: use "
        "/usr/bin/python3 -m harness check (as make does), after make deps (it installs "
        "python3-pytest there)")


def test_a_missing_module_found_deep_down_is_said_the_same_way(monkeypatch, capsys) -> None:
    def deep(args):
        raise ModuleNotFoundError("No module named 'yaml'", name="yaml")
    monkeypatch.setattr(cli, "_report", deep)
    assert cli.main(["report", "x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {sys.executable} has no module yaml (PyYAML), which "
                          "python3 -m harness report needs: ")


def test_what_needs_neither_module_runs_without_them(tmp_path: Path) -> None:
    r = _harness("diff", str(RECORDED), str(RECORDED / "results.json"), block=MADE_UP)
    assert r.returncode == 0, r.stderr
    run = tmp_path / "run"
    shutil.copytree(RECORDED, run)
    r = _harness("report", str(run), block=MADE_UP)
    assert r.returncode == 0, r.stderr
    assert (run / "report.html").is_file()



def test_a_metavar_in_capitals_is_the_make_variable_the_option_takes() -> None:
    _, parsers = cli.parser()
    for name, p in parsers.items():
        bound = {action.dest: var for var, action, _ in getattr(p, "make_vars", ())}
        for action in p._actions:
            metavar = action.metavar or ""
            if re.fullmatch(r"[A-Z_]+", metavar):
                assert bound.get(action.dest) == metavar, (name, action.dest)
            elif action.dest in bound:
                assert action.nargs == 0, (name, action.dest)     # a flag: its help says VAR=1
