"""A run's results as one static HTML page: report.html next to results.json.

    /usr/bin/python3 -m harness report build/results/latest

The page is the matrix as a grid, a row per cell and a column per test
program; a square is coloured by the worst of that program's results in that
cell and holds its counts, its title (the tooltip) names the cases that did
not pass.  Each row links the cell's console.log, qemu-cmdline.sh,
kernel.config, patches.txt and the profile.txt of a PROFILE= run, and
each kernel splat to its headline in a line-numbered copy of the console it is in (<cell>/console.html#L<n>, or
console-<n>.html of a continuation boot's console-<n>.log; written for the
consoles with splats).  Links are relative: the run directory can be moved or
served as files.  No script: a checkbox hides passing rows with CSS alone.
Given a baseline (`report RUN_DIR --baseline RUN_OR_RESULTS_JSON`), a section
says what changed since (harness/rundiff.py).
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from . import splats as splat_scanner
from .errors import HarnessError, read_json
from .status import CASE_STATUSES, Status

# Worst first: a square shows the first of these any of its cases has.
_SQUARE_ORDER = (Status.FAIL, Status.XPASS, Status.XFAIL, Status.PASS, Status.SKIP)
# A square's counts of what did not pass: "18/20 1f 1xf".
_SHORT = {Status.FAIL: "f", Status.XPASS: "xp", Status.XFAIL: "xf", Status.SKIP: "sk"}
# A cell's artifacts, and how its row labels their links.
ARTIFACTS = {"console.log": "console", "qemu-cmdline.sh": "qemu", "kernel.config": "config",
             "patches.txt": "patches", "profile.txt": "profile"}
_REASON_MAX = 300
# The consoles a cell's splats can be in: its first boot's and those of its
# continuation boots (runner._boot_once()).  Any other name in results.json
# is not a file of the cell's to open.
_CONSOLE = re.compile(r"console(-[0-9]+)?\.log")


class ReportError(HarnessError):
    """A run directory the report cannot be made from."""


@dataclass(frozen=True)
class Square:
    program: str
    status: str                 # one of _SQUARE_ORDER, or "none": no result at all
    counts: dict[str, int]
    notes: tuple[str, ...]      # "<status> <case>: <reason>" of every case that did not pass
    seconds: float | None = None    # the program's run time, where results.json has it


@dataclass(frozen=True)
class SplatLink:
    kind: str
    title: str
    line: int | None            # headline's line in console, None if not found there
    console: str = "console.log"    # the cell's console it is in

    @property
    def page(self) -> str:
        """The line-numbered copy of its console."""
        return console_page_name(self.console)


@dataclass(frozen=True)
class Row:
    cell: dict                  # the cell's entry in results.json
    squares: tuple[Square, ...]
    splats: tuple[SplatLink, ...]
    links: tuple[tuple[str, str], ...]  # (file name, relative href)


def _square(program: str, tests: list[dict], seconds: float | None = None) -> Square:
    counts = {str(s): 0 for s in CASE_STATUSES}
    notes = []
    for t in tests:
        counts[t["status"]] = counts.get(t["status"], 0) + 1
        if t["status"] != Status.PASS:
            reason = t.get("reason", "")
            reason = reason if len(reason) <= _REASON_MAX else reason[:_REASON_MAX] + "..."
            notes.append(f"{t['status'].upper()} {t['name'].partition('/')[2]}"
                         + (f": {reason}" if reason else ""))
    status = next((s for s in _SQUARE_ORDER if counts.get(s)), "none")
    return Square(program, status, counts, tuple(notes), seconds)


def programs(cells: list[dict]) -> list[str]:
    """Test programs in the order their cases first appear."""
    return list(dict.fromkeys(t["name"].split("/", 1)[0] for c in cells for t in c["tests"]))


def console_page_name(console: str) -> str:
    """console.log -> console.html, console-2.log -> console-2.html."""
    return console.removesuffix(".log") + ".html"


def _splats(cell: dict, cell_dir: Path) -> tuple[SplatLink, ...]:
    found: dict[str, list] = {}     # console name -> its splats not matched yet
    links = []
    for s in cell.get("splats", ()):
        name = s.get("console", "console.log")
        if name not in found:
            path = cell_dir / name
            found[name] = (list(splat_scanner.scan(path.read_text(errors="replace")))
                           if _CONSOLE.fullmatch(name) and path.is_file() else [])
        # The same scanner made results.json's list: match by kind and title
        # in the console it names, each scanned splat used once.
        hit = next((f for f in found[name] if (f.kind, f.title) == (s["kind"], s["title"])),
                   None)
        if hit:
            found[name].remove(hit)
        links.append(SplatLink(s["kind"], s["title"], hit.line if hit else None, name))
    return tuple(links)


def rows(run_dir: Path, doc: dict) -> list[Row]:
    progs = programs(doc["cells"])
    out = []
    for cell in doc["cells"]:
        by_prog: dict[str, list[dict]] = {p: [] for p in progs}
        for t in cell["tests"]:
            by_prog[t["name"].split("/", 1)[0]].append(t)
        d = run_dir / cell["id"]
        href = quote(cell["id"])
        links = [(name, f"{href}/{quote(name)}") for name in ARTIFACTS if (d / name).is_file()]
        # Splat files a runner may keep next to the console, and the
        # consoles of continuation boots (console-2.log, ...).
        links += [(p.name, f"{href}/{quote(p.name)}")
                  for p in sorted(d.glob("splat*")) + sorted(d.glob("console-*.log"))
                  + sorted(d.glob("profile-*.txt"))
                  if p.is_file()]
        # Per-program seconds: "timing": {"programs": {name: s}} (harness/timing.py).
        seconds = (cell.get("timing") or {}).get("programs") or {}
        out.append(Row(cell, tuple(_square(p, by_prog[p], seconds.get(p)) for p in progs),
                       _splats(cell, d), tuple(links)))
    return out


_CSS = """
body { font: 13px/1.35 system-ui, sans-serif; margin: 1em 1.5em; color: #1b1b1b; }
h1 { font-size: 1.4em; margin: 0 0 .3em; }
.meta, .totals { margin: .2em 0; }
code, .id { font-family: ui-monospace, monospace; font-size: 12px; }
table.grid { border-collapse: collapse; margin-top: .8em; }
.grid th, .grid td { border: 1px solid #fff; padding: 2px 5px; white-space: nowrap; }
.grid thead th { background: #eee; position: sticky; top: 0; font-weight: 600; }
.grid tbody th { text-align: left; font-weight: normal; background: #f6f6f6;
                 position: sticky; left: 0; }
.grid td.sq { text-align: center; min-width: 3.5em; }
.grid td.num { text-align: right; }
.s-pass { background: #bfe5bf; } .s-fail { background: #f4a3a3; }
.s-xfail { background: repeating-linear-gradient(135deg, #ffe08a 0 6px, #ffd04d 6px 12px); }
.s-xpass { background: #d7a6ef; } .s-skip { background: #dde3ea; color: #555; }
.s-none { background: #ececec; color: #888; }
.s-timeout { background: #ffb066; } .s-panic { background: #c62828; color: #fff; }
.s-error { background: #7a7a7a; color: #fff; }
.bad { font-weight: 600; }
.incomplete { background: #c62828; color: #fff; padding: .5em .8em; font-size: 1.1em; }
.incomplete a { color: inherit; }
.splat { color: #b00020; font-weight: 700; }
.splat a { color: inherit; }
tr.has-splat th { box-shadow: inset 4px 0 #b00020; }
.legend span { display: inline-block; padding: 1px 8px; margin-right: 4px; border-radius: 2px; }
.links a { margin-right: .6em; }
body:has(#only-bad:checked) tr.ok { display: none; }
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _square_html(sq: Square) -> str:
    n = sq.counts
    total = sum(n.values())
    if not total:
        return '<td class="sq s-none" title="no results">&mdash;</td>'
    shown = [f"{n['pass']}/{total}"]
    shown += [f'<b>{n[s]}{_SHORT[s]}</b>' for s in (Status.FAIL, Status.XPASS) if n[s]]
    shown += [f"{n[s]}{_SHORT[s]}" for s in (Status.XFAIL, Status.SKIP) if n[s]]
    title = f"{sq.program}: " + ", ".join(f"{v} {k}" for k, v in n.items() if v)
    if sq.seconds is not None:
        title += f" in {float(sq.seconds):.1f}s"
    title += "".join(f"\n{note}" for note in sq.notes)
    return f'<td class="sq s-{sq.status}" title="{_e(title)}">{" ".join(shown)}</td>'


def _row_html(row: Row) -> str:
    c = row.cell
    ok = c["status"] == Status.PASS and not row.splats
    classes = " ".join(filter(None, ("ok" if ok else "", "has-splat" if row.splats else "")))
    href = quote(c["id"])
    splats = "<br>".join(
        f'<a href="{href}/{quote(s.page)}#L{s.line}" title="{_e(s.title)}">{_e(s.kind)}</a>'
        if s.line else f'<span title="{_e(s.title)}">{_e(s.kind)}</span>' for s in row.splats)
    links = " ".join(f'<a href="{_e(h)}" title="{_e(name)}">{_e(ARTIFACTS.get(name, name))}</a>'
                     for name, h in row.links)
    return (f'<tr class="{classes}"><th class="id" id="{_e(c["id"])}">{_e(c["id"])}</th>'
            f'<td class="s-{_e(c["status"])}" title="{_e(c.get("reason") or c["status"])}">'
            f'{_e(c["status"])}</td>'
            + "".join(_square_html(sq) for sq in row.squares)
            + f'<td class="splat">{splats}</td>'
            f'<td class="num">{float(c.get("duration_s", 0)):.1f}s</td>'
            f'<td>{_e(c.get("accel", ""))}</td><td class="links">{links}</td></tr>')


def _not_run_row(cell_id: str, progs: list[str]) -> str:
    """The row of a selected cell with no result (results.json's not_run)."""
    return (f'<tr><th class="id" id="{_e(cell_id)}">{_e(cell_id)}</th>'
            '<td class="s-none bad" title="no result: the run stopped before it">no result</td>'
            + '<td class="sq s-none" title="no results">&mdash;</td>' * len(progs)
            + '<td class="splat"></td><td class="num"></td><td></td><td class="links"></td></tr>')


def _incomplete(doc: dict) -> str:
    """The banner of a run without a verdict (results.json's interrupted
    and not_run: a run or a shard that stopped early, selected cells with
    no result); empty for a run that finished."""
    why, not_run = doc.get("interrupted"), doc.get("not_run") or []
    if not why and not not_run:
        return ""
    parts = ["<b>INCOMPLETE: no verdict.</b>"]
    if why:
        parts.append(f"Stopped early: {_e(why)}.")
    if not_run:
        parts.append(f"{len(not_run)} selected cell(s) have no result: " + ", ".join(
            f'<a href="#{_e(quote(c))}"><code>{_e(c)}</code></a>' for c in not_run) + ".")
    return f'<p class="incomplete">{" ".join(parts)}</p>'


def _by_status(counts: dict[str, int]) -> dict[str, int]:
    """counts in the vocabulary's order (harness/status.py), not the cells'."""
    rank = [str(s) for s in Status]
    return dict(sorted(counts.items(), key=lambda kv: rank.index(kv[0])
                       if kv[0] in rank else len(rank)))


def _totals(doc: dict) -> str:
    cells: dict[str, int] = {}
    tests: dict[str, int] = {}
    for c in doc["cells"]:
        cells[c["status"]] = cells.get(c["status"], 0) + 1
        for t in c["tests"]:
            tests[t["status"]] = tests.get(t["status"], 0) + 1
    splats = sum(len(c.get("splats", ())) for c in doc["cells"])
    cells, tests = _by_status(cells), _by_status(tests)
    not_run = len(doc.get("not_run") or [])
    return ('<p class="totals"><b>cells:</b> '
            + ", ".join([f'<span class="s-{_e(k)}">&nbsp;{v} {_e(k)}&nbsp;</span>'
                         for k, v in cells.items()]
                        + ([f'<span class="s-none bad">&nbsp;{not_run} no result&nbsp;</span>']
                           if not_run else []))
            + f" (of {len(doc['cells']) + not_run}) &nbsp; <b>tests:</b> "
            + ", ".join(f"{v} {_e(k)}" for k, v in tests.items())
            + f" &nbsp; <b>splats:</b> {splats}</p>")


def _meta(doc: dict) -> str:
    parts = [f"run <code>{_e(doc['run_id'])}</code>"]
    if doc.get("timings"):
        parts.append("timings: " + ", ".join(f"{_e(k)} {float(v):.1f}s"
                                             for k, v in doc["timings"].items()))
    for b in doc.get("builds", ()):
        parts.append(f"kernel {_e(b.get('kernel'))}: {_e(b.get('compiled_objects'))} "
                     f"object(s) compiled in {_e(b.get('seconds'))}s")
    for arch, a in doc.get("accel", {}).items():
        parts.append(f"accel {_e(arch)}: {_e(a.get('accel'))} ({_e(a.get('reason'))})")
    if doc.get("shards"):
        parts.append(f"merged from {len(doc['shards'])} shard(s): "
                     + ", ".join(f"<code>{_e(s.get('run_id'))}</code>" for s in doc["shards"]))
    return "".join(f'<p class="meta">{p}</p>' for p in parts)


_LEGEND = (
    (Status.PASS, "every case passed"), (Status.FAIL, "a case failed"),
    (Status.XFAIL, "only known failures (matrix.yaml known_failures) failed"),
    (Status.XPASS, "a known failure passed: fails the cell"),
    (Status.SKIP, "only skipped ('not for this cell')"), ("none", "no result (not booted)"),
    (Status.TIMEOUT, "cell killed at the timeout"), (Status.PANIC, "kernel panic"),
    (Status.ERROR, "kernel or guest could not be built"),
)


def page(doc: dict, grid: list[Row], diff: str = "") -> str:
    progs = programs(doc["cells"])
    legend = "".join(f'<span class="s-{k}" title="{_e(why)}">{k}</span>' for k, why in _LEGEND)
    head = ("<tr><th>cell</th><th>status</th>" + "".join(f'<th title="{_e(p)}">{_e(p.removesuffix("_test"))}</th>' for p in progs)
            + "<th>splats</th><th>time</th><th>accel</th><th>artifacts</th></tr>")
    body = "\n".join([_row_html(r) for r in grid]
                     + [_not_run_row(c, progs) for c in doc.get("not_run") or []])
    banner = _incomplete(doc)
    title = "IMA appraisal matrix" + (" (INCOMPLETE: no verdict)" if banner else "")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{title}: {_e(doc['run_id'])}</title>
<style>{_CSS}</style></head>
<body>
<h1>{title}</h1>
{banner}{_meta(doc)}
{_totals(doc)}
{diff}
<p class="legend">{legend} <span class="splat">splat</span> a kernel splat (links to its
headline in the console) &nbsp; squares: passed/cases, then f failed, xp xpass, xf xfail,
sk skipped; hover for case names</p>
<p><label><input type="checkbox" id="only-bad"> only cells that did not pass</label></p>
<table class="grid">
<thead>{head}</thead>
<tbody>
{body}
</tbody></table>
</body></html>
"""


def console_page(cell_id: str, console: str, marked: set[int],
                 name: str = "console.log") -> str:
    lines = "\n".join(
        f'<span id="L{n}"{" class=m" if n in marked else ""}>{_e(line)}</span>'
        for n, line in enumerate(console.split("\n"), 1))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_e(cell_id)}: {_e(name)}</title>
<style>pre {{ counter-reset: n; font: 12px/1.3 ui-monospace, monospace; white-space: pre-wrap; }}
pre span {{ counter-increment: n; }}
pre span::before {{ content: counter(n); display: inline-block; width: 5ch;
  margin-right: 1ch; color: #999; text-align: right; }}
pre span.m {{ background: #ffd6d6; font-weight: 700; }}
pre span:target {{ outline: 2px solid #b00020; }}</style></head>
<body><p><a href="../report.html">report</a> &middot; <a href="{_e(quote(name))}">{_e(name)}</a></p>
<pre>{lines}</pre></body></html>
"""


def load(run_dir: Path) -> dict:
    path = run_dir / "results.json"
    doc = read_json(path, ReportError, "give a run directory (build/results/<run-id>/) "
                    "that a finished or interrupted run wrote")
    if not isinstance(doc, dict) or not isinstance(doc.get("cells"), list) \
            or "run_id" not in doc:
        raise ReportError(f"{path}: no run_id and cells; not a results.json of the harness")
    return doc


def write(run_dir: Path, baseline: Path | None = None) -> Path:
    """Writes run_dir/report.html (and the line-numbered copy of each
    console with splats) from run_dir/results.json; returns the page's
    path.  Given a baseline (a run directory or results.json), the page
    says what changed since (harness/rundiff.py)."""
    doc = load(run_dir)
    # Imported here: rundiff reads runs through merge, which imports this.
    from . import rundiff
    diff = rundiff.render_html(rundiff.diff_runs(baseline, run_dir)) if baseline else ""
    grid = rows(run_dir, doc)
    for row in grid:
        marked: dict[str, set[int]] = {}
        for s in row.splats:
            if s.line:
                marked.setdefault(s.console, set()).add(s.line)
        d = run_dir / row.cell["id"]
        for name, lines in marked.items():
            text = (d / name).read_text(errors="replace")
            (d / console_page_name(name)).write_text(
                console_page(row.cell["id"], text, lines, name))
    out = run_dir / "report.html"
    out.write_text(page(doc, grid, diff))
    return out
