"""Booting one guest: the scratch disk, the QEMU command line, the
accelerator probe, and a boot with a hard timeout (and a shorter one for
the console to show the guest ready).  Nothing else is parsed here: a boot yields the
console text and how QEMU ended."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import kernlog, subproc
from .archs import Arch
from .errors import BootError, DependencyError

# Marks a boot as the harness's: without it on the kernel command line the
# selftests SKIP (see selftests/ima_appraise/common.h).
HARNESS_MARKER = "ima_selftest.harness=1"
# Runs only the named test programs (initramfs/init).
PROGRAMS_PARAM = "ima_selftest.progs"
# Runs them through `make -C /selftests run_tests`, not ksft-run (initramfs/init).
MAKE_RUNNER = "ima_selftest.runner=make"
PROBE_MARKER = "<<< ima-selftest probe ok >>>"
KVM_PROBE_TIMEOUT = 20
SCRATCH_SIZE = "64M"
# The kernel log's dump at the end of a boot (initramfs/kmsg-dump.c) goes
# to a disk of its own where the request names one, found by this serial
# (initramfs/init): a virtio disk takes its 130-150 KB at once, where the
# serial console, a trap per byte, took 0.2-0.5 s of every cell.  boot()
# puts the text back between the dump's markers in the console log, so
# that the log reads as if the console had carried it.
DUMP_SERIAL = "ima-kmsg"
DUMP_SIZE = 64 << 20
DUMP_BEGIN = kernlog.DUMP_BEGIN.encode()


@dataclass(frozen=True)
class BootRequest:
    arch: Arch
    kernel: Path
    initrd: Path
    disk: Path | None
    cmdline: str            # appended after console= and panic=
    accel: str              # "tcg" or "kvm"
    memory_mb: int
    timeout_s: int
    cpus: int = 1           # more than one: multi-threaded TCG
    # A guest whose console is not ready(console so far) ready_timeout_s
    # seconds after QEMU started is killed then, not at timeout_s: a kernel
    # that hangs at boot costs its cell minutes, not the whole timeout.
    ready: Callable[[str], bool] | None = None
    ready_timeout_s: int = 0
    # A unix socket for QEMU's gdbstub (harness/profile.py samples through it).
    gdb_socket: Path | None = None
    # The disk image the kernel log's dump goes to (DUMP_SERIAL); None:
    # over the console.
    dump: Path | None = None


@dataclass(frozen=True)
class BootOutcome:
    console: str
    returncode: int | None  # None: killed at the timeout
    timed_out: bool
    duration_s: float
    command: tuple[str, ...]
    # Host seconds since QEMU started at which each console line ended
    # (line i of console.split("\n")): where a cell's time went.
    line_times: tuple[float, ...] = ()
    # Killed (timed_out) because the request's ready() had not held within
    # its ready_timeout_s: the guest hung at boot.
    not_ready: bool = False

    @property
    def last_line(self) -> str:
        """The console's last non-empty line, stripped ("no output" if none):
        what the guest or QEMU said last, for a verdict's reason."""
        return next((line.strip() for line in reversed(self.console.splitlines())
                     if line.strip()), "no output")


def kernel_cmdline(req: BootRequest) -> str:
    # panic=-1: reboot at once on a panic, which -no-reboot turns into an exit.
    return " ".join(filter(None, (f"console={req.arch.console}", "panic=-1",
                                  req.arch.boot_args, req.cmdline)))


def command(req: BootRequest) -> list[str]:
    a = req.arch
    # Several vCPUs run in threads of their own only with thread=multi:
    # TCG's default for them is one thread taking turns, which runs no two
    # kernel paths at the same time.
    accel = req.accel
    if req.cpus > 1 and accel == "tcg":
        accel = "tcg,thread=multi"
    cmd = [a.qemu, "-M", a.machine, "-cpu", a.cpu, "-accel", accel,
           "-m", str(req.memory_mb), "-smp", str(req.cpus),
           # No default devices (VGA, NIC, floppy): faster, and the serial
           # console on stdio is the only output.
           "-nodefaults", "-display", "none", "-serial", "stdio",
           # 'reboot -f' in the guest ends QEMU.
           "-no-reboot",
           "-kernel", str(req.kernel), "-initrd", str(req.initrd),
           "-append", kernel_cmdline(req)]
    if req.gdb_socket:
        cmd += ["-gdb", f"unix:{req.gdb_socket},server=on,wait=off"]
    if req.disk:
        cmd += ["-drive", f"file={req.disk},format=raw,if=none,id=scratch",
                "-device", "virtio-blk-pci,drive=scratch"]
    if req.dump:
        cmd += ["-drive", f"file={req.dump},format=raw,if=none,id=kmsg",
                "-device", f"virtio-blk-pci,drive=kmsg,serial={DUMP_SERIAL}"]
    return cmd


def make_dump_disk(path: Path) -> None:
    """An empty (sparse, all zeros) image for the kernel log's dump."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.truncate(DUMP_SIZE)


def read_dump(path: Path) -> bytes:
    """The dump's text on its disk: up to the first NUL."""
    chunks = []
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            end = chunk.find(b"\0")
            chunks.append(chunk if end < 0 else chunk[:end])
            if end >= 0:
                break
    return b"".join(chunks)


def splice_dump(console: bytes, line_times: list[float], dump: bytes) -> bytes:
    """console with dump put after its DUMP_BEGIN line, with that line's
    line end (the serial console's is CR LF), and line_times (host seconds
    at which each console line ended) given as many entries for the dump's
    lines, at the time the line after the marker ended (the dump's end
    marker: the dump was written in between).  Unchanged where the guest
    never began the dump, or the dump is empty."""
    at = console.find(DUMP_BEGIN)
    if at >= 0:
        at = console.find(b"\n", at)
    if at < 0 or not dump:
        return console
    newline = b"\r\n" if console[at - 1:at] == b"\r" else b"\n"
    at += 1
    dump = dump.replace(b"\r\n", b"\n").replace(b"\n", newline)
    if not dump.endswith(b"\n"):
        dump += newline
    line = console.count(b"\n", 0, at)
    if line_times:
        when = line_times[min(line, len(line_times) - 1)]
        line_times[line:line] = [when] * dump.count(b"\n")
    return console[:at] + dump + console[at:]


def make_scratch_disk(path: Path, uuid: str) -> None:
    """A fresh ext4 image, made in user space; never mounted on the host."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    try:
        proc = subprocess.run(
            # No inline data whatever the host's mke2fs.conf says: ext4
            # reads such files only through the page cache, never with
            # direct I/O (lastwriter_test's closed_with_another needs it).
            ["mkfs.ext4", "-q", "-F", "-U", uuid, "-L", "ima-scratch", "-O", "^inline_data",
             "-E", "root_owner=0:0", str(path), SCRATCH_SIZE],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except FileNotFoundError:
        raise DependencyError("mkfs.ext4 not found: install e2fsprogs ('make deps')") from None
    if proc.returncode:
        raise BootError(f"mkfs.ext4 {path} failed: {proc.stdout.strip()}")


# After the ready timeout, how long the console's reader may take to catch
# up with what QEMU already wrote (it competes for the GIL with the other
# guests' readers) before the guest is taken for hung.
READY_GRACE_S = 2.0


def _wait_ready(proc: subprocess.Popen, ready: threading.Event, deadline: float) -> bool:
    """Whether the guest's console became ready, or QEMU ended, before
    the deadline (time.monotonic()) and its grace; False: it did neither."""
    while time.monotonic() < deadline + READY_GRACE_S:
        if ready.wait(timeout=0.2) or proc.poll() is not None:
            return True
    return ready.is_set() or proc.poll() is not None


def boot(req: BootRequest, console_log: Path) -> BootOutcome:
    """Runs QEMU until it exits or the timeout, or until the ready timeout
    if the guest's console is not ready by then; the console goes
    to console_log as it arrives, so a hung guest leaves its log behind, and
    each line is stamped with the host time it arrived at."""
    cmd = command(req)
    console_log.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    line_times: list[float] = []
    ready = threading.Event()
    # Only a deadline before the timeout needs the console watched.
    watch = req.ready is not None and 0 < req.ready_timeout_s < req.timeout_s
    broken: list[Exception] = []
    if req.dump:
        make_dump_disk(req.dump)
    with open(console_log, "wb", buffering=0) as out:
        try:
            proc = subproc.popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT)
        except FileNotFoundError:
            raise DependencyError(f"{cmd[0]} not found: install QEMU ('make deps')") from None

        def copy() -> None:
            assert proc.stdout is not None
            so_far = b""    # the console until it is ready
            while chunk := os.read(proc.stdout.fileno(), 65536):
                now = time.monotonic() - start
                out.write(chunk)
                line_times.extend([now] * chunk.count(b"\n"))
                if watch and not ready.is_set():
                    so_far += chunk
                    # A marker line ends in '>' (a kernel line cut into it
                    # comes before that): parse only when one may be whole.
                    if b">" in chunk:
                        try:
                            if req.ready(so_far.decode("utf-8", errors="replace")):
                                ready.set()
                        except Exception as e:  # noqa: BLE001 (raised after the boot)
                            # A harness bug: keep the console flowing, and
                            # never kill the guest for it.
                            broken.append(e)
                            ready.set()

        reader = threading.Thread(target=copy, daemon=True)
        reader.start()
        timed_out = not_ready = False
        rc: int | None = None
        try:
            if watch:
                not_ready = not _wait_ready(proc, ready, start + req.ready_timeout_s)
            if not_ready:
                proc.kill()
                proc.wait()
                timed_out = True
            else:
                try:
                    rc = proc.wait(timeout=max(0.0, start + req.timeout_s - time.monotonic()))
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                    rc, timed_out = None, True
        except BaseException:
            # Ctrl-C or a stop of the run: no guest outlives it (a profiled
            # one would stay paused once its sampler is gone).
            subproc.end(proc, interrupted=False)
            raise
        finally:
            subproc.forget(proc)
        duration = time.monotonic() - start
        # QEMU is gone, so its end of the pipe is closed: the reader ends
        # at EOF (a child QEMU left holding the pipe is not waited for).
        reader.join(timeout=5)
        proc.stdout.close()
    if broken:
        raise broken[0]
    raw = console_log.read_bytes()
    if req.dump:
        spliced = splice_dump(raw, line_times, read_dump(req.dump))
        if spliced is not raw:
            console_log.write_bytes(spliced)
            raw = spliced
    console = raw.decode("utf-8", errors="replace")
    return BootOutcome(console, rc, timed_out, duration, tuple(cmd), tuple(line_times),
                       not_ready)


def shell_quoted(cmd: tuple[str, ...] | list[str]) -> str:
    return " ".join(shlex.quote(c) for c in cmd)


# ---- accelerator ------------------------------------------------------------

@dataclass(frozen=True)
class AccelChoice:
    accel: str
    reason: str


def _qemu_version(binary: str) -> str:
    try:
        out = subprocess.run([binary, "--version"], stdout=subprocess.PIPE, text=True).stdout
    except FileNotFoundError:
        raise DependencyError(f"{binary} not found: install QEMU ('make deps')") from None
    return out.splitlines()[0] if out else "unknown"


def choose_accel(arch: Arch, kernel: Path, initrd: Path, cache: Path,
                 wanted: str = "auto") -> AccelChoice:
    """KVM only if a KVM guest really boots: on some hosts /dev/kvm exists
    but the guest hangs silently after the firmware banner.  The verdict is
    cached per host kernel and QEMU version (delete the cache to re-probe)."""
    if wanted == "tcg":
        return AccelChoice("tcg", "requested (ACCEL=tcg)")
    if os.uname().machine != arch.name:
        if wanted == "kvm":
            raise BootError(f"ACCEL=kvm: a {arch.name} guest cannot use KVM on a "
                            f"{os.uname().machine} host")
        return AccelChoice("tcg", f"{arch.name} guest on a {os.uname().machine} host")
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        if wanted == "kvm":
            raise BootError("ACCEL=kvm but /dev/kvm is missing or not accessible")
        return AccelChoice("tcg", "no usable /dev/kvm")
    if wanted == "kvm":
        return AccelChoice("kvm", "requested (ACCEL=kvm)")

    key = f"{arch.name} {os.uname().release} {_qemu_version(arch.qemu)}"
    try:
        verdicts = json.loads(cache.read_text()) if cache.is_file() else {}
    except ValueError:
        verdicts = {}   # a damaged cache: probe again
    cached = f" (cached in {cache})"
    if not isinstance(verdicts.get(key), dict):   # not probed, or an old cache's bare bool
        req = BootRequest(arch, kernel, initrd, None, "ima_selftest.probe=1", "kvm",
                          256, KVM_PROBE_TIMEOUT)
        ok, why = probe_verdict(boot(req, cache.with_name(f"kvm-probe-{arch.name}.log")))
        verdicts[key] = {"kvm": ok, "why": why}
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(verdicts, indent=1))
        cached = f" (log: {cache.with_name(f'kvm-probe-{arch.name}.log')})"
    return AccelChoice("kvm" if verdicts[key]["kvm"] else "tcg", verdicts[key]["why"] + cached)


def probe_verdict(outcome: BootOutcome) -> tuple[bool, str]:
    """Whether the KVM probe guest booted, and what happened if not: QEMU
    aborting at once (with its own message) is not a guest that hangs."""
    if PROBE_MARKER in outcome.console:
        return True, f"a KVM probe guest booted in {outcome.duration_s:.1f}s"
    # QEMU's own messages start with its program name; prefer the first.
    said = next((line.strip() for line in outcome.console.splitlines() if outcome.command
                 and line.strip().startswith(Path(outcome.command[0]).name + ":")),
                outcome.last_line)
    if outcome.timed_out:
        return False, (f"a KVM probe guest did not boot within {outcome.duration_s:.0f}s "
                       f"(last console line: {said})")
    return False, (f"QEMU with KVM exited at once ({outcome.duration_s:.1f}s, "
                   f"status {outcome.returncode}): {said}")
