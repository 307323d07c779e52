"""A kernel tree of one's own (KERNEL_TREE=, a variant's `tree:`): what it
is (git describe, commit) and how it differs from Debian's pristine tree.

A tree that is Debian's linux-source-6.1 plus a few changed files (a git
repository made from it, a bisection between two of its commits) need not
be built on its own, which costs a full kernel build per tree: it takes a
turn in kbuild's shared workspace like a patched variant, with the files
that differ copied in (kbuild.patched_tree's overlay), and only their
objects are recompiled.  Which files differ comes from git: the blob ids of
the tree's index (and the few files its work tree changed) against the
pristine tree's, hashed once per extracted tree and kept beside it.
"""
from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .subproc import clean_env

# More differing files than this and a tree is not "Debian's plus a few
# changes" (a mainline 6.1.y tree differs in hundreds: Debian's patches and
# the files its source package leaves out); it gets its own O= build, kept
# between runs, where kbuild recompiles what each checkout changed.
OVERLAY_MAX_FILES = 200

_GITLINK = "160000"


@dataclass(frozen=True)
class Overlay:
    """The files (relative paths) in which tree differs from base: each is
    taken from tree, or deleted where tree has none."""
    base: Path
    tree: Path
    files: tuple[str, ...]

    def digest(self) -> str:
        """What the turn's stamps compare: every differing file's content."""
        h = hashlib.sha256()
        for rel in self.files:
            f = self.tree / rel
            h.update(rel.encode() + b"\0")
            h.update(f.read_bytes() if f.is_file() else b"\0deleted\0")
        return h.hexdigest()


@dataclass(frozen=True)
class TreeId:
    """What results.json records of a tree it built."""
    path: Path
    describe: str       # git describe --always --dirty
    commit: str         # git rev-parse HEAD

    def to_json(self) -> dict:
        return {"path": str(self.path), "describe": self.describe, "commit": self.commit}


def source_tree_problem(tree: Path, what: str) -> str | None:
    """Why tree cannot be built as a kernel (what names where it came from,
    e.g. "KERNEL_TREE"), or None: the command line's tree is checked before
    anything is built, so that a typo is one clear error, not a failed
    build in every cell of that kernel."""
    if not tree.exists():
        return f"{what}: {tree}: no such directory; give the top of a Linux source tree"
    if not tree.is_dir():
        return f"{what}: {tree}: not a directory; give the top of a Linux source tree"
    missing = [n for n in ("Makefile", "Kconfig") if not (tree / n).is_file()]
    if missing:
        return (f"{what}: {tree} is not the top of a Linux source tree (no "
                f"{' and no '.join(missing)} there)")
    return None


def _git(tree: Path, *args: str) -> str | None:
    """git's output, or None when tree is no git work tree (or git fails)."""
    try:
        proc = subprocess.run(["git", "-C", str(tree), *args], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, env=clean_env())
    except FileNotFoundError:
        return None
    return proc.stdout if proc.returncode == 0 else None


def _is_top(tree: Path) -> bool:
    top = _git(tree, "rev-parse", "--show-toplevel")
    return top is not None and Path(top.strip()).resolve() == tree.resolve()


def identify(tree: Path) -> TreeId | None:
    """git describe and HEAD of tree, None when it is not the top of a git
    work tree."""
    if not _is_top(tree):
        return None
    describe = _git(tree, "describe", "--always", "--dirty")
    commit = _git(tree, "rev-parse", "HEAD")
    if describe is None or commit is None:
        return None
    return TreeId(tree, describe.strip(), commit.strip())


def _blob_of(path: Path) -> tuple[str, str]:
    """(git mode, git blob id) of a file on disk, as git add would record it."""
    st = path.lstat()
    if stat.S_ISLNK(st.st_mode):
        mode, data = "120000", os.readlink(path).encode()
    else:
        mode = "100755" if st.st_mode & stat.S_IXUSR else "100644"
        data = path.read_bytes()
    return mode, hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def pristine_blobs(pristine: Path) -> dict[str, tuple[str, str]]:
    """Per relative path of the pristine tree, its (git mode, blob id);
    hashed once (a minute: every byte of the tree is read) and kept in
    .<tree>.blobs beside it, for that extraction of it."""
    cache = pristine.parent / f".{pristine.name}.blobs"
    origin = (pristine / "Makefile").stat()
    header = f"origin {pristine} {origin.st_ino} {origin.st_mtime_ns}"
    if cache.is_file():
        lines = cache.read_text().split("\n")
        if lines[0] == header:
            return {rel: (mode, blob) for mode, blob, rel in
                    (line.split(" ", 2) for line in lines[1:] if line)}
    blobs = {}
    for top, dirs, names in os.walk(pristine):
        dirs.sort()
        for name in sorted(names) + [d for d in dirs if os.path.islink(os.path.join(top, d))]:
            path = Path(top, name)
            blobs[str(path.relative_to(pristine))] = _blob_of(path)
    tmp = cache.with_suffix(".tmp")
    tmp.write_text(header + "\n" + "".join(f"{m} {b} {rel}\n" for rel, (m, b) in blobs.items()))
    tmp.replace(cache)
    return blobs


def differences(pristine: Path, tree: Path) -> tuple[str, ...] | None:
    """The relative paths where tree's files differ from pristine's (content,
    mode, present in one only), as git sees the tree: its index, the tracked
    files its work tree changed, and untracked files it does not ignore.
    Files git ignores (a build's output) do not count.  None when tree is
    not the top of a git work tree."""
    if not _is_top(tree):
        return None
    listed = _git(tree, "ls-files", "-s", "-z")
    changed = _git(tree, "diff", "--name-only", "-z")
    untracked = _git(tree, "ls-files", "-o", "--exclude-standard", "-z")
    if listed is None or changed is None or untracked is None:
        return None
    index = {}
    for entry in filter(None, listed.split("\0")):
        meta, rel = entry.split("\t", 1)
        mode, blob, _stage = meta.split()
        if mode != _GITLINK:
            index[rel] = (mode, blob)
    on_disk = set(filter(None, changed.split("\0"))) | set(filter(None, untracked.split("\0")))
    base = pristine_blobs(pristine)
    # A pristine file git does not track (a .gitignore of the tree matches
    # it) is compared as it is on disk.
    on_disk |= base.keys() - index.keys()
    differ = []
    for rel in sorted(index.keys() | base.keys() | on_disk):
        if rel in on_disk:
            path = tree / rel
            have = _blob_of(path) if os.path.lexists(path) else None
        else:
            have = index.get(rel)
        if have != base.get(rel):
            differ.append(rel)
    return tuple(differ)


def overlay(pristine: Path, tree: Path) -> tuple[Overlay | None, str]:
    """An Overlay of tree on pristine when tree is a git work tree that
    differs from it in at most OVERLAY_MAX_FILES files; else None.  The
    string says which, for the build log line."""
    differ = differences(pristine, tree)
    if differ is None:
        return None, f"{tree} is not the top of a git work tree: built on its own"
    if len(differ) > OVERLAY_MAX_FILES:
        return None, (f"{tree} differs from {pristine.name} in {len(differ)} files "
                      f"(more than {OVERLAY_MAX_FILES}): built on its own")
    return Overlay(pristine, tree, differ), (
        f"{tree} differs from {pristine.name} in {len(differ)} file(s): "
        "a turn of the shared workspace")
