from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness import mutants as regressions, results, runner
from harness.__main__ import main
from harness.tests.recorded import RECORDED_CASES
from harness.matrix import Cell
from harness.qemu import BootOutcome

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "test_data"
EXPECTED = RECORDED_CASES


def evaluate(log: str, cell: Cell, timed_out: bool = False) -> results.CellResult:
    outcome = BootOutcome((DATA / log).read_text(), None if timed_out else 0, timed_out, 4.0, ())
    return results.evaluate(cell, outcome, EXPECTED, "tcg")


MISSING, WRONG = "exec_test/exec_file.missing_hash.execve", "exec_test/exec_file.wrong_hash.execve"


def test_caught_by_named_tests() -> None:
    cell = evaluate("real_x86_64_skip_exec_enforce_custom_fail.log",
                    Cell("x86_64", "skip-exec-appraisal", "enforce", "custom"))
    v = regressions.judge("skip-exec-appraisal", (MISSING, WRONG), [cell])
    assert v.caught and v.met == (MISSING, WRONG)
    assert v.evidence[0] == (f"{MISSING}: failed in "
                             "x86_64-skip-exec-appraisal-enforce-custom-sha1-keep")


def test_each_named_case_must_fail_itself() -> None:
    # Judged per name: a sibling's failure does not meet it.
    cell = evaluate("real_x86_64_skip_exec_enforce_custom_fail.log",
                    Cell("x86_64", "skip-exec-appraisal", "enforce", "custom"))
    correct = "exec_test/exec_file.correct_hash.execve"
    v = regressions.judge("m", (MISSING, correct), [cell])
    assert not v.caught and v.met == (MISSING,)
    assert v.evidence[1] == f"{correct}: NOTHING FAILED"


@pytest.mark.parametrize("log, why", [
    # what a crash, a kernel splat alone, or a case's missing result leaves
    (("exec_test.c:93:execve:Expected 13 == -1", "execve: Test terminated by timeout"),
     "execve: Test terminated by timeout"),
    ((), "kernel splat: lockdep-circular: possible circular locking dependency detected"),
    (("open: Test terminated by assertion",), "open: Test terminated by assertion, with no "
     "failed ASSERT/EXPECT before it (an abort() of its own: glibc's heap checks, assert())"),
])
def test_a_case_that_failed_but_not_by_its_checks_proves_nothing(log: tuple[str, ...],
                                                                 why: str) -> None:
    cell = evaluate("real_x86_64_skip_exec_enforce_custom_fail.log",
                    Cell("x86_64", "m", "enforce", "custom"))
    reason = why if why.startswith("kernel splat") else ""
    tests = tuple(dataclasses.replace(t, log=log, reason=reason) if t.name == MISSING else t
                  for t in cell.tests)
    v = regressions.judge("m", (MISSING,), [dataclasses.replace(cell, tests=tests)])
    assert not v.caught and v.met == ()
    assert v.evidence == (f"{MISSING}: NOT BY ITS CHECKS: in x86_64-m-enforce-custom-sha1-keep: "
                          f"{why}",)


def test_not_caught_when_a_pattern_matches_nothing() -> None:
    cell = evaluate("real_aarch64_fix_custom_pass.log", Cell("aarch64", "x", "fix", "custom"))
    v = regressions.judge("x", ("open_test/open_file.wrong_hash.read",), [cell])
    assert not v.caught
    assert v.evidence == ("open_test/open_file.wrong_hash.read: NOTHING FAILED",)
    assert regressions.report([v]).endswith("mutants: 0 of 1 caught")


def test_the_case_table_says_which_case_failed_under_which_mutant() -> None:
    cell = evaluate("real_x86_64_skip_exec_enforce_custom_fail.log",
                    Cell("x86_64", "m0001-x", "enforce", "custom"))
    correct = "exec_test/exec_file.correct_hash.execve"
    mus = [regressions.Mutant("m0001-x", REPO / "1.patch", "x", (MISSING, correct)),
           regressions.Mutant("m0002-y", REPO / "2.patch", "y", (MISSING, "splat:bug"))]
    verdicts = [regressions.judge(mu.variant, mu.caught_by, [cell]) for mu in mus[:1]]
    verdicts.append(regressions.judge("m0002-y", mus[1].caught_by, []))
    table = regressions.case_table([MISSING, WRONG, correct], mus, verdicts).splitlines()
    assert table == [f"{MISSING}  m0001 failed, m0002 NOT",
                     f"{WRONG:<{len(MISSING)}}  NO MUTANT NAMES IT",
                     f"{correct:<{len(MISSING)}}  m0001 NOT",
                     f"cases: 1 of 3 failed by their own checks under a mutant that names "
                     f"them; not: {WRONG}, {correct}"]
    # Some mutants only (MUTANTS=): the cases they name.
    assert regressions.case_table([MISSING, WRONG, correct], mus[:1], verdicts[:1],
                                  every=False).splitlines()[:2] == \
        [f"{MISSING}  m0001 failed", f"{correct:<{len(MISSING)}}  m0001 NOT"]


def test_a_guest_hung_at_boot_leaves_its_mutant_not_tested() -> None:
    outcome = BootOutcome((DATA / "real_x86_64_debug_hung_at_boot.log").read_text(), None, True,
                          480.0, (), not_ready=True)
    cell = results.evaluate(Cell("x86_64", "m", "fix", "builtin"), outcome, EXPECTED, "tcg")
    v = regressions.judge("m", ("open_test/open_file.wrong_hash.read", "splat:bug"), [cell])
    assert not v.caught
    assert v.evidence == ("not tested: guest hung at boot: its init did not begin within 480s "
                          "(last console line: [   86.224821] random: crng init done)",)
    # Whatever problem its reason names first (here a guest clock ahead of
    # the host's), the hung boot is what leaves it not tested.
    clock = "the guest's clock ran ahead of the host's"
    ahead = dataclasses.replace(cell, reason=clock, problems=(clock, *cell.problems))
    again = regressions.judge("m", ("open_test/open_file.wrong_hash.read", "splat:bug"), [ahead])
    assert (again.caught, again.evidence) == (False, v.evidence)


def test_caught_by_a_splat() -> None:
    cell = evaluate("real_x86_64_lockdep_deadlock_killed.log",
                    Cell("x86_64", "lockdep-iint-inversion", "enforce", "builtin"), timed_out=True)
    assert regressions.judge("l", ("splat:lockdep-circular",), [cell]).caught


def test_a_kernel_that_did_not_build_proves_nothing() -> None:
    cell = results.error_cell(Cell("x86_64", "v", "fix", "custom"), "0001.patch does not apply\nhunk")
    v = regressions.judge("v", ("open_test/open_file.wrong_hash.read",), [cell])
    assert not v.caught and v.evidence == ("not tested: 0001.patch does not apply",)


def test_trailers(tmp_path: Path) -> None:
    from harness.errors import ConfigError
    import pytest
    patch = tmp_path / "0012-REGRESSION-ima-accept-a-wrong-hash.patch"
    patch.write_text("From x\nSubject: [PATCH] REGRESSION\n\nprose\n\n"
                     "Mutant: a wrong hash is accepted\n"
                     "Caught-by: open_test/open_file.wrong_hash.read\n"
                     "Caught-by: splat:lockdep-circular\n"
                     "Exposed-in: enforce cells\nSigned-off-by: x\n---\n"
                     "+Caught-by: not/this\n")
    mu = regressions.parse(patch)
    assert mu == regressions.Mutant("m0012-ima-accept-a-wrong-hash", patch,
                                    "a wrong hash is accepted",
                                    ("open_test/open_file.wrong_hash.read",
                                     "splat:lockdep-circular"),
                                    "enforce cells")
    patch.write_text("Subject: x\n\nno trailers\n---\n")
    with pytest.raises(ConfigError) as e:
        regressions.parse(patch)
    assert str(e.value).startswith(f"{patch}: no 'Caught-by: <program>/<case>' trailer")
    # A wildcard is met by any one case it matches: each case by its name.
    patch.write_text("Subject: x\n\nCaught-by: open_test/open_file.*.read\n---\n")
    with pytest.raises(ConfigError) as e:
        regressions.parse(patch)
    assert str(e.value).startswith(f"{patch}: 'Caught-by: open_test/open_file.*.read': name one "
                                   "case exactly (<program>/<case>, one trailer each)")


def test_shipped_mutants_parse() -> None:
    found = regressions.discover(REPO / "kernel-patches" / "regressions")
    assert len({m.variant for m in found}) == len(found)


def test_a_version_directory_names_its_mutants_in_a_series(tmp_path: Path) -> None:
    body = "Subject: x\n\nCaught-by: open_test/open_file.wrong_hash.read\n---\n"
    (tmp_path / "0001-REGRESSION-ima-a.patch").write_text(body)
    (tmp_path / "0002-REGRESSION-ima-b.patch").write_text(body)
    (tmp_path / "6.12").mkdir()
    (tmp_path / "6.12" / "0002-REGRESSION-ima-b.patch").write_text(body)
    (tmp_path / "6.12" / "series").write_text(
        "# 0001 applies as it is, 0002 is ported\n../0001-REGRESSION-ima-a.patch\n"
        "0002-REGRESSION-ima-b.patch\n")
    found = regressions.discover(tmp_path / "6.12", "6.12")
    assert [(m.variant, m.patch) for m in found] == [
        ("m0001-ima-a-6.12", tmp_path / "6.12" / "../0001-REGRESSION-ima-a.patch"),
        ("m0002-ima-b-6.12", tmp_path / "6.12" / "0002-REGRESSION-ima-b.patch")]
    # Without a series, every patch of the directory; the default version
    # keeps the names it always had.
    assert [m.variant for m in regressions.discover(tmp_path)] == ["m0001-ima-a", "m0002-ima-b"]


def test_a_mutant_keeps_its_base_kernel_and_known_failures() -> None:
    from harness import matrix
    m = matrix.load(REPO / "matrix.yaml")
    for version, own in m.mutants["versions"].items():
        base = m.variants[own["base"]]
        for mu in regressions.discover(own["patches"], version):
            v = regressions.as_variant(mu, base)
            assert (v.version, v.series, v.known_failures) == \
                (version, base.series, base.known_failures)
            assert v.patches[-1] == mu.patch


def test_a_mutant_keeps_its_base_kernels_known_splats() -> None:
    # A base kernel known to splat in enforce cells: the same splat on the
    # mutant is the base's, not the mutant's, and cannot catch it.
    from harness.matrix import KnownSplat, Variant
    log = "real_x86_64_lockdep_deadlock_killed.log"
    cell = Cell("x86_64", "m0099-ima-x", "enforce", "builtin")
    [splat] = evaluate(log, cell, timed_out=True).splats
    reason = "the base kernel's own report"
    base = Variant("patched", REPO / "kernel-patches" / "series", known_splats=(
        KnownSplat(splat.signature, (("mode", ("enforce",)),), reason),))
    mu = regressions.Mutant("m0099-ima-x", REPO / "0099.patch", "x",
                            ("splat:lockdep-circular",), "")
    v = regressions.as_variant(mu, base)
    assert v.known_splats == base.known_splats
    assert v.known_splat(cell, splat.signature) == reason
    assert v.known_splat(Cell("x86_64", v.name, "fix", "custom"), splat.signature) is None
    outcome = BootOutcome((DATA / log).read_text(), None, True, 4.0, ())
    seen = results.evaluate(cell, outcome, EXPECTED, "tcg",
                            known_splat=lambda sig, at_boot: v.known_splat(cell, sig, at_boot))
    assert [s.known for s in seen.splats] == [reason]
    verdict = regressions.judge(v.name, v.catches, [seen])
    assert (verdict.caught, verdict.evidence) == (False, ("splat:lockdep-circular: NOTHING FAILED",))


def every_mutant() -> dict[str, list[regressions.Mutant]]:
    from harness import matrix
    m = matrix.load(REPO / "matrix.yaml")
    return {v: regressions.discover(own["patches"], v) for v, own in m.mutants["versions"].items()}


def case_ids() -> list[str]:
    from harness.cases import expected_cases
    return [c.id for c in expected_cases(REPO / "selftests")]


def uncaught_cases(version: str) -> list[str]:
    return regressions.unnamed(version, case_ids(), every_mutant())


@pytest.mark.parametrize("version", ["6.1", "6.12", "7.2"])
def test_every_version_has_a_mutant_for_every_case(version: str) -> None:
    # A test that cannot fail is a defect: each case must be named, by its
    # exact name, by a Caught-by: of that version's known-bad kernels
    # (`make mutants VERSION=` checks it for real and prints the table),
    # but the cases of a newer kernel's behaviour (AT_EXECVE_CHECK, Since:
    # 6.14), which an older one skips.
    assert uncaught_cases(version) == []


def test_every_case_a_mutant_names_exists() -> None:
    # A misspelt Caught-by: would fail `make mutants` only after the builds.
    ids = set(case_ids())
    for mus in every_mutant().values():
        for mu in mus:
            assert [p for p in mu.caught_by if not p.startswith("splat:") and p not in ids] \
                == [], mu.patch


def test_a_mutant_since_a_version_runs_on_it_and_later() -> None:
    mu = regressions.Mutant("m0063-x-7.2", REPO / "0063.patch", "x", ("a/b",), since="6.14")
    assert [mu.runs_on(v) for v in ("6.1", "6.12", "6.14", "7.2", "10.0")] == \
        [False, False, True, True, True]
    assert regressions.Mutant("m1", REPO / "1.patch", "x", ("a/b",)).runs_on("6.1")
    exec_check = regressions.parse(
        REPO / "kernel-patches/regressions/7.2/0063-REGRESSION-ima-execve-check-is-never-appraised.patch",
        "7.2")
    assert exec_check.since == "6.14"


@pytest.mark.parametrize("version", ["6.12", "7.2"])
def test_a_port_is_caught_by_what_its_original_is(version: str) -> None:
    # A port drifts when the 6.1 mutant gains a Caught-by: (a new test)
    # and its port does not.
    regs = REPO / "kernel-patches" / "regressions"
    # A mutant with Since: is the version's own: it has no original.
    ports = [p for p in sorted((regs / version).glob("*.patch"))
             if not regressions.parse(p).since]
    assert ports
    for port in ports:
        mine, original = regressions.parse(port), regressions.parse(regs / port.name)
        assert (port.name, mine.caught_by, mine.flavor) == \
            (port.name, original.caught_by, original.flavor)


@pytest.mark.parametrize("version", ["6.12", "7.2"])
def test_every_version_has_every_mutant_of_6_1(version: str) -> None:
    # A version's series names each 6.1 mutant once, as itself or as a
    # port of the same name (the variant is named after the file); a
    # mutant with Since: is the version's own.
    regs = REPO / "kernel-patches" / "regressions"
    entries = list(regressions.read_series(regs / version / "series"))
    for p in entries:
        assert p.is_file(), p
    named = [p.name for p in entries if not regressions.parse(p).since]
    assert sorted(named) == sorted(p.name for p in regs.glob("*.patch"))


def test_a_debug_mutant_is_built_on_the_debug_variant_of_its_base(tmp_path: Path) -> None:
    import pytest
    from harness.errors import ConfigError
    from harness.matrix import load
    patch = tmp_path / "0060-REGRESSION-ima-a-race.patch"
    patch.write_text("Subject: x\n\nMutant: a race\nCaught-by: race_test/race.writers_close_at_once\nFlavor: debug\n---\n")
    mu = regressions.parse(patch)
    assert (mu.flavor, mu.caught_by) == ("debug", ("race_test/race.writers_close_at_once",))
    m = load(REPO / "matrix.yaml")
    base = regressions.flavored_base(mu, m.variants["patched"], m.variants)
    assert base.name == "patched-debug"
    variant = regressions.as_variant(mu, base)
    assert (variant.flavor, variant.series) == ("debug", m.variants["patched"].series)
    plain = regressions.parse(REPO / "kernel-patches" / "regressions" / sorted(
        p.name for p in (REPO / "kernel-patches" / "regressions").glob("*.patch"))[0])
    assert regressions.flavored_base(plain, m.variants["patched"], m.variants).name == "patched"
    no_debug = {k: v for k, v in m.variants.items() if v.flavor != "debug"}
    with pytest.raises(ConfigError) as e:
        regressions.flavored_base(mu, m.variants["patched"], no_debug)
    assert str(e.value) == (
        "0060-REGRESSION-ima-a-race.patch: Flavor: debug, but matrix.yaml has no debug variant "
        "of 'patched'; add one (patched-debug: {of: patched, flavor: debug})")
    patch.write_text("Subject: x\n\nCaught-by: race_test/race.writers_close_at_once\nFlavor: kasan\n---\n")
    with pytest.raises(ConfigError) as e:
        regressions.parse(patch)
    assert "'Flavor: kasan' is no kernel flavor; expected one of plain, debug" in str(e.value)


def test_repeated_runs_count_the_catches_and_show_the_first_miss() -> None:
    caught = regressions.Verdict("racy", True, ("race_test/*: race_test/x in c1",))
    missed = regressions.Verdict("racy", False, ("race_test/*: NOTHING FAILED",))
    steady = regressions.Verdict("steady", True, ("splat:*: splat:kasan in c2",))
    text = regressions.tally([[caught, steady], [missed, steady], [caught, steady]],
                             {"racy": "breaks the last writer"})
    assert text.splitlines() == [
        "racy                       caught in 2 of 3 runs",
        "    (breaks the last writer)",
        "    run 2: race_test/*: NOTHING FAILED",
        "steady                     caught in 3 of 3 runs",
        "    run 1: splat:*: splat:kasan in c2",
        "mutants: 1 of 2 caught in all 3 runs",
    ]


@pytest.mark.parametrize("argv, message", [
    (["--programs=securityfs_test", "0013"],
     "PROGRAMS=securityfs_test: m0013-ima-last-writer-never-updates is caught by "),
    (["--programs=race_test,no_such_test", "0015"],
     "PROGRAMS: no test program 'no_such_test' in selftests/ima_appraise; there are: "),
    (["--repeat=0"], "--repeat=0: boot the cells at least once (REPEAT=1)"),
    (["9999"], "no mutant '9999' in "),
])
def test_make_mutants_refuses_bad_input_before_building(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        argv: list[str], message: str) -> None:
    monkeypatch.setattr(runner, "run", lambda *a, **k: pytest.fail("it went on to build"))
    assert main(["mutants", "--build-dir", str(tmp_path), *argv]) == 2
    assert capsys.readouterr().err.startswith(f"error: {message}")
    assert not any(tmp_path.iterdir())


def test_with_programs_only_their_trailers_are_judged() -> None:
    cell = evaluate("real_x86_64_skip_exec_enforce_custom_fail.log",
                    Cell("x86_64", "skip-exec-appraisal", "enforce", "custom"))
    opened = "open_test/open_file.wrong_hash.read"
    v = regressions.judge("m", (MISSING, opened), [cell],
                          ("exec_test",))
    assert v.caught
    assert v.evidence[1] == f"{opened}: not booted (PROGRAMS=)"
    assert not regressions.judge("m", (MISSING, opened),
                                 [cell]).caught


def test_the_history_table_names_real_cases_and_mutants() -> None:
    # doc/history.md: each upstream fix, the cases its revert fails and
    # the mutant that reverts it.  A row must name cases of the suite and
    # mutants that exist, or say GAP (or n/a) where there is none.
    import re
    ids = set(case_ids())
    patches = {p.name[:4] for p in (REPO / "kernel-patches" / "regressions").glob("*.patch")}
    rows = [line.split("|") for line in (REPO / "doc" / "history.md").read_text().splitlines()
            if re.match(r"^\| \d+ \|", line)]
    assert len(rows) >= 30
    for cols in rows:
        cases, mutant = cols[7], cols[8]
        named = re.findall(r"\b([a-z_]+_test/[\w.]+\w)", cases)
        assert [c for c in named if c not in ids] == [], cols[1]
        numbers = re.findall(r"\b(00\d\d)\b", mutant)
        assert numbers or "GAP" in mutant or "n/a" in mutant, cols[1]
        assert [n for n in numbers if n not in patches] == [], cols[1]
    closed = sum(bool(re.search(r"\b00\d\d\b", cols[8])) and "GAP" not in cols[8]
                 for cols in rows)
    assert closed >= 22
