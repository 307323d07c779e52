"""Find kernel splats (lockdep reports, BUGs, Oopses, WARNINGs, panics) in a
guest's console log.

A splat is reported once, at its headline: the line that names it, matched
(after the printk timestamp) by the first rule in _RULES that fits, so a
lockdep "WARNING: ..." headline is never also a "warning".  Rules:

- Lines starting with "#" are kselftest output (runner.sh prefixes everything
  a test prints with "# "), and are skipped, unless a kernel message
  interrupted the line: then the part from its timestamp on is read.
- A splat's body runs from its headline to the end of its first call trace
  (x86: "</TASK>"; arm64: the last indented line after "Call trace:"), to a
  "---[ end trace", "=====" or "[ cut here ]" line, or for at most MAX_BODY
  kernel lines.  Headlines in a body belong to the same incident and are not
  reported, e.g. the "Oops: 0002 [#1] ..." that x86 prints a few lines after
  "BUG: kernel NULL pointer dereference"; "Kernel panic" always is.  Should
  another CPU's splat interleave with a body, it is missed.
- lockdep's "turning off the locking correctness validator." has no body and
  absorbs a "BUG:" line up to LOCKDEP_OFF_CAUSE lines before it, which is then
  the cause in its title (e.g. "BUG: MAX_LOCKDEP_ENTRIES too low!").
  "Disabling lock debugging due to kernel taint" (add_taint()) turns lockdep
  off too: it is a report of its own unless it comes within MAX_BODY lines
  of another's headline (the KASAN report that tainted the kernel).

Titles have symbol offsets ("+0x12/0x40") removed so they compare equal
across builds.  A circular (or recursive) locking dependency is titled with
the lock the task was trying to acquire, then the one it already held:
"possible circular locking dependency: acquiring &iint->mutex while holding
&sb->s_type->i_mutex_key#10"; lockdep's own notation for the new dependency
would be the other way round (held -> acquired).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .ktap import PRINTK_TIMESTAMP

# The guest init prints the kernel messages it kept off the console
# (levels 5-7, such as lockdep's KERN_DEBUG "turning off ...") after its end
# marker, each line prefixed so.
DMESG_PREFIX = "dmesg: "
MAX_BODY = 100
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
        ("sleep-in-atomic", r"BUG: sleeping function called from invalid context"),
        ("bug", r"BUG: |[Kk]ernel BUG at "),
        # x86 "Oops: 0002 [#1] PREEMPT SMP", "general protection fault, ...:
        # 0000 [#1] ...", arm64 "Internal error: Oops: 0000000096000004 [#1] ..."
        ("oops", r"(?:Internal error: )?Oops\b|.+: [0-9a-f]+ \[#\d+\]"),
        ("warning", r"WARNING: CPU: \d+ PID: \d+ at "),
        ("panic", r"Kernel panic - not syncing: "),
    ))

_TAINT_OFF = "Disabling lock debugging due to kernel taint"
_BODY_END = re.compile(r"</TASK>|---\[ end trace|=====|-+\[ cut here \]")
_OFFSET = re.compile(r"\+0x[0-9a-f]+/0x[0-9a-f]+")
# "ffff888003f2c0a8 (&iint->mutex){+.+.}-{3:3}, at: process_measurement+0x2a5/0xa50"
_HELD_LOCK = re.compile(r"\S+ \((.+)\)\{[^}]*\}-\{\d+:\d+\}, at: ")


@dataclass(frozen=True)
class Splat:
    kind: str       # lockdep-circular, ..., bug, oops, warning, panic
    title: str      # one line naming it, timestamp stripped
    line: int       # 1-based line number of the headline in the console
    time: float | None = None   # printk seconds of the headline
    # Set by results.evaluate(): the case that was running ("<program>/
    # <case>", None: boot, or between cases), and the console it is in.
    test: str | None = None
    console: str = "console.log"


def _kernel_lines(console: str) -> list[tuple[int, str]]:
    """(line number, text after the timestamp) of every line that may be a
    kernel message, text keeping its indentation."""
    lines = []
    for number, raw in enumerate(console.split("\n"), 1):
        line = raw.strip("\r").removeprefix(DMESG_PREFIX)
        m = PRINTK_TIMESTAMP.search(line)
        # Test output starts with "#"; a timestamp anywhere in it is a kernel
        # message that interrupted or followed runner.sh's "# " prefix.
        if line.startswith("#") and not m:
            continue
        lines.append((number, line[m.end():] if m else line))
    return lines


def _classify(text: str) -> str | None:
    return next((kind for kind, rule in _RULES if rule.match(text)), None)


def _body_end(lines: list[tuple[int, str]], start: int) -> int:
    """Index in lines of the last line of the splat headed by lines[start]."""
    last = min(start + MAX_BODY, len(lines) - 1)
    in_arm64_trace = False
    for i in range(start + 1, last + 1):
        text = lines[i][1]
        if _BODY_END.match(text.strip()):
            return i
        if in_arm64_trace and not text.startswith(" "):
            return i - 1
        in_arm64_trace = in_arm64_trace or text.strip() == "Call trace:"
    return last


def _title(kind: str, lines: list[tuple[int, str]], i: int) -> str:
    headline = lines[i][1].strip()
    if kind == "warning":
        return "WARNING at " + headline.split(" at ", 1)[1]
    if kind == "lockdep-off":
        causes = [t.strip() for _, t in lines[max(i - LOCKDEP_OFF_CAUSE, 0):i]
                  if t.startswith(("BUG: ", "INFO: "))]
        return f"lockdep turned off: {causes[-1]}" if causes else headline
    if kind in ("lockdep-circular", "lockdep-recursive"):
        following = [t.strip() for _, t in lines[i + 1:i + 12]]
        locks = [_HELD_LOCK.match(following[j + 1])
                 for j, t in enumerate(following[:-1])
                 if t.endswith((" is trying to acquire lock:", "already holding lock:"))]
        if len(locks) == 2 and all(locks):
            what = headline.removeprefix("WARNING: ").removesuffix(" detected")
            return f"{what}: acquiring {locks[0][1]} while holding {locks[1][1]}"
    return headline


def scan(console: str) -> list[Splat]:
    """The splats in console: lockdep's first, each group in console order."""
    lines = _kernel_lines(console)
    splats = []
    body_end = last = -MAX_BODY - 1
    for i, (number, text) in enumerate(lines):
        kind = _classify(text)
        if kind is None or (i <= body_end and kind != "panic"):
            continue
        if kind == "bug" and any(_classify(t) == "lockdep-off"
                                 for _, t in lines[i + 1:i + 1 + LOCKDEP_OFF_CAUSE]):
            continue
        # The taint of a report just made (KASAN, "BUG: Bad page state")
        # turned lockdep off: part of that report.
        if kind == "lockdep-off" and text.startswith(_TAINT_OFF) and i - last <= MAX_BODY:
            continue
        splats.append(Splat(kind, _OFFSET.sub("", _title(kind, lines, i)), number))
        last = i
        body_end = i if kind == "lockdep-off" else _body_end(lines, i)
    return sorted(splats, key=lambda s: not s.kind.startswith("lockdep-"))
