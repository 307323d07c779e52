"""The selftest cases a guest must report, read from the C sources.

kselftest_harness names a case "<fixture>.<variant>.<test>" (or
"<fixture>.<test>" without variants, "global.<test>" for TEST()).  Knowing
them before boot gives one pytest item per case, and lets a result line
that never came (a crash, a timeout) count as a failure instead of
silently shrinking the run.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .errors import ConfigError

_PROGS = re.compile(r"^TEST_GEN_PROGS\s*[:+]?=\s*(.*)$", re.M)
_VARIANT = re.compile(r"^\s*FIXTURE_VARIANT_ADD\(\s*(\w+)\s*,\s*(\w+)\s*\)", re.M)
_TEST_F = re.compile(r"^\s*TEST_F(?:_SIGNAL|_TIMEOUT|_ENV)?\(\s*(\w+)\s*,\s*(\w+)", re.M)
_TEST = re.compile(r"^\s*TEST(?:_SIGNAL)?\(\s*(\w+)", re.M)
_FIXTURE = re.compile(r"^\s*FIXTURE\(\s*(\w+)\s*\)", re.M)


@dataclass(frozen=True)
class Case:
    suite: str      # test program, e.g. "open_test"
    name: str       # e.g. "open_file.missing_hash.read"

    @property
    def id(self) -> str:
        return f"{self.suite}/{self.name}"


def programs(makefile: Path) -> list[str]:
    progs: list[str] = []
    for m in _PROGS.finditer(makefile.read_text()):
        progs += m.group(1).split()
    if not progs:
        raise ConfigError(f"{makefile}: no TEST_GEN_PROGS found")
    return progs


def cases_of(source: Path) -> list[Case]:
    """Cases in the order the harness runs them: fixtures in source order,
    each fixture's variants in order, each variant's tests in order."""
    text = source.read_text()
    suite = source.stem
    variants: dict[str, list[str]] = {}
    for fixture, variant in _VARIANT.findall(text):
        variants.setdefault(fixture, []).append(variant)
    tests: dict[str, list[str]] = {}
    for fixture, test in _TEST_F.findall(text):
        tests.setdefault(fixture, []).append(test)
    for test in _TEST.findall(text):
        tests.setdefault("global", []).append(test)
    order = ["global"] + _FIXTURE.findall(text)
    cases = []
    for fixture in order:
        for variant in variants.get(fixture, [""]):
            for test in tests.get(fixture, []):
                name = f"{fixture}.{variant}.{test}" if variant else f"{fixture}.{test}"
                cases.append(Case(suite, name))
    return cases


def expected_cases(selftests: Path) -> tuple[Case, ...]:
    """Every case of every test program under selftests/<dir>/."""
    cases: list[Case] = []
    for makefile in sorted(selftests.glob("*/Makefile")):
        for prog in programs(makefile):
            source = makefile.parent / f"{prog}.c"
            if not source.is_file():
                raise ConfigError(f"{makefile}: TEST_GEN_PROGS names {prog} but "
                                  f"{source} does not exist")
            cases += cases_of(source)
    return tuple(cases)
