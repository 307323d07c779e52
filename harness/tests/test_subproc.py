"""A run stopped by SIGTERM (a CI engine's cancel, `timeout`) stops as
Ctrl-C does: its children are signalled, none starts after, and the
reports of what finished are written."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from harness import subproc

REPO = Path(__file__).parents[2]


@pytest.fixture(autouse=True)
def _default_signals():
    """As from a terminal, whatever runs the tests (nohup ignores SIGHUP)."""
    old = {sig: signal.signal(sig, signal.SIG_DFL) for sig in subproc.SIGNALS}
    yield
    for sig, handler in old.items():
        signal.signal(sig, handler)


def _until(what, deadline_s: float = 30.0):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if (got := what()):
            return got
        time.sleep(0.05)
    pytest.fail(f"not within {deadline_s} s: {what.__doc__}")


def test_stop_signals_a_running_child_and_no_child_starts_after() -> None:
    got: list[subprocess.CompletedProcess] = []
    t = threading.Thread(target=lambda: got.append(subproc.run(["sleep", "30"])))
    t.start()

    def started():
        """the child registered"""
        return subproc._live
    _until(started)
    assert subproc.stop("a test") == 1
    t.join(timeout=10)
    assert [p.returncode for p in got] == [-signal.SIGTERM]
    assert not subproc._live
    with pytest.raises(subproc.Stopped, match="a test"):
        subproc.popen(["true"])


def test_a_session_starts_children_again_and_keeps_an_ignored_signal_ignored() -> None:
    subproc.stop("the last run")
    old = signal.signal(signal.SIGHUP, signal.SIG_IGN)      # as under nohup
    try:
        with subproc.session():
            assert subproc.run(["true"]).returncode == 0
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None)
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGHUP, old)


def test_a_signal_while_the_main_thread_starts_a_child_stops_that_child_too(
        monkeypatch) -> None:
    """SIGTERM lands inside popen(), after the child exists and before the
    run knows it: popen() raises Terminated only once the child is known
    and signalled, never leaving it to outlive the run."""
    started = []
    real_popen = subprocess.Popen

    def popen_then_signal(cmd, **kwargs):
        proc = real_popen(cmd, **kwargs)
        started.append(proc)
        os.kill(os.getpid(), signal.SIGTERM)    # handled at the next bytecode
        return proc

    monkeypatch.setattr(subproc.subprocess, "Popen", popen_then_signal)
    with pytest.raises(subproc.Terminated, match=r"terminated \(SIGTERM\)"):
        with subproc.session():
            subproc.popen(["sleep", "30"])
    (proc,) = started
    assert proc.returncode == -signal.SIGTERM       # ended, and reaped
    assert proc not in subproc._live


def test_a_make_stopped_by_sigterm_ends_its_jobs_first(tmp_path: Path) -> None:
    """make passes SIGTERM on to its jobs and waits for them: it gets the
    time to, rather than a SIGKILL that would orphan them (a kernel
    build's compilers, bench's inner 'make run' and its guests)."""
    pidfile = tmp_path / "job.pid"
    (tmp_path / "Makefile").write_text(f"all:\n\techo $$$$ > {pidfile}; exec sleep 37\n")

    def signal_once_the_job_runs() -> None:
        end = time.monotonic() + 30
        while not (pidfile.is_file() and pidfile.read_text().strip()):
            if time.monotonic() > end:
                return
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGTERM)

    t = threading.Thread(target=signal_once_the_job_runs)
    t.start()
    with pytest.raises(subproc.Terminated):
        with subproc.session():
            subproc.run(["make", "-s", "-C", str(tmp_path)], stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT)
    t.join()
    job = int(pidfile.read_text())
    with pytest.raises(ProcessLookupError):     # make ended and reaped it
        os.kill(job, 0)


# A run of two cells whose "QEMU" writes its pid and sleeps: the real
# runner, qemu.boot() and signal handling, with only the emulator faked.
RUN = textwrap.dedent("""\
    import dataclasses, signal, sys
    from pathlib import Path
    # As from a terminal: the tests may run under nohup (SIGHUP ignored,
    # which a run keeps ignoring).
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    sys.path.insert(0, {repo!r})
    from harness import matrix, qemu, runner
    from harness.archs import ARCHS
    from harness.cases import Case

    tmp = Path({tmp!r})
    fake = tmp / "fake-qemu"
    fake.write_text("#!/bin/sh\\necho $$ >> " + str(tmp / "pids") + "\\nexec sleep 60\\n")
    fake.chmod(0o755)
    ARCHS["x86_64"] = dataclasses.replace(ARCHS["x86_64"], qemu=str(fake))
    qemu.make_scratch_disk = lambda path, uuid: None
    qemu.choose_accel = lambda *a, **k: qemu.AccelChoice("tcg", "test")
    m = matrix.load(Path({repo!r}) / "matrix.yaml", archs="x86_64", variants="patched",
                    modes="enforce,fix", policies="custom", hashes="sha1", setattr="remove")
    cells = list(m.cells)
    for name in ("bzImage", "config", "x86_64.cpio"):
        (tmp / name).write_text(name)
    art = runner.Artifacts(
        kernels={{("x86_64", "patched"): runner.BuiltKernel(tmp / "bzImage", tmp / "config",
                                                            "variant patched\\n")}},
        initrds={{"x86_64": tmp / "x86_64.cpio"}})
    man = runner.Manifest(tmp / "manifest.json", tuple(cells), {{c.id: 1.0 for c in cells}},
                          (Case("open_test", "a"),), art, "", m.timeout, m.memory)
    try:
        runner.boot_only(m, cells, man, tmp / "build", jobs=2, log=print)
    except KeyboardInterrupt as e:
        print("raised", type(e).__name__, e, flush=True)
        sys.exit(2)
    """)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_stops_the_guests_and_keeps_the_reports(tmp_path: Path, sig: int) -> None:
    script = tmp_path / "run.py"
    script.write_text(RUN.format(repo=str(REPO), tmp=str(tmp_path)))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        def both_guests_run():
            """both fake guests started"""
            p = tmp_path / "pids"
            return p.is_file() and len(p.read_text().split()) == 2
        _until(both_guests_run)
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=30)
    finally:
        proc.kill()
    name = signal.Signals(sig).name
    assert proc.returncode == 2, out
    assert f"raised Terminated terminated ({name})" in out
    doc = json.loads((tmp_path / "build" / "results" / "latest" / "results.json").read_text())
    assert doc["interrupted"] == f"terminated ({name})"
    assert doc["cells"] == [] and len(doc["not_run"]) == 2
    # The guests were killed and reaped, not left running for 60 s.
    for pid in map(int, (tmp_path / "pids").read_text().split()):
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
