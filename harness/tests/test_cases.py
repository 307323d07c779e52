from __future__ import annotations

from pathlib import Path

import pytest

from harness import cases
from harness.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def test_fixture_variants_times_tests_in_harness_order(tmp_path: Path) -> None:
    src = tmp_path / "demo_test.c"
    src.write_text("""
TEST(plain) {}
FIXTURE(layout) {};
FIXTURE_VARIANT_ADD(layout, missing) {};
FIXTURE_VARIANT_ADD(layout, wrong) {};
TEST_F(layout, read) {}
TEST_F_TIMEOUT(layout, exec, 10) {}
TEST_F_ENV(layout, write) {}
FIXTURE(bare) {};
TEST_F(bare, only) {}
""")
    assert [c.name for c in cases.cases_of(src)] == [
        "global.plain", "layout.missing.read", "layout.missing.exec",
        "layout.missing.write", "layout.wrong.read", "layout.wrong.exec",
        "layout.wrong.write", "bare.only"]
    assert cases.cases_of(src)[1].id == "demo_test/layout.missing.read"


def test_the_real_suite_has_at_least_nine_cases() -> None:
    found = cases.expected_cases(REPO / "selftests")
    assert len(found) >= 9
    assert {"open_test", "exec_test", "mmap_test", "notinpolicy_test"} <= {c.suite for c in found}


def test_program_without_source(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "Makefile").write_text("TEST_GEN_PROGS := gone_test\n")
    with pytest.raises(ConfigError, match=r"TEST_GEN_PROGS names gone_test but .*gone_test.c does not exist"):
        cases.expected_cases(tmp_path)
