"""Find kernel splats (lockdep reports, BUGs, Oopses, WARNINGs, panics,
lockups, stalls, hung tasks, UBSAN, KFENCE and kmemleak reports) in a
guest's console log, and name each one by a signature.

A splat is reported once, at its headline: the line that names it, matched
(after the printk timestamp and the subsystem prefix the kernel may put
before it: "watchdog: ", "rcu: ", "kmemleak: ") by the first rule in _RULES
that fits, so a lockdep "WARNING: ..." headline is never also a "warning".
Rules:

- Lines starting with "#" are kselftest output (runner.sh prefixes everything
  a test prints with "# "), and are skipped, unless a kernel message
  interrupted the line: then the part from its timestamp on is read.
- A splat's body runs from its headline to the end of its first call trace
  (x86: "</TASK>"; arm64: the last indented line after "Call trace:"), to a
  "---[ end trace", "=====" or "[ cut here ]" line, or for at most MAX_BODY
  kernel lines.  KASAN, KFENCE and UBSAN reports sit between two "=====" lines
  and run to the closing one; a kmemleak object runs as far as its indented
  lines.  Headlines in a body belong to the same incident and are not
  reported, e.g. the "Oops: 0002 [#1] ..." that x86 prints a few lines after
  "BUG: kernel NULL pointer dereference"; "Kernel panic" always is.  Should
  another CPU's splat interleave with a body, it is missed.
- lockdep's "turning off the locking correctness validator." has no body and
  absorbs a "BUG:" line up to LOCKDEP_OFF_CAUSE lines before it, which is then
  the cause in its title (e.g. "BUG: MAX_LOCKDEP_ENTRIES too low!").
  "Disabling lock debugging due to kernel taint" (add_taint()) turns lockdep
  off too: it is a report of its own unless it comes within MAX_BODY lines
  of another's headline (the KASAN report that tainted the kernel).
- kmemleak's "N new suspected memory leaks" is a splat only when no
  "unreferenced object" of its scan was printed (kmemleak.verbose=0).

Titles have symbol offsets ("+0x12/0x40") removed so they compare equal
across builds.  A circular (or recursive) locking dependency is titled with
the lock the task was trying to acquire, then the one it already held:
"possible circular locking dependency: acquiring &iint->mutex while holding
&sb->s_type->i_mutex_key#10"; lockdep's own notation for the new dependency
would be the other way round (held -> acquired).

Signatures name a splat the same way across builds, cells, arches and runs,
as syzkaller's report titles do ("possible deadlock in <function>"): the
kind, what kind of report it is where the kind has several (KASAN's
"use-after-free"), the lock classes without the "#N" lockdep numbers them
with in order of registration, and the guilty function: the first one
outside the locking and reporting code.  See signature() for each kind.
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .ktap import PRINTK_TIMESTAMP
from .subproc import clean_env

# The guest init prints the kernel messages it kept off the console
# (levels 5-7, such as lockdep's KERN_DEBUG "turning off ...") after its end
# marker, each line prefixed so.
DMESG_PREFIX = "dmesg: "
MAX_BODY = 100
# KASAN prints three stacks (access, allocation, free) before its closing line.
MAX_REPORT_BODY = 200
LOCKDEP_OFF_CAUSE = 3

_LOCKDEP_OTHER = "|".join((
    r"WARNING: possible irq lock inversion dependency detected",
    r"WARNING: \w+-safe -> \w+-unsafe lock order detected",
    r"(?:WARNING|BUG): held lock freed!",
    r"WARNING: bad unlock balance detected!",
    r"WARNING: lock held when returning to user space!",
    r"BUG: lock held at task exit time!",
    r"WARNING: \S+ still has locks held!",          # 6.1's name for the above
    r"WARNING: Nested lock was not taken",
    r"WARNING: bad contention detected!",
    r"WARNING: chain_key collision",
    r"\[ BUG: Invalid wait context \]",
))

# What the kernel puts before some headlines (their pr_fmt).
_SUBSYSTEM = re.compile(r"(?:watchdog|rcu|kmemleak): ")

_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern)) for kind, pattern in (
        ("lockdep-circular", r"WARNING: possible circular locking dependency detected"),
        ("lockdep-recursive", r"WARNING: possible recursive locking detected"),
        ("lockdep-inconsistent", r"WARNING: inconsistent lock state"),
        ("lockdep-rcu", r"WARNING: suspicious RCU usage"),
        ("lockdep-other", _LOCKDEP_OTHER),
        ("lockdep-off", r".*turning off the locking correctness validator"
                        r"|Disabling lock debugging due to kernel taint"),
        ("kasan", r"BUG: KASAN: "),
        ("kfence", r"BUG: KFENCE: "),
        ("soft-lockup", r"BUG: soft lockup - CPU#\d+ stuck for "),
        ("hard-lockup", r"Watchdog detected hard LOCKUP on cpu "),
        ("rcu-stall", r"INFO: rcu_\w+ (?:self-)?detected(?: expedited)? stalls?"),
        ("hung-task", r"INFO: task .+:\d+ blocked for more than \d+ seconds"),
        ("ubsan", r"UBSAN: "),
        ("kmemleak", r"unreferenced object 0x[0-9a-f]+|\d+ new suspected memory leaks"),
        ("sleep-in-atomic", r"BUG: sleeping function called from invalid context"),
        ("bug", r"BUG: |[Kk]ernel BUG at "),
        # x86 "Oops: 0002 [#1] PREEMPT SMP", "general protection fault, ...:
        # 0000 [#1] ...", arm64 "Internal error: Oops: 0000000096000004 [#1] ..."
        ("oops", r"(?:Internal error: )?Oops\b|.+: [0-9a-f]+ \[#\d+\]"),
        ("warning", r"WARNING: CPU: \d+ PID: \d+ at "),
        ("panic", r"Kernel panic - not syncing: "),
    ))

_TAINT_OFF = "Disabling lock debugging due to kernel taint"
# Reports framed by two "=====" lines: their body runs to the closing one.
_FRAMED = ("kasan", "kfence", "ubsan")
_BODY_END = re.compile(r"</TASK>|---\[ end trace|=====|-+\[ cut here \]")
# An RCU stall report dumps one stack after another (the grace-period
# kthread's, then where it last ran or each stalled CPU's): its body runs on
# over lines that start such a dump.
_STALL_GOES_ON = re.compile(r"rcu: (?!INFO: )|CPU: \d+ PID: |task:|Sending NMI|NMI backtrace")
_BODY_START = re.compile(r"=====+|-+\[ cut here \]-+")
_OFFSET = re.compile(r"\+0x[0-9a-f]+/0x[0-9a-f]+")
# "ffff888003f2c0a8 (&iint->mutex){+.+.}-{3:3}, at: process_measurement+0x2a5/0xa50"
_HELD_LOCK = re.compile(r"\S+ \((.+)\)\{[^}]*\}-\{\d+:\d+\}, at: ")
_LOCK_NUMBER = re.compile(r"#\d+$")
# A stack frame: "  func+0x1c/0x40", "  ? func+...", kmemleak's
# "[<ffffffff81234567>] func+...", arm64's "pc : func+...", x86's
# "RIP: 0010:func+...", lockdep's "..., at: func+...".
_FRAME = re.compile(r"^\s*(?P<unreliable>\? )?(?:\[<[^>]+>\] )?"
                    r"(?P<func>[A-Za-z_][\w.]*)\+0x[0-9a-f]+/0x[0-9a-f]+")
_PC = re.compile(r"^\s*(?:RIP: [0-9a-f]{4}:|pc : )(?P<func>[A-Za-z_][\w.]*)\+0x")
_AT = re.compile(r"\bat: (?:\[<[^>]+>\] )?(?P<func>[A-Za-z_][\w.]*)\+0x")
# GCC's clones and split parts (".constprop.0", ".isra.0", ".cold") differ
# between builds of the same code.
_CLONE_SUFFIX = re.compile(r"\..*$")

# Frames that are the locking, allocation and reporting machinery, never the
# guilty code (after syzkaller's pkg/report skipPatterns, narrowed to what
# our kernels print).
_SKIP_FRAME = re.compile("|".join((
    r"dump_stack\w*", r"show_stack", r"show_regs", r"__show_regs", r"dump_backtrace",
    r"print_\w+", r"report_bug", r"handle_bug", r"exc_\w+", r"asm_exc_\w+", r"do_error_trap",
    r"do_trap", r"__warn\w*", r"warn_\w+", r"panic", r"nmi_\w+", r"lockdep_\w+",
    r"__lock_acquire", r"lock_acquire\w*", r"lock_release", r"__lock_release", r"mark_lock\w*",
    r"mark_usage", r"check_\w+", r"validate_chain", r"__bfs\w*", r"lock_is_held\w*",
    r"debug_check_no_locks_\w+", r"(?:__)?mutex_\w+", r"(?:__)?rt_mutex_\w+",
    r"(?:_raw_)?(?:spin|read|write)_(?:try)?(?:un)?lock\w*", r"_raw_\w+",
    r"(?:__)?down(?:_\w+)?", r"(?:__)?up_\w+", r"(?:__)?rwsem_\w+", r"__might_\w+",
    r"might_\w+", r"(?:__)?kasan_\w+", r"(?:__)?kfence_\w+", r"(?:__)?ubsan_\w+",
    r"__ubsan_handle_\w+", r"(?:__)?kmemleak_\w+", r"(?:__)?k[mzv]alloc\w*",
    r"(?:__)?kmem_cache_\w+", r"(?:__)?slab_\w+", r"kfree\w*", r"krealloc",
    r"__alloc_pages\w*", r"alloc_pages\w*",
)))
# Where a stall's looping code is entered: the frame above the first of these
# names it (syzkaller's linuxStallFrameExtractor), not the function the
# detector's interrupt happened to hit.
_STALL_ANCHOR = re.compile("|".join((
    r"do_syscall_\w+", r"invoke_syscall", r"el0_svc\w*", r"do_el0_svc", r"kthread",
    r"ret_from_fork", r"process_one_work", r"worker_thread", r"smpboot_thread_fn",
    r"run_ksoftirqd", r"__do_softirq", r"call_timer_fn", r"cpu_startup_entry",
    r"start_secondary", r"do_idle", r"vfs_read", r"vfs_write", r"do_iter_read",
    r"do_iter_write",
)))
# A hung task sleeps in the scheduler, in a lock or a wait: the first frame
# naming none of these is where it got stuck (syzkaller's
# linuxHangTaskFrameExtractor).
_HANG_SKIP = ("sched", "_lock", "_slowlock", "down", "rwsem", "completion", "kthread", "wait",
              "synchronize", "context_switch", "__switch_to", "rcu_barrier")


@dataclass(frozen=True)
class Splat:
    kind: str       # lockdep-circular, ..., bug, oops, warning, panic
    title: str      # one line naming it, timestamp stripped
    line: int       # 1-based line number of the headline in the console
    # Not compared: two splats are the same report at the same place.
    time: float | None = field(default=None, compare=False)  # printk seconds of the headline
    # Set by results.evaluate(): the case that was running ("<program>/
    # <case>", None: boot, or between cases), and the console it is in.
    test: str | None = None
    console: str = "console.log"
    signature: str = field(default="", compare=False)
    body: tuple[str, ...] = field(default=(), compare=False, repr=False)
    # Why the variant expects it (matrix.yaml known_splats), if it does.
    known: str | None = field(default=None, compare=False)

    def to_json(self) -> dict:
        return {"kind": self.kind, "title": self.title, "signature": self.signature,
                "time": self.time, "line": self.line, "test": self.test,
                "console": self.console, **({"known": self.known} if self.known else {})}

    @classmethod
    def from_json(cls, doc: dict) -> Splat:
        """What to_json() kept of a splat (not its body)."""
        return cls(doc["kind"], doc["title"], doc.get("line", 0), doc.get("time"),
                   doc.get("test"), doc.get("console", "console.log"),
                   doc.get("signature", ""), known=doc.get("known"))


@dataclass(frozen=True)
class _Line:
    number: int         # 1-based, in the console
    text: str           # after the timestamp, indentation kept
    raw: str            # the whole kernel line, timestamp included
    time: float | None  # printk seconds


def _kernel_lines(console: str) -> list[_Line]:
    """Every line that may be a kernel message."""
    lines = []
    for number, raw in enumerate(console.split("\n"), 1):
        line = raw.strip("\r").removeprefix(DMESG_PREFIX)
        m = PRINTK_TIMESTAMP.search(line)
        # Test output starts with "#"; a timestamp anywhere in it is a kernel
        # message that interrupted or followed runner.sh's "# " prefix.
        if line.startswith("#") and not m:
            continue
        if m:
            stamp = m.group().strip().split("]")[0].lstrip("[ ")
            lines.append(_Line(number, line[m.end():], line[m.start():], float(stamp)))
        else:
            lines.append(_Line(number, line, line, None))
    return lines


def _headline(text: str) -> str:
    """text without the subsystem prefix the kernel may have put before it."""
    m = _SUBSYSTEM.match(text)
    return text[m.end():] if m else text


def _classify(text: str) -> str | None:
    text = _headline(text)
    return next((kind for kind, rule in _RULES if rule.match(text)), None)


def _body_end(lines: list[_Line], start: int, kind: str) -> int:
    """Index in lines of the last line of the splat headed by lines[start]."""
    if kind == "kmemleak":
        i = start
        while i + 1 < len(lines) and _headline(lines[i + 1].text).startswith(" ") \
                and i - start < MAX_BODY:
            i += 1
        return i
    framed = kind in _FRAMED
    last = min(start + (MAX_REPORT_BODY if framed else MAX_BODY), len(lines) - 1)
    in_arm64_trace = False
    for i in range(start + 1, last + 1):
        text = lines[i].text
        if framed:
            if text.strip().startswith("====="):
                return i
            continue
        if _BODY_END.match(text.strip()):
            if kind == "rcu-stall" and i + 1 <= last and _STALL_GOES_ON.match(lines[i + 1].text):
                continue
            return i
        if in_arm64_trace and not text.startswith(" "):
            return i - 1
        in_arm64_trace = in_arm64_trace or text.strip() == "Call trace:"
    return last


def _title(kind: str, lines: list[_Line], i: int) -> str:
    headline = _headline(lines[i].text.strip())
    if kind == "warning":
        return "WARNING at " + headline.split(" at ", 1)[1]
    if kind == "lockdep-off":
        causes = [t.text.strip() for t in lines[max(i - LOCKDEP_OFF_CAUSE, 0):i]
                  if t.text.startswith(("BUG: ", "INFO: "))]
        return f"lockdep turned off: {causes[-1]}" if causes else headline
    if kind in ("lockdep-circular", "lockdep-recursive"):
        locks = _acquiring_and_held(lines[i + 1:i + 12])
        if locks:
            what = headline.removeprefix("WARNING: ").removesuffix(" detected")
            return f"{what}: acquiring {locks[0]} while holding {locks[1]}"
    return headline


def _acquiring_and_held(body: list[_Line]) -> tuple[str, str] | None:
    following = [t.text.strip() for t in body]
    locks = [_HELD_LOCK.match(following[j + 1])
             for j, t in enumerate(following[:-1])
             if t.endswith((" is trying to acquire lock:", "already holding lock:"))]
    if len(locks) == 2 and all(locks):
        return locks[0][1], locks[1][1]
    return None


# ---- signatures -----------------------------------------------------------------

def _function(name: str) -> str:
    return _CLONE_SUFFIX.sub("", name)


def _trace(body: list[str], start: str | None = None, task_only: bool = False) -> list[str]:
    """The functions of the stack frames in body (after the line start, if
    given), reliable ones only ("? " frames are stale words on the stack);
    with task_only, those of the interrupted task: the program counter, then
    the frames outside <IRQ>/<NMI> sections."""
    frames = []
    begun = start is None
    in_irq = False
    for text in body:
        text = _headline(text)      # kmemleak's lines all start "kmemleak: "
        stripped = text.strip()
        if not begun:
            begun = stripped.startswith(start)
            continue
        if task_only:
            if stripped in ("<IRQ>", "<NMI>", "<SOFTIRQ>"):
                in_irq = True
            elif stripped in ("</IRQ>", "</NMI>", "</SOFTIRQ>"):
                in_irq = False
                continue
            if m := _PC.match(text):
                frames.append(_function(m["func"]))
                continue
        m = _FRAME.match(text)
        if m and not m["unreliable"] and not in_irq:
            frames.append(_function(m["func"]))
    return frames


def _dumps(body: list[str]) -> list[list[str]]:
    """body cut after each "</TASK>": one piece per stack dump."""
    pieces: list[list[str]] = [[]]
    for text in body:
        pieces[-1].append(text)
        if text.strip() == "</TASK>":
            pieces.append([])
    return pieces


def _guilty(frames: list[str]) -> str | None:
    return next((f for f in frames if not _SKIP_FRAME.fullmatch(f)), None)


def _stall_frame(frames: list[str]) -> str | None:
    prev = frames[0] if frames else None
    for f in frames:
        if _STALL_ANCHOR.fullmatch(f):
            return prev
        prev = f
    return _guilty(frames)


def _hang_frame(frames: list[str]) -> str | None:
    return next((f for f in frames if not any(s in f for s in _HANG_SKIP)), None)


def _lock_sites(body: list[str]) -> list[str]:
    """The functions lockdep names where a lock was taken or released:
    "..., at: f+0x..", or "... at:" with the frame on the next line."""
    sites = []
    for j, t in enumerate(body):
        if m := _AT.search(t):
            sites.append(_function(m["func"]))
        elif t.rstrip().endswith(" at:") and j + 1 < len(body) \
                and (m := _FRAME.match(body[j + 1])):
            sites.append(_function(m["func"]))
    return sites


def _lock_class(name: str) -> str:
    return _LOCK_NUMBER.sub("", name)


def _pc_then_trace(body: list[str]) -> list[str]:
    pcs = [_function(m["func"]) for t in body if (m := _PC.match(t))]
    return pcs[:1] + _trace(body)


_NUMBERS = re.compile(r"\b(?:0x)?[0-9a-f]{8,}\b|\b\d+\b")
_SOURCE_LINE = re.compile(r"(\.[ch]):\d+(?::\d+)?")


def _normalized(text: str) -> str:
    """text without what differs between builds and runs: offsets, line
    numbers of source files, addresses, pids and counts."""
    return _NUMBERS.sub("N", _SOURCE_LINE.sub(r"\1", _OFFSET.sub("", text))).strip()


def signature(kind: str, title: str, body: list[str]) -> str:
    """The splat's name across builds, cells and runs: "<kind>[: <what>]
    [(<lock classes>)] [in <function>]".  body: its lines after the
    timestamps."""
    what = ""
    locks: list[str] = []
    func: str | None = None
    headline = _headline(body[0].strip()) if body else title
    if kind.startswith("lockdep-") and kind != "lockdep-off":
        held = [m[1] for t in body if (m := _HELD_LOCK.search(t))]
        released = [m[1] for t in body if (m := re.search(r"lock \((.+?)\) at:", t))]
        if kind in ("lockdep-circular", "lockdep-recursive"):
            pair = _acquiring_and_held([_Line(0, t, t, None) for t in body[1:12]])
            locks = list(pair) if pair else held[:2]
        else:
            locks = (held or released)[:1]
        if kind == "lockdep-other":
            what = _normalized(re.sub(r"\S+/\d+ ", "", headline.split(": ", 1)[-1])
                               .strip("[] "))
        # syzkaller: the function that takes the lock; where that is the
        # locking code itself, the trace's first frame outside it.
        ats = [] if kind == "lockdep-rcu" else _lock_sites(body)
        func = _guilty(ats) or _guilty(_trace(body, "stack backtrace:"))
    elif kind == "lockdep-off":
        what = _normalized(title.removeprefix("lockdep turned off: "))
    elif kind in ("soft-lockup", "hard-lockup"):
        func = _stall_frame(_trace(body, task_only=True))
    elif kind == "rcu-stall":
        # The stack of RCU's own grace-period kthread, which the stall
        # starved, is no culprit: the first other dump names the stalling code.
        dumps = [_trace(d, task_only=True) for d in _dumps(body)]
        func = next((_stall_frame(f) for f in dumps if f and not any(
            g.startswith("rcu_gp_") for g in f)), None)
    elif kind == "hung-task":
        func = _hang_frame(_trace(body))
    elif kind == "kmemleak":
        if headline.startswith("unreferenced object"):
            func = _guilty(_trace(body, "backtrace:"))
        else:
            what = "suspected memory leaks"
    elif kind in ("kasan", "kfence"):
        # "BUG: KASAN: use-after-free in f+0x..", "BUG: KFENCE: out-of-bounds read in f+0x.."
        m = re.match(r"BUG: \w+: (?P<what>.+?) in (?P<func>[A-Za-z_][\w.]*)", headline)
        if m:
            what, func = m["what"], _function(m["func"])
    elif kind == "ubsan":
        m = re.match(r"UBSAN: (?P<what>.+?) in ", headline)
        what = m["what"] if m else ""
        func = _guilty(_trace(body))
    elif kind == "warning":
        m = re.search(r" at \S+ (?P<func>[A-Za-z_][\w.]*)", title)
        func = _function(m["func"]) if m else None
    elif kind == "panic":
        what = _normalized(headline.removeprefix("Kernel panic - not syncing: "))
    else:   # bug, oops, sleep-in-atomic: where the CPU was
        if kind == "bug":
            what = _normalized(headline.removeprefix("BUG: ").split(", address")[0]
                               .rstrip("!"))
        func = _guilty(_pc_then_trace(body))
    sig = kind + (f": {what}" if what else "")
    if locks:
        sig += " (" + ", ".join(_lock_class(lock) for lock in locks) + ")"
    if func:
        sig += f" in {func}"
    return sig


def scan(console: str) -> list[Splat]:
    """The splats in console: lockdep's first, each group in console order."""
    lines = _kernel_lines(console)
    splats = []
    body_end = last = -MAX_BODY - 1
    leak_objects = False    # an "unreferenced object" since the last scan's summary
    # A printk record the console showed and the guest's dump of the kernel
    # log repeats (same time, same text) is one report.
    seen: set[tuple[float, str]] = set()
    for i, line in enumerate(lines):
        kind = _classify(line.text)
        if kind is None or (i <= body_end and kind != "panic"):
            continue
        if kind == "bug" and any(_classify(t.text) == "lockdep-off"
                                 for t in lines[i + 1:i + 1 + LOCKDEP_OFF_CAUSE]):
            continue
        if kind == "kmemleak" and "new suspected memory leaks" in line.text:
            if leak_objects:
                leak_objects = False
                continue
        elif kind == "kmemleak":
            leak_objects = True
        # The taint of a report just made (KASAN, "BUG: Bad page state")
        # turned lockdep off: part of that report.
        if kind == "lockdep-off" and line.text.startswith(_TAINT_OFF) and i - last <= MAX_BODY:
            continue
        last = i
        end = i if kind == "lockdep-off" else _body_end(lines, i, kind)
        if line.time is not None:
            if (line.time, line.text) in seen:
                body_end = end
                continue
            seen.add((line.time, line.text))
        first = i - 1 if i and _BODY_START.fullmatch(lines[i - 1].text.strip()) else i
        title = _OFFSET.sub("", _title(kind, lines, i))
        splats.append(Splat(kind, title, line.number,
                            line.time,
                            signature=signature(kind, title, [t.text for t in lines[i:end + 1]]),
                            body=tuple(t.raw for t in lines[first:end + 1])))
        body_end = end
    return sorted(splats, key=lambda s: not s.kind.startswith("lockdep-"))


# ---- bodies on disk -------------------------------------------------------------

def splat_file(n: int) -> str:
    """The name of the n-th (from 1) splat's body, next to console.log."""
    return f"splat-{n}.txt"


def decoded_file(n: int) -> str:
    """... and of that body symbolized by scripts/decode_stacktrace.sh."""
    return f"splat-{n}.decoded.txt"


# addr2line per frame: a lockdep report's ~40 frames take seconds, not
# minutes; a hang is the script's, not the cell's.
DECODE_TIMEOUT_S = 300


@dataclass(frozen=True)
class Symbols:
    """What scripts/decode_stacktrace.sh needs to put file:line on frames."""
    vmlinux: Path
    tree: Path              # the source tree it was built from (holds the script)
    build: Path             # its build (O=) directory
    cross_compile: str = ""  # binutils prefix for another arch's vmlinux
    # Where the tree was when the kernel was built: the prefix the script
    # strips from file names.  "": tree itself (an artifact directory's
    # copy of the scripts is not where the sources were).
    basepath: str = ""

    @property
    def source_root(self) -> str:
        """The tree's path as the kernel's debug information names it."""
        return self.basepath or str(self.tree)

    @property
    def scripts(self) -> tuple[Path, ...]:
        """The tree's files decoding runs: the script and the decodecode
        it calls for Code: lines (an artifact directory carries them)."""
        return (self.tree / "scripts" / "decode_stacktrace.sh",
                self.tree / "scripts" / "decodecode")

    def decode(self, body: str) -> str:
        """body with file:line after each frame; raises OSError or
        subprocess.SubprocessError when the script cannot."""
        env = clean_env() | ({"CROSS_COMPILE": self.cross_compile} if self.cross_compile else {})
        proc = subprocess.run(
            [str(self.scripts[0]), str(self.vmlinux), self.source_root,
             str(self.build)],
            input=body, capture_output=True, text=True, env=env, timeout=DECODE_TIMEOUT_S,
            check=False)
        if proc.returncode != 0 or not proc.stdout.strip():
            raise subprocess.SubprocessError(
                f"exit {proc.returncode}: {(proc.stderr or proc.stdout).strip()[-500:]}")
        return proc.stdout


def save(out: Path, found: list[Splat] | tuple[Splat, ...],
         symbols: Symbols | None) -> list[str]:
    """Writes each splat's body to out/splat-N.txt and, given symbols whose
    vmlinux exists, decoded to out/splat-N.decoded.txt (N from 1, in the
    order of found).  Returns what could not be decoded, and why."""
    problems = []
    for n, s in enumerate(found, 1):
        body = "\n".join(s.body) + "\n"
        (out / splat_file(n)).write_text(body)
        if symbols is None or not symbols.vmlinux.is_file():
            continue
        try:
            (out / decoded_file(n)).write_text(symbols.decode(body))
        except (OSError, subprocess.SubprocessError) as e:
            problems.append(f"{splat_file(n)}: scripts/decode_stacktrace.sh failed: {e}")
    if problems:
        (out / "decode.log").write_text("\n".join(problems) + "\n")
    return problems
