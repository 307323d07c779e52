"""qemu.boot() with a stand-in emulator: the console and its line times."""
from __future__ import annotations

import dataclasses
from pathlib import Path

from harness import qemu
from harness.archs import ARCHS


def _fake(tmp_path: Path, script: str) -> qemu.BootRequest:
    emulator = tmp_path / "fake-qemu"
    emulator.write_text("#!/bin/sh\n" + script)
    emulator.chmod(0o755)
    arch = dataclasses.replace(ARCHS["x86_64"], qemu=str(emulator))
    return qemu.BootRequest(arch, tmp_path / "bzImage", tmp_path / "initrd", None, "", "tcg",
                            64, 5)


def test_each_console_line_is_stamped_when_it_arrives(tmp_path: Path) -> None:
    req = _fake(tmp_path, "echo one; sleep 0.3; printf 'two\\nthree\\n'; printf tail")
    out = qemu.boot(req, tmp_path / "console.log")
    assert out.console == "one\ntwo\nthree\ntail"
    assert (tmp_path / "console.log").read_text() == out.console
    assert len(out.line_times) == 3     # the unterminated tail has no time
    assert out.line_times[1] - out.line_times[0] >= 0.25
    assert out.line_times[1] == out.line_times[2]
    assert (out.returncode, out.timed_out) == (0, False)


def test_a_guest_killed_at_the_timeout_keeps_its_console(tmp_path: Path) -> None:
    req = dataclasses.replace(_fake(tmp_path, "echo booting; exec sleep 30"), timeout_s=1)
    out = qemu.boot(req, tmp_path / "console.log")
    assert (out.returncode, out.timed_out) == (None, True)
    assert out.console == "booting\n" and len(out.line_times) == 1
    assert out.duration_s < 10
