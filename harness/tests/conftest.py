"""Fixtures the unit tests share."""
from __future__ import annotations

from pathlib import Path

import pytest


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
