"""Where a guest's CPU time goes: its vCPUs' program counters sampled
through QEMU's gdbstub, by kernel function and source directory
(`make run PROFILE=<Hz>`, a cell's profile.txt).

The gdbstub is the one observer that needs nothing of the guest (no perf,
no CONFIG_PROFILING in a tinyconfig kernel, no tool in the initramfs) and
sees user space too.  Each sample stops the VM (the remote protocol's
interrupt byte), reads every vCPU's registers ('Hg' and 'g') and lets it
run again ('c').  QEMU's virtual clock stops with the VM, so the guest's
own timeouts do not shrink; the cell's host seconds grow by the stops.

Under TCG a stop lands between translated blocks, so a sample names the
block that was to run next: code that ends its blocks often (a write of
the interrupt mask, arm64's msr daif) is counted somewhat more than its
share, and a long straight block somewhat less.  Shares of a few per cent
are the resolution, not the single samples.
"""
from __future__ import annotations

import bisect
import json
import socket
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .archs import Arch
from .errors import HarnessError

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
        """The next packet's data, acknowledged; EOFError once QEMU is gone."""
        while True:
            start = self.buf.find(b"$")
            end = self.buf.find(b"#", start) if start >= 0 else -1
            if end >= 0 and len(self.buf) >= end + 3:
                data = self.buf[start + 1:end]
                self.buf = self.buf[end + 3:]
                self.sock.sendall(b"+")
                return data
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("the gdbstub closed")
            self.buf += chunk

    def stopped(self) -> bytes:
        """Waits for a stop reply (T.., S..); W or X: the guest is gone."""
        while True:
            data = self.recv()
            if data[:1] in (b"T", b"S"):
                return data
            if data[:1] in (b"W", b"X"):
                raise EOFError(f"QEMU exited ({data.decode(errors='replace')})")

    def request(self, data: bytes) -> bytes:
        """A command's reply (never a stop reply left over from before)."""
        self.send(data)
        while True:
            reply = self.recv()
            if reply[:1] in (b"W", b"X"):
                raise EOFError(f"QEMU exited ({reply.decode(errors='replace')})")
            if reply[:1] not in (b"T", b"S"):   # replies here are hex, OK, m.., l
                return reply

    def threads(self) -> list[bytes]:
        """The vCPUs' thread ids (qfThreadInfo, qsThreadInfo until 'l')."""
        ids: list[bytes] = []
        reply = self.request(b"qfThreadInfo")
        while reply.startswith(b"m"):
            ids += [t for t in reply[1:].split(b",") if t]
            reply = self.request(b"qsThreadInfo")
        return ids

    def pc(self, thread: bytes, index: int) -> int:
        """Register number index (the program counter) of the thread, from
        its 'g' reply: 64-bit registers, little-endian hex."""
        if self.request(b"Hg" + thread) != b"OK":
            raise ProfileError(f"gdbstub refused to select thread {thread.decode()}")
        regs = self.request(b"g")
        hexpc = regs[index * 16:index * 16 + 16]
        if len(hexpc) != 16:
            raise ProfileError(f"a 'g' reply of {len(regs)} hex digits has no register {index}")
        return int.from_bytes(bytes.fromhex(hexpc.decode()), "little")


class Sampler(threading.Thread):
    """Samples every vCPU's PC at hz from when QEMU opens the gdbstub's
    unix socket to when it closes it.  stop() ends it if it never did."""

    def __init__(self, path: Path, arch: Arch, hz: int = DEFAULT_HZ):
        super().__init__(daemon=True, name=f"profile {path.name}")
        self.path, self.arch, self.hz = path, arch, hz
        self.pcs: Counter[int] = Counter()
        self.samples = 0            # stops; each reads every vCPU
        self.vcpus = 0
        self.error = ""
        self._quit = threading.Event()

    def stop(self) -> None:
        self._quit.set()
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
        sock = self._connect()
        if sock is None:
            return
        try:
            gdb = Gdbstub(sock)
            gdb.send(b"?")          # the VM stopped when we connected
            gdb.stopped()
            threads = gdb.threads()
            self.vcpus = len(threads)
            period = 1.0 / self.hz
            while True:
                gdb.send(b"c")
                time.sleep(period)
                gdb.interrupt()
                gdb.stopped()
                # Counted only whole: QEMU may end between two vCPUs' reads.
                self.pcs.update([gdb.pc(t, self.arch.gdb_pc_index) for t in threads])
                self.samples += 1
        except (EOFError, ConnectionError):
            pass                    # the guest ended: the normal way out
        except (OSError, ValueError, ProfileError) as e:
            self.error = f"sampling stopped: {e}"
        finally:
            sock.close()


# ---- symbols and the report --------------------------------------------------

@dataclass
class KernelSymbols:
    """A vmlinux's function addresses, and where each function is."""
    addrs: list[int]
    names: list[str]
    files: dict[str, str] = field(default_factory=dict)

    def function(self, pc: int) -> str:
        i = bisect.bisect_right(self.addrs, pc) - 1
        return self.names[i] if i >= 0 else "?"


def parse_nm(text: str) -> KernelSymbols:
    """`nm -n` output: its text symbols (t, T, w, W), in address order."""
    pairs = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in ("t", "T", "w", "W"):
            pairs.append((int(parts[0], 16), parts[2]))
    pairs.sort()
    return KernelSymbols([a for a, _ in pairs], [n for _, n in pairs])


def _binutil(arch: Arch, tool: str) -> str:
    return f"{arch.cross_compile}{tool}"


def load_symbols(vmlinux: Path, arch: Arch) -> KernelSymbols:
    try:
        proc = subprocess.run([_binutil(arch, "nm"), "-n", str(vmlinux)],
                              capture_output=True, text=True)
    except FileNotFoundError:
        raise ProfileError(f"{_binutil(arch, 'nm')} not found: install binutils ('make deps')")
    if proc.returncode:
        raise ProfileError(f"nm {vmlinux} failed: {proc.stderr.strip()}")
    return parse_nm(proc.stdout)


def source_files(vmlinux: Path, arch: Arch, syms: KernelSymbols, functions: list[str],
                 tree: str) -> dict[str, str]:
    """Each function's source file, relative to the tree, from the line
    table at its first address (addr2line; '?' where there is none)."""
    start = {}
    for addr, name in zip(syms.addrs, syms.names):
        start.setdefault(name, addr)
    wanted = [f for f in functions if f in start]
    if not wanted:
        return {}
    proc = subprocess.run([_binutil(arch, "addr2line"), "-e", str(vmlinux)],
                          input="".join(f"{start[f]:x}\n" for f in wanted),
                          capture_output=True, text=True)
    files = {}
    for name, line in zip(wanted, proc.stdout.splitlines()):
        path = line.rsplit(":", 1)[0]
        prefix = tree.rstrip("/") + "/"
        files[name] = path[len(prefix):] if tree and path.startswith(prefix) else path
    return files


def is_user(pc: int) -> bool:
    """Kernel addresses have the top bit set on both arches (x86_64's upper
    half, arm64's TTBR1 range); user space's never."""
    return pc < 1 << 63


def directory(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else path


@dataclass
class Profile:
    """Samples by where they landed: user space, or a kernel function (and
    its source file).  profile.json holds one; merge() adds them up."""
    samples: int = 0                # stops of the VM
    vcpus: int = 0
    hz: int = 0
    user: int = 0                   # vCPU samples in user space
    functions: Counter[str] = field(default_factory=Counter)
    files: dict[str, str] = field(default_factory=dict)
    guests: int = 1

    @classmethod
    def of(cls, pcs: Counter[int], syms: KernelSymbols, files: dict[str, str],
           samples: int, vcpus: int, hz: int) -> Profile:
        p = cls(samples, vcpus, hz)
        for pc, n in pcs.items():
            if is_user(pc):
                p.user += n
            else:
                p.functions[syms.function(pc)] += n
        p.files = {f: files[f] for f in p.functions if f in files}
        return p

    def to_json(self) -> dict:
        return {"samples": self.samples, "vcpus": self.vcpus, "hz": self.hz,
                "user": self.user, "functions": dict(self.functions.most_common()),
                "files": self.files}

    @classmethod
    def from_json(cls, d: dict) -> Profile:
        return cls(int(d["samples"]), int(d["vcpus"]), int(d["hz"]), int(d["user"]),
                   Counter({str(k): int(v) for k, v in d["functions"].items()}),
                   {str(k): str(v) for k, v in d["files"].items()})

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
        return total

    def text(self, title: str, top: int = TOP_FUNCTIONS) -> str:
        """profile.txt: user against kernel, the kernel by source directory
        and by function, each with its samples and share of all."""
        kernel = sum(self.functions.values())
        total = self.user + kernel
        dirs: Counter[str] = Counter()
        for f, n in self.functions.items():
            dirs[directory(self.files.get(f, "?"))] += n

        def pct(n: int) -> str:
            return f"{100.0 * n / total:5.1f}" if total else "    -"

        guests = f"{self.guests} guests, " if self.guests != 1 else ""
        out = [f"Guest profile of {title}: {guests}{self.samples} stops at {self.hz} Hz, "
               f"{self.vcpus} vCPU(s), {total} samples (PCs read through QEMU's gdbstub; "
               "harness/profile.py)", "",
               f"{'where':<40} {'samples':>7} {'%':>5}",
               f"{'user space':<40} {self.user:>7} {pct(self.user)}",
               f"{'kernel':<40} {kernel:>7} {pct(kernel)}", "",
               "kernel, by source directory:"]
        out += [f"  {d:<38} {n:>7} {pct(n)}" for d, n in dirs.most_common(TOP_DIRECTORIES)]
        rest = dirs.most_common()[TOP_DIRECTORIES:]
        if rest:
            n = sum(c for _, c in rest)
            out.append(f"  {f'({len(rest)} more directories)':<38} {n:>7} {pct(n)}")
        out += ["", f"kernel, by function (the {top} with most samples):"]
        out += [f"  {f:<38} {n:>7} {pct(n)}  {self.files.get(f, '?')}"
                for f, n in self.functions.most_common(top)]
        return "\n".join(out) + "\n"


def write(path: Path, title: str, sampler: Sampler, vmlinux: Path | None, tree: str,
          arch: Arch) -> None:
    """Writes the sampler's profile to path (.txt) and its counts beside it
    (.json, for the run's profile per arch); what went wrong, if anything,
    goes in the text too (a profile is a view: it never fails a cell)."""
    note = f"\n(note: {sampler.error})\n" if sampler.error else ""
    if vmlinux is None or not vmlinux.is_file():
        syms = KernelSymbols([], [])
        note += f"\n(note: no vmlinux to name functions: {vmlinux})\n"
        files: dict[str, str] = {}
    else:
        syms = load_symbols(vmlinux, arch)
        funcs = {syms.function(pc) for pc in sampler.pcs if not is_user(pc)}
        files = source_files(vmlinux, arch, syms, sorted(funcs), tree)
    p = Profile.of(sampler.pcs, syms, files, sampler.samples, sampler.vcpus, sampler.hz)
    path.with_suffix(".json").write_text(json.dumps(p.to_json(), indent=1) + "\n")
    path.write_text(p.text(title) + note)


def write_run(run_dir: Path, arches: dict[str, str]) -> list[Path]:
    """The run's profile-<arch>.txt: every profile.json of its cells (by
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
