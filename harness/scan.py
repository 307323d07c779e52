"""Kernel splats in any console log or dmesg, as the harness finds them.

    /usr/bin/python3 -m harness scan LOG [--variant V] [--arch A] [--vmlinux FILE]
                                         [--tree DIR] [--build DIR] [--json]

LOG is a console log of this harness (a cell's console.log), a serial
console of another machine or CI, plain `dmesg` (with timestamps, without
them, `dmesg -T`, `-r` or `-x`), /var/log/kern.log or a `journalctl -k`
export (any of its short formats); "-" reads standard input, a .gz file is
read uncompressed.  Lines are put back into the kernel's own form first
(normalize(): the prefix each of those tools adds is taken off, line
numbers are kept), then the harness's code reads them as it reads a cell's
console: kernlog.read() (a harness console's dump of the kernel log, when
whole, stands for it), splats.scan() (kinds, titles, signatures) and, for
a console with the selftests' markers, the case each splat came in.

--variant names a variant of matrix.yaml whose known_splats say which
splats are expected (Variant.known_splat()); a cell field the log cannot
tell (mode, policy, ...; arch unless --arch) matches any entry's cells:,
and an entry that is known at boot only (at_boot: true) matches only a
splat printed before a harness console's first program started.  Given
--vmlinux, each splat's body is decoded by the tree's
scripts/decode_stacktrace.sh (splats.Symbols, as a run does).

Prints one line per splat (kind, known or not, signature, line and title),
then each one's report (decoded with --vmlinux); --json prints one JSON
document instead.  Exit status: 0 no splat, or only known ones; 1 a splat
that is not known; 2 bad input (a file that cannot be read, holds no
kernel message, a variant or vmlinux that is not there).
"""
from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from . import matrix as matrix_mod, qemu, results
from .errors import HarnessError
from .ktap import PRINTK_TIMESTAMP
from .selection import add_argument
from .splats import Splat, Symbols


class ScanError(HarnessError):
    """A log, variant or vmlinux scan cannot use."""


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][0-9A-Za-z]")
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_ISO = r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
_SYSLOG_DATE = rf"(?:{_MONTH} [ \d]\d \d\d:\d\d:\d\d|{_ISO})"
# Each tool's prefix, in the order they are taken off.
_PREFIXES = tuple((name, re.compile(pattern)) for name, pattern in (
    # dmesg -r: the record's facility and level.
    ("dmesg -r", r"<\d{1,3}>(?=\[ *\d+\.\d+\]|\S)"),
    # dmesg -x: "kern  :warn  : ".
    ("dmesg -x", r"(?:kern|user|mail|daemon|auth|syslog|lpr|news|uucp|cron|authpriv|ftp"
                 r"|local[0-7]) *:(?:emerg|alert|crit|err|warn|notice|info|debug) *: "),
    # dmesg -T: "[Sat Dec  7 18:42:01 2026] "; dmesg --time-format=iso.
    ("dmesg -T", rf"\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) {_MONTH} [ \d]\d \d\d:\d\d:\d\d \d{{4}}\] ?"),
    ("dmesg --time-format=iso", r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d,\d+[+-]\d\d:\d\d "),
    # kern.log and journalctl -k (short, short-iso, short-precise):
    # "Dec 07 18:42:01 host kernel: ", with or without printk's time after it.
    ("journal", rf"{_SYSLOG_DATE} \S+ kernel: "),
))
# journalctl -o short-monotonic: "[    2.182198] host kernel: ": the time stays.
_MONOTONIC = re.compile(r"(\[ *\d+\.\d+\]) \S+ kernel: ")
# A syslog or journal line of a program other than the kernel, and the
# journal's own lines ("-- Boot 3a1...--", "-- No entries --").
_NOT_KERNEL = re.compile(rf"{_SYSLOG_DATE} \S+ [^\s:]+: |-- .* --$")
_LINUX_VERSION = re.compile(r"Linux version \d")


@dataclass(frozen=True)
class Normalized:
    text: str                   # the log in the kernel's form, a line per line of it
    formats: tuple[str, ...]    # the prefixes taken off ("dmesg -T", "journal", ...)
    kernel_lines: int           # lines known to be the kernel's (by a timestamp or prefix)


def normalize(text: str) -> Normalized:
    """text with each line in the kernel's own form ("[   1.234567] msg"
    or "msg"): the escape sequences of a terminal and the prefixes of
    dmesg's options, kern.log and journalctl taken off, other programs'
    lines of a journal blanked.  Line numbers stay those of text."""
    out = []
    formats: dict[str, None] = {}
    kernel = 0
    for raw in text.split("\n"):
        line = _ANSI.sub("", raw.rstrip("\r"))
        known = False
        for name, prefix in _PREFIXES:
            if m := prefix.match(line):
                line = line[m.end():]
                formats[name] = None
                known = True
        if m := _MONOTONIC.match(line):
            line = m[1] + " " + line[m.end():]
            formats["journal"] = None
            known = True
        elif not known and _NOT_KERNEL.match(line):
            line = ""
        if known or PRINTK_TIMESTAMP.match(line):
            kernel += 1
        out.append(line)
    return Normalized("\n".join(out), tuple(formats), kernel)


# Equal to every value: a cell field the log cannot tell, so that any
# known_splats entry's cells: restriction on it holds.
class _Any(str):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = str.__hash__


_ANY = _Any("*")


@dataclass(frozen=True)
class Report:
    path: str
    formats: tuple[str, ...]
    from_dump: bool                 # the harness's dump of the kernel log was read
    problems: tuple[str, ...]       # why the kernel log cannot be proven whole, decoding
    splats: tuple[Splat, ...]
    decoded: tuple[str | None, ...]  # per splat, with --vmlinux

    @property
    def unknown(self) -> tuple[Splat, ...]:
        return tuple(s for s in self.splats if not s.known)

    @property
    def exit_status(self) -> int:
        return 1 if self.unknown else 0

    def lines(self) -> list[str]:
        """One line per splat: kind, known or not, signature, where, title."""
        width = max([len(s.kind) for s in self.splats] + [4])
        return [f"{s.kind:<{width}}  {'known' if s.known else 'NEW':<5}  {s.signature}"
                f"  (line {s.line}{', ' + s.test if s.test else ''}): {s.title}"
                for s in self.splats]

    def text(self) -> str:
        what = (f"{len(self.splats)} splat(s), {len(self.unknown)} not known"
                if self.splats else "no splat")
        read = ("the harness's dump of the kernel log" if self.from_dump
                else "as " + ", ".join(self.formats) if self.formats else "as a console")
        out = [f"{self.path}: {what} (read {read})"]
        out += self.lines()
        out += [f"note: {p}" for p in self.problems]
        for n, (s, dec) in enumerate(zip(self.splats, self.decoded), 1):
            out.append("")
            out.append(f"---- splat {n}: {s.kind} at line {s.line}"
                       + (f" in {s.test}" if s.test else "")
                       + (f" (known: {s.known})" if s.known else "") + " ----")
            out.append(f"signature: {s.signature}")
            out.append((dec or "\n".join(s.body)).rstrip("\n"))
        return "\n".join(out) + "\n"

    def to_json(self) -> dict:
        return {"log": self.path, "formats": list(self.formats), "from_dump": self.from_dump,
                "problems": list(self.problems), "unknown": len(self.unknown),
                "splats": [s.to_json() | {"known": s.known, "body": list(s.body)}
                           | ({"decoded": d} if d else {})
                           for s, d in zip(self.splats, self.decoded)]}


def read_log(path: str) -> str:
    """The text of path ("-": standard input; a .gz file uncompressed)."""
    what = "standard input" if path == "-" else path
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            p = Path(path)
            if p.is_dir():
                raise ScanError(f"{p}: a directory; give a console log or dmesg file "
                                "(a cell's console.log, `dmesg > dmesg.txt`, "
                                "`journalctl -k > kernel.txt`)")
            data = p.read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
    except OSError as e:
        raise ScanError(f"{what}: cannot read it ({e.strerror or e}); give a console "
                        "log or dmesg file") from e
    except EOFError as e:
        raise ScanError(f"{what}: a truncated .gz file ({e})") from e
    if b"\0" in data:
        raise ScanError(f"{what}: binary data, not a text log; give the console's text "
                        "(`dmesg`, `journalctl -k`, a serial console capture)")
    return data.decode("utf-8", errors="replace")


def known_splat(matrix: matrix_mod.Matrix, variant: str, arch: str | None
                ) -> results.KnownSplatCheck:
    """results.KnownSplatCheck of variant's known_splats for a log of
    arch (None: any)."""
    if variant not in matrix.variants:
        raise ScanError(f"--variant {variant}: not a variant of {matrix.path}; there are: "
                        + ", ".join(matrix.variants))
    v = matrix.variants[variant]
    cell = matrix_mod.Cell(arch or _ANY, variant, _ANY, _ANY, _ANY, _ANY)
    return lambda signature, at_boot: v.known_splat(cell, signature, at_boot)


def scan(text: str, path: str = "-",
         known: results.KnownSplatCheck = lambda signature, at_boot: None,
         symbols: Symbols | None = None) -> Report:
    """The splats of a log, each with the case it came in (a harness
    console), why it is known (known) and, given symbols, decoded."""
    norm = normalize(text)
    outcome = qemu.BootOutcome(norm.text, 0, False, 0.0, ())
    # The harness's own reading of a boot: kernel log, splats, cases, known.
    seen = results._read_boot(results.Boot(outcome, (), console=path), known)
    if not (norm.kernel_lines or seen.splats or _LINUX_VERSION.search(norm.text)):
        raise ScanError(f"{path}: no kernel message in it (no printk timestamp, no "
                        "'Linux version' line, no splat); give a console log, `dmesg` "
                        "or `journalctl -k` output")
    problems = list(seen.log.problems)
    decoded: list[str | None] = []
    for n, s in enumerate(seen.splats, 1):
        if symbols is None:
            decoded.append(None)
            continue
        try:
            decoded.append(symbols.decode("\n".join(s.body) + "\n"))
        except (OSError, subprocess.SubprocessError) as e:
            decoded.append(None)
            problems.append(f"splat {n}: scripts/decode_stacktrace.sh failed: {e}")
    return Report(path, norm.formats, seen.log.from_dump, tuple(problems), seen.splats,
                  tuple(decoded))


def symbols_for(vmlinux: Path, tree: Path | None, build: Path | None,
                cross_compile: str = "") -> Symbols:
    """What decodes against vmlinux: tree (default: vmlinux's directory, an
    in-tree build) holds scripts/decode_stacktrace.sh."""
    if not vmlinux.is_file():
        raise ScanError(f"--vmlinux {vmlinux}: no such file; give the vmlinux (with debug "
                        "info) of the kernel that printed the log")
    tree = tree or vmlinux.resolve().parent
    sym = Symbols(vmlinux, tree, build or vmlinux.resolve().parent, cross_compile)
    if not sym.scripts[0].is_file():
        raise ScanError(f"{sym.scripts[0]}: not there; give --tree, the kernel source tree "
                        "the vmlinux was built from (KERNEL_TREE= with make scan)")
    return sym


def main(args) -> int:
    """`python3 -m harness scan`: args as __main__ parses them."""
    known = (known_splat(matrix_mod.load(args.matrix), args.variant, args.arch)
             if args.variant else (lambda signature, at_boot: None))
    symbols = (symbols_for(args.vmlinux, args.tree, args.build, args.cross_compile)
               if args.vmlinux else None)
    report = scan(read_log(args.log), args.log, known, symbols)
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(report.text(), end="")
    return report.exit_status


def parser_args(sp) -> None:
    """scan's options on its argparse subparser sp (a metavar in capitals
    is the Make variable of make scan)."""
    add_argument(sp, "log", make="LOG", help="console log, dmesg, kern.log or "
                 "journalctl -k output; - for standard input")
    add_argument(sp, "--variant", make="VARIANT", default=None,
                 help="match splats against this matrix.yaml variant's known_splats")
    sp.add_argument("--arch", default=None, metavar="arch", help="the log's arch, for known_splats' cells: "
                    "(default: any)")
    add_argument(sp, "--vmlinux", make="VMLINUX", type=Path, default=None,
                 help="decode each splat's trace against this vmlinux")
    add_argument(sp, "--tree", make="KERNEL_TREE", type=Path, default=None,
                 help="the source tree vmlinux was built from "
                      "(scripts/decode_stacktrace.sh; default: vmlinux's directory)")
    sp.add_argument("--build", type=Path, default=None, metavar="dir",
                    help="its build (O=) directory (default: vmlinux's directory)")
    sp.add_argument("--cross-compile", default="", metavar="prefix",
                    help="binutils prefix for another arch's vmlinux (aarch64-linux-gnu-)")
    sp.add_argument("--json", action="store_true", help="one JSON document")
