"""A git tree of one's own against the pristine tree (harness/ktree.py), and
its turn in the workspace (kbuild.patched_tree's overlay), on toy trees."""
from __future__ import annotations

import os
import sys
import shutil
import subprocess
from pathlib import Path

import pytest

from harness import kbuild, ktree, runner

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_AUTHOR_DATE": "2026-12-03T12:00:00Z",
           "GIT_COMMITTER_DATE": "2026-12-03T12:00:00Z", "HOME": "/nonexistent",
           "PATH": os.environ["PATH"]}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, env=GIT_ENV).stdout


@pytest.fixture
def pristine(pristine: Path) -> Path:
    """conftest.py's toy tree, with what a comparison must also see: a file
    to delete, an executable, a symlink, and a shipped file the tree's own
    .gitignore matches."""
    tree = pristine
    (tree / "lib" / "gone.c").write_text("int gone;\n")
    (tree / "scripts").mkdir()
    (tree / "scripts" / "tool.sh").write_text("#!/bin/sh\n")
    (tree / "scripts" / "tool.sh").chmod(0o755)
    (tree / "include").mkdir()
    os.symlink("../lib", tree / "include" / "lib")
    # Shipped, yet matched by the tree's own .gitignore.
    (tree / "lib" / "table.o_shipped").write_text("shipped\n")
    (tree / ".gitignore").write_text("*.o\n*_shipped\n")
    return tree


@pytest.fixture
def repo(pristine: Path, tmp_path: Path) -> Path:
    """A git repository of the pristine tree, as a user would have it
    (no -f: the shipped file its .gitignore matches is untracked)."""
    repo = tmp_path / "linux"
    shutil.copytree(pristine, repo, symlinks=True)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    return repo


def test_blobs_are_what_git_records(pristine: Path, repo: Path) -> None:
    blobs = ktree.pristine_blobs(pristine)
    listed = {line.split("\t")[1]: tuple(line.split("\t")[0].split()[:2])
              for line in git(repo, "ls-files", "-s").splitlines()}
    assert {rel: blobs[rel] for rel in listed} == listed
    assert blobs["scripts/tool.sh"][0] == "100755"
    assert blobs["include/lib"][0] == "120000"
    # Kept beside the tree, and read back the same.
    assert (pristine.parent / ".linux-source-6.1.blobs").is_file()
    assert ktree.pristine_blobs(pristine) == blobs


def test_an_unchanged_tree_differs_in_nothing(pristine: Path, repo: Path) -> None:
    assert ktree.differences(pristine, repo) == ()


def test_every_kind_of_difference_is_seen(pristine: Path, repo: Path) -> None:
    (repo / "lib" / "answer.c").write_text("int answer = 42;\n")
    git(repo, "commit", "-qam", "committed change")
    (repo / "lib" / "other.c").write_text("int other = 1;\n")          # not committed
    (repo / "lib" / "new.c").write_text("int new;\n")                  # untracked
    git(repo, "rm", "-q", "lib/gone.c")                                 # deleted
    (repo / "scripts" / "tool.sh").chmod(0o644)                        # mode
    (repo / "lib" / "table.o_shipped").write_text("rebuilt\n")          # ignored, shipped
    (repo / "lib" / "answer.o").write_text("object\n")                 # build output
    assert ktree.differences(pristine, repo) == (
        "lib/answer.c", "lib/gone.c", "lib/new.c", "lib/other.c", "lib/table.o_shipped",
        "scripts/tool.sh")


def test_not_a_git_tree(pristine: Path, tmp_path: Path) -> None:
    assert ktree.differences(pristine, pristine) is None
    assert ktree.identify(pristine) is None
    overlay, how = ktree.overlay(pristine, pristine)
    assert overlay is None
    assert how == f"{pristine} is not the top of a git work tree: built on its own"
    # A subdirectory of a work tree is not a kernel tree of its own.
    sub = tmp_path / "w" / "linux"
    sub.mkdir(parents=True)
    git(sub.parent, "init", "-q")
    assert ktree.identify(sub) is None


def test_too_many_differences_build_on_their_own(pristine: Path, repo: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ktree, "OVERLAY_MAX_FILES", 1)
    (repo / "lib" / "answer.c").write_text("x\n")
    (repo / "lib" / "other.c").write_text("y\n")
    overlay, how = ktree.overlay(pristine, repo)
    assert overlay is None
    assert how == (f"{repo} differs from linux-source-6.1 in 2 files (more than 1): "
                   "built on its own")


def test_identify(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD").strip()
    assert ktree.identify(repo) == ktree.TreeId(repo, head[:7], head)
    git(repo, "tag", "-a", "-m", "v6.1", "v6.1")   # annotated, as the kernel's are
    (repo / "lib" / "other.c").write_text("int other = 1;\n")
    assert ktree.identify(repo).describe == "v6.1-dirty"
    assert ktree.identify(repo).to_json() == {"path": str(repo), "describe": "v6.1-dirty",
                                              "commit": head}


def test_a_turn_with_an_overlay_then_without(pristine: Path, repo: Path,
                                             tmp_path: Path) -> None:
    (repo / "lib" / "answer.c").write_text("int answer = 42;\n")
    git(repo, "rm", "-q", "lib/gone.c")
    git(repo, "commit", "-qam", "change")
    overlay, how = ktree.overlay(pristine, repo)
    assert how == f"{repo} differs from linux-source-6.1 in 2 file(s): a turn of the shared workspace"
    log = tmp_path / "log"
    ws = kbuild.patched_tree(pristine, "workspace", (), log, always_copy=True, overlay=overlay)
    assert (ws / "lib" / "answer.c").read_text() == "int answer = 42;\n"
    assert not (ws / "lib" / "gone.c").exists()
    assert os.stat(ws / "lib" / "other.c").st_ino == os.stat(pristine / "lib" / "other.c").st_ino
    assert (pristine / "lib" / "answer.c").read_text() == "int answer = 41;\n"
    # The next commit: the same overlay is the same turn, a changed file a new one.
    assert kbuild.patched_tree(pristine, "workspace", (), log, always_copy=True,
                               overlay=overlay) == ws
    (repo / "lib" / "answer.c").write_text("int answer = 43;\n")
    git(repo, "commit", "-qam", "again")
    overlay, _ = ktree.overlay(pristine, repo)
    kbuild.patched_tree(pristine, "workspace", (), log, always_copy=True, overlay=overlay)
    assert (ws / "lib" / "answer.c").read_text() == "int answer = 43;\n"
    # A turn without it (stock) puts the pristine files back.
    kbuild.patched_tree(pristine, "workspace", (), log, always_copy=True)
    assert (ws / "lib" / "answer.c").read_text() == "int answer = 41;\n"
    assert (ws / "lib" / "gone.c").read_text() == "int gone;\n"


def test_the_runner_builds_such_a_tree_as_a_turn_and_records_its_commit(
        pristine: Path, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness import matrix as matrix_mod, runner
    (repo / "lib" / "answer.c").write_text("int answer = 42;\n")
    git(repo, "commit", "-qam", "change")
    head = git(repo, "rev-parse", "HEAD").strip()
    calls = []

    def build_kernel(build, k, jobs, workspace=False, lenient=(), overlay=None):
        calls.append(overlay)
        return k, 3

    monkeypatch.setattr(kbuild, "build_kernel", build_kernel)
    monkeypatch.setattr(runner, "fragments", lambda repo, arch, build, flavor="plain", version=(): ())
    m = matrix_mod.load(Path(runner.__file__).parent.parent / "matrix.yaml", archs="x86_64",
                        kernel_tree=repo)
    art = runner.Artifacts()
    lines: list[str] = []
    runner._build_kernels(runner.KernelBuilds(m, repo, tmp_path / "build", 1,
                                              {kbuild.DEFAULT_VERSION: pristine}, {}, art,
                                              lines.append),
                          "x86_64", ["local"])
    assert calls == [ktree.Overlay(pristine, repo, ("lib/answer.c",))]
    tree = {"path": str(repo), "describe": head[:7], "commit": head}
    assert art.trees == {"local": tree}
    assert art.builds[0]["tree"] == tree
    assert art.kernels[("x86_64", "local")].patches == f"variant local: {repo} at {head[:7]} ({head})\n"
    assert lines[:2] == [
        f"kernel x86_64-local: {repo} at {head[:7]} ({head})",
        f"kernel x86_64-local: {repo} differs from linux-source-6.1 in 1 file(s): "
        "a turn of the shared workspace"]


def test_a_source_tree_problem_names_the_knob_and_the_path(tmp_path: Path) -> None:
    tree = tmp_path / "linux"
    assert ktree.source_tree_problem(tree, "KERNEL_TREE") == (
        f"KERNEL_TREE: {tree}: no such directory; give the top of a Linux source tree")
    tree.write_text("")
    assert ktree.source_tree_problem(tree, "KERNEL_TREE") == (
        f"KERNEL_TREE: {tree}: not a directory; give the top of a Linux source tree")
    tree.unlink()
    tree.mkdir()
    (tree / "Makefile").write_text("")
    assert ktree.source_tree_problem(tree, "KERNEL_TREE") == (
        f"KERNEL_TREE: {tree} is not the top of a Linux source tree (no Kconfig there)")
    (tree / "Kconfig").write_text("")
    assert ktree.source_tree_problem(tree, "KERNEL_TREE") is None


def test_make_run_stops_at_a_kernel_tree_that_is_not_one(tmp_path: Path) -> None:
    """KERNEL_TREE= with a typo: one usage error before anything is built
    (it was a failed build and an error in every cell of the kernel)."""
    top = Path(runner.__file__).resolve().parent.parent
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only",
         "harness/matrix_run.py",
         f"--kernel-tree={tmp_path / 'linx'}", f"--build-dir={tmp_path / 'build'}"],
        cwd=top, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR, proc.stdout
    assert f"KERNEL_TREE: {tmp_path / 'linx'}: no such directory" in proc.stdout
    assert not (tmp_path / "build").exists()
