"""Where a cell's time went, from the host's arrival time of each console
line (qemu.BootOutcome.line_times): the boot up to the guest's begin marker
(the floor every cell pays), then each test program from kselftest's
"# selftests: <dir>: <prog>" header to its "ok N selftests: <dir>: <prog>"
result.  Parsing only: nothing here starts a process."""
from __future__ import annotations

import json
import re
import statistics
from dataclasses import dataclass
from pathlib import Path

from .ktap import BEGIN_MARKER

_HEADER = re.compile(r"^# selftests: \S+: (\S+)\s*$")
_RESULT = re.compile(r"^(?:not )?ok \d+ selftests: \S+: (\S+)")


@dataclass(frozen=True)
class ProgramTime:
    name: str               # "open_test"
    seconds: float          # header to result line; to the last line if it never ended
    finished: bool          # its result line was seen


@dataclass(frozen=True)
class CellTiming:
    boot_s: float | None    # QEMU start to the begin marker (kernel boot and init)
    programs: tuple[ProgramTime, ...] = ()

    def to_json(self) -> dict:
        return {"boot_s": None if self.boot_s is None else round(self.boot_s, 2),
                "programs": {p.name: round(p.seconds, 2) for p in self.programs},
                **({"unfinished": [p.name for p in self.programs if not p.finished]}
                   if any(not p.finished for p in self.programs) else {})}

    @classmethod
    def from_json(cls, doc: dict) -> CellTiming:
        """What to_json() wrote doc from (harness/merge.py reads shards so)."""
        unfinished = set(doc.get("unfinished", ()))
        return cls(doc.get("boot_s"), tuple(ProgramTime(name, seconds, name not in unfinished)
                                            for name, seconds in doc.get("programs", {}).items()))


def parse(console: str, line_times: tuple[float, ...]) -> CellTiming:
    """line_times[i] is when line i of console.split("\\n") ended."""
    boot_s = None
    starts: dict[str, float] = {}
    programs: list[ProgramTime] = []
    last = line_times[-1] if line_times else 0.0
    for raw, when in zip(console.split("\n"), line_times):
        line = raw.strip("\r")
        if boot_s is None and BEGIN_MARKER in line:
            boot_s = when
        elif m := _HEADER.match(line):
            starts[m.group(1)] = when
        elif (m := _RESULT.match(line)) and m.group(1) in starts:
            programs.append(ProgramTime(m.group(1), when - starts.pop(m.group(1)), True))
    programs += [ProgramTime(name, last - t, False) for name, t in starts.items()]
    # In hundredths, as results.json keeps them: a summary of merged shards
    # (harness/merge.py) then prints what the single run printed.
    return CellTiming(None if boot_s is None else round(boot_s, 2),
                      tuple(ProgramTime(p.name, round(p.seconds, 2), p.finished)
                            for p in programs))


def summary(timings: list[tuple[str, CellTiming]]) -> str:
    """Per program: in how many cells it ran, its median and slowest time;
    and the boot floor.  timings: (cell id, its timing)."""
    per: dict[str, list[tuple[float, str]]] = {}
    for cell, t in timings:
        if t.boot_s is not None:
            per.setdefault("(boot to init)", []).append((t.boot_s, cell))
        for p in t.programs:
            per.setdefault(p.name, []).append((p.seconds, cell))
    if not per:
        return ""
    width = max(len(n) for n in per)
    lines = [f"{'program':<{width}}  cells  median     max  slowest cell"]
    for name, times in sorted(per.items(), key=lambda kv: -sum(t for t, _ in kv[1])):
        worst = max(times)
        lines.append(f"{name:<{width}}  {len(times):>5}  {statistics.median(t for t, _ in times):>5.1f}s"
                     f"  {worst[0]:>5.1f}s  {worst[1]}")
    return "\n".join(lines)


# ---- scheduling -------------------------------------------------------------

def load_times(path: Path) -> dict[str, float]:
    """Each cell's last full-suite duration (see save_times); {} if none."""
    try:
        data = json.loads(path.read_text())
        return {str(k): float(v) for k, v in data.items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}


def save_times(path: Path, durations: dict[str, float]) -> None:
    path.write_text(json.dumps(load_times(path) | {k: round(v, 1) for k, v in durations.items()},
                               indent=1, sort_keys=True) + "\n")
