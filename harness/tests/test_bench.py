"""make bench's edit loop measures the edit, or says it measured nothing."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness import __main__ as cli, bench
from harness.errors import HarnessError

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "test_data"


def test_a_loop_that_booted_the_bench_s_variants_measured_nothing() -> None:
    # Recorded: 'make bench VARIANTS=...' handed VARIANTS on to the loop's
    # 'make run', which booted those four kernels, compiled nothing, and
    # passed in 21.4 s; the bench printed that as the edit loop.
    log = DATA / "real_bench_edit_loop_booted_bench_variants.log"
    with pytest.raises(HarnessError) as e:
        bench.check_edit_loop(log.read_text(), log)
    assert str(e.value) == (f"the edit loop's 'make run' did not compile kernel x86_64-extra "
                            f"(the edit's): nothing was measured; see {log}")


def test_a_loop_that_compiled_the_edit_and_booted_its_cell() -> None:
    log = DATA / "real_bench_edit_loop.log"
    bench.check_edit_loop(log.read_text(), log)
    # ... and the same run had it booted any other cell besides.
    other = log.read_text().replace(
        "[  1/1] x86_64-extra-", "[  1/2] x86_64-stock-enforce-custom-sha1-remove pass\n"
        "[  2/2] x86_64-extra-")
    with pytest.raises(HarnessError, match="booted x86_64-stock-enforce-custom-sha1-remove, "
                       "x86_64-extra-enforce-custom-sha1-remove, not x86_64-extra-"):
        bench.check_edit_loop(other, log)


def test_the_loop_drops_every_knob_of_the_makefile() -> None:
    # Those the commands read under --make-vars, and the Makefile's own.
    _, parsers = cli.parser()
    read = {var for p in parsers.values() for var, _, _ in getattr(p, "make_vars", ())}
    makefile = (REPO / "Makefile").read_text()
    internal = set(re.findall(r"^([A-Z_]+) :?=", makefile, re.M))     # not ?=: not a knob
    own = set(re.findall(r"\$\(([A-Z_]+)\)", makefile)) - internal - {"PYTHON"}
    used = read | own
    assert {"ARCHS", "K", "BENCH_BUILD", "BUILD"} <= used
    assert used <= bench.MAKE_KNOBS, used - bench.MAKE_KNOBS
