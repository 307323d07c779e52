"""End-to-end proof of `bisect-run` (in `make check`, after the unit tests):
a git repository made from Debian's tree with a handful of commits, one of
them a known lockdep regression (kernel-patches/regressions/0011); `git
bisect run scripts/bisect-run ...` must name that commit.

    /usr/bin/python3 -m harness bisect-check [--build-dir build]

The repository is build/bisect-check/linux: a hard-linked copy of the
pristine tree (cp -al: no space, the pristine tree is never written: every
file a commit changes is replaced, not written through) with its own .git.
Making it reads the whole tree once (git add); it is kept and reused while
the pristine tree and the recipe below stay the same.  Every bisection step
builds its commit as a turn of the shared workspace (harness/ktree.py), so
a step costs the objects of the files that differ and a relink, then one
x86_64 guest running fput_test.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from . import kbuild
from .errors import HarnessError
from .subproc import clean_env

REPO = Path(__file__).resolve().parent.parent
REGRESSION = REPO / "kernel-patches" / "regressions" \
    / "0011-REGRESSION-mm-final-fput-of-a-mapping-under-mmap_lock.patch"
BRANCH = "bisect-check"
BASE_TAG = "debian-base"
# Fixed dates and names: the same pristine tree gives the same commit ids.
_IDENTITY = {"GIT_AUTHOR_NAME": "IMA appraisal selftests",
             "GIT_AUTHOR_EMAIL": "ima-selftests@localhost",
             "GIT_COMMITTER_NAME": "IMA appraisal selftests",
             "GIT_COMMITTER_EMAIL": "ima-selftests@localhost"}


@dataclass(frozen=True)
class Commit:
    subject: str
    file: str = ""          # gets a comment line appended; "" for the regression
    comment: str = ""

    @property
    def is_regression(self) -> bool:
        return not self.file


# Harmless comment changes (two compiled into the x86_64 kernel, so a
# bisection step recompiles something), and the regression in the middle.
COMMITS = (
    Commit("ima: say where the last writer's label is written",
           "security/integrity/ima/ima_main.c",
           "/* The last writer's label is written by ima_check_last_writer(). */"),
    Commit("Documentation: IMA appraisal is tested in QEMU",
           "Documentation/security/IMA-templates.rst",
           ".. The IMA appraisal selftests boot these kernels in QEMU."),
    Commit("", ""),
    Commit("fs: say why fput() defers the final __fput()",
           "fs/open.c",
           "/* fput() defers the final __fput() to task work: no locks are held there. */"),
    Commit("Documentation: mention lockdep in the IMA docs",
           "Documentation/security/IMA-templates.rst",
           ".. Lockdep checks the locks IMA takes on the last close."),
)


def _git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True,
                          env={**clean_env(), **_IDENTITY, **(env or {})})
    if proc.returncode != 0:
        raise HarnessError(f"git {' '.join(args)} in {repo} failed (exit {proc.returncode}):\n"
                           + proc.stdout.strip())
    return proc.stdout


def _replace(path: Path, text: str) -> None:
    """Writes a new file in place of path: a hard link to the pristine tree
    is replaced, never written through."""
    tmp = path.with_name(path.name + ".bisect-check.tmp")
    tmp.write_text(text)
    shutil.copymode(path, tmp)
    os.replace(tmp, path)


def _recipe() -> str:
    return hashlib.sha256(repr(COMMITS).encode() + REGRESSION.read_bytes()).hexdigest()


def make_repo(pristine: Path, where: Path, log=print) -> Path:
    """build/bisect-check/linux: the pristine tree as the first commit
    (tagged BASE_TAG), then COMMITS on branch BRANCH.  Reused when made
    from the same pristine tree and recipe."""
    repo = where / "linux"
    stamp = where / ".made"
    origin = (pristine / "Makefile").stat()
    want = f"{pristine} {origin.st_ino} {origin.st_mtime_ns} {_recipe()}\n"
    if stamp.is_file() and stamp.read_text() == want and (repo / ".git").is_dir():
        subprocess.run(["git", "-C", str(repo), "bisect", "reset", "--quiet"],
                       capture_output=True, env=clean_env())
        _git(repo, "checkout", "--quiet", "--force", BRANCH)
        log(f"bisect-check: reusing {repo}")
        return repo
    if where.exists():
        shutil.rmtree(where)
    where.mkdir(parents=True)
    t = time.monotonic()
    subprocess.run(["cp", "-al", str(pristine), str(repo)], check=True)
    t_copy = time.monotonic() - t
    _git(repo, "init", "--quiet", "--initial-branch", BRANCH)
    # Level 1: the first commit deflates the whole tree (1.5 GB).
    _git(repo, "config", "core.compression", "1")
    t = time.monotonic()
    # -f: the tree's own .gitignore files match a few files it ships.
    _git(repo, "add", "--all", "--force", ".")
    date = {"GIT_AUTHOR_DATE": "2026-12-03T12:00:00Z", "GIT_COMMITTER_DATE": "2026-12-03T12:00:00Z"}
    _git(repo, "commit", "--quiet", "-m", f"Import {pristine.name} (Debian)", env=date)
    _git(repo, "tag", BASE_TAG)
    t_add = time.monotonic() - t
    for i, c in enumerate(COMMITS, 1):
        date = {k: f"2026-12-03T12:{i:02}:00Z" for k in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE")}
        if c.is_regression:
            for rel in kbuild._files_of(REGRESSION):
                _replace(repo / rel, (repo / rel).read_text())
            _git(repo, "am", "--quiet", "--committer-date-is-author-date", str(REGRESSION),
                 env=date)
            continue
        f = repo / c.file
        _replace(f, f.read_text() + c.comment + "\n")
        _git(repo, "commit", "--quiet", "-m", c.subject, c.file, env=date)
    stamp.write_text(want)
    log(f"bisect-check: made {repo} in {t_copy + t_add:.0f}s "
        f"(cp -al {t_copy:.0f}s, git add and commit of the tree {t_add:.0f}s)")
    return repo


def commits(repo: Path) -> list[tuple[str, str]]:
    """(id, subject) of the commits after BASE_TAG, oldest first."""
    out = _git(repo, "log", "--reverse", "--format=%H %s", f"{BASE_TAG}..{BRANCH}")
    return [tuple(line.split(" ", 1)) for line in out.splitlines()]  # type: ignore[misc]


_FIRST_BAD = re.compile(r"^([0-9a-f]{40}) is the first bad commit$", re.M)
# bisect-run's own lines (harness/bisect.py main()) and the run's results dir.
_LOOKING = re.compile(r"^bisect-run: .* \(([0-9a-f]{40})\): looking for ", re.M)
_VERDICT = re.compile(r"^bisect-run: .* \(([0-9a-f]{40})\): (\w+) \(exit (\d+)\): (.*)$", re.M)
_RESULTS = re.compile(r"^results: (\S+)", re.M)

# The cell and program bisect-run boots: the narrowest that shows 0011.
SELECTION = ("--archs", "x86_64", "--modes", "enforce", "--policies", "custom",
             "--hashes", "sha1", "--setattr", "keep", "-k", "fput_test",
             "--splat", "lockdep-circular")


@dataclass(frozen=True)
class Step:
    commit: str
    verdict: str        # good, bad, skip, abort
    reason: str
    seconds: float
    results: str        # its run directory ("" if none)


def first_bad(output: str) -> str | None:
    """The commit `git bisect run` named, from its output."""
    m = _FIRST_BAD.search(output)
    return m.group(1) if m else None


def steps(output: str, times: list[tuple[float, str]]) -> list[Step]:
    """The steps of a `git bisect run` of bisect-run, from its output; times
    are (monotonic seconds, line) as the lines arrived."""
    found = []
    starts = {m.group(1): t for t, line in times if (m := _LOOKING.match(line))}
    chunks = _LOOKING.split(output)
    # chunks: text before, then (commit, text of its step) pairs
    for commit, text in zip(chunks[1::2], chunks[2::2]):
        v = _VERDICT.search(text)
        r = _RESULTS.search(text)
        end = next((t for t, line in times if v and line == v.group(0)), None)
        found.append(Step(commit, v.group(2) if v else "none", v.group(4) if v else "",
                          end - starts[commit] if end is not None and commit in starts else 0.0,
                          r.group(1) if r else ""))
    return found


def check(build: Path, log=print) -> list[str]:
    """Makes (or reuses) the repository, bisects it, and returns what went
    wrong: nothing when git bisect run named the regression, every step
    judged its commit right, and each step's results.json recorded the
    commit it built."""
    pristine = kbuild.extract(build)
    repo = make_repo(pristine, build / "bisect-check", log)
    history = commits(repo)
    regression = next(i for i, (_, subject) in enumerate(history)
                      if subject.startswith("REGRESSION:"))
    log(f"bisect-check: {BASE_TAG} is good, {BRANCH} ({history[-1][0][:12]}) is bad; "
        "the commits between:")
    for i, (cid, subject) in enumerate(history):
        log(f"  {cid[:12]} {subject}{'   <- the regression' if i == regression else ''}")
    _git(repo, "bisect", "start", BRANCH, BASE_TAG)
    cmd = ["git", "-C", str(repo), "bisect", "run", str(REPO / "scripts" / "bisect-run"),
           *SELECTION, f"--build-dir={build}"]
    log("$ " + " ".join(cmd))
    t0 = time.monotonic()
    times: list[tuple[float, str]] = []
    lines = []
    try:
        # Unbuffered: each step's lines as they come, not at its end.
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, env={**clean_env(), "PYTHONUNBUFFERED": "1"})
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip("\n")
            times.append((time.monotonic(), line))
            lines.append(line)
            log(f"  | {line}")
        rc = proc.wait()
    finally:
        subprocess.run(["git", "-C", str(repo), "bisect", "reset", "--quiet"],
                       capture_output=True, env=clean_env())
    total = time.monotonic() - t0
    output = "\n".join(lines) + "\n"
    found = steps(output, times)
    want_id, want_subject = history[regression]
    subjects = dict(history)
    problems = []
    for s in found:
        index = next((i for i, (cid, _) in enumerate(history) if cid == s.commit), None)
        expected = "bad" if index is not None and index >= regression else "good"
        if s.verdict != expected:
            problems.append(f"step {s.commit[:12]} ({subjects.get(s.commit, '?')}) was judged "
                            f"{s.verdict}, expected {expected}: {s.reason or 'no verdict line'}")
        problems += _recorded(build, s)
    named = first_bad(output)
    if rc != 0 or named is None:
        problems.append(f"git bisect run exited {rc} without naming a first bad commit; "
                        "its last lines:\n    " + "\n    ".join(lines[-8:]))
    elif named != want_id:
        problems.append(f"git bisect run named {named[:12]} ({subjects.get(named, '?')}), "
                        f"but the regression is {want_id[:12]} ({want_subject})")
    log(f"bisect-check: {len(found)} step(s) in {total:.0f}s: "
        + ", ".join(f"{s.commit[:12]} {s.verdict} {s.seconds:.0f}s" for s in found))
    return problems


def _recorded(build: Path, s: Step) -> list[str]:
    """What a step's results.json lacks of what it must record."""
    if not s.results:
        return [f"step {s.commit[:12]}: no results directory in its output"]
    path = Path(s.results)
    path = (path if path.is_absolute() else build.parent / path) / "results.json"
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        return [f"step {s.commit[:12]}: cannot read {path}: {e}"]
    tree = doc.get("kernel_trees", {}).get("local", {})
    problems = []
    if tree.get("commit") != s.commit:
        problems.append(f"{path}: kernel_trees.local.commit is {tree.get('commit')!r}, "
                        f"expected {s.commit}")
    if not tree.get("describe"):
        problems.append(f"{path}: no kernel_trees.local.describe")
    if doc.get("bisect", {}).get("verdict") != s.verdict:
        problems.append(f"{path}: bisect.verdict is {doc.get('bisect', {}).get('verdict')!r}, "
                        f"the step said {s.verdict}")
    return problems


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m harness.bisect_check")
    ap.add_argument("--build-dir", type=Path, default=REPO / "build")
    return command(ap.parse_args(argv))


def command(args: argparse.Namespace) -> int:
    """python3 -m harness bisect-check: 0 passed, 1 failed, 2 could not tell."""
    try:
        problems = check(args.build_dir.resolve())
    except HarnessError as e:
        print(f"bisect-check: ERROR: {e}", file=sys.stderr)
        return 2
    if problems:
        print("bisect-check: FAILED\n" + "\n".join(f"  - {p}" for p in problems))
        return 1
    print("bisect-check: passed: git bisect run named the regression")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
