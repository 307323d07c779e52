"""A guest's kernel log, and the selftests' markers in it.

After its end marker the guest's init prints the whole kernel log
(initramfs/kmsg-dump.c) between DUMP_BEGIN and "<<< ima-selftest kmsg end
rc=N >>>", a line per line of a record:

    kmsg <seq>,<level> [<seconds>] <text>

When that dump is there and whole (its first record is #0, none is
missing, kmsg-dump said rc=0), it is the kernel log: every level, from
boot on, in order, free of test output.  Otherwise (the guest panicked or
was killed first, or the ring buffer wrapped) the console's kernel lines
stand in for it, and a dump that should be whole and is not is a problem
of the cell: the verdict cannot prove that nothing was missed.

The selftests mark each case and program in the log
(selftests/ima_appraise/mark.h):

    ima_selftest: start <program> lockdep=on|off|absent
    ima_selftest: begin <program>/<case>
    ima_selftest: end <program>/<case> lockdep=...
    ima_selftest: done <program> lockdep=...

and init "ima_selftest: finished lockdep=..." after the last program.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .ktap import PRINTK_TIMESTAMP

DUMP_BEGIN = "<<< ima-selftest kmsg >>>"
DUMP_END = re.compile(r"<<< ima-selftest kmsg end rc=(-?\d+) >>>")
_DUMP_LINE = re.compile(r"kmsg (\d+),(\d) \[ *(\d+\.\d+)\] ?(.*)")
_MARK = re.compile(r"ima_selftest: (begin|end|start|done|finished)(?: (?!lockdep=)(\S+))?"
                   r"(?: lockdep=(\w+))?\s*$")


@dataclass(frozen=True)
class Line:
    number: int         # 1-based line of the console
    time: float         # printk seconds
    text: str           # after the timestamp
    seq: int | None = None  # the record's sequence number (the dump only)


@dataclass(frozen=True)
class KernelLog:
    lines: tuple[Line, ...]
    from_dump: bool
    problems: tuple[str, ...]   # why it cannot be proven whole
    scan_text: str              # the console with only these lines left (numbers kept)


@dataclass(frozen=True)
class Mark:
    line: int           # console line
    time: float
    what: str           # begin, end, start, done, finished
    name: str           # the case id (begin, end), the program (start, done), or ""
    lockdep: str | None  # on, off, absent; None for begin


def _console_lines(console: list[str], stop: int) -> list[Line]:
    lines = []
    for i, raw in enumerate(console[:stop]):
        line = raw.strip("\r")
        m = PRINTK_TIMESTAMP.search(line)
        if m:
            stamp = re.match(r"\[ *(\d+\.\d+)\]", line[m.start():])
            lines.append(Line(i + 1, float(stamp[1]) if stamp else 0.0, line[m.end():]))
    return lines


def console_lines(console: str) -> list[Line]:
    """The kernel's lines of a console, numbered as console.split("\\n")."""
    raw = console.split("\n")
    return _console_lines(raw, len(raw))


def read(console: str) -> KernelLog:
    """The kernel log of a boot's console."""
    raw = console.split("\n")
    stripped = [r.strip("\r") for r in raw]
    begin = stripped.index(DUMP_BEGIN) if DUMP_BEGIN in stripped else None
    problems: list[str] = []
    dump: list[Line] = []
    end_rc = None
    if begin is not None:
        for i in range(begin + 1, len(stripped)):
            if m := DUMP_END.fullmatch(stripped[i]):
                end_rc = int(m[1])
                break
            if m := _DUMP_LINE.fullmatch(stripped[i]):
                dump.append(Line(i + 1, float(m[3]), m[4], int(m[1])))
        problems += _dump_problems(dump, end_rc)
    if begin is not None and not problems:
        keep = {line.number for line in dump}
        scan = "\n".join(r if n in keep else "" for n, r in enumerate(raw, 1))
        return KernelLog(tuple(dump), True, (), scan)
    stop = begin if begin is not None else len(raw)
    scan = "\n".join(raw[:stop] + [""] * (len(raw) - stop))
    return KernelLog(tuple(_console_lines(raw, stop)), False, tuple(problems), scan)


def _dump_problems(dump: list[Line], end_rc: int | None) -> list[str]:
    problems = []
    if end_rc is None:
        problems.append("the kernel log dump stopped before its end"
                        + (f" (last record #{dump[-1].seq})" if dump else ""))
    elif end_rc:
        problems.append(f"kmsg-dump failed (rc={end_rc}; see the console): "
                        "the kernel log is incomplete")
    seqs = sorted({line.seq for line in dump if line.seq is not None})
    if seqs and seqs[0] != 0:
        problems.append(f"the kernel log wrapped: its oldest record is #{seqs[0]}, "
                        f"records #0 to #{seqs[0] - 1} were overwritten "
                        "(raise CONFIG_LOG_BUF_SHIFT)")
    lost = [(a, b) for a, b in zip(seqs, seqs[1:]) if b != a + 1]
    if lost:
        n = sum(b - a - 1 for a, b in lost)
        problems.append(f"{n} kernel log record(s) lost while the log was read "
                        f"(first after #{lost[0][0]})")
    if end_rc is not None and not seqs:
        problems.append("the kernel log dump is empty")
    return problems


def marks(log: KernelLog) -> tuple[Mark, ...]:
    out = []
    for line in log.lines:
        if m := _MARK.match(line.text.strip()):
            out.append(Mark(line.number, line.time, m[1], m[2] or "", m[3]))
    return tuple(out)


def _key(m: Mark) -> tuple[float, int]:
    return (m.time, m.line)


def case_at(ms: tuple[Mark, ...], time: float, line: int) -> str | None:
    """The case running at (time, line) of the log: the one whose begin
    came last before it, unless its end (or any program boundary) came
    in between.  A case without an end marker (it crashed, or its setup
    failed) runs until the next marker."""
    current = None
    for m in ms:
        if _key(m) > (time, line):
            break
        current = m.name if m.what == "begin" else None
    return current


def last_ended(ms: tuple[Mark, ...], time: float, line: int) -> str | None:
    """The case that ended last before (time, line), if any."""
    return next((m.name for m in reversed(ms)
                 if m.what == "end" and _key(m) <= (time, line)), None)


@dataclass(frozen=True)
class Coverage:
    """Lockdep's state over a boot, from the markers' lockdep=."""
    started_on: tuple[str, ...]         # programs that started with lockdep on
    off_from: Mark | None               # the first marker that saw it off
    on_until: Mark | None               # the last one before that saw it on

    @property
    def lost(self) -> bool:
        return self.off_from is not None

    def where(self) -> str:
        """In words, where lockdep went off."""
        off, on = self.off_from, self.on_until
        if off is None:
            return ""
        if on is None:
            return "at boot, before the first test"
        if off.what == "end" and on.what != "end":
            return f"during {off.name}"
        return f"between '{on.what} {on.name}'".rstrip() + f" and '{off.what} {off.name}'".rstrip()


def coverage(ms: tuple[Mark, ...]) -> Coverage:
    started_on = tuple(m.name for m in ms if m.what == "start" and m.lockdep == "on")
    on_until = None
    for m in ms:
        if m.lockdep == "off":
            return Coverage(started_on, m, on_until)
        if m.lockdep == "on":
            on_until = m
    return Coverage(started_on, None, on_until)
