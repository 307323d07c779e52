"""Per-program times from the host's arrival time of console lines."""
from __future__ import annotations

from pathlib import Path

from harness import timing

CONSOLE = """\
[    0.000000] Linux version 6.1.192
<<< ima-selftest begin >>>\r
TAP version 13
1..2
# selftests: ima_appraise: open_test
# ok 1 open_file.missing_hash.read
ok 1 selftests: ima_appraise: open_test
# selftests: ima_appraise: fput_test
# ok 1 fput.munmap
"""


def test_programs_run_from_their_header_to_their_result() -> None:
    times = (0.5, 2.0, 2.1, 2.1, 2.2, 3.0, 4.2, 4.3, 9.3)
    t = timing.parse(CONSOLE, times)
    assert t.boot_s == 2.0
    assert t.programs[0] == timing.ProgramTime("open_test", 2.0, True)
    # Killed in fput_test: its time runs to the last line seen, marked unfinished.
    assert t.programs[1].name == "fput_test" and not t.programs[1].finished
    assert round(t.programs[1].seconds, 1) == 5.0
    assert t.to_json() == {"boot_s": 2.0, "programs": {"open_test": 2.0, "fput_test": 5.0},
                           "unfinished": ["fput_test"]}


def test_no_times_no_programs() -> None:
    assert timing.parse(CONSOLE, ()) == timing.CellTiming(None, ())


def test_summary_lists_the_slowest_program_first() -> None:
    a = timing.CellTiming(2.0, (timing.ProgramTime("open_test", 1.0, True),
                                timing.ProgramTime("fput_test", 3.0, True)))
    b = timing.CellTiming(4.0, (timing.ProgramTime("open_test", 2.0, True),))
    assert timing.summary([("cell-a", a), ("cell-b", b)]).splitlines() == [
        "program         cells  median     max  slowest cell",
        "(boot to init)      2    3.0s    4.0s  cell-b",
        "open_test           2    1.5s    2.0s  cell-b",
        "fput_test           1    3.0s    3.0s  cell-a",
    ]


def test_saved_times_add_to_what_the_file_had(tmp_path: Path) -> None:
    times = tmp_path / "cell-times.json"
    timing.save_times(times, {"cell-a": 8.54, "cell-b": 21.0})
    timing.save_times(times, {"cell-b": 12.0, "cell-c": 3.0})
    assert timing.load_times(times) == {"cell-a": 8.5, "cell-b": 12.0, "cell-c": 3.0}


def test_a_damaged_times_file_is_no_times() -> None:
    assert timing.load_times(Path("/nonexistent")) == {}
