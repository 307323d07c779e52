"""What the runner decides before it boots anything."""
from __future__ import annotations

from harness import runner
from harness.cases import Case
from harness.matrix import Cell

EXPECTED = (Case("open_test", "a"), Case("open_test", "b"), Case("exec_test", "c"),
            Case("mmap_test", "d"))
ONE = Cell("x86_64", "patched", "enforce", "custom")
TWO = Cell("x86_64", "patched", "fix", "custom")


def test_a_cell_boots_only_the_programs_of_its_selected_cases() -> None:
    selected = [(ONE, EXPECTED[3]), (ONE, EXPECTED[1])]
    # In the suite's own order, not the selection's.
    assert runner.programs_to_boot(selected, EXPECTED) == {ONE.id: ("open_test", "mmap_test")}


def test_a_cell_with_every_program_selected_runs_them_all() -> None:
    selected = [(TWO, c) for c in EXPECTED[1:]]
    assert runner.programs_to_boot(selected, EXPECTED) == {}
