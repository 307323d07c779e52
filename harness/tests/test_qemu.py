"""qemu.boot() with a stand-in emulator: the console and its line times."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness import kernlog, ktap, qemu
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


# ---- the kernel log's dump on a disk of its own ------------------------------

# A real x86_64 stock enforce-custom console whose init printed the dump
# over the console (2026-12-04): cut into what the console carries now and
# what the guest writes to the dump disk, it must come back whole.
WHOLE = DATA / "real_x86_64_stock_enforce_custom_whole_log.log"


def _cut(whole: bytes) -> tuple[bytes, bytes]:
    """The console without the dump's lines, and the dump as init writes it
    to its disk (LF line ends, a NUL, and whatever an earlier boot left)."""
    begin = whole.index(qemu.DUMP_BEGIN + b"\r\n") + len(qemu.DUMP_BEGIN) + 2
    end = whole.index(b"<<< ima-selftest kmsg end")
    dump = whole[begin:end].replace(b"\r\n", b"\n")
    return whole[:begin] + whole[end:], dump + b"\0kmsg 9999,4 [ 1.0] stale\n"


def test_the_dump_goes_back_between_its_markers(tmp_path: Path) -> None:
    whole = WHOLE.read_bytes()
    console, disk = _cut(whole)
    (tmp_path / "dump").write_bytes(disk)
    lines = console.count(b"\n")
    times = [float(i) for i in range(lines)]
    spliced = qemu.splice_dump(console, times, qemu.read_dump(tmp_path / "dump"))
    assert spliced == whole
    assert len(times) == whole.count(b"\n")
    # The dump's lines take the time of its end marker, which follows them.
    end_line = whole[:whole.index(b"<<< ima-selftest kmsg end")].count(b"\n")
    begin_line = whole[:whole.index(qemu.DUMP_BEGIN)].count(b"\n")
    assert times[begin_line] == begin_line
    assert set(times[begin_line + 1:end_line + 1]) == {float(begin_line + 1)}
    log = kernlog.read(spliced.decode())
    assert log.from_dump and not log.problems


def test_no_dump_marker_or_an_empty_dump_changes_nothing() -> None:
    whole = WHOLE.read_bytes()
    console, _ = _cut(whole)
    hung = console[:console.index(qemu.DUMP_BEGIN)]
    times = [1.0, 2.0]
    assert qemu.splice_dump(hung, times, b"kmsg 0,6 [    0.000000] Linux\r\n") is hung
    assert qemu.splice_dump(console, times, b"") is console
    assert times == [1.0, 2.0]


def test_boot_reads_the_dump_from_its_disk(tmp_path: Path) -> None:
    """A stand-in guest that writes its dump where QEMU's -drive id=kmsg
    points, as initramfs/init does through the virtio disk."""
    script = r"""
for a; do case $a in file=*,id=kmsg) f=${a#file=}; f=${f%%,*};; esac; done
[ "$(wc -c < "$f")" -eq 67108864 ] || echo "dump disk not made"
echo '<<< ima-selftest end rc=0 >>>'
echo '<<< ima-selftest kmsg >>>'
printf 'kmsg 0,5 [    0.000000] Linux version\nkmsg 1,4 [    0.1] x\0junk' |
	dd of="$f" conv=notrunc status=none
echo '<<< ima-selftest kmsg end rc=0 >>>'
"""
    req = dataclasses.replace(_fake(tmp_path, script), dump=tmp_path / "cell.kmsg")
    (tmp_path / "cell.kmsg").write_bytes(b"left by an earlier boot" * 10)
    out = qemu.boot(req, tmp_path / "console.log")
    assert out.console == ("<<< ima-selftest end rc=0 >>>\n"
                           "<<< ima-selftest kmsg >>>\n"
                           "kmsg 0,5 [    0.000000] Linux version\n"
                           "kmsg 1,4 [    0.1] x\n"
                           "<<< ima-selftest kmsg end rc=0 >>>\n")
    assert (tmp_path / "console.log").read_text() == out.console
    assert len(out.line_times) == 5
    assert "-drive" in out.command and f"file={tmp_path / 'cell.kmsg'},format=raw,if=none,id=kmsg" \
        in out.command
    assert "virtio-blk-pci,drive=kmsg,serial=ima-kmsg" in out.command
