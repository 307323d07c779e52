"""The initramfs is packed again when, and only when, an input changed."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from harness import initramfs
from harness.archs import ARCHS

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A copy of the repository's initramfs/ sources, to add a tool to."""
    shutil.copytree(REPO / "initramfs", tmp_path / "repo" / "initramfs")
    return tmp_path / "repo"


@pytest.fixture
def staged(tmp_path: Path) -> Path:
    """A staged selftests tree: ima_appraise/ with its settings only."""
    (tmp_path / "selftests" / "ima_appraise").mkdir(parents=True)
    (tmp_path / "selftests" / "ima_appraise" / "settings").write_text("timeout=300\n")
    return tmp_path / "selftests"


def test_a_tool_added_to_the_guest_packs_the_initramfs_again(
        repo: Path, staged: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    arch, build = ARCHS["x86_64"], tmp_path / "build"
    out = initramfs.build_initramfs(repo, build, arch, staged)
    packed = out.stat().st_mtime_ns
    assert initramfs.build_initramfs(repo, build, arch, staged).stat().st_mtime_ns == packed

    (repo / "initramfs" / "hello.c").write_text("int main(void) { return 0; }\n")
    monkeypatch.setitem(initramfs.TOOLS, "hello", "usr/bin/hello")
    out = initramfs.build_initramfs(repo, build, arch, staged)
    assert b"usr/bin/hello" in out.read_bytes()


@pytest.mark.parametrize("change", ["init edited", "selftest removed", "selftest added"])
def test_a_changed_input_packs_the_initramfs_again(repo: Path, staged: Path, tmp_path: Path,
                                                   change: str) -> None:
    arch, build = ARCHS["x86_64"], tmp_path / "build"
    (staged / "ima_appraise" / "old_test").write_text("#!/bin/sh\n")
    packed = initramfs.build_initramfs(repo, build, arch, staged).read_bytes()
    if change == "init edited":
        with open(repo / "initramfs" / "init", "a") as f:
            f.write("# edited\n")
    elif change == "selftest removed":
        (staged / "ima_appraise" / "old_test").unlink()
    else:
        (staged / "ima_appraise" / "new_test").write_text("#!/bin/sh\n")
    again = initramfs.build_initramfs(repo, build, arch, staged).read_bytes()
    assert again != packed
    assert (b"# edited" in again) == (change == "init edited")
    assert (b"old_test" in again) == (change != "selftest removed")
    assert (b"new_test" in again) == (change == "selftest added")


def test_a_change_in_how_it_packs_packs_it_again(repo: Path, staged: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """An edit of harness/initramfs.py is an input, and so is the stamp of
    an older harness (one that listed its own inputs): both pack again."""
    arch, build = ARCHS["x86_64"], tmp_path / "build"
    packer = tmp_path / "initramfs.py"
    packer.write_text(Path(initramfs.__file__).read_text())
    monkeypatch.setattr(initramfs, "__file__", str(packer))
    packs = []
    write = initramfs.Archive.write
    monkeypatch.setattr(initramfs.Archive, "write",
                        lambda self, out: (packs.append(out), write(self, out)))
    out = initramfs.build_initramfs(repo, build, arch, staged)
    initramfs.build_initramfs(repo, build, arch, staged)
    assert len(packs) == 1

    with open(packer, "a") as f:
        f.write("# packs differently\n")
    initramfs.build_initramfs(repo, build, arch, staged)
    assert len(packs) == 2

    stamp = out.with_name(f".{out.name}.inputs")
    stamp.write_text('{"host": [], "fingerprint": "%s"}' % initramfs._fingerprint([]))
    initramfs.build_initramfs(repo, build, arch, staged)
    assert len(packs) == 3
    initramfs.build_initramfs(repo, build, arch, staged)
    assert len(packs) == 3


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_make_gets_the_guest_arch_libraries_only(tmp_path: Path, arch: str) -> None:
    """A root with another arch's libc beside the guest's (i386 multiarch
    on an amd64 host): the guest's is packed, whatever the listing order."""
    a = ARCHS[arch]
    # Decoys: a search by directory listing order finds the guest's first
    # only once in 21 times.
    decoys = [f"arch{n}-linux-gnu" for n in range(19)] + ["i386-linux-gnu"]
    for triplet in (*decoys, a.multiarch):
        (tmp_path / "lib" / triplet).mkdir(parents=True)
        (tmp_path / "lib" / triplet / "libc.so.6").write_text(triplet)
    assert initramfs._find_lib(tmp_path, "libc.so.6", a) == \
        tmp_path / "lib" / a.multiarch / "libc.so.6"
    with pytest.raises(initramfs.DependencyError, match="libz.so.1 for " + arch):
        initramfs._find_lib(tmp_path, "libz.so.1", a)


def test_a_selftest_program_gets_the_libraries_it_needs(repo: Path, staged: Path,
                                                        tmp_path: Path) -> None:
    """The programs are linked against libc as kselftest links them: a
    program that needs a library make does not (libm) brings it in, with
    the links ld.so's search path finds."""
    arch, build = ARCHS["x86_64"], tmp_path / "build"
    if shutil.which(arch.cc) is None:
        pytest.skip(f"{arch.cc} not installed")
    src = tmp_path / "m.c"
    src.write_text("#include <math.h>\nint main(int c, char **v) { return (int)cos(c); }\n")
    prog = staged / "ima_appraise" / "m_test"
    subprocess.run([arch.cc, "-O2", "-Wl,--no-as-needed", "-o", str(prog), str(src), "-lm"],
                   check=True)
    assert "libm.so.6" in initramfs._elf_deps(prog)[0]
    entries = initramfs.build_initramfs(repo, build, arch, staged).read_bytes()
    assert f"lib/{arch.multiarch}/libm.so.6\0".encode() in entries
    assert b"usr/lib/libm.so.6\0" in entries
    assert f"lib/{arch.multiarch}/libc.so.6\0".encode() in entries
