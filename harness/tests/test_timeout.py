"""initramfs/timeout.c, the guest's /usr/bin/timeout, built for the host and
run beside GNU coreutils' timeout, whose behaviour kselftest's runner.sh
relies on: every case must end the same way under both.  (A user-space tool
run on user-space commands: nothing here touches IMA or the host's kernel
state.)"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GNU = shutil.which("timeout", path="/usr/bin:/bin")


@pytest.fixture(scope="module")
def ours(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("timeout") / "timeout"
    subprocess.run(["gcc", "-O2", "-Wall", "-Werror", "-o", str(out),
                    str(REPO / "initramfs" / "timeout.c")], check=True)
    return str(out)


def _run(timeout: str, *args: str, preexec_fn=None) -> tuple[int, str]:
    proc = subprocess.run([timeout, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=60, preexec_fn=preexec_fn)
    return proc.returncode, proc.stdout


# (arguments, exit status: negative for a death by that signal)
CASES = [
    # Timed out: 124, with and without --foreground.
    (["0.2", "sleep", "30"], 124),
    (["--foreground", "0.2", "sleep", "30"], 124),
    # runner.sh's own nesting: timeout --foreground N timeout N TEST.
    (["--foreground", "0.2", "@", "0.2", "sleep", "30"], 124),
    (["--foreground", "30", "@", "30", "sh", "-c", "exit 7"], 7),
    # The command's own status, and its own death by a signal (not 124:
    # the shell wrapper over busybox's timeout read SIGTERM's 143 as 124).
    (["30", "sh", "-c", "exit 3"], 3),
    (["30", "true"], 0),
    (["30", "sh", "-c", "kill -TERM $$"], -signal.SIGTERM),
    (["30", "sh", "-c", "kill -KILL $$"], -signal.SIGKILL),
    (["--foreground", "30", "@", "30", "sh", "-c", "kill -TERM $$"], -signal.SIGTERM),
    # A command that stops itself is woken to die (without --foreground).
    (["0.5", "sh", "-c", "kill -STOP $$"], 124),
    # Durations: suffixes (each ends in time only if it multiplies: 0.05
    # seconds would not let the sleep end), a fraction, 0 for none.
    (["0.05m", "sh", "-c", "sleep 0.1; exit 5"], 5),
    (["0.001h", "sh", "-c", "sleep 0.1; exit 5"], 5),
    (["0.0001d", "sh", "-c", "sleep 0.1; exit 5"], 5),
    (["3s", "sh", "-c", "sleep 0.1; exit 5"], 5),
    (["0", "sh", "-c", "exit 4"], 4),
    (["0.001s", "sleep", "30"], 124),
    # Its own failures.
    (["30", "/nonexistent/command"], 127),
    (["30", "/etc/passwd"], 126),
    (["soon", "true"], 125),
    (["-1", "true"], 125),
    (["30"], 125),
    (["--foreground"], 125),
]


@pytest.mark.parametrize("args, status", CASES, ids=[" ".join(a) for a, _ in CASES])
def test_ends_as_gnu_timeout_does(ours: str, args: list[str], status: int) -> None:
    for timeout in (ours, GNU):
        got, out = _run(timeout, *(timeout if a == "@" else a for a in args))
        assert got == status, f"{timeout} {' '.join(args)}: {out}"


@pytest.mark.parametrize("foreground", [False, True])
def test_the_timeout_signals_the_whole_group_unless_foreground(
        ours: str, tmp_path: Path, foreground: bool) -> None:
    """Without --foreground a test's forked children die with it at the
    timeout (they would otherwise hold runner.sh's pipe open); with it,
    only the command itself is signalled, as GNU's does."""
    for timeout in (ours, GNU):
        pid_file = tmp_path / f"pid-{Path(timeout).name}-{foreground}"
        # (Its output elsewhere: one left running would hold _run's pipe.)
        script = f"sleep 30 >/dev/null 2>&1 & echo $! > {pid_file}; wait"
        got, out = _run(timeout, *(["--foreground"] if foreground else []), "2",
                        "sh", "-c", script)
        assert got == 124, out
        pid = int(pid_file.read_text())
        try:
            # A signalled sleep is gone (or a zombie of init) at once; one
            # left alone runs on: asked, not waited for.
            alive = _running(pid)
        finally:
            _kill(pid)
        assert alive == foreground, f"{timeout}: sleep {pid} alive={alive}"


def _state(pid: int) -> str:
    """The process's state letter (R, S, Z, ...) from /proc/<pid>/stat."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _running(pid: int) -> bool:
    # The sleep was the script's child: once it is dead its parent (sh,
    # gone too) left it to be reaped by init; a zombie is not running.
    for _ in range(1000):
        try:
            state = _state(pid)
        except FileNotFoundError:
            return False
        if state == "Z":
            return False
        if state != "R":
            return True
        time.sleep(0.01)    # still being scheduled: look again
    return True


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_a_signal_to_timeout_is_passed_on(ours: str) -> None:
    """runner.sh's caller (the harness's init, a user's ^C) stopping a test:
    the command gets the signal, and timeout ends as the command did."""
    # The signal is sent once timeout waits for its command.  The command's
    # "up" alone is too early: GNU's timeout (coreutils 9.1) that got it
    # before its fork() had returned in the parent did not yet know the
    # command's pid and ended 143 itself, in 14 of 40 runs on a loaded
    # machine.
    up = [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(30)"]
    for timeout in (ours, GNU):
        proc = subprocess.Popen([timeout, "30", *up], stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline() == "up\n"
        _wait_until_sleeping(proc.pid)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == -signal.SIGTERM, timeout


def _wait_until_sleeping(pid: int) -> None:
    """Until pid sleeps: a timeout whose command already runs sleeps only
    in its wait for that command (sigsuspend() or waitpid())."""
    deadline = time.monotonic() + 10
    while _state(pid) != "S":
        assert time.monotonic() < deadline, f"timeout {pid} never waited for its command"
        time.sleep(0.001)


def _ignore_sigchld() -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)


def _block_sigalrm() -> None:
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})


@pytest.mark.parametrize("started_with, args, status", [
    # SIGCHLD ignored: children are not kept for waitpid() unless timeout
    # handles SIGCHLD itself.
    (_ignore_sigchld, ["30", "sh", "-c", "exit 6"], 6),
    # SIGALRM blocked: the timer must still end the command.
    (_block_sigalrm, ["0.2", "sleep", "30"], 124),
], ids=["SIGCHLD ignored", "SIGALRM blocked"])
def test_what_timeout_was_started_with_does_not_change_its_end(
        ours: str, started_with, args: list[str], status: int) -> None:
    for timeout in (ours, GNU):
        got, out = _run(timeout, *args, preexec_fn=started_with)
        assert got == status, f"{timeout} {' '.join(args)}: {out}"
