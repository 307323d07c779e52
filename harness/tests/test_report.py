"""report.html of a real recorded run, test_data/run-x86_64/ (x86_64,
stock and patched, enforce and fix, builtin policy: cell skips everywhere,
and two stock cells failing the 6.1.192 known failures as crashes, as the
harness judged them then), and of a run made the way the runner makes one
from a real console of a known-bad kernel that deadlocked with a lockdep
splat and was killed at the timeout, and of one whose second splat was
reported by a continuation boot (console-2.log)."""
from __future__ import annotations

import json
import shutil
from html import escape
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from harness import ktap, report, results
from harness.__main__ import main
from harness.cases import Case
from harness.matrix import Cell
from harness.qemu import BootOutcome
from harness.tests.recorded import RECORDED_CASES

DATA = Path(__file__).parent / "test_data"
LOCKDEP = Cell("x86_64", "m0007-ima-take-i-rwsem-outside-iint-mutex", "enforce", "builtin")
# mutants 0011 and 0051 together: two boots, a lockdep splat in each.
CONTINUED = Cell("x86_64", "extra", "enforce", "custom", "sha1", "remove")
VOID = {"meta", "br", "input", "link", "hr", "img"}


class Page(HTMLParser):
    """The page's grid rows as (tag, attrs, text) cells, and its links;
    fails on a tag closed out of order."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.open: list[str] = []
        self.rows: list[list[tuple[str, dict, str]]] = []
        self.hrefs: list[str] = []
        self.ids: set[str] = set()
        self._cell: list | None = None
        self.feed(text)
        self.close()
        assert self.open == [], f"never closed: {self.open}"

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag not in VOID:
            self.open.append(tag)
        if "href" in a:
            self.hrefs.append(a["href"])
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = [tag, a, ""]

    def handle_endtag(self, tag: str) -> None:
        assert self.open and self.open[-1] == tag, f"</{tag}> closes {self.open[-1:]}"
        self.open.pop()
        if tag in ("td", "th") and self._cell:
            self.rows[-1].append(tuple(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell[2] += data

    def row(self, cell_id: str) -> dict[str, tuple[str, dict, str]]:
        """A cell's row by column heading."""
        heads = [text for _, _, text in self.rows[0]]
        row = next(r for r in self.rows if r[0][2] == cell_id)
        return dict(zip(heads, row))


def lockdep_run(run: Path) -> None:
    """The files the runner writes for a run of the LOCKDEP cell."""
    console = (DATA / "real_x86_64_lockdep_deadlock_killed.log").read_text()
    out = run / LOCKDEP.id
    out.mkdir(parents=True)
    (out / "console.log").write_text(console)
    cell = results.evaluate(LOCKDEP, BootOutcome(console, None, True, 150.0, ()),
                            RECORDED_CASES, "tcg", out)
    results.write_json(run / "results.json", "lockdep", [cell], {"boot": 150.0})


def continued_run(run: Path) -> None:
    """The files the runner writes for a cell whose first boot lost lockdep
    in fput_test and whose continuation boot reported another splat
    (real consoles, x86_64 enforce-custom, mutants 0011 and 0051)."""
    out = run / CONTINUED.id
    out.mkdir(parents=True)
    boots = []
    for n, name in ((1, "real_x86_64_0011_0051_boot1.log"),
                    (2, "real_x86_64_0011_0051_boot2.log")):
        console = (DATA / name).read_text()
        file = "console.log" if n == 1 else f"console-{n}.log"
        (out / file).write_text(console)
        boots.append(results.Boot(BootOutcome(console, 0, False, 60.0, ()),
                                  tuple(s.name for s in ktap.parse(console).suites), file))
    expected = tuple(Case(s.name, c.name)
                     for s in ktap.parse(boots[0].outcome.console).suites for c in s.cases)
    cell = results.evaluate_boots(results.VerdictContext(CONTINUED, expected, "tcg", out),
                                  boots)
    results.write_json(run / "results.json", "continued", [cell], {"boot": 120.0})


def written(name: str, tmp: Path) -> tuple[Path, Page]:
    run = tmp / name
    if name == "run-lockdep":
        lockdep_run(run)
    elif name == "run-continued":
        continued_run(run)
    else:
        shutil.copytree(DATA / name, run)
    page = report.write(run)
    return run, Page(page.read_text())


def test_a_row_per_cell_and_a_column_per_program(tmp_path: Path) -> None:
    run, page = written("run-x86_64", tmp_path)
    doc = json.loads((run / "results.json").read_text())
    programs = list(dict.fromkeys(t["name"].split("/")[0] for t in doc["cells"][0]["tests"]))
    assert [text for _, _, text in page.rows[0]] == [
        "cell", "status", *(p.removesuffix("_test") for p in programs),
        "splats", "time", "accel", "artifacts"]
    assert [a.get("title") for _, a, _ in page.rows[0][2:-4]] == programs
    assert [r[0][2] for r in page.rows[1:]] == [c["id"] for c in doc["cells"]]


def test_a_square_holds_counts_and_names_what_did_not_pass(tmp_path: Path) -> None:
    _, page = written("run-x86_64", tmp_path)
    row = page.row("x86_64-stock-enforce-builtin-sha1-keep")
    assert row["status"][1] == {"class": "s-fail", "title": (
        "2 test(s) failed: lastwriter_test/last_writer.new_file_fchmod_reopen, "
        "lastwriter_test/last_writer.new_file_fchown_reopen")}
    _, attrs, text = row["lastwriter"]
    assert (attrs["class"], text) == ("sq s-fail", "10/12 2f")
    crashed = ("Test terminated by assertion (a known failure of this kernel, but it must "
               "fail by its checks, not like this: known bug in 6.1.192: fchmod/fchown clears "
               "IMA_NEW_FILE (fixed by kernel-patches/0001))")
    assert attrs["title"] == (
        "lastwriter_test: 10 pass, 2 fail\n"
        f"FAIL last_writer.new_file_fchmod_reopen: new_file_fchmod_reopen: {crashed}\n"
        f"FAIL last_writer.new_file_fchown_reopen: new_file_fchown_reopen: {crashed}")
    _, attrs, text = row["sig"]
    assert (attrs["class"], text) == ("sq s-pass", "12/15 3sk")
    assert attrs["title"].split("\n")[:2] == [
        "sig_test: 12 pass, 3 skip",
        "SKIP imasig_rule.hash_only.read: not for this cell: imasig rules need a custom "
        "policy, not builtin"]
    row = page.row("x86_64-patched-enforce-builtin-sha1-keep")
    assert (row["status"][1]["class"], row["lastwriter"][1]["class"]) == ("s-pass", "sq s-pass")
    assert (row["time"][2], row["accel"][2]) == ("20.6s", "tcg")


def test_a_failing_cell_and_its_splat(tmp_path: Path) -> None:
    run, page = written("run-lockdep", tmp_path)
    row = page.row(LOCKDEP.id)
    assert (row["status"][1]["class"], row["status"][2]) == ("s-timeout", "timeout")
    assert row["status"][1]["title"] == "guest did not finish within 150s"
    _, attrs, text = row["open"]
    assert (attrs["class"], text) == ("sq s-fail", "0/6 6f")
    assert attrs["title"].split("\n")[:4] == [
        "open_test: 6 fail", "FAIL open_file.missing_hash.read",
        "FAIL open_file.missing_hash.write",
        "FAIL open_file.wrong_hash.read: no result: the guest was killed at the 150s timeout"]
    [href] = [h for h in page.hrefs if "#L" in h]
    assert href == f"{LOCKDEP.id}/console.html#L156"
    assert row["splats"][2] == "lockdep-circular"
    console = (run / LOCKDEP.id / "console.log").read_text().split("\n")
    assert "WARNING: possible circular locking dependency detected" in console[155]
    lines = Page((run / LOCKDEP.id / "console.html").read_text())
    assert "L156" in lines.ids
    assert "report.html" in lines.hrefs[0]


def test_a_splat_of_a_continuation_boot_links_into_its_console(tmp_path: Path) -> None:
    run, page = written("run-continued", tmp_path)
    row = page.row(CONTINUED.id)
    assert row["splats"][2] == "lockdep-circularlockdep-circular"
    hrefs = [h for h in page.hrefs if "#L" in h]
    assert [h.split("#")[0] for h in hrefs] == [f"{CONTINUED.id}/console.html",
                                                f"{CONTINUED.id}/console-2.html"]
    doc = json.loads((run / "results.json").read_text())
    for href, splat in zip(hrefs, doc["cells"][0]["splats"]):
        page_name, _, anchor = href.partition("/")[2].partition("#L")
        log = page_name.removesuffix(".html") + ".log"
        assert splat["console"] == log
        # The anchor is the headline's line in that console, not in console.log.
        headline = (run / CONTINUED.id / log).read_text().split("\n")[int(anchor) - 1]
        assert "WARNING: possible circular locking dependency detected" in headline
        lines = Page((run / CONTINUED.id / page_name).read_text())
        assert f"L{anchor}" in lines.ids
        assert lines.hrefs == ["../report.html", log]
    assert hrefs[0].partition("#")[2] != hrefs[1].partition("#")[2]


def test_links_are_relative_and_lead_to_the_artifacts(tmp_path: Path) -> None:
    for name in ("run-x86_64", "run-lockdep", "run-continued"):
        run, page = written(name, tmp_path)
        moved = run.rename(tmp_path / f"moved-{name}")
        doc = json.loads((moved / "results.json").read_text())
        assert page.hrefs
        for href in page.hrefs:
            parts = urlsplit(href)
            assert not parts.scheme and not parts.path.startswith("/"), href
            assert (moved / unquote(parts.path)).is_file(), href
        for c in doc["cells"]:
            for file in report.ARTIFACTS:
                if (moved / c["id"] / file).exists():
                    assert f"{c['id']}/{file}" in page.hrefs


def test_everything_is_escaped(tmp_path: Path) -> None:
    run = tmp_path / "run"
    lockdep_run(run)
    doc = json.loads((run / "results.json").read_text())
    evil = '<script>alert("x")</script> & \'q\''
    [cell] = doc["cells"]
    cell["reason"] = evil
    cell["tests"][0] = {**cell["tests"][0], "status": "fail", "reason": evil}
    doc["run_id"] = evil
    (run / "results.json").write_text(json.dumps(doc))
    console = run / LOCKDEP.id / "console.log"
    console.write_text(console.read_text().replace("\n", f"\n{evil}\n", 1))
    text = report.write(run).read_text()
    assert "<script" not in text
    page = Page(text)
    row = page.row(LOCKDEP.id)
    assert row["status"][1]["title"] == evil
    assert evil in next(a["title"] for _, a, _ in row.values() if "title" in a
                        and a.get("class", "").startswith("sq s-fail"))
    html = (run / LOCKDEP.id / "console.html").read_text()
    assert "<script" not in html and escape(evil) in html


def test_squares_show_the_worst_result() -> None:
    def square(*statuses: str) -> str:
        return report._square("p", [{"name": f"p/c{i}", "status": s}
                                     for i, s in enumerate(statuses)]).status
    assert square("pass", "xfail", "fail", "skip") == "fail"
    assert square("pass", "xfail", "xpass") == "xpass"
    assert square("pass", "xfail", "skip") == "xfail"
    assert square("skip", "pass") == "pass"
    assert square("skip") == "skip"
    assert square() == "none"


def test_not_a_run_directory(tmp_path: Path) -> None:
    with pytest.raises(report.ReportError) as e:
        report.write(tmp_path)
    assert str(e.value) == (f"{tmp_path}/results.json: cannot read it (No such file or "
                            "directory); give a run directory (build/results/<run-id>/) "
                            "that a finished or interrupted run wrote")
    (tmp_path / "results.json").write_text('{"cells": []}')
    with pytest.raises(report.ReportError) as e:
        report.write(tmp_path)
    assert str(e.value) == (f"{tmp_path}/results.json: no run_id and cells; not a "
                            "results.json of the harness")


def test_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    shutil.copytree(DATA / "run-x86_64", run)
    assert main(["report", str(run)]) == 0
    assert capsys.readouterr().out == f"{run / 'report.html'}\n"
    assert main(["report", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {tmp_path}/results.json: cannot read")
