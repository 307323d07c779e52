"""pytest wiring of the matrix: one item per (cell, selftest case) plus one
per cell for the boot itself (splats, timeout, panic).  `-k` picks items,
and only the cells that still have an item are built and booted.

    /usr/bin/python3 -m pytest harness/matrix_run.py -k 'aarch64 and enforce and exec'
"""
from __future__ import annotations

import traceback
from pathlib import Path

import pytest

from . import cases as cases_mod, ktree, matrix as matrix_mod, runner, selection
from .errors import HarnessError
from .results import splat_summary, summary_table
from .status import FAILING, Status

REPO = Path(__file__).resolve().parent.parent
_MATRIX = pytest.StashKey()
_SELECTED = pytest.StashKey()
_RUN = pytest.StashKey()
_ERROR = pytest.StashKey()
_DESELECTED = pytest.StashKey()
_PROGRAMS = pytest.StashKey()


def pytest_addoption(parser: pytest.Parser) -> None:
    # The options of `python3 -m harness run`, from the one table of them.
    g = parser.getgroup("ima-matrix", "IMA appraisal matrix")
    selection.pytest_options(g)


def _matrix(config: pytest.Config) -> matrix_mod.Matrix:
    if _MATRIX not in config.stash:
        # Comma-separated strings: matrix.load() splits and checks them.
        overrides = {axis: config.getoption(axis) for axis in selection.AXES}
        tree = config.getoption("kernel_tree")
        extra = (config.getoption("extra_patches") or "").split()
        if tree and (problem := ktree.source_tree_problem(Path(tree).expanduser().resolve(),
                                                          "KERNEL_TREE")):
            raise pytest.UsageError(problem)
        try:
            config.stash[_MATRIX] = matrix_mod.load(
                Path(config.getoption("matrix")), **overrides,
                kernel_tree=Path(tree).expanduser().resolve() if tree else None,
                extra_patches=[Path(p).expanduser().resolve() for p in extra],
                base=config.getoption("base"))
        except HarnessError as e:
            raise pytest.UsageError(str(e)) from None
    return config.stash[_MATRIX]


def _cells(config: pytest.Config) -> tuple[matrix_mod.Cell, ...]:
    try:
        return matrix_mod.tier_cells(_matrix(config), config.getoption("tier"))
    except HarnessError as e:
        raise pytest.UsageError(str(e)) from None


def pytest_configure(config: pytest.Config) -> None:
    # Validate matrix.yaml and the selftest sources up front, so a mistake is
    # one clear line ("ERROR: matrix.yaml: ...") instead of a collection error.
    # (pytest --help configures before it has args.)
    if any("matrix_run" in arg for arg in getattr(config, "args", ())):
        _matrix(config)
        _cells(config)
        _expected(config)


def _expected(config: pytest.Config) -> tuple[cases_mod.Case, ...]:
    try:
        return cases_mod.expected_cases(REPO / "selftests")
    except HarnessError as e:
        raise pytest.UsageError(str(e)) from None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "cell_case" in metafunc.fixturenames:
        expected = _expected(metafunc.config)
        params = [(cell, case) for cell in _cells(metafunc.config) for case in expected]
        metafunc.parametrize("cell_case", params,
                             ids=[f"{c.id}/{k.id}" for c, k in params])
    elif "cell" in metafunc.fixturenames:
        cells = _cells(metafunc.config)
        metafunc.parametrize("cell", cells, ids=[c.id for c in cells])


def _cell_of(item: pytest.Item):
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return None
    if "cell_case" in callspec.params:
        return callspec.params["cell_case"][0]
    return callspec.params.get("cell")


def pytest_deselected(items: list[pytest.Item]) -> None:
    if items:
        items[0].config.stash.setdefault(_DESELECTED, []).extend(items)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # After -k/-m deselection: boot only the cells something still needs,
    # and keep the boot item of each (a splat fails its cell even when -k
    # picked only some of its cases).
    cells = list(dict.fromkeys(c for c in map(_cell_of, items) if c))
    config.stash[_SELECTED] = cells
    wanted = set(cells)
    items.extend(i for i in config.stash.get(_DESELECTED, [])
                 if i.name.startswith("test_boot[") and _cell_of(i) in wanted)
    config.stash[_PROGRAMS] = _programs(config, items)


def _programs(config: pytest.Config, items: list[pytest.Item]) -> dict[str, tuple[str, ...]]:
    pairs = [item.callspec.params["cell_case"] for item in items
             if "cell_case" in getattr(getattr(item, "callspec", None), "params", {})]
    return runner.programs_to_boot(pairs, _expected(config))


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> bool | None:
    config = session.config
    cells = config.stash.get(_SELECTED, [])
    if not cells or config.option.collectonly:
        return
    tr = config.pluginmanager.get_plugin("terminalreporter")

    def log(line: str) -> None:
        tr.write_line(line) if tr else print(line, flush=True)

    try:
        config.stash[_RUN] = runner.run(runner.RunRequest(
            _matrix(config), cells, _expected(config),
            Path(config.getoption("build_dir")).resolve(), jobs=config.getoption("jobs"),
            make_jobs=config.getoption("make_jobs"), accel=config.getoption("accel"), log=log,
            programs=config.stash.get(_PROGRAMS, {}), profile_hz=config.getoption("profile")))
    except HarnessError as e:
        log(f"ERROR: {e}")
        config.stash[_ERROR] = str(e)
    except Exception as e:  # noqa: BLE001 - a harness bug: still report, exit 2
        log("ERROR: the harness failed:\n" + traceback.format_exc())
        config.stash[_ERROR] = f"{type(e).__name__}: {e}"
    run = config.stash.get(_RUN, None)
    if config.stash.get(_ERROR, None) or (run and run.meta.get("nothing_built")):
        # Said once above: no item repeats it (exit status 2, below).
        return True


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # pytest says 1 for any failed item; a cell that could not be built or
    # booted is the infrastructure's failure, not the kernel's: say 2.
    run = session.config.stash.get(_RUN, None)
    if session.config.stash.get(_ERROR, None) or (
            run and run.exit_status == runner.EXIT_INFRASTRUCTURE):
        session.exitstatus = runner.EXIT_INFRASTRUCTURE


def run_of(config: pytest.Config) -> runner.RunResult | None:
    """The matrix run of a session, None if none ran (harness/bisect.py)."""
    return config.stash.get(_RUN, None)


class MatrixRun:
    def __init__(self, config: pytest.Config) -> None:
        self.error = config.stash.get(_ERROR, None)
        run = config.stash.get(_RUN, None)
        self.by_id = {r.cell.id: r for r in run.cells} if run else {}

    def result(self, cell):
        if self.error:
            pytest.fail(f"the matrix could not run: {self.error}", pytrace=False)
        return self.by_id[cell.id]


@pytest.fixture(scope="session")
def matrix_run(request: pytest.FixtureRequest) -> MatrixRun:
    return MatrixRun(request.config)


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    run = config.stash.get(_RUN, None)
    if not run:
        return
    terminalreporter.section("IMA appraisal matrix")
    terminalreporter.write_line(summary_table(run.cells))
    if any(c.splats for c in run.cells):
        terminalreporter.write_line(splat_summary(run.cells))
    terminalreporter.write_line(runner.program_times(run.cells))
    t = run.timings
    terminalreporter.write_line(
        "timings: " + ", ".join(f"{k} {v:.1f}s" for k, v in t.items()))
    failed: dict[str, list[str]] = {}
    for c in run.cells:
        for t in c.tests:
            if t.status in FAILING:
                failed.setdefault(f"{t.name} ({t.status})", []).append(c.cell.id)
    if failed:
        terminalreporter.write_line(f"tests that failed ({len(failed)}), and in how many cells:")
        for name, where in sorted(failed.items()):
            terminalreporter.write_line(f"  {name}: {len(where)} cell(s), e.g. {where[0]}")
    terminalreporter.write_line(f"results: {run.run_dir} (also build/results/latest)")
    errors = sum(c.status == Status.ERROR for c in run.cells)
    # make exits 2 whatever its recipe's status: say the harness's own.
    terminalreporter.write_line({
        runner.EXIT_PASS: "exit status 0: every cell passed",
        runner.EXIT_TEST_FAILURE: "exit status 1: a test failed",
        runner.EXIT_INFRASTRUCTURE: f"exit status 2: an infrastructure error ({errors} cell(s) "
                                    "could not be built or booted"
                                    + (f", {len(run.missing)} selected cell(s) have no result"
                                       if run.missing else "") + ")"}[run.exit_status])
