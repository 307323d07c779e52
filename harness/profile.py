"""Where a guest's CPU time goes: its vCPUs' program counters sampled
through QEMU's gdbstub, by kernel function and source directory
(`make run PROFILE=<Hz>`, a cell's profile.txt).

The gdbstub is the one observer that needs nothing of the guest (no perf,
no CONFIG_PROFILING in a tinyconfig kernel, no tool in the initramfs) and
sees user space too.  Each sample stops the VM (the remote protocol's
interrupt byte), reads every vCPU's registers ('Hg' and 'g') and lets it
run again ('c'); the registers say the PC and the privilege level (user
or kernel mode: archs.Arch.gdb_pc, gdb_user_mode).  QEMU's virtual clock
stops with the VM, so the guest's own timeouts do not shrink; the cell's
host seconds grow by the stops (Sampler paces them).

Under TCG a stop lands between translated blocks, so a sample names the
block that was to run next: code that ends its blocks often (a write of
the interrupt mask, arm64's msr daif) is counted somewhat more than its
share, and a long straight block somewhat less.  Shares of a few per cent
are the resolution, not the single samples.
"""
from __future__ import annotations

import bisect
import contextlib
import json
import re
import socket
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .archs import Arch
from .errors import HarnessError
from .splats import Symbols

DEFAULT_HZ = 200
# How long the sampler waits for QEMU to open its gdbstub socket.
CONNECT_TIMEOUT_S = 30.0
TOP_FUNCTIONS = 40
TOP_DIRECTORIES = 25


class ProfileError(HarnessError):
    """A profile that could not be taken or written."""


# ---- the remote protocol -----------------------------------------------------

def packet(data: bytes) -> bytes:
    """data framed as a remote-protocol packet: $data#checksum."""
    return b"$" + data + b"#" + b"%02x" % (sum(data) % 256)


class Gdbstub:
    """The client side of QEMU's gdbstub over one stream socket: packets
    in acknowledged mode (QEMU 7.2 does not offer QStartNoAckMode)."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.buf = b""

    def send(self, data: bytes) -> None:
        self.sock.sendall(packet(data))

    def interrupt(self) -> None:
        self.sock.sendall(b"\x03")

    def recv(self) -> bytes:
        """The next packet's data, acknowledged; EOFError once QEMU is gone
        (the socket closed, or an exit packet: W, X)."""
        while True:
            start = self.buf.find(b"$")
            end = self.buf.find(b"#", start) if start >= 0 else -1
            if end >= 0 and len(self.buf) >= end + 3:
                data = self.buf[start + 1:end]
                self.buf = self.buf[end + 3:]
                self.sock.sendall(b"+")
                if data[:1] in (b"W", b"X"):
                    raise EOFError(f"QEMU exited ({data.decode(errors='replace')})")
                return data
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("the gdbstub closed")
            self.buf += chunk

    def stopped(self) -> bytes:
        """Waits for a stop reply (T.., S..)."""
        while (data := self.recv())[:1] not in (b"T", b"S"):
            pass
        return data

    def request(self, data: bytes) -> bytes:
        """A command's reply (never a stop reply left over from before:
        the replies asked for here are hex, OK, E.., m.. or l)."""
        self.send(data)
        while (reply := self.recv())[:1] in (b"T", b"S"):
            pass
        return reply

    def threads(self) -> list[bytes]:
        """The vCPUs' thread ids (qfThreadInfo, qsThreadInfo until 'l')."""
        ids: list[bytes] = []
        reply = self.request(b"qfThreadInfo")
        while reply.startswith(b"m"):
            ids += [t for t in reply[1:].split(b",") if t]
            reply = self.request(b"qsThreadInfo")
        return ids

    def registers(self, thread: bytes) -> bytes:
        """The thread's registers, its 'g' reply decoded from hex: GDB's
        order for the arch, little-endian (archs.Arch.gdb_pc and
        gdb_user_mode read them)."""
        if self.request(b"Hg" + thread) != b"OK":
            raise ProfileError(f"gdbstub refused to select thread {thread.decode()}")
        return bytes.fromhex(self.request(b"g").decode())


class Sampler(threading.Thread):
    """Samples every vCPU's PC from when QEMU opens the gdbstub's unix
    socket to when it closes it, at hz at most: a stop costs a few round
    trips to this thread, and on a loaded host those take long, so the
    next stop waits for nine times the last one's cost if that is longer
    than 1/hz (the VM is kept stopped at most a tenth of the time).  stop()
    ends it once QEMU is gone, connected or not."""

    def __init__(self, path: Path, arch: Arch, hz: int = DEFAULT_HZ, name: str = ""):
        super().__init__(daemon=True, name=f"profile {name or path}")
        self.path, self.arch, self.hz = path, arch, hz
        self.pcs: Counter[int] = Counter()     # privileged samples, by PC
        self.user = 0               # samples in user mode (CPL 3, EL0)
        self.samples = 0            # stops; each reads every vCPU
        self.vcpus = 0
        self.paused_s = 0.0         # host seconds the VM was kept stopped
        self.elapsed_s = 0.0        # from connecting to the end
        self.error = ""
        self._quit = threading.Event()
        self._sock: socket.socket | None = None

    def stop(self) -> None:
        """Ends the sampling (call it once QEMU has exited: a VM stopped
        when its client goes stays paused)."""
        self._quit.set()
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)
        self.join(timeout=10)

    def _connect(self) -> socket.socket | None:
        deadline = time.monotonic() + CONNECT_TIMEOUT_S
        while not self._quit.is_set() and time.monotonic() < deadline:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(str(self.path))
                return s
            except OSError:
                s.close()
                time.sleep(0.01)
        if not self._quit.is_set():
            self.error = f"QEMU did not open its gdbstub at {self.path} in {CONNECT_TIMEOUT_S:.0f}s"
        return None

    def run(self) -> None:
        sock = self._sock = self._connect()
        if sock is None:
            return
        start = time.monotonic()
        gdb = Gdbstub(sock)
        try:
            gdb.send(b"?")          # the VM stopped when we connected
            gdb.stopped()
            threads = gdb.threads()
            self.vcpus = len(threads)
            wait = 1.0 / self.hz
            while not self._quit.is_set():
                gdb.send(b"c")
                time.sleep(wait)
                stopped = time.monotonic()
                gdb.interrupt()
                gdb.stopped()
                # Counted only whole: QEMU may end between two vCPUs' reads.
                regs = [gdb.registers(t) for t in threads]
                for r in regs:
                    if self.arch.gdb_user_mode(r):
                        self.user += 1
                    else:
                        self.pcs[self.arch.gdb_pc(r)] += 1
                self.samples += 1
                cost = time.monotonic() - stopped
                self.paused_s += cost
                wait = max(1.0 / self.hz, 9 * cost)
        except (EOFError, ConnectionError):
            pass                    # the guest ended: the normal way out
        except Exception as e:      # noqa: BLE001 - a view: never leave the VM stopped
            self.error = f"sampling stopped: {type(e).__name__}: {e}"
            with contextlib.suppress(OSError):
                gdb.send(b"D")      # detach: QEMU lets the VM run again
        finally:
            self.elapsed_s = time.monotonic() - start
            sock.close()


# ---- symbols and the report --------------------------------------------------

# Privileged samples at no function of vmlinux's: firmware, the x86_64
# bzImage's decompressor, the kernel before it runs at its link address.
OUTSIDE = "(firmware, early boot)"


@dataclass
class Units:
    """Which compilation unit each address range of a vmlinux's code came
    from (DWARF's .debug_aranges and its units' names), relative to the
    tree it was built from."""
    starts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    def file(self, addr: int) -> str:
        i = bisect.bisect_right(self.starts, addr) - 1
        return self.files[i] if i >= 0 and addr < self.ends[i] else "?"


_UNIT = re.compile(r"\s*Compilation Unit @ offset (0x[0-9a-f]+|0):")
_UNIT_NAME = re.compile(r"\s*<[0-9a-f]+>\s+DW_AT_name\s*:\s*(?:\([^)]*\):\s*)?(.*\S)")
_ARANGES_UNIT = re.compile(r"\s*Offset into \.debug_info:\s*(0x[0-9a-f]+|0)\s*$")
_ARANGE = re.compile(r"\s+([0-9a-f]{8,16}) ([0-9a-f]{8,16})\s*$")


def parse_units(info: str, aranges: str, root: str) -> Units:
    """`readelf --debug-dump=info --dwarf-depth=1` (each unit's offset and
    name) and `readelf --debug-dump=aranges` (each unit's address ranges)."""
    prefix = root.rstrip("/") + "/" if root else ""
    names: dict[int, str] = {}
    unit = None
    for line in info.splitlines():
        if m := _UNIT.match(line):
            unit = int(m.group(1), 16)
        elif (m := _UNIT_NAME.match(line)) and unit is not None and unit not in names:
            path = m.group(1)
            names[unit] = path[len(prefix):] if prefix and path.startswith(prefix) else path
    ranges = []
    unit = None
    for line in aranges.splitlines():
        if m := _ARANGES_UNIT.match(line):
            unit = int(m.group(1), 16)
        elif (m := _ARANGE.match(line)) and unit is not None:
            addr, length = int(m.group(1), 16), int(m.group(2), 16)
            if length:
                ranges.append((addr, addr + length, names.get(unit, "?")))
    ranges.sort()
    return Units([a for a, _, _ in ranges], [e for _, e, _ in ranges],
                 [f for _, _, f in ranges])


@dataclass
class KernelSymbols:
    """A vmlinux's function addresses, in order, and with units each
    function's compilation unit: the file that emitted its code.  A static
    copy of a header's inline function (rcu_read_unlock, emitted by 91
    units of the x86_64 6.1 kernel) goes by the unit that emitted it, and
    so do its samples."""
    addrs: list[int]
    names: list[str]
    units: Units = field(default_factory=Units)

    def __post_init__(self) -> None:
        counts = Counter(self.names)
        self._shared = {n for n, c in counts.items() if c > 1}

    def function(self, pc: int) -> str:
        """The name of the function at pc; a name several units define
        goes with its unit's file, name@file, one function per copy (all
        copies are one where the units are unknown)."""
        i = bisect.bisect_right(self.addrs, pc) - 1
        if i < 0:
            return OUTSIDE
        name = self.names[i]
        if name in self._shared and self.units.starts:
            return f"{name}@{self.units.file(self.addrs[i])}"
        return name

    def file(self, pc: int) -> str:
        i = bisect.bisect_right(self.addrs, pc) - 1
        return self.units.file(self.addrs[i]) if i >= 0 else "?"


def parse_nm(text: str, units: Units | None = None) -> KernelSymbols:
    """`nm -n` output: its text symbols (t, T, w, W), in address order."""
    pairs = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in ("t", "T", "w", "W"):
            pairs.append((int(parts[0], 16), parts[2]))
    pairs.sort()
    return KernelSymbols([a for a, _ in pairs], [n for _, n in pairs], units or Units())


def _binutil(arch: Arch, tool: str, args: list[str], stdin: str = "") -> str:
    """A binutils program's output; ProfileError if it is missing or fails."""
    cmd = [arch.tool(tool), *args]
    try:
        proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True,
                              errors="replace")
    except FileNotFoundError:
        raise ProfileError(f"{cmd[0]} not found: install binutils ('make deps')") from None
    if proc.returncode:
        raise ProfileError(f"{' '.join(cmd)} failed: {proc.stderr.strip()}")
    return proc.stdout


def load_units(vmlinux: Path, arch: Arch, root: str) -> Units:
    units = parse_units(
        _binutil(arch, "readelf", ["--debug-dump=info", "--dwarf-depth=1", str(vmlinux)]),
        _binutil(arch, "readelf", ["--debug-dump=aranges", str(vmlinux)]), root)
    if not units.starts:
        raise ProfileError(f"{vmlinux}: no address ranges of compilation units "
                           "(.debug_aranges): built without DEBUG_INFO?")
    return units


def load_symbols(vmlinux: Path, arch: Arch, units: Units | None = None) -> KernelSymbols:
    return parse_nm(_binutil(arch, "nm", ["-n", str(vmlinux)]), units)


def directory(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else path


@dataclass
class Profile:
    """Samples by where they landed: user space, or a kernel function (and
    its source file).  profile.json holds one; merge() adds them up."""
    samples: int = 0                # stops of the VM
    vcpus: int = 0
    hz: int = 0
    user: int = 0                   # vCPU samples in user mode
    functions: Counter[str] = field(default_factory=Counter)
    files: dict[str, str] = field(default_factory=dict)
    guests: int = 1
    seconds: float = 0.0            # from the first stop to the last
    paused_s: float = 0.0           # of which the VM was kept stopped

    @classmethod
    def of(cls, pcs: Counter[int], user: int, syms: KernelSymbols, samples: int, vcpus: int,
           hz: int, seconds: float = 0.0, paused_s: float = 0.0) -> Profile:
        """pcs: the privileged samples by program counter."""
        p = cls(samples, vcpus, hz, user, seconds=seconds, paused_s=paused_s)
        for pc, n in pcs.items():
            f = syms.function(pc)
            p.functions[f] += n
            if f != OUTSIDE and syms.units.starts:
                p.files[f] = syms.file(pc)
        return p

    def to_json(self) -> dict:
        return {"samples": self.samples, "vcpus": self.vcpus, "hz": self.hz,
                "user": self.user, "functions": dict(self.functions.most_common()),
                "files": self.files, "seconds": round(self.seconds, 3),
                "paused_s": round(self.paused_s, 3)}

    @classmethod
    def from_json(cls, d: dict) -> Profile:
        return cls(int(d["samples"]), int(d["vcpus"]), int(d["hz"]), int(d["user"]),
                   Counter({str(k): int(v) for k, v in d["functions"].items()}),
                   {str(k): str(v) for k, v in d["files"].items()},
                   seconds=float(d["seconds"]), paused_s=float(d["paused_s"]))

    @classmethod
    def merge(cls, profiles: list[Profile]) -> Profile:
        total = cls(guests=0)
        for p in profiles:
            total.samples += p.samples
            total.vcpus = max(total.vcpus, p.vcpus)
            total.hz = total.hz or p.hz
            total.user += p.user
            total.functions.update(p.functions)
            total.files |= p.files
            total.guests += p.guests
            total.seconds += p.seconds
            total.paused_s += p.paused_s
        return total

    def text(self, title: str, top: int = TOP_FUNCTIONS) -> str:
        """profile.txt: user against kernel, the kernel by source directory
        and by function, each with its samples and share of all."""
        kernel = sum(self.functions.values())
        total = self.user + kernel
        dirs: Counter[str] = Counter()
        for f, n in self.functions.items():
            dirs[f if f == OUTSIDE else directory(self.files.get(f, "?"))] += n

        def pct(n: int) -> str:
            return f"{100.0 * n / total:5.1f}" if total else "    -"

        guests = f"{self.guests} guests, " if self.guests != 1 else ""
        rate = self.samples / self.seconds if self.seconds else 0.0
        paused = 100.0 * self.paused_s / self.seconds if self.seconds else 0.0
        out = [f"Guest profile of {title}: {guests}{self.samples} stops in {self.seconds:.1f} s "
               f"({rate:.0f} a second, asked for {self.hz}; the VM stopped {paused:.0f} % of "
               f"the time), {self.vcpus} vCPU(s), {total} samples (PCs read through QEMU's "
               "gdbstub; harness/profile.py)", "",
               f"{'where':<40} {'samples':>7} {'%':>5}",
               f"{'user mode':<40} {self.user:>7} {pct(self.user)}",
               f"{'kernel mode':<40} {kernel:>7} {pct(kernel)}", "",
               "kernel mode, by source directory:"]
        out += [f"  {d:<38} {n:>7} {pct(n)}" for d, n in dirs.most_common(TOP_DIRECTORIES)]
        rest = dirs.most_common()[TOP_DIRECTORIES:]
        if rest:
            n = sum(c for _, c in rest)
            out.append(f"  {f'({len(rest)} more directories)':<38} {n:>7} {pct(n)}")
        out += ["", f"kernel mode, by function (the {top} with most samples):"]
        # name@file: one of several static copies; the file column names it.
        out += [f"  {f.split('@', 1)[0]:<38} {n:>7} {pct(n)}  {self.files.get(f, '')}".rstrip()
                for f, n in self.functions.most_common(top)]
        return "\n".join(out) + "\n"


def write(path: Path, title: str, sampler: Sampler, symbols: Symbols | None) -> None:
    """Writes the ended sampler's profile to path (.txt) and its counts
    beside it (.json, for the run's profile per arch); what went wrong, if
    anything, goes in the text too."""
    if sampler.is_alive():
        raise ProfileError("the sampler did not end with QEMU")
    notes = [sampler.error] if sampler.error else []
    syms = KernelSymbols([], [])
    if symbols is None or not symbols.vmlinux.is_file():
        notes.append(f"no vmlinux to name functions: {symbols.vmlinux if symbols else None}")
    else:
        units = None
        try:
            units = load_units(symbols.vmlinux, sampler.arch, symbols.source_root)
        except ProfileError as e:
            notes.append(f"functions without their files: {e}")
        try:
            syms = load_symbols(symbols.vmlinux, sampler.arch, units)
        except ProfileError as e:
            notes.append(str(e))
    p = Profile.of(sampler.pcs, sampler.user, syms, sampler.samples, sampler.vcpus,
                   sampler.hz, sampler.elapsed_s, sampler.paused_s)
    path.with_suffix(".json").write_text(json.dumps(p.to_json(), indent=1) + "\n")
    path.write_text(p.text(title) + "".join(f"\n(note: {n})\n" for n in notes))


def write_run(run_dir: Path, arches: dict[str, str]) -> list[Path]:
    """The run's profile-<arch>.txt: every profile*.json of its cells (by
    cell id: arch) added up.  Returns the files written."""
    by_arch: dict[str, list[Profile]] = {}
    for cell, arch in sorted(arches.items()):
        for f in sorted((run_dir / cell).glob("profile*.json")):
            try:
                by_arch.setdefault(arch, []).append(Profile.from_json(json.loads(f.read_text())))
            except (ValueError, KeyError, TypeError, OSError) as e:
                raise ProfileError(f"{f}: not a profile ({e})") from None
    written = []
    for arch, profiles in sorted(by_arch.items()):
        out = run_dir / f"profile-{arch}.txt"
        out.write_text(Profile.merge(profiles).text(f"the run's {arch} guests"))
        written.append(out)
    return written
