from __future__ import annotations

from pathlib import Path

import pytest

from harness import ktap
from harness.ktap import CaseResult, GuestRun, SuiteResult

DATA = Path(__file__).parent / "test_data"


def parse(name: str) -> GuestRun:
    return ktap.parse((DATA / name).read_text())


def test_no_begin_marker() -> None:
    console = "[    1.0] Run /init as init process\nok 1 selftests: a: b\n"
    assert ktap.parse(console) == GuestRun(began=False, ended=False, exit_code=None,
                                           suites=())
    assert ktap.extract_section(console) == []


def test_all_pass() -> None:
    run = parse("ktap_pass.log")
    assert (run.began, run.ended, run.exit_code) == (True, True, 0)
    assert run.suites == (
        SuiteResult("open_test", "pass", "", 2, (
            CaseResult("appraise.missing_hash.read", "pass"),
            CaseResult("appraise.correct_hash.read", "pass"))),
        SuiteResult("exec_test", "pass", "", 1, (
            CaseResult("appraise.signed.exec", "pass"),)),
    )


def test_failing_case_keeps_its_log() -> None:
    run = parse("ktap_results.log")
    open_test = run.suites[0]
    assert (open_test.name, open_test.status, open_test.reason) == ("open_test", "fail", "exit=1")
    assert open_test.planned == 6
    assert run.case("open_test", "appraise.wrong_hash.read") == CaseResult(
        "appraise.wrong_hash.read", "fail", "",
        ("open_test.c:88:read:Expected 13 (13) == test_open(...) (0)",
         "read: Test failed at step #4"))
    assert run.exit_code == 2


def test_skipped_cases() -> None:
    run = parse("ktap_results.log")
    assert run.case("open_test", "appraise.correct_hash.read") == CaseResult(
        "appraise.correct_hash.read", "skip", "not booted by the harness",
        ("     SKIP      not booted by the harness",))
    # Linux 6.1's kselftest_harness.h leaves out the name: "ok 4 # SKIP ...".
    no_xattr = run.case("open_test", "appraise.no_xattr.read")
    assert no_xattr is not None
    assert (no_xattr.status, no_xattr.reason) == ("skip", "no security.ima support on tmpfs")


def test_expected_failures() -> None:
    run = parse("ktap_results.log")
    assert run.case("open_test", "appraise.fix_mode.read") == CaseResult(
        "appraise.fix_mode.read", "xfail", "fix mode rewrites the hash")
    assert run.case("open_test", "appraise.todo.read") == CaseResult(
        "appraise.todo.read", "xfail", "not written yet")
    assert run.case("keys_test", "keys.measured") == CaseResult("keys.measured", "xpass")


def test_suite_timeout_and_skip() -> None:
    suites = {s.name: s for s in parse("ktap_results.log").suites}
    assert list(suites) == ["open_test", "exec_test", "mmap_test", "evm_test", "keys_test"]
    assert suites["mmap_test"] == SuiteResult("mmap_test", "timeout", "45 seconds", 2, ())
    # runner.sh's "ok 4 ... # SKIP" has no reason: the binary's plan has one.
    assert suites["evm_test"] == SuiteResult(
        "evm_test", "skip", "EVM is not enabled in this kernel", 0, ())


def test_crash_mid_suite() -> None:
    run = parse("ktap_crash_midsuite.log")
    assert (run.began, run.ended, run.exit_code) == (True, False, None)
    assert [s.status for s in run.suites] == ["pass", "fail"]
    exec_test = run.suites[1]
    assert exec_test == SuiteResult(
        "exec_test", "fail", ktap.NO_RESULT, 3,
        (CaseResult("appraise.signed.exec", "pass"),))
    assert ktap.NO_RESULT == "no result line (guest crashed or was killed)"


def test_interleaved_kernel_messages() -> None:
    run = parse("interleaved.log")
    assert (run.ended, run.exit_code) == (True, 1)
    assert [(s.name, s.status, s.planned) for s in run.suites] == [
        ("open_test", "fail", 3), ("exec_test", "pass", 1)]
    # An audit message split "ok 1 appraise.missing_hash.read" in two.
    assert [(c.name, c.status) for c in run.suites[0].cases] == [
        ("appraise.missing_hash.read", "pass"),
        ("appraise.wrong_hash.read", "fail"),
        ("appraise.correct_hash.read", "skip")]
    # A kernel BUG split a diagnostic line.
    assert run.case("open_test", "appraise.wrong_hash.read").log[0] == (
        "open_test.c:88:read:Expected 13 (13) == test_open(...) (0)")


@pytest.mark.parametrize("name", ["ktap_pass.log", "ktap_results.log",
                                  "ktap_crash_midsuite.log", "interleaved.log"])
def test_crlf(name: str) -> None:
    console = (DATA / name).read_text()
    assert ktap.parse(console.replace("\n", "\r\n")) == ktap.parse(console)
    assert ktap.parse(console.replace("\n", "\r\r\n")) == ktap.parse(console)


def test_console_lines() -> None:
    console = ("\r[    1.000000] a kernel line\r\n"
               "# ok 1 na[    2.000000][    T1] audit: type=1800\r\n"
               "[    2.000001] audit: type=1800\n"
               "me\n"
               "trailing  \n"
               "cut off by a cra[    3.000000] Kernel panic - not syncing: x")
    assert ktap.console_lines(console) == ["# ok 1 name", "trailing", "cut off by a cra"]


def test_extract_section() -> None:
    console = ("before\n<<< ima-selftest begin >>>\r\nTAP version 13\n"
               "[    1.000000] audit: x\n1..0\n<<< ima-selftest end rc=0 >>>\nafter\n")
    assert ktap.extract_section(console) == ["TAP version 13", "1..0"]
    assert ktap.extract_section(console.replace("<<< ima-selftest end rc=0 >>>", "")) == [
        "TAP version 13", "1..0", "", "after", ""]


def test_markers_only() -> None:
    console = "<<< ima-selftest begin >>>\n<<< ima-selftest end rc=-1 >>>\n"
    assert ktap.parse(console) == GuestRun(began=True, ended=True, exit_code=-1, suites=())
    # The marker must be alone on its line.
    assert not ktap.parse("echo <<< ima-selftest begin >>>\n").began


def test_suite_without_header_or_output() -> None:
    console = """<<< ima-selftest begin >>>
TAP version 13
1..2
# selftests: ima_appraise: open_test
# Warning: file open_test is missing!
not ok 1 selftests: ima_appraise: open_test
ok 2 selftests: ima_appraise: exec_test # SKIP
<<< ima-selftest end rc=1 >>>
"""
    assert ktap.parse(console).suites == (
        SuiteResult("open_test", "fail", "", None, ()),
        SuiteResult("exec_test", "skip", "", None, ()),
    )


def test_plain_ksft_output_and_deeper_nesting() -> None:
    # No RUN lines (kselftest.h without the harness): a case's log is what
    # was printed since the previous result.  Deeper TAP stays in the log.
    console = """<<< ima-selftest begin >>>
# selftests: ima_appraise: keys_test.sh
# TAP version 13
# 1..2
# # loading the keyring
# ok 1 keys.load
# plain text from a shell script
# # TAP version 13
# # ok 1 nested
# not ok 2 keys.measure # error measurement list unreadable
ok 1 selftests: ima_appraise: keys_test.sh
<<< ima-selftest end rc=0 >>>
"""
    cases = ktap.parse(console).suites[0].cases
    assert cases == (
        CaseResult("keys.load", "pass", "", ("loading the keyring",)),
        CaseResult("keys.measure", "fail", "error measurement list unreadable",
                   ("plain text from a shell script", "TAP version 13", "ok 1 nested")),
    )


def test_case_lookup() -> None:
    run = parse("ktap_pass.log")
    assert run.case("exec_test", "appraise.signed.exec") is not None
    assert run.case("exec_test", "appraise.missing_hash.read") is None
    assert run.case("nonexistent", "appraise.signed.exec") is None


def test_real_pass() -> None:
    run = parse("real_aarch64_fix_custom_pass.log")
    assert (run.began, run.ended, run.exit_code) == (True, True, 0)
    assert [(s.name, s.status, s.planned, len(s.cases)) for s in run.suites] == [
        ("open_test", "pass", 6, 6), ("exec_test", "pass", 3, 3), ("mmap_test", "pass", 6, 6)]
    assert all(c == CaseResult(c.name, "pass") for s in run.suites for c in s.cases)
    assert run.case("mmap_test", "mmap_file.wrong_hash.prot_exec") is not None


def test_real_nameless_skips() -> None:
    # Booted without the harness's command line: 6.1 prints "ok 1 # SKIP ...".
    run = parse("real_x86_64_no_marker.log")
    assert [(s.name, s.status) for s in run.suites] == [
        ("open_test", "pass"), ("exec_test", "pass"), ("mmap_test", "pass")]
    skipped = run.case("open_test", "open_file.missing_hash.read")
    assert skipped is not None and skipped.status == "skip"
    assert skipped.reason.startswith("not booted by the IMA selftest harness")
    assert {c.status for s in run.suites for c in s.cases} == {"skip"}
