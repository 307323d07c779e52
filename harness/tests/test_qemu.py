"""qemu.boot() with a stand-in emulator: the console and its line times."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness import ktap, qemu
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


# ---- the ready timeout: a guest that hangs at boot -------------------------

DATA = Path(__file__).parent / "test_data"
# A real x86_64 debug guest (2026-12-05) that stopped in the kernel's
# RCU-tasks self test, long before /init; QEMU ran on for 32 minutes.
HUNG = DATA / "real_x86_64_debug_hung_at_boot.log"


def _ready(tmp_path: Path, script: str, ready_s: int, timeout_s: int) -> qemu.BootRequest:
    return dataclasses.replace(_fake(tmp_path, script), ready=ktap.began,
                               ready_timeout_s=ready_s, timeout_s=timeout_s)


def test_a_guest_hung_at_boot_is_killed_at_the_ready_timeout(tmp_path: Path) -> None:
    req = _ready(tmp_path, f"cat {HUNG}; exec sleep 30", 1, 20)
    out = qemu.boot(req, tmp_path / "console.log")
    assert (out.returncode, out.timed_out, out.not_ready) == (None, True, True)
    assert out.console == HUNG.read_bytes().decode()
    assert out.duration_s < 10


def test_a_guest_whose_init_began_runs_to_the_whole_timeout(tmp_path: Path) -> None:
    # The marker arrives in two pieces, the second after the first read.
    script = (f"cat {HUNG}; printf '<<< ima-selftest be'; sleep 0.3; "
              "printf 'gin >>>\\r\\n'; exec sleep 30")
    out = qemu.boot(_ready(tmp_path, script, 1, 3), tmp_path / "console.log")
    assert (out.returncode, out.timed_out, out.not_ready) == (None, True, False)
    assert out.duration_s >= 2.5


def test_a_guest_that_began_and_ended_before_the_ready_timeout(tmp_path: Path) -> None:
    script = f"echo '{ktap.BEGIN_MARKER}'; sleep 1.5; exit 0"
    out = qemu.boot(_ready(tmp_path, script, 1, 10), tmp_path / "console.log")
    assert (out.returncode, out.timed_out, out.not_ready) == (0, False, False)


def test_qemu_exiting_before_the_ready_timeout_is_no_hang(tmp_path: Path) -> None:
    script = "echo 'qemu-system-x86_64: cannot set up guest memory'; exit 1"
    out = qemu.boot(_ready(tmp_path, script, 5, 10), tmp_path / "console.log")
    assert (out.returncode, out.timed_out, out.not_ready) == (1, False, False)
    assert out.duration_s < 4


def test_the_kvm_probe_and_other_boots_without_ready_wait_for_the_timeout(
        tmp_path: Path) -> None:
    req = dataclasses.replace(_fake(tmp_path, "exec sleep 30"), timeout_s=2,
                              ready_timeout_s=1)
    out = qemu.boot(req, tmp_path / "console.log")
    assert (out.timed_out, out.not_ready) == (True, False)
    assert out.duration_s >= 1.8


def test_a_broken_ready_check_neither_stops_the_console_nor_kills_the_guest(
        tmp_path: Path) -> None:
    def ready(console: str) -> bool:
        raise RuntimeError("a harness bug")

    script = "echo '<one>'; sleep 1.5; echo two; exit 0"
    req = dataclasses.replace(_ready(tmp_path, script, 1, 10), ready=ready)
    with pytest.raises(RuntimeError, match="a harness bug"):
        qemu.boot(req, tmp_path / "console.log")
    assert (tmp_path / "console.log").read_text() == "<one>\ntwo\n"


def test_an_interrupted_boot_leaves_no_guest_behind(tmp_path: Path) -> None:
    """Ctrl-C while a guest runs: QEMU is killed, not left running (a
    profiled guest would stay paused for good once its sampler is gone)."""
    import os
    import signal

    pidfile = tmp_path / "pid"
    req = dataclasses.replace(_fake(tmp_path, f"echo $$ > {pidfile}; exec sleep 30"),
                              timeout_s=60)

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        with pytest.raises(KeyboardInterrupt):
            qemu.boot(req, tmp_path / "console.log")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    pid = int(pidfile.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
