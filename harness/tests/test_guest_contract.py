"""The strings the host and the guest agree on, checked on both sides: if
one drifted, every test would SKIP or every result would be lost."""
from __future__ import annotations

import re
from pathlib import Path

from harness import ktap, qemu, splats

REPO = Path(__file__).resolve().parents[2]
INIT = (REPO / "initramfs" / "init").read_text()
CELL_H = (REPO / "selftests" / "ima_appraise" / "cell.h").read_text()


def test_harness_marker_is_what_the_selftests_look_for() -> None:
    assert f'#define IMA_SELFTEST_MARKER "{qemu.HARNESS_MARKER}"' in CELL_H


def test_init_prints_the_markers_the_parser_reads() -> None:
    assert f"echo '{ktap.BEGIN_MARKER}'" in INIT
    end = re.search(r'echo "(<<< ima-selftest end rc=\$rc >>>)"', INIT)
    assert end, "init must print the end marker with make's exit status"
    console = f"{ktap.BEGIN_MARKER}\nTAP version 13\n1..0\n{end[1].replace('$rc', '3')}\n"
    run = ktap.parse(console)
    assert (run.began, run.ended, run.exit_code) == (True, True, 3)


def test_init_answers_the_kvm_probe() -> None:
    assert "ima_selftest.probe=1" in INIT
    assert f"echo '{qemu.PROBE_MARKER}'" in INIT


def test_init_prefixes_its_dmesg_dump_as_the_scanner_expects() -> None:
    assert f"s/^<[567]>/{splats.DMESG_PREFIX}/p" in INIT


def test_a_changed_source_is_staged_newer_than_a_binary_built_before(tmp_path) -> None:
    # The stage is shared by worktrees: an edit older than the binary that
    # another worktree built there must still be recompiled.
    import os
    from harness.initramfs import _copy_if_changed
    src, dst, binary = tmp_path / "t.c", tmp_path / "stage" / "t.c", tmp_path / "t"
    src.write_text("new\n")
    os.utime(src, (1, 1))
    dst.parent.mkdir()
    dst.write_text("old\n")
    binary.write_text("")
    _copy_if_changed(src, dst)
    assert dst.read_text() == "new\n"
    assert dst.stat().st_mtime >= binary.stat().st_mtime


def test_init_reads_the_program_selection() -> None:
    assert f"progs=$(param {qemu.PROGRAMS_PARAM})" in INIT
    assert 'TEST_GEN_PROGS="$progs"' in INIT
