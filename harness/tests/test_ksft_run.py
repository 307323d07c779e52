"""initramfs/ksft-run.c, the guest's runner of the selftest programs, built
for the host and run beside kselftest's own runner.sh (6.1's, recorded in
test_data/kselftest-6.1 with its prefix.pl) on the same dummy tests: what
both print must be the same, byte for byte, and what it is is spelt out
below too, so that two runners broken alike do not pass.  runner.sh runs
under the host's sh, GNU coreutils' /usr/bin/timeout and perl, as lib.mk's
run_tests would run it.  (User-space programs on shell scripts: nothing here
touches IMA or the host's kernel state.)

All the runs start at once in one module fixture, the tests read their
results: the timeouts (settings: 1 s) cost their seconds only once."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.tests.test_timeout import _kill, _running

REPO = Path(__file__).resolve().parents[2]
RECORDED = Path(__file__).resolve().parent / "test_data" / "kselftest-6.1"
SRC = REPO / "initramfs" / "ksft-run.c"


def _build(out: Path, *defines: str) -> subprocess.Popen:
    return subprocess.Popen(["gcc", "-O2", "-Wall", "-Werror", *defines, "-o", str(out),
                             str(SRC)])


@pytest.fixture(scope="module")
def ksft_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """ksft-run as the guest's, and one whose SIGKILL follows the timeout's
    SIGTERM after 1 s instead of KILL_GRACE's 10."""
    tmp = tmp_path_factory.mktemp("ksft-run")
    builds = {tmp / "ksft-run": _build(tmp / "ksft-run"),
              tmp / "ksft-run-grace1": _build(tmp / "ksft-run-grace1", "-DKILL_GRACE=1")}
    for out, proc in builds.items():
        assert proc.wait(timeout=120) == 0, out
    return str(tmp / "ksft-run"), str(tmp / "ksft-run-grace1")


# (name, mode, script): #!/bin/sh is added; mode 0o644 is "not executable".
SCRIPTS = [
    ("pass.sh", 0o755, "echo 'line one'\necho 'line two'\n"),
    ("fail.sh", 0o755, "echo failing\nexit 1\n"),
    ("skip.sh", 0o755, "echo skipping\nexit 4\n"),
    ("exit124.sh", 0o755, "exit 124\n"),
    ("sigterm.sh", 0o755, "echo before\nkill -TERM $$\necho after\n"),
    ("sigkill.sh", 0o755, "kill -KILL $$\n"),
    ("stderr.sh", 0o755, "echo out\necho err >&2\necho out2\n"),
    ("unterminated.sh", 0o755, "printf 'no newline'\n"),
    ("silent.sh", 0o755, ""),
    # The arguments of KSELFTEST_ARGS_TEST_SH_ARGS, split and globbed.
    ("args-test.sh", 0o755, 'echo "$#:$*"\n'),
    ("stdin.sh", 0o755, 'read line\necho "stdin: $line"\n'),
    ("env.sh", 0o755,
     'echo "skip_rc=$skip_rc timeout_rc=$timeout_rc logfile=$logfile"\n'
     'echo "per_test_logging=${per_test_logging-unset} BASE_DIR=${BASE_DIR-unset}"\n'
     'echo "default=$kselftest_default_timeout timeout=$kselftest_timeout"\n'
     'echo "PWD=$PWD OLDPWD=$OLDPWD"\n'),
    ("sub/inner.sh", 0o755, 'echo "in $(basename "$(pwd)") PWD=$PWD"\n'),
    # More than a read's worth, empty lines, bytes that are not text.
    ("bulk.sh", 0o755, "seq 1 3000\nprintf 'a\\000b\\377\\n\\n\\nend'\n"),
    # A test's child that outlives it: its output is waited for.
    ("late.sh", 0o755, "(sleep 0.3; echo late) &\necho early\n"),
    # Timed out: the unterminated line, then runner.sh's "#".
    ("sleeper.sh", 0o755, "printf start\nsleep 30\necho never\n"),
    # Timed out: the whole group, the background sleep too, gets SIGTERM.
    ("bgchild.sh", 0o755, 'sleep 30 &\necho $! > "$PIDFILE"\necho started\nwait\n'),
]
# Without the #!/bin/sh line.
RAW = [
    ("noexec-shebang.sh", 0o644, '#!/bin/sh\necho "interpreted, $# arguments"\n'),
    ("noexec-plain", 0o644, "echo plain\n"),
    # An interpreter with arguments, looked up in PATH as execvp() does.
    ("noexec-env", 0o644, '#!/usr/bin/env sh -u\necho "$0, $# arguments"\n'),
    ("badinterp", 0o644, "#!/nonexistent/interp -x\n"),
]
SETTINGS = ("# a comment\n"
            "  # an indented one\n"
            "foo=bar\n"
            "timeout=1\n"
            # A last line without a newline: runner.sh's 'read' fails on
            # it, and its loop ends before it is looked at.
            "timeout=99")
ARGS = "a  b\t*.none s?b"

# What each test argument prints, {n} its number; {h} is "selftests: coll:".
BLOCKS = {
    "pass.sh": """# {h} pass.sh
# line one
# line two
ok {n} {h} pass.sh
""",
    "fail.sh": """# {h} fail.sh
# failing
not ok {n} {h} fail.sh # exit=1
""",
    "skip.sh": """# {h} skip.sh
# skipping
ok {n} {h} skip.sh # SKIP
""",
    "exit124.sh": """# {h} exit124.sh
#
not ok {n} {h} exit124.sh # TIMEOUT 1 seconds
""",
    # The shell's words on its timeout killed by the test's signal.
    "sigterm.sh": """# {h} sigterm.sh
# before
# Terminated
not ok {n} {h} sigterm.sh # exit=143
""",
    "sigkill.sh": """# {h} sigkill.sh
# Killed
not ok {n} {h} sigkill.sh # exit=137
""",
    "stderr.sh": """# {h} stderr.sh
# out
# err
# out2
ok {n} {h} stderr.sh
""",
    "unterminated.sh": """# {h} unterminated.sh
# no newlineok {n} {h} unterminated.sh
""",
    "silent.sh": """# {h} silent.sh
ok {n} {h} silent.sh
""",
    "absent": """# {h} absent
# Warning: file absent is missing!
not ok {n} {h} absent
""",
    "noexec-shebang.sh": """# {h} noexec-shebang.sh
# Warning: file noexec-shebang.sh is not executable
# interpreted, 0 arguments
ok {n} {h} noexec-shebang.sh
""",
    "noexec-plain": """# {h} noexec-plain
# Warning: file noexec-plain is not executable
not ok {n} {h} noexec-plain
""",
    "noexec-env": """# {h} noexec-env
# Warning: file noexec-env is not executable
# ./noexec-env, 0 arguments
ok {n} {h} noexec-env
""",
    "badinterp": """# {h} badinterp
# Warning: file badinterp is not executable
# /usr/bin/timeout: failed to run command '/nonexistent/interp': No such file or directory
not ok {n} {h} badinterp # exit=127
""",
    "args-test.sh": """# {h} args-test.sh
# 4:a b *.none sub
ok {n} {h} args-test.sh
""",
    "stdin.sh": """# {h} stdin.sh
# stdin: hello
ok {n} {h} stdin.sh
""",
    "env.sh": """# {h} env.sh
# skip_rc=4 timeout_rc=124 logfile=/dev/stdout
# per_test_logging= BASE_DIR=unset
# default=45 timeout=1
# PWD={coll} OLDPWD={coll}
ok {n} {h} env.sh
""",
    "sub/inner.sh": """# {h} inner.sh
# in sub PWD={coll}/sub
ok {n} {h} inner.sh
""",
    "adir": """# {h} adir
# /usr/bin/timeout: failed to run command './adir': Permission denied
not ok {n} {h} adir # exit=126
""",
    # As lib.mk and the harness's init name them: by their whole path.
    "{coll}/pass.sh": """# {h} pass.sh
# line one
# line two
ok {n} {h} pass.sh
""",
    "bulk.sh": "# {h} bulk.sh\n" + "".join(f"# {i}\n" for i in range(1, 3001))
               + "# a\0b\xff\n# \n# \n# endok {n} {h} bulk.sh\n",
    "late.sh": """# {h} late.sh
# early
# late
ok {n} {h} late.sh
""",
    "sleeper.sh": """# {h} sleeper.sh
# start#
not ok {n} {h} sleeper.sh # TIMEOUT 1 seconds
""",
    "bgchild.sh": """# {h} bgchild.sh
# started
#
not ok {n} {h} bgchild.sh # TIMEOUT 1 seconds
""",
}
# Run at the same time, each under both runners (the host's runner.sh takes
# some 0.1 s per test): the timeouts' seconds overlap.
GROUPS = {
    "basic": ["pass.sh", "fail.sh", "skip.sh", "exit124.sh", "sigterm.sh", "sigkill.sh",
              "stderr.sh", "unterminated.sh", "silent.sh"],
    "odd": ["absent", "noexec-shebang.sh", "noexec-plain", "noexec-env", "badinterp",
            "args-test.sh", "stdin.sh", "env.sh", "sub/inner.sh", "adir", "{coll}/pass.sh"],
    "late": ["late.sh", "sleeper.sh"],
    "group": ["bgchild.sh", "bulk.sh"],
}


def _expected(group: str, coll: Path) -> str:
    tests = GROUPS[group]
    return f"TAP version 13\n1..{len(tests)}\n" + "".join(
        BLOCKS[t].format(n=n, h="selftests: coll:", coll=coll)
        for n, t in enumerate(tests, 1))


# Only for ksft-run: what runner.sh waits for forever.
ALONE = [
    # Ignores SIGTERM, its sleep too: SIGKILL, KILL_GRACE (1 s in the
    # build below) after the timeout.
    ("stubborn.sh", "trap '' TERM\necho stubborn\nsleep 30\n"),
    # Ends at once, its sleep holds the pipe past the timeout.
    ("daemon.sh", 'sleep 30 &\necho $! > "$PIDFILE"\necho parent done\n'),
    # Ends at once; its sleep, in a session of its own (as a case of
    # kselftest_harness.h in a group of its own), holds the pipe out of
    # the group's reach: given up KILL_GRACE after the SIGKILL.
    ("escaped.sh", 'setsid sleep 30 &\necho $! > "$PIDFILE"\necho parent done\n'),
    # Its fds: 0 to 2, and no other pipe (its shell's own fd 10 is the
    # script); ls run while the shell only waits for it.
    ("fds.sh", "ls -l /proc/$$/fd\n"),
]


@dataclass
class Run:
    args: list[str]
    proc: subprocess.Popen
    pid_file: Path
    started: float
    cwd: Path
    out: bytes = b""
    err: bytes = b""
    seconds: float = 0.0


def _write(path: Path, text: str, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)


def _base(tmp: Path) -> Path:
    base = tmp / "base"
    (base / "kselftest").mkdir(parents=True)
    for f in ("runner.sh", "prefix.pl"):
        shutil.copy(RECORDED / f, base / "kselftest" / f)
    (base / "kselftest" / "prefix.pl").chmod(0o755)
    coll = base / "coll"
    for name, mode, script in SCRIPTS:
        _write(coll / name, "#!/bin/sh\n" + script, mode)
    for name, mode, text in RAW:
        _write(coll / name, text, mode)
    (coll / "adir").mkdir()
    (coll / "settings").write_text(SETTINGS)
    alone = base / "alone"
    for name, script in ALONE:
        _write(alone / name, "#!/bin/sh\n" + script, 0o755)
    (alone / "settings").write_text("timeout=1\n")
    bad = base / "bad"
    _write(bad / "t.sh", "#!/bin/sh\necho never\n", 0o755)
    (bad / "settings").write_text("timeout=soon\n")
    broken = base / "broken"
    _write(broken / "t.sh", "#!/bin/sh\necho never\n", 0o755)
    (broken / "settings").mkdir()
    return base


def _start(cmd: list[str], base: Path, coll: str, tmp: Path, tag: str,
           with_base_dir: bool = True) -> Run:
    cwd = base / coll
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("KSELFTEST_") and k not in ("BASE_DIR", "OLDPWD")}
    pid_file = tmp / f"pid-{tag}"
    # C: GNU timeout's quotes are then ASCII, as in the guest.
    env.update(LC_ALL="C", PWD=str(cwd), PIDFILE=str(pid_file),
               KSELFTEST_ARGS_TEST_SH_ARGS=ARGS,
               KSELFTEST_NOEXEC_SHEBANG_SH_ARGS="dropped",
               KSELFTEST_NOEXEC_ENV_ARGS="dropped")
    if with_base_dir:
        env["BASE_DIR"] = str(base)
    stdin = tmp / f"stdin-{tag}"
    stdin.write_text("hello\nworld\n")
    with stdin.open() as f:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=f, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
    return Run(cmd, proc, pid_file, time.monotonic(), cwd)


# dash, Debian's sh, whose words on a killed command ("Terminated") are
# busybox ash's too (the guest's sh); bash's differ.
SH = shutil.which("dash") or "sh"


def _runner_sh(base: Path, tests: list[str]) -> list[str]:
    return [SH, "-c", 'BASE_DIR="$1"; shift; . "$BASE_DIR/kselftest/runner.sh"; '
            'run_many "$@"', "sh", str(base), *tests]


def _wait(run: Run) -> None:
    run.out, run.err = run.proc.communicate(timeout=60)
    run.seconds = time.monotonic() - run.started


@pytest.fixture(scope="module")
def runs(ksft_run: tuple[str, str], tmp_path_factory: pytest.TempPathFactory):
    ours, quick = ksft_run
    tmp = tmp_path_factory.mktemp("ksft-run-runs")
    base = _base(tmp)
    started: dict[str, Run] = {}
    try:
        for group, tests in GROUPS.items():
            args = [t.format(coll=base / "coll") for t in tests]
            # runner.sh's BASE_DIR is a variable of its shell, not exported.
            started[f"{group} runner.sh"] = _start(_runner_sh(base, args), base, "coll", tmp,
                                                   f"{group}-runner.sh", with_base_dir=False)
            started[f"{group} ksft-run"] = _start([ours, *args], base, "coll", tmp,
                                                  f"{group}-ksft-run")
        started["bad runner.sh"] = _start(_runner_sh(base, ["t.sh"]), base, "bad", tmp,
                                          "bad-r", with_base_dir=False)
        started["bad ksft-run"] = _start([ours, "t.sh"], base, "bad", tmp, "bad-k")
        started["broken"] = _start([ours, "t.sh"], base, "broken", tmp, "broken")
        started["no BASE_DIR"] = _start([ours, "t.sh"], base, "bad", tmp, "nobase",
                                        with_base_dir=False)
        started["no BASE_DIR runner.sh"] = _start(
            [SH, "-c", f'. {base}/kselftest/runner.sh; run_many t.sh'], base, "bad", tmp,
            "nobase-r", with_base_dir=False)
        for name, _ in ALONE:
            started[name] = _start([quick, name], base, "alone", tmp, name)
        waiting = [threading.Thread(target=_wait, args=(run,)) for run in started.values()]
        for t in waiting:
            t.start()
        for t in waiting:
            t.join()
        yield started
    finally:
        for run in started.values():
            if run.proc.poll() is None:
                os.killpg(run.proc.pid, signal.SIGKILL)
                run.proc.wait()
            if run.pid_file.exists():
                _kill(int(run.pid_file.read_text()))


@pytest.mark.parametrize("group", GROUPS)
def test_ksft_run_prints_what_runner_sh_prints(runs, group: str) -> None:
    ours, theirs = runs[f"{group} ksft-run"], runs[f"{group} runner.sh"]
    assert theirs.proc.returncode == 0, theirs.err
    assert ours.proc.returncode == 0, ours.err
    assert ours.err == b""
    assert ours.out.decode("latin-1") == theirs.out.decode("latin-1")
    assert ours.out == theirs.out
    # Spelt out: runner.sh running on the host as it should.
    assert theirs.out.decode("latin-1") == _expected(group, theirs.cwd)


@pytest.mark.parametrize("runner", ["ksft-run", "runner.sh"])
def test_the_timeout_ends_the_whole_group(runs, runner: str) -> None:
    """bgchild.sh's sleep is gone once the run is over; it held the pipe,
    so the run would not have ended without it dying."""
    run = runs[f"group {runner}"]
    assert b"bgchild.sh # TIMEOUT 1 seconds\n" in run.out
    assert not _running(int(run.pid_file.read_text()))
    # A 1 s timeout, not the sleep's 30 s.
    assert run.seconds < 15


def test_an_invalid_timeout_is_gnu_timeouts_error(runs) -> None:
    ours, theirs = runs["bad ksft-run"], runs["bad runner.sh"]
    assert ours.out == theirs.out
    assert ours.out.decode().endswith(
        "# selftests: bad: t.sh\n"
        "# /usr/bin/timeout: invalid time interval 'soon'\n"
        "# Try '/usr/bin/timeout --help' for more information.\n"
        "not ok 1 selftests: bad: t.sh # exit=125\n")
    assert ours.proc.returncode == 0


def test_without_base_dir_it_fails_as_runner_sh_does(runs) -> None:
    ours, theirs = runs["no BASE_DIR"], runs["no BASE_DIR runner.sh"]
    assert ours.proc.returncode == theirs.proc.returncode == 1
    assert ours.err == theirs.err == b"Error: BASE_DIR must be set before sourcing.\n"
    assert ours.out == theirs.out == b""


def test_its_own_failure_is_an_error(runs) -> None:
    """A settings that cannot be read (a directory: runner.sh would carry on
    without it) ends ksft-run, non-zero, with a message naming it."""
    run = runs["broken"]
    assert run.proc.returncode == 1
    assert run.err.decode().startswith("ksft-run: reading ")
    assert "broken/settings: Is a directory" in run.err.decode()


def test_a_test_ignoring_sigterm_is_killed_after_the_grace(runs) -> None:
    run = runs["stubborn.sh"]
    assert run.proc.returncode == 0, run.err
    assert run.out.decode().endswith(
        "# stubborn\n#\nnot ok 1 selftests: alone: stubborn.sh # TIMEOUT 1 seconds\n")
    # 1 s, then KILL_GRACE's 1 s.
    assert 1.5 < run.seconds < 15


def test_a_pipe_held_past_the_timeout_times_out(runs) -> None:
    """runner.sh would wait for daemon.sh's sleep, which holds the output
    pipe after the test ended, for as long as it runs: ksft-run's deadline
    covers the output too, and its group's SIGTERM ends the sleep."""
    run = runs["daemon.sh"]
    assert run.proc.returncode == 0, run.err
    assert run.out.decode().endswith(
        "# parent done\n#\nnot ok 1 selftests: alone: daemon.sh # TIMEOUT 1 seconds\n")
    assert not _running(int(run.pid_file.read_text()))
    assert run.seconds < 15


def test_no_fd_of_ksft_run_reaches_the_test(runs) -> None:
    run = runs["fds.sh"]
    fds = dict(line.split()[-3::2] for line in run.out.decode().splitlines()
               if " -> " in line)
    assert fds["1"].startswith("pipe:") and fds["2"] == fds["1"], fds
    assert fds["0"].endswith("/stdin-fds.sh"), fds
    pipes = [fd for fd, target in fds.items() if target.startswith("pipe:")]
    assert sorted(pipes) == ["1", "2"], fds


def test_a_pipe_held_out_of_the_group_is_given_up(runs) -> None:
    """The timeout's SIGTERM and SIGKILL to the group miss escaped.sh's
    sleep (another session), which holds the pipe for 30 s: ksft-run
    gives its output up KILL_GRACE (1 s here) after the SIGKILL."""
    run = runs["escaped.sh"]
    assert run.proc.returncode == 0, run.err
    assert run.out.decode().endswith(
        "# parent done\n#\nnot ok 1 selftests: alone: escaped.sh # TIMEOUT 1 seconds\n")
    assert _running(int(run.pid_file.read_text()))
    # 1 s to the timeout, 1 s to the SIGKILL, 1 s to giving up.
    assert 2.5 < run.seconds < 15
