"""Series reading and patch application on a toy tree (no kernel needed;
the tree is conftest.py's pristine)."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from harness import kbuild
from harness.errors import BuildError, ConfigError

PATCH = """\
--- a/lib/answer.c
+++ b/lib/answer.c
@@ -1 +1 @@
-int answer = 41;
+int answer = 42;
"""


def test_read_series(tmp_path: Path) -> None:
    (tmp_path / "0001-a.patch").write_text(PATCH)
    (tmp_path / "series").write_text("# group\n0001-a.patch -p1\n\n")
    assert kbuild.read_series(tmp_path / "series") == (tmp_path / "0001-a.patch",)


def test_read_series_names_the_missing_patch(tmp_path: Path) -> None:
    (tmp_path / "series").write_text("# group\n0002-gone.patch\n")
    with pytest.raises(ConfigError) as e:
        kbuild.read_series(tmp_path / "series")
    assert str(e.value) == (f"{tmp_path}/series:2: patch '0002-gone.patch' does not exist "
                            f"(looked for {tmp_path}/0002-gone.patch); add the file or drop the line")


def test_patched_copy_leaves_the_pristine_tree_alone(pristine: Path, tmp_path: Path) -> None:
    patch = tmp_path / "0001-a.patch"
    patch.write_text(PATCH)
    tree = kbuild.patched_tree(pristine, "fixed", (patch,), tmp_path / "log")
    assert (tree / "lib" / "answer.c").read_text() == "int answer = 42;\n"
    assert (pristine / "lib" / "answer.c").read_text() == "int answer = 41;\n"
    # Untouched files stay hard links: the copy costs no space.
    assert os.stat(tree / "lib" / "other.c").st_ino == os.stat(pristine / "lib" / "other.c").st_ino
    # Same patches: the tree is reused as it is.
    mtime = (tree / "lib" / "answer.c").stat().st_mtime_ns
    assert kbuild.patched_tree(pristine, "fixed", (patch,), tmp_path / "log") == tree
    assert (tree / "lib" / "answer.c").stat().st_mtime_ns == mtime


def test_dropping_a_patch_gives_the_file_a_fresh_mtime(pristine: Path, tmp_path: Path) -> None:
    patch = tmp_path / "0001-a.patch"
    patch.write_text(PATCH)
    kbuild.patched_tree(pristine, "v", (patch,), tmp_path / "log")
    other = tmp_path / "0002-b.patch"
    other.write_text("--- a/lib/other.c\n+++ b/lib/other.c\n@@ -1 +1 @@\n"
                     "-int other;\n+int other = 1;\n")
    tree = kbuild.patched_tree(pristine, "v", (other,), tmp_path / "log")
    # answer.c is pristine again, but newer than any object built from the
    # patched version, so kbuild recompiles it.
    assert (tree / "lib" / "answer.c").read_text() == "int answer = 41;\n"
    assert (tree / "lib" / "answer.c").stat().st_mtime_ns > (pristine / "lib" / "answer.c").stat().st_mtime_ns


def test_a_patch_that_does_not_apply_is_named(pristine: Path, tmp_path: Path) -> None:
    patch = tmp_path / "0001-stale.patch"
    patch.write_text(PATCH.replace("41", "40"))
    with pytest.raises(BuildError) as e:
        kbuild.patched_tree(pristine, "v", (patch,), tmp_path / "log")
    assert str(e.value).startswith(
        f"{patch} does not apply to linux-source-6.1 (variant 'v'). "
        f"Refresh it against {pristine} or drop it from the series.\n")


def test_a_variant_stops_sharing_a_build(tmp_path: Path) -> None:
    from harness.archs import ARCHS
    stock = kbuild.Kernel(ARCHS["x86_64"], "stock", tmp_path, tmp_path / "kernel" / "x86_64-stock",
                          (), ())
    stock.out.mkdir(parents=True)
    (stock.out / "vmlinux").write_text("stock")
    kbuild.link_alias(tmp_path, ARCHS["x86_64"], "patched", stock)
    patched = tmp_path / "kernel" / "x86_64-patched"
    assert patched.is_symlink() and (patched / "vmlinux").read_text() == "stock"
    # Its series gained a patch: it gets a build of its own, stock's stays.
    kbuild.own_out_dir(patched)
    assert patched.is_dir() and not patched.is_symlink()
    assert (stock.out / "vmlinux").read_text() == "stock"


def test_extra_patches_may_need_fuzz_but_the_series_may_not(pristine: Path, tmp_path: Path) -> None:
    # The series changed a line next to what someone's patch (written
    # against the plain tree) changes: exact context no longer matches.
    (pristine / "lib" / "answer.c").write_text("a\nb\nc\nint answer = 41;\nd\ne\nf\n")
    series = tmp_path / "0001-series.patch"
    series.write_text("--- a/lib/answer.c\n+++ b/lib/answer.c\n@@ -1,3 +1,3 @@\n"
                      "-a\n+A\n b\n c\n")
    extra = tmp_path / "extra.patch"
    extra.write_text("--- a/lib/answer.c\n+++ b/lib/answer.c\n@@ -1,7 +1,7 @@\n"
                     " a\n b\n c\n-int answer = 41;\n+int answer = 42;\n d\n e\n f\n")
    with pytest.raises(BuildError):
        kbuild.patched_tree(pristine, "strict", (series, extra), tmp_path / "log")
    tree = kbuild.patched_tree(pristine, "fuzzy", (series, extra), tmp_path / "log",
                               lenient=(extra,))
    assert (tree / "lib" / "answer.c").read_text() == "A\nb\nc\nint answer = 42;\nd\ne\nf\n"


def test_changing_patches_restores_only_their_files(pristine: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a.patch", tmp_path / "b.patch"
    a.write_text(PATCH)
    b.write_text("--- /dev/null\n+++ b/lib/new.c\n@@ -0,0 +1 @@\n+int new;\n")
    tree = kbuild.patched_tree(pristine, "ws", (a, b), tmp_path / "log")
    other = os.stat(tree / "lib" / "other.c")
    assert (tree / "lib" / "new.c").is_file()
    tree = kbuild.patched_tree(pristine, "ws", (a,), tmp_path / "log")
    assert not (tree / "lib" / "new.c").exists()       # made by the dropped patch
    assert (tree / "lib" / "answer.c").read_text() == "int answer = 42;\n"
    assert os.stat(tree / "lib" / "other.c").st_ino == other.st_ino   # not copied again
    # A patch that fails halfway is undone by the next call.
    bad = tmp_path / "bad.patch"
    bad.write_text(PATCH + "--- a/lib/other.c\n+++ b/lib/other.c\n@@ -1 +1 @@\n-nope\n+x\n")
    with pytest.raises(BuildError):
        kbuild.patched_tree(pristine, "ws", (bad,), tmp_path / "log")
    tree = kbuild.patched_tree(pristine, "ws", (b,), tmp_path / "log")
    assert (tree / "lib" / "answer.c").read_text() == "int answer = 41;\n"
    assert (tree / "lib" / "new.c").read_text() == "int new;\n"


def test_extraction_gives_files_a_fresh_mtime(tmp_path: Path) -> None:
    # An updated Debian source carries its archive's mtimes, older than the
    # objects built from the previous one: kbuild would keep those objects.
    src = tmp_path / "pack" / "linux-source-6.1"
    src.mkdir(parents=True)
    (src / "Makefile").write_text("# toy\n")
    os.utime(src / "Makefile", (946684800, 946684800))
    tarball = tmp_path / "linux-source-6.1.tar.xz"
    assert os.system(f"tar -C {tmp_path / 'pack'} -cJf {tarball} linux-source-6.1") == 0
    before = time.time()
    tree = kbuild.extract(tmp_path / "build", tarball)
    assert (tree / "Makefile").stat().st_mtime >= before - 1


def test_the_workspace_is_a_copy_even_without_patches(pristine: Path, tmp_path: Path) -> None:
    # stock takes its turn in the workspace too: one tree path, one build.
    tree = kbuild.patched_tree(pristine, "workspace", (), tmp_path / "log", always_copy=True)
    assert tree == pristine.parent / "linux-workspace"
    assert (tree / "lib" / "answer.c").read_text() == "int answer = 41;\n"
    patch = tmp_path / "0001-a.patch"
    patch.write_text(PATCH)
    assert kbuild.patched_tree(pristine, "workspace", (patch,), tmp_path / "log") == tree
    assert (tree / "lib" / "answer.c").read_text() == "int answer = 42;\n"
    kbuild.patched_tree(pristine, "workspace", (), tmp_path / "log", always_copy=True)
    assert (tree / "lib" / "answer.c").read_text() == "int answer = 41;\n"
    assert (pristine / "lib" / "answer.c").read_text() == "int answer = 41;\n"


def test_a_turn_keeps_the_mtime_of_a_file_whose_content_stays(pristine: Path,
                                                              tmp_path: Path) -> None:
    # patched, then patched + a mutant of another file: the series' file
    # keeps its objects (its content is what it was).
    series = tmp_path / "0001-a.patch"
    series.write_text(PATCH)
    mutant = tmp_path / "0002-b.patch"
    mutant.write_text("--- a/lib/other.c\n+++ b/lib/other.c\n@@ -1 +1 @@\n"
                      "-int other;\n+int other = 1;\n")
    tree = kbuild.patched_tree(pristine, "workspace", (series,), tmp_path / "log")
    mtime = (tree / "lib" / "answer.c").stat().st_mtime_ns
    kbuild.patched_tree(pristine, "workspace", (series, mutant), tmp_path / "log")
    assert (tree / "lib" / "answer.c").stat().st_mtime_ns == mtime
    assert (tree / "lib" / "other.c").read_text() == "int other = 1;\n"
    assert (pristine / "lib" / "other.c").read_text() == "int other;\n"


def test_a_patch_that_does_not_apply_leaves_the_tree_as_it_was(pristine: Path,
                                                               tmp_path: Path) -> None:
    good = tmp_path / "0001-a.patch"
    good.write_text(PATCH)
    tree = kbuild.patched_tree(pristine, "v", (good,), tmp_path / "log")
    stale = tmp_path / "0002-stale.patch"
    stale.write_text(PATCH.replace("41", "40").replace("answer.c", "other.c"))
    with pytest.raises(BuildError):
        kbuild.patched_tree(pristine, "v", (stale,), tmp_path / "log")
    assert (tree / "lib" / "answer.c").read_text() == "int answer = 42;\n"
    assert sorted(p.name for p in (tree / "lib").iterdir()) == ["answer.c", "other.c"]


def test_each_version_is_extracted_beside_the_others(tmp_path: Path) -> None:
    for version in ("6.1", "6.12"):
        src = tmp_path / "pack" / f"linux-source-{version}"
        src.mkdir(parents=True)
        (src / "Makefile").write_text(f"# {version}\n")
        assert os.system(f"tar -C {tmp_path / 'pack'} -cJf {tmp_path}/{version}.tar.xz "
                         f"linux-source-{version}") == 0
    old = kbuild.extract(tmp_path / "build", tmp_path / "6.1.tar.xz")
    new = kbuild.extract(tmp_path / "build", tmp_path / "6.12.tar.xz", version="6.12")
    assert (old, new) == (tmp_path / "build/src/linux-source-6.1",
                          tmp_path / "build/src/linux-source-6.12")
    assert [(t / "Makefile").read_text() for t in (old, new)] == ["# 6.1\n", "# 6.12\n"]
    assert kbuild.tarball_of("6.12") == Path("/usr/src/linux-source-6.12.tar.xz")
    with pytest.raises(BuildError) as e:
        kbuild.extract(tmp_path / "build", tmp_path / "gone.tar.xz", version="6.13")
    assert str(e.value) == (f"{tmp_path}/gone.tar.xz not found: 'make deps' installs or "
                            "fetches Debian's linux-source-6.13 (matrix.yaml sources:), or "
                            "says why it cannot")


def test_each_version_takes_its_turns_in_a_workspace_of_its_own(tmp_path: Path) -> None:
    from harness.archs import ARCHS
    # 6.1's keeps its old name: its build in an existing build directory stays.
    assert [kbuild.workspace_name(v) for v in ("6.1", "6.12")] == \
        ["workspace", "workspace-6.12"]
    trees = {"stock": (tmp_path / "linux-source-6.1", ()),
             "stock-6.12": (tmp_path / "linux-source-6.12", ())}
    plan = kbuild.plan(tmp_path, ARCHS["x86_64"], trees, {v: () for v in trees},
                       {"stock-6.12": "6.12"})
    assert [(k.variant, k.version, k.out.name) for k in plan.values()] == \
        [("stock", "6.1", "x86_64-stock"), ("stock-6.12", "6.12", "x86_64-stock-6.12")]
