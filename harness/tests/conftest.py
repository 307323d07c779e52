"""Fixtures the unit tests share."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness import subproc


@pytest.fixture(autouse=True)
def _children_may_start():
    """A run stopped by a test leaves its stop in force (a stopping
    process starts no child); the next test is a new process's run."""
    subproc._stopping[0] = subproc._deferred[0] = ""


@pytest.fixture
def pristine(tmp_path: Path) -> Path:
    """A toy Debian tree where the harness extracts one
    (build/src/linux-source-6.1): two C files and a Makefile, enough for
    patches, workspace turns and tree comparisons."""
    tree = tmp_path / "src" / "linux-source-6.1"
    (tree / "lib").mkdir(parents=True)
    (tree / "lib" / "answer.c").write_text("int answer = 41;\n")
    (tree / "lib" / "other.c").write_text("int other;\n")
    (tree / "Makefile").write_text("# toy\n")
    return tree
