"""The kernel log a guest dumps, the markers in it, and what the verdict
makes of them: attribution of splats to cases, lockdep lost without a
report, a log that cannot be proven whole, continuation boots."""
from __future__ import annotations

import dataclasses
from pathlib import Path

from harness import cases, kernlog, results
from harness.cases import Case
from harness.matrix import Cell, RacyReason
from harness.qemu import BootOutcome
from harness.status import Status

CELL = Cell("x86_64", "patched", "enforce", "custom")
DATA = Path(__file__).parent / "test_data"
REPO = Path(__file__).resolve().parents[2]
EXPECTED = (Case("open_test", "f.a"), Case("open_test", "f.b"), Case("fput_test", "g.c"),
            Case("mmap_test", "h.d"))
# What a cell of EXPECTED is judged against with no known failure, splat or skip.
JUDGED = results.VerdictContext(CELL, EXPECTED, "tcg")

LOCKDEP = """\
WARNING: possible circular locking dependency detected
6.1.192 #1 Not tainted
------------------------------------------------------
fput_test/99 is trying to acquire lock:
ffff888004b6d2a8 (&iint->mutex){+.+.}-{3:3}, at: process_measurement+0x2a5/0xa50

but task is already holding lock:
ffff888004a1b3d0 (&mm->mmap_lock){++++}-{3:3}, at: __vm_munmap+0x5b/0x130
</TASK>"""
# Another regression: iint->mutex under i_rwsem.
OTHER = LOCKDEP.replace("&mm->mmap_lock", "&sb->s_type->i_mutex_key#10")


def ktap(programs: dict[str, list[str]]) -> list[str]:
    lines = ["<<< ima-selftest begin >>>", "TAP version 13", f"1..{len(programs)}"]
    for i, (prog, cases) in enumerate(programs.items(), 1):
        lines += [f"# selftests: ima_appraise: {prog}", "# TAP version 13", f"# 1..{len(cases)}"]
        lines += [f"# ok {j} {c}" for j, c in enumerate(cases, 1)]
        lines.append(f"ok {i} selftests: ima_appraise: {prog}")
    return lines + ["<<< ima-selftest end rc=0 >>>"]


def dump(records: list[str], first: int = 0, skip: int | None = None, rc: int = 0) -> list[str]:
    """records, one a line, as kmsg-dump prints them (a second apart)."""
    out = [kernlog.DUMP_BEGIN]
    seq = first
    for i, text in enumerate(records):
        if seq == skip:
            seq += 1
        out.append(f"kmsg {seq},4 [{i + 1:5d}.000000] {text}")
        seq += 1
    return out + [f"<<< ima-selftest kmsg end rc={rc} >>>"]


def run_records(lockdep_off_in: str | None = None, splat: str | None = LOCKDEP) -> list[str]:
    """A boot of EXPECTED's programs; lockdep goes off in that case."""
    recs = ["Linux version 6.1.192"]
    state = "on"
    for prog in dict.fromkeys(c.suite for c in EXPECTED):
        recs.append(f"ima_selftest: start {prog} lockdep={state}")
        for c in (c for c in EXPECTED if c.suite == prog):
            recs.append(f"ima_selftest: begin {c.id}")
            if c.id == lockdep_off_in:
                if splat:
                    recs += splat.split("\n")
                state = "off"
            recs.append(f"ima_selftest: end {c.id} lockdep={state}")
        recs.append(f"ima_selftest: done {prog} lockdep={state}")
    return recs + [f"ima_selftest: finished lockdep={state}"]


def console(records: list[str], **kw) -> str:
    programs: dict[str, list[str]] = {}
    for c in EXPECTED:
        programs.setdefault(c.suite, []).append(c.name)
    return "\n".join(ktap(programs) + dump(records, **kw)) + "\n"


def outcome(text: str) -> BootOutcome:
    return BootOutcome(text, 0, False, 10.0, ())


def test_a_whole_dump_is_the_kernel_log() -> None:
    log = kernlog.read(console(run_records()))
    assert log.from_dump and not log.problems
    assert log.lines[0].seq == 0 and log.lines[0].text == "Linux version 6.1.192"
    # Only the dump's lines are left to scan, at their console line numbers.
    text = log.scan_text.split("\n")
    assert text[log.lines[0].number - 1].endswith("Linux version 6.1.192")
    assert not any(t.startswith("#") for t in text)


def test_a_wrapped_log_is_an_infrastructure_problem_of_a_passing_cell() -> None:
    log = kernlog.read(console(run_records(), first=7))
    assert not log.from_dump
    assert log.problems == ("the kernel log wrapped: its oldest record is #7, records #0 to "
                            "#6 were overwritten (raise CONFIG_LOG_BUF_SHIFT)",)
    r = results.evaluate(CELL, outcome(console(run_records(), first=7)), EXPECTED, "tcg")
    assert r.status == Status.ERROR and "wrapped" in r.reason


def test_lost_and_truncated_records_are_problems() -> None:
    assert kernlog.read(console(run_records(), skip=3)).problems == (
        "1 kernel log record(s) lost while the log was read (first after #2)",)
    cut = console(run_records()).rsplit("\n", 3)[0]
    assert kernlog.read(cut).problems[0].startswith("the kernel log dump stopped before its end")
    assert kernlog.read(console(run_records(), rc=1)).problems[0].startswith("kmsg-dump failed")


def test_without_a_dump_the_consoles_kernel_lines_stand_in() -> None:
    text = "[    1.500000] ima_selftest: begin open_test/f.a\n# ok 1 f.a\n"
    log = kernlog.read(text)
    assert not log.from_dump and not log.problems
    assert kernlog.marks(log)[0] == kernlog.Mark(1, 1.5, "begin", "open_test/f.a", None)


def test_a_splat_fails_the_case_that_was_running_with_its_title() -> None:
    r = results.evaluate(CELL, outcome(console(run_records("fput_test/g.c"))), EXPECTED, "tcg")
    (sp,) = r.splats
    assert (sp.kind, sp.test) == ("lockdep-circular", "fput_test/g.c")
    assert sp.time is not None
    assert r.test("fput_test/g.c").status == Status.FAIL
    assert r.test("fput_test/g.c").reason == f"kernel splat: lockdep-circular: {sp.title}"
    assert r.test("open_test/f.b").status == Status.PASS
    assert r.status == Status.FAIL
    assert r.to_json()["splats"][0]["test"] == "fput_test/g.c"


def test_a_splat_between_cases_is_nobodys() -> None:
    recs = run_records()
    at = recs.index("ima_selftest: end open_test/f.a lockdep=on") + 1
    recs[at:at] = ["WARNING: CPU: 0 PID: 1 at fs/inode.c:10 iput+0x1/0x2"]
    r = results.evaluate(CELL, outcome(console(recs)), EXPECTED, "tcg")
    (sp,) = r.splats
    assert sp.test is None
    assert all(t.status == Status.PASS for t in r.tests)


def test_a_case_without_its_end_marker_runs_to_the_next_marker() -> None:
    recs = run_records()
    recs.remove("ima_selftest: end open_test/f.b lockdep=on")
    at = recs.index("ima_selftest: done open_test lockdep=on")
    recs[at:at] = ["BUG: kernel NULL pointer dereference, address: 0000000000000000"]
    r = results.evaluate(CELL, outcome(console(recs)), EXPECTED, "tcg")
    assert [sp.test for sp in r.splats] == ["open_test/f.b"]


def test_lockdep_lost_without_a_report_fails_the_cell() -> None:
    recs = run_records("fput_test/g.c", splat=None)
    r = results.evaluate(CELL, outcome(console(recs)), EXPECTED, "tcg")
    assert r.status == Status.FAIL
    assert r.reason == ("lockdep went off during fput_test/g.c "
                        "and no kernel report in the log says why: what ran after it was not "
                        "checked for lock-order bugs")


def test_lockdep_lost_by_a_report_asks_for_the_programs_after_it() -> None:
    recs = run_records("fput_test/g.c")
    r = results.evaluate(CELL, outcome(console(recs)), EXPECTED, "tcg")
    assert r.rerun == ("mmap_test",)
    assert not any("no kernel report" in p for p in r.problems)
    # Lost in the last program: nothing left to run again.
    recs = run_records("mmap_test/h.d")
    assert results.evaluate(CELL, outcome(console(recs)), EXPECTED, "tcg").rerun == ()


def test_lockdep_off_before_the_first_program_boots_them_all_again() -> None:
    """A report at boot may be a chance one: another boot runs every
    program; if it loses lockdep to the same report, the cell ends, with
    nothing passed off as checked by lockdep."""
    recs = [r.replace("lockdep=on", "lockdep=off") for r in run_records()]
    recs[1:1] = ["BUG: MAX_LOCKDEP_ENTRIES too low!",
                 "turning off the locking correctness validator."]
    first = results.Boot(outcome(console(recs)), ("open_test", "fput_test", "mmap_test"))
    r = results.evaluate_boots(JUDGED, [first])
    assert r.rerun == ("open_test", "fput_test", "mmap_test")
    assert [sp.kind for sp in r.splats] == ["lockdep-off"]
    assert r.splats[0].test is None
    again = results.Boot(outcome(console(recs)), first.programs, "console-2.log")
    r = results.evaluate_boots(JUDGED, [first, again])
    assert r.rerun == () and r.status == Status.FAIL
    assert any(p.startswith("open_test, fput_test, mmap_test ran without lockdep: boot 2 lost "
                            "it again to lockdep-off") for p in r.problems)


def test_lockdep_lost_at_boot_twice_ends_the_cell_whatever_the_reports() -> None:
    def at_boot(title: str, name: str) -> results.Boot:
        recs = [r.replace("lockdep=on", "lockdep=off") for r in run_records()]
        recs[1:1] = [title, "turning off the locking correctness validator."]
        return results.Boot(outcome(console(recs)), ("open_test", "fput_test", "mmap_test"),
                            name)
    first = at_boot("BUG: MAX_LOCKDEP_ENTRIES too low!", "console.log")
    again = at_boot("BUG: MAX_LOCKDEP_CHAINS too low!", "console-2.log")
    r = results.evaluate_boots(JUDGED, [first, again])
    assert r.rerun == () and r.status == Status.FAIL
    assert any("boot 2 lost it at boot too" in p for p in r.problems)


def test_a_known_report_at_boot_still_costs_the_cell_its_lockdep() -> None:
    """Recorded on 2026-12-04 (x86_64 6.1 debug kernel, a 0053 mutant
    cell): KASAN reported a wild access in rcu_is_watching() from an
    interrupt during identify_boot_cpu(), and lockdep was off for every
    program.  Known or not, the programs boot again."""
    log = (DATA / "real_x86_64_debug_kasan_at_boot.log").read_text()
    race = tuple(c for c in cases.expected_cases(REPO / "selftests") if c.suite == "race_test")
    sig = "kasan: wild-memory-access in rcu_is_watching"
    judging = results.VerdictContext(
        CELL, race, "tcg", known_splat=lambda s, at_boot: "at boot" if s == sig else None)
    r = results.evaluate_boots(judging, [results.Boot(outcome(log), ("race_test",))])
    assert [(sp.signature, sp.known, sp.test) for sp in r.splats] == [(sig, "at boot", None)]
    assert r.rerun == ("race_test",)


def test_a_splat_known_at_boot_is_unknown_during_a_test() -> None:
    """matrix.yaml's KASAN report known at boot (at_boot: true), judged
    by the debug variants' own entry: known before the first program's
    start mark, a failure of the cell and of its case once a test ran."""
    from harness import matrix
    log = (DATA / "real_x86_64_debug_kasan_at_boot.log").read_text()
    race = tuple(c for c in cases.expected_cases(REPO / "selftests") if c.suite == "race_test")
    m = matrix.load(REPO / "matrix.yaml")
    cell = Cell("x86_64", "patched-debug", "enforce", "custom", "sha1", "remove")
    variant = m.variants[cell.variant]

    def judged(console: str) -> results.CellResult:
        return results.evaluate_boots(results.VerdictContext(
            cell, race, "tcg",
            known_splat=lambda s, at_boot: variant.known_splat(cell, s, at_boot)),
            [results.Boot(outcome(console), ("race_test",))])

    at_boot = judged(log)
    assert [sp.known for sp in at_boot.splats] == [variant.known_splats[0].reason]
    assert not any(p.startswith("kernel splat") for p in at_boot.problems)
    # The program started (and its first case began) before the report:
    # the same report, now during race.writers_close_together.
    start = "kmsg 287,4 [    8.948732] ima_selftest: start race_test lockdep=off"
    begin = "kmsg 288,4 [    8.972144] ima_selftest: begin race_test/race.writers_close_together"
    assert start in log and begin in log
    during = judged(log.replace(start, start.replace("8.948732", "0.500000"))
                    .replace(begin, begin.replace("8.972144", "0.600000")))
    (sp,) = during.splats
    assert (sp.known, sp.test) == (None, "race_test/race.writers_close_together")
    assert during.status == Status.FAIL
    assert "kernel splat: kasan: BUG: KASAN: wild-memory-access in rcu_is_watching" in \
        during.problems
    assert during.test("race_test/race.writers_close_together").status == Status.FAIL


def test_continuation_boots_merge_into_one_cell() -> None:
    first = results.Boot(outcome(console(run_records("open_test/f.b"))),
                         ("open_test", "fput_test", "mmap_test"))
    again = [r for r in run_records("fput_test/g.c", OTHER) if "open_test" not in r]
    later = "\n".join(ktap({"fput_test": ["g.c"], "mmap_test": ["h.d"]}) + dump(again)) + "\n"
    second = results.Boot(outcome(later), ("fput_test", "mmap_test"), "console-2.log")
    r = results.evaluate_boots(JUDGED, [first, second])
    assert [(sp.test, sp.console) for sp in r.splats] == [("open_test/f.b", "console.log"),
                                                          ("fput_test/g.c", "console-2.log")]
    assert [t.status for t in r.tests] == [Status.PASS, Status.FAIL, Status.FAIL, Status.PASS]
    assert r.rerun == ("mmap_test",) and r.boots == 2 and r.duration_s == 20.0


def test_a_case_that_passed_without_markers_is_a_problem() -> None:
    recs = [r for r in run_records() if "begin open_test/f.a" not in r]
    r = results.evaluate(CELL, outcome(console(recs)), EXPECTED, "tcg")
    assert r.status == Status.FAIL
    assert r.reason.startswith("1 case(s) passed without an 'ima_selftest: begin' marker "
                               "in the kernel log (first: open_test/f.a)")


def test_disabling_lock_debugging_is_lockdep_off_unless_a_report_just_caused_it() -> None:
    from harness import splats
    alone = splats.scan("[    1.000000] Disabling lock debugging due to kernel taint\n")
    assert [(s.kind, s.title) for s in alone] == [
        ("lockdep-off", "Disabling lock debugging due to kernel taint")]


def test_the_runner_boots_again_for_the_programs_that_ran_without_lockdep(
        tmp_path, monkeypatch) -> None:
    from pathlib import Path

    from harness import matrix, qemu, runner
    from harness.runner import BuiltKernel

    repo = Path(__file__).parents[2]
    m = matrix.load(repo / "matrix.yaml", archs="x86_64", variants="patched", modes="enforce",
                    policies="custom", hashes="sha1", setattr="remove")
    (cell,) = m.cells
    every = ("open_test", "fput_test", "mmap_test")
    # Boot 1 loses lockdep in open_test, boot 2 in fput_test, boot 3 runs mmap_test.
    plan = {every: run_records("open_test/f.b"),
            every[1:]: [r for r in run_records("fput_test/g.c", OTHER) if "open_test" not in r],
            every[2:]: [r for r in run_records() if "mmap_test" in r]}
    asked = []

    def boot(req: qemu.BootRequest, console_log: Path) -> qemu.BootOutcome:
        progs = tuple(qemu.kernel_cmdline(req).split(f"{qemu.PROGRAMS_PARAM}=")[1].split(",")) \
            if qemu.PROGRAMS_PARAM in req.cmdline else every
        asked.append((progs, console_log.name))
        cases = {p: [c.name for c in EXPECTED if c.suite == p] for p in progs}
        text = "\n".join(ktap(cases) + dump(plan[progs])) + "\n"
        console_log.write_text(text)
        return qemu.BootOutcome(text, 0, False, 5.0, ())

    monkeypatch.setattr(qemu, "boot", boot)
    monkeypatch.setattr(qemu, "make_scratch_disk", lambda path, uuid: None)
    for name in ("bzImage", "config", "initrd"):
        (tmp_path / name).write_text(name)
    kernel = BuiltKernel(tmp_path / "bzImage", tmp_path / "config", "variant patched\n")
    r = runner._boot_cell(runner.CellBoot(m, cell, kernel, tmp_path / "initrd", "tcg",
                                          tmp_path / cell.id, tmp_path), EXPECTED)
    assert asked == [(every, "console.log"), (every[1:], "console-2.log"),
                     (every[2:], "console-3.log")]
    assert [(sp.test, sp.console) for sp in r.splats] == [("open_test/f.b", "console.log"),
                                                          ("fput_test/g.c", "console-2.log")]
    assert (r.boots, r.rerun, r.status) == (3, (), Status.FAIL)
    assert (tmp_path / cell.id / "qemu-cmdline-3.sh").is_file()

    # With one continuation boot, mmap_test stays uncovered, and says so.
    monkeypatch.setattr(results, "CONTINUATION_BOOTS", 1)
    asked.clear()
    r = runner._boot_cell(runner.CellBoot(m, cell, kernel, tmp_path / "initrd", "tcg",
                                          tmp_path / cell.id, tmp_path), EXPECTED)
    assert len(asked) == 2 and r.rerun == ()
    assert "mmap_test ran without lockdep in the last of the cell's 2 boots: not covered " \
        "(1 continuation boots at most)" in r.problems


def test_no_continuation_when_a_boot_loses_lockdep_to_a_report_already_seen() -> None:
    first = results.Boot(outcome(console(run_records("open_test/f.b"))),
                         ("open_test", "fput_test", "mmap_test"))
    again = [r for r in run_records("fput_test/g.c") if "open_test" not in r]
    later = "\n".join(ktap({"fput_test": ["g.c"], "mmap_test": ["h.d"]}) + dump(again)) + "\n"
    second = results.Boot(outcome(later), ("fput_test", "mmap_test"), "console-2.log")
    r = results.evaluate_boots(JUDGED, [first, second])
    assert r.rerun == ()
    assert any(p.startswith("mmap_test ran without lockdep: boot 2 lost it again to "
                            "lockdep-circular: possible circular locking dependency")
               for p in r.problems)


# ---- consoles recorded from real guests -------------------------------------

DATA = __import__("pathlib").Path(__file__).parent / "test_data"


def test_real_whole_cell_log_is_whole_and_marks_every_case() -> None:
    # x86_64 stock, enforce-custom, every program (2026-12-03, LOG_BUF_SHIFT=20).
    text = (DATA / "real_x86_64_stock_enforce_custom_whole_log.log").read_text()
    log = kernlog.read(text)
    assert log.from_dump and not log.problems
    assert (log.lines[0].seq, log.lines[-1].seq) == (0, 751)
    assert log.lines[0].text.startswith("Linux version 6.1.192")
    ms = kernlog.marks(log)
    begun = [m.name for m in ms if m.what == "begin"]
    assert len(begun) == len(set(begun)) == 145
    assert "sig_test/global.ima_keyring_refuses_self_signed_cert" in begun
    # A fixture without variants (its setup got no variant data), and one with.
    assert "overlay_test/overlay_lower.changed_behind_overlay" in begun
    assert "open_test/open_file.wrong_hash.read" in begun
    started = [m.name for m in ms if m.what == "start"]
    assert len(started) == 17 and started[0] == "open_test"
    assert all(m.lockdep == "on" for m in ms if m.lockdep)
    assert ms[-1] == kernlog.Mark(ms[-1].line, ms[-1].time, "finished", "", "on")
    cov = kernlog.coverage(ms)
    assert not cov.lost and len(cov.started_on) == 17


def _panicked_in_open_test() -> str:
    """A console whose kernel panicked in open_test's second case: fput_test
    and mmap_test never started."""
    recs = [r for r in run_records() if "fput_test" not in r and "mmap_test" not in r
            and "finished" not in r]
    recs.remove("ima_selftest: end open_test/f.b lockdep=on")
    recs.remove("ima_selftest: done open_test lockdep=on")
    recs += ["Kernel panic - not syncing: hung_task: blocked tasks"]
    return "\n".join(ktap({"open_test": ["f.a"]})[:-1]) + "\n" + "\n".join(
        f"[{i + 1:5d}.000000] {r}" for i, r in enumerate(recs)) + "\n"


def test_a_panic_asks_for_the_programs_that_never_started() -> None:
    text = _panicked_in_open_test()
    r = results.evaluate(CELL, BootOutcome(text, 0, False, 10.0, ()), EXPECTED, "tcg")
    assert r.status == Status.PANIC
    assert r.rerun == ("fput_test", "mmap_test")
    assert [(sp.kind, sp.test) for sp in r.splats] == [("panic", "open_test/f.b")]


def _recorded_boot(name: str, console_file: str = "console.log") -> results.Boot:
    """A recorded boot; the programs it ran are those its console reports."""
    from harness import ktap
    text = (DATA / name).read_text()
    return results.Boot(outcome(text), tuple(s.name for s in ktap.parse(text).suites),
                        console_file)


def _recorded_cases(boot: results.Boot) -> tuple[Case, ...]:
    from harness import ktap
    return tuple(Case(s.name, c.name) for s in ktap.parse(boot.outcome.console).suites
                 for c in s.cases)


def test_real_continuation_boot_reports_the_splat_after_the_first() -> None:
    # x86_64 enforce-custom with mutants 0011 and 0051 (2026-12-03): boot 1
    # lost lockdep in fput_test, boot 2 ran the programs after it and lost it
    # again in lockwalk_test (0011 once more, through remap_file_pages()).
    first = _recorded_boot("real_x86_64_0011_0051_boot1.log")
    second = _recorded_boot("real_x86_64_0011_0051_boot2.log", "console-2.log")
    assert first.programs[5:7] == ("fput_test", "xattr_test")
    assert second.programs == first.programs[6:]
    expected = _recorded_cases(first)
    alone = results.evaluate_boots(results.VerdictContext(CELL, expected, "tcg"), [first])
    assert alone.rerun == first.programs[6:]
    r = results.evaluate_boots(results.VerdictContext(CELL, expected, "tcg"), [first, second])
    assert [(sp.kind, sp.test, sp.console) for sp in r.splats] == [
        ("lockdep-circular", "fput_test/deferred_fput.munmap_last_reference", "console.log"),
        ("lockdep-circular", "lockwalk_test/lockwalk.remap_file_pages_exec", "console-2.log")]
    assert r.splats[0].title == ("possible circular locking dependency: acquiring "
                                 "&iint_mutex_key[depth] while holding &mm->mmap_lock")
    assert r.test("lockwalk_test/lockwalk.remap_file_pages_exec").reason.startswith(
        "kernel splat: lockdep-circular: possible circular locking dependency")
    # xattr_test ran with lockdep off in boot 1: its cases come from boot 2.
    assert r.test("xattr_test/" + next(c.name for c in expected
                                       if c.suite == "xattr_test")).status == Status.PASS
    assert (r.boots, r.rerun, r.status) == (2, (), Status.FAIL)
    assert not any("no kernel report" in p or "wrapped" in p for p in r.problems)


def _failing(text: str, case: str, prog: str, why: str) -> str:
    """text with case (of prog) failed by its checks: its FAIL line, not ok."""
    assert f"# ok 1 {case}\n" in text
    text = text.replace(f"# ok 1 {case}\n", f"# # {prog}.c:10:{case}:Expected 0 (0) == "
                                             f"{why} (-1)\n# not ok 1 {case}\n")
    return text.replace(f"ok 2 selftests: ima_appraise: {prog}\n",
                        f"not ok 2 selftests: ima_appraise: {prog} # exit=1\n")


def _fput_fails_then_passes(known=lambda name: None) -> results.CellResult:  # noqa: ANN001
    """Boot 1 loses lockdep in open_test; fput_test/g.c, run after it,
    fails by its own checks; boot 2 runs fput_test and mmap_test again and
    g.c passes."""
    first = results.Boot(outcome(_failing(console(run_records("open_test/f.b")), "g.c",
                                          "fput_test", "check()")),
                         ("open_test", "fput_test", "mmap_test"))
    again = [r for r in run_records() if "open_test" not in r]
    later = "\n".join(ktap({"fput_test": ["g.c"], "mmap_test": ["h.d"]}) + dump(again)) + "\n"
    second = results.Boot(outcome(later), ("fput_test", "mmap_test"), "console-2.log")
    return results.evaluate_boots(dataclasses.replace(JUDGED, known=known), [first, second])


def test_a_failure_by_its_checks_in_an_earlier_boot_stands() -> None:
    """A case that failed in boot 1 (with lockdep off, but by its own
    checks: a real result) and passed when boot 2 ran its program again
    is a failure, and says where it failed."""
    r = _fput_fails_then_passes()
    t = r.test("fput_test/g.c")
    assert t.status == Status.FAIL
    assert t.reason == "failed in boot 1 (console.log); boot 2 (console-2.log) ran it again: pass"
    assert t.log == ("fput_test.c:10:g.c:Expected 0 (0) == check() (-1)",)
    assert r.test("mmap_test/h.d").status == Status.PASS
    assert r.status == Status.FAIL and r.boots == 2
    # A known failure, racy or not, failed by its checks once: xfail.
    for why in ("bug", RacyReason("race")):
        r = _fput_fails_then_passes(lambda name: why if name == "fput_test/g.c" else None)
        t = r.test("fput_test/g.c")
        assert t.status == Status.XFAIL
        assert t.reason.startswith(f"failed in boot 1 (console.log): known failure: {why}; "
                                   "boot 2 (console-2.log) ran it again: ")
        # fput_test's exit=1 is its xfail's: only boot 1's splat is a problem.
        assert [p.split(":")[0] for p in r.problems] == ["kernel splat"]


def test_a_case_without_a_result_in_an_earlier_boot_takes_the_later_ones() -> None:
    """Boot 1 panicked in open_test: fput_test never reported; boot 2's
    pass is its result."""
    first = results.Boot(BootOutcome(_panicked_in_open_test(), 0, False, 10.0, ()),
                         ("open_test", "fput_test", "mmap_test"))
    again = [r for r in run_records() if "open_test" not in r]
    later = "\n".join(ktap({"fput_test": ["g.c"], "mmap_test": ["h.d"]}) + dump(again)) + "\n"
    second = results.Boot(outcome(later), ("fput_test", "mmap_test"), "console-2.log")
    alone = results.evaluate_boots(JUDGED, [first])
    assert alone.test("fput_test/g.c").reason.startswith(results.NO_RESULT_PREFIX)
    r = results.evaluate_boots(JUDGED, [first, second])
    assert (r.test("fput_test/g.c").status, r.test("fput_test/g.c").reason) == (Status.PASS, "")
