"""The matrix run as pytest items (see conftest.py for how they are made):
one per cell and case of the selftests, one per cell for its boot.  Not a
unit test: pytest collects it only when named, as `python3 -m harness run`
and `check` name it (commands.MATRIX_RUN)."""
from __future__ import annotations

import pytest

from .status import Status


def _detail(result, test) -> str:
    lines = [f"{test.name} in {result.cell.id}: {test.reason or test.status}"]
    lines += [f"  {line}" for line in test.log]
    if result.artifacts:
        lines.append(f"console: {result.artifacts / 'console.log'}")
    return "\n".join(lines)


def test_case(cell_case, matrix_run) -> None:
    cell, case = cell_case
    result = matrix_run.result(cell)
    if result.status == Status.ERROR:
        first = result.reason.splitlines()[0] if result.reason else ""
        pytest.fail(f"{cell.id} could not boot ({first}); details in test_boot[{cell.id}]",
                    pytrace=False)
    test = result.test(case.id)
    if test.status == Status.SKIP:
        pytest.skip(f"{case.id}: {test.reason}")
    if test.status == Status.XFAIL:
        pytest.xfail(test.reason)
    if test.status == Status.XPASS:
        pytest.fail(f"XPASS {case.id} in {cell.id}: {test.reason}", pytrace=False)
    if test.status != Status.PASS:
        pytest.fail(_detail(result, test), pytrace=False)


def test_boot(cell, matrix_run) -> None:
    """The guest itself: no kernel splat, panic or timeout, a clean end, no
    skipped test, no failure that no expected case accounts for."""
    result = matrix_run.result(cell)
    if result.problems:
        where = f"\nconsole: {result.artifacts / 'console.log'}" if result.artifacts else ""
        pytest.fail(f"{cell.id}: {result.status}\n" + "\n".join(result.problems) + where,
                    pytrace=False)
