"""The harness's child processes: what every nested make needs from the
environment, and the run's long-lived children (QEMU guests, kernel
makes) stopped with the run.

A terminal's Ctrl-C reaches the whole foreground process group: the
guests and makes get their SIGINT with the harness.  A SIGTERM does not:
a CI engine cancelling a job, `timeout`, or make passing on its own
SIGTERM signal the harness alone.  Python's default is then to die on the
spot, without the run's reports, and the guests run on to their timeouts
(a profiled one stays paused for good) while another run may take the
build directory.  Within session(), a SIGTERM or SIGHUP is an interrupt
like Ctrl-C: every child started through popen() or run() is signalled,
none starts after it, and Terminated (a KeyboardInterrupt) unwinds the
run, which writes the reports of the cells that finished."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from typing import Iterator


def clean_env() -> dict[str, str]:
    """The environment without an outer make's variables: with them, lib.mk
    would take MAKELEVEL>0 to mean a parent sets OUTPUT, and kbuild would
    inherit the top Makefile's flags."""
    env = dict(os.environ)
    for var in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES"):
        env.pop(var, None)
    return env


# The signals that stop a run as Ctrl-C does, unless ignored when the
# session starts (nohup's SIGHUP, or a caller's choice).
SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """The run got SIGTERM or SIGHUP: str() says which."""


class Stopped(KeyboardInterrupt):
    """A child was to start after the run began to stop."""


# Reentrant: the signal handler's stop() may interrupt the main thread
# inside popen() or forget().
_lock = threading.RLock()
_live: set[subprocess.Popen] = set()
_stopping = [""]        # why the run stops; "" while it runs
# The main thread is in popen(), between deciding to start a child and
# knowing it: a signal then is raised when popen() returns, or the child
# would start unknown to stop() and outlive the run.
_main_starting = [False]
_deferred = [""]


# How long a child signalled by stop() may take to end its own children
# (make passes SIGTERM on to its jobs and waits for them) before SIGKILL.
STOP_GRACE_S = 10.0


def _raise_deferred() -> None:
    if _deferred[0]:
        why, _deferred[0] = _deferred[0], ""
        raise Terminated(why)


def popen(cmd: list[str], **kwargs) -> subprocess.Popen:
    """subprocess.Popen, known to stop(); raises Stopped once the run
    stops.  The caller waits for it and then calls forget()."""
    main = threading.current_thread() is threading.main_thread()
    with _lock:
        if _stopping[0]:
            raise Stopped(_stopping[0])
        _main_starting[0] = main
        try:
            proc = subprocess.Popen(cmd, **kwargs)
            _live.add(proc)
        except BaseException:
            _main_starting[0] = False
            if main:
                _raise_deferred()   # the signal, not what it cut short
            raise
        _main_starting[0] = False
        if _stopping[0]:
            proc.send_signal(signal.SIGTERM)    # stop() ran before it was known
    if main and _deferred[0]:
        end(proc, interrupted=True)
        _raise_deferred()
    return proc


def forget(proc: subprocess.Popen) -> None:
    with _lock:
        _live.discard(proc)


def end(proc: subprocess.Popen, interrupted: bool) -> None:
    """Ends a child its caller will not wait for: after an interrupt (its
    signal already sent, by the terminal or stop()) it gets STOP_GRACE_S
    to end its own children, then, as always, SIGKILL; then forget()."""
    try:
        if interrupted:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=STOP_GRACE_S)
        proc.kill()
        proc.wait()
    finally:
        forget(proc)


def run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    """subprocess.run (its stdout, stderr, text, cwd and env arguments)
    for a child that stop() signals."""
    proc = popen(cmd, **kwargs)
    try:
        out, err = proc.communicate()
    except KeyboardInterrupt:
        end(proc, interrupted=True)
        raise
    except BaseException:
        end(proc, interrupted=False)
        raise
    forget(proc)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def stop(why: str, sig: int = signal.SIGTERM) -> int:
    """Signals every live child and lets none start; returns how many were
    signalled.  Their waiters see them end, as if they had been killed."""
    with _lock:
        _stopping[0] = _stopping[0] or why
        live = list(_live)
    for proc in live:
        try:
            proc.send_signal(sig)
        except ProcessLookupError:
            pass
    return len(live)


@contextlib.contextmanager
def session() -> Iterator[None]:
    """A run: children may start; a SIGTERM or SIGHUP (where not ignored)
    stops them and raises Terminated in the main thread; a run that ends
    by any exception stops the children still alive (a SIGINT sent to the
    harness alone, or a harness bug, leaves no guest behind)."""
    with _lock:
        _stopping[0] = _deferred[0] = ""
    installed = {}
    if threading.current_thread() is threading.main_thread():
        def terminated(signum: int, frame) -> None:
            if _stopping[0]:
                return      # already unwinding: let the reports be written
            why = f"terminated ({signal.Signals(signum).name})"
            stop(why)
            if _main_starting[0]:
                _deferred[0] = why      # popen() raises it, its child known
                return
            raise Terminated(why)

        for sig in SIGNALS:
            if signal.getsignal(sig) is signal.SIG_DFL:
                installed[sig] = signal.signal(sig, terminated)
    try:
        yield
    except BaseException as e:
        stop(str(e) if isinstance(e, Terminated) else f"stopped: {type(e).__name__}")
        raise
    finally:
        for sig, old in installed.items():
            signal.signal(sig, old)
