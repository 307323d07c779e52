"""The guest userland: busybox, make, the init and the selftests, packed
into one initramfs per arch.

The selftests are staged under build/selftests/<arch>/ as a small copy of
tools/testing/selftests (our selftests/ plus lib.mk, kselftest_harness.h
and kselftest/ from the extracted kernel tree) and compiled there, so the
guest's /selftests is exactly what a user would run by hand:
'make -C /selftests run_tests'.  The guests run it so in a few cells of
each kernel, and through ksft-run (initramfs/ksft-run.c, the same output
in fewer processes) in the others (initramfs/init).
"""
from __future__ import annotations

import hashlib
import json
import re
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from . import keys, subproc
from .archs import Arch
from .errors import BuildError, DependencyError

# Copied from the kernel tree next to our selftests/ (never into the repo).
KSELFTEST_FILES = ("lib.mk", "kselftest_harness.h", "kselftest.h",
                   "kselftest/runner.sh", "kselftest/prefix.pl")
# In the archive, sources get an older mtime than the binaries built from
# them, so the guest's make has nothing to rebuild (and no clock skew
# warnings: the guest has no RTC and believes it is 1970).
SOURCE_MTIME, BINARY_MTIME = 1, 2


def _copy_if_changed(src: Path, dst: Path) -> None:
    if dst.is_file() and dst.read_bytes() == src.read_bytes():
        return
    dst.parent.mkdir(parents=True, exist_ok=True)
    # A fresh mtime, not src's: the stage is shared by every worktree that
    # uses this build directory, and a source older than the binary another
    # worktree built there would not be recompiled.
    shutil.copy(src, dst)


# lib.mk's binaries depend on their sources, not on the rules and flags
# that build them: a change to one of these rebuilds every program.
_RULE_FILES = ("Makefile", "lib.mk")


def build_selftests(repo: Path, tree: Path, arch: Arch, build: Path, jobs: int) -> Path:
    stage = build / "selftests" / arch.name
    src = repo / "selftests"
    ksft = tree / "tools" / "testing" / "selftests"
    # Marked before a new rule file is staged, unmarked once a rebuild of
    # all succeeded: a run stopped in between (a failed build, Ctrl-C)
    # leaves the mark for the next one.
    rebuild_all = stage / ".rebuild-all"
    files = [(f, stage / f.relative_to(src)) for f in src.rglob("*") if f.is_file()]
    files += [(ksft / name, stage / name) for name in KSELFTEST_FILES]
    for f, dst in files:
        if dst.name in _RULE_FILES and not (dst.is_file() and dst.read_bytes() == f.read_bytes()):
            stage.mkdir(parents=True, exist_ok=True)
            rebuild_all.touch()
        _copy_if_changed(f, dst)
    log = build / "logs" / f"selftests-{arch.name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    cmd = ["make", "-C", str(stage), f"-j{jobs}", "all", f"CROSS_COMPILE={arch.cross_compile}"]
    if rebuild_all.exists():
        cmd.insert(3, "--always-make")
    try:
        proc = subproc.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, env=subproc.clean_env())
    except FileNotFoundError:
        raise DependencyError("make not found: run 'make deps'") from None
    log.write_text("$ " + " ".join(cmd) + "\n" + proc.stdout)
    if proc.returncode:
        hint = (f" ({arch.cc} missing? run 'make deps')"
                if "not found" in proc.stdout or "No such file" in proc.stdout else "")
        raise BuildError(f"building the selftests for {arch.name} failed{hint}; log: {log}\n"
                         + "\n".join(proc.stdout.splitlines()[-25:]))
    rebuild_all.unlink(missing_ok=True)
    _write_test_list(stage, arch, log)
    keys.stage_guest_keys(keys.ensure(build), stage)   # certificates and signatures, no keys
    return stage


# "<target>:<program>" per line, in run_tests' order: what the guest's
# ksft-run boots (initramfs/init), as kselftest's 'make install' lists them.
TEST_LIST = "kselftest-list.txt"


def _write_test_list(stage: Path, arch: Arch, log: Path) -> None:
    cmd = ["make", "-s", "--no-print-directory", "-C", str(stage), "emit_tests",
           f"CROSS_COMPILE={arch.cross_compile}"]
    proc = subproc.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       env=subproc.clean_env())
    lines = proc.stdout.splitlines()
    if proc.returncode or not lines or not all(re.fullmatch(r"[\w.-]+:[\w.+-]+", x)
                                               for x in lines):
        with log.open("a") as f:
            f.write("$ " + " ".join(cmd) + "\n" + proc.stdout)
        raise BuildError(f"listing the selftest programs for {arch.name} ('make emit_tests' in "
                         f"{stage}) failed or printed something else than <target>:<program> "
                         f"lines; log: {log}\n" + "\n".join(lines[-10:]))
    out = stage / TEST_LIST
    text = "\n".join(lines) + "\n"
    if not (out.is_file() and out.read_text() == text):
        out.write_text(text)


# ---- guest userland -------------------------------------------------------

def _deb_root(build: Path, arch: Arch) -> Path:
    """Debian's arm64 packages unpacked with dpkg-deb (see scripts/deps.sh)."""
    debdir = build / "debs" / arch.debian_arch
    root = build / "userland" / arch.debian_arch
    debs = sorted(debdir.glob("*.deb"))
    if not debs:
        raise DependencyError(f"no {arch.debian_arch} packages in {debdir}: run 'make deps'")
    stamp = root / ".debs"
    want = "\n".join(d.name for d in debs)
    if not (stamp.is_file() and stamp.read_text() == want):
        if root.exists():
            shutil.rmtree(root)
        root.mkdir(parents=True)
        for deb in debs:
            if subprocess.run(["dpkg-deb", "-x", str(deb), str(root)]).returncode:
                raise DependencyError(f"dpkg-deb -x {deb} failed: delete it and run 'make deps'")
        stamp.write_text(want)
    return root


def _host_root(build: Path, arch: Arch) -> Path:
    if arch.debian_arch == _host_debian_arch():
        return Path("/")
    return _deb_root(build, arch)


def _host_debian_arch() -> str:
    try:
        return subprocess.run(["dpkg", "--print-architecture"], stdout=subprocess.PIPE,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        raise DependencyError("dpkg --print-architecture failed: this needs a Debian "
                              "host (see README)") from None


def _elf_deps(binary: Path) -> tuple[list[str], str | None]:
    """NEEDED libraries and the program interpreter, read with readelf
    (works for any target arch)."""
    try:
        out = subprocess.run(["readelf", "-d", "-l", "-W", str(binary)], stdout=subprocess.PIPE,
                             text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise DependencyError(f"readelf {binary}: {e}; install binutils ('make deps')") from None
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)
    interp = re.search(r"Requesting program interpreter: ([^\]]+)\]", out)
    return needed, interp.group(1) if interp else None


def _find_lib(root: Path, name: str, arch: Arch) -> Path:
    """The guest arch's library: in its multiarch directory, or a plain
    one; never another arch's (a host with i386's libc has two)."""
    for d in ("lib", "usr/lib", "lib64"):
        for path in (root / d / arch.multiarch / name, root / d / name):
            if path.exists():
                return path
    raise DependencyError(f"shared library {name} for {arch.name} not found under {root}: "
                          "run 'make deps'")


def _is_elf(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


@dataclass
class Archive:
    """A newc cpio written by hand: root-owned entries, fixed mtimes and a
    /dev/console node, none of which need privileges or a host mount."""
    entries: dict[str, tuple[int, bytes, int, int]]  # path -> (mode, data, mtime, rdev)
    sources: list[Path]     # host files packed in besides the selftests

    def __init__(self) -> None:
        self.entries = {}
        self.sources = []

    def dir(self, path: str) -> None:
        parts = path.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            self.entries.setdefault("/".join(parts[:i]), (stat.S_IFDIR | 0o755, b"", SOURCE_MTIME, 0))

    def file(self, path: str, data: bytes, mode: int = 0o644, mtime: int = SOURCE_MTIME) -> None:
        path = path.strip("/")
        if "/" in path:
            self.dir(path.rsplit("/", 1)[0])
        self.entries[path] = (stat.S_IFREG | mode, data, mtime, 0)

    def symlink(self, path: str, target: str) -> None:
        path = path.strip("/")
        if "/" in path:
            self.dir(path.rsplit("/", 1)[0])
        self.entries[path] = (stat.S_IFLNK | 0o777, target.encode(), SOURCE_MTIME, 0)

    def chardev(self, path: str, major: int, minor: int) -> None:
        self.dir(path.strip("/").rsplit("/", 1)[0])
        self.entries[path.strip("/")] = (stat.S_IFCHR | 0o600, b"", SOURCE_MTIME,
                                         (major << 8) | minor)

    def tree(self, prefix: str, src: Path) -> None:
        for f in sorted(src.rglob("*")):
            rel = f"{prefix}/{f.relative_to(src)}"
            if f.is_dir():
                self.dir(rel)
            elif f.is_file():
                data = f.read_bytes()
                is_elf = data[:4] == b"\x7fELF"
                self.file(rel, data, f.stat().st_mode & 0o777,
                          BINARY_MTIME if is_elf else SOURCE_MTIME)

    def write(self, out: Path) -> None:
        def pad(n: int) -> bytes:
            return b"\0" * (-n % 4)

        chunks = []
        for ino, path in enumerate(sorted(self.entries) + ["TRAILER!!!"], 1):
            mode, data, mtime, rdev = self.entries.get(path, (0, b"", 0, 0))
            name = path.encode() + b"\0"
            fields = (ino, mode, 0, 0, 1 if not stat.S_ISDIR(mode) else 2, mtime, len(data),
                      0, 0, rdev >> 8, rdev & 0xff, len(name), 0)
            hdr = b"070701" + b"".join(b"%08X" % v for v in fields)
            chunks += [hdr, name, pad(len(hdr) + len(name)), data, pad(len(data))]
        blob = b"".join(chunks)
        if out.is_file() and out.read_bytes() == blob:
            return
        tmp = out.with_suffix(".tmp")
        tmp.write_bytes(blob)
        tmp.replace(out)


def _fingerprint(files: list[Path]) -> str:
    h = hashlib.sha256()
    for f in files:
        try:
            st = f.stat()
            h.update(f"{f} {st.st_size} {st.st_mtime_ns}\n".encode())
        except OSError:
            h.update(f"{f} missing\n".encode())
    return h.hexdigest()


# The guest's own programs, initramfs/<name>.c, and where they go: what
# prints the guest's whole kernel log after the tests (harness/kernlog.py),
# the timeout kselftest's runner.sh calls (GNU's behaviour, tested in
# harness/tests/test_timeout.py), and what runs the programs as runner.sh
# does, in fewer processes (harness/tests/test_ksft_run.py).
TOOLS = {"kmsg-dump": "usr/bin/kmsg-dump", "timeout": "usr/bin/timeout",
         "ksft-run": "usr/bin/ksft-run"}


def build_tool(repo: Path, build: Path, arch: Arch, name: str) -> Path:
    """initramfs/<name>.c, static, for arch; compiled again only when its
    source or the compiler's name changed."""
    src = repo / "initramfs" / f"{name}.c"
    out = build / "initramfs" / f"{name}-{arch.name}"
    stamp = out.with_name(f".{out.name}.sha256")
    digest = hashlib.sha256(src.read_bytes() + arch.cc.encode()).hexdigest()
    if out.is_file() and stamp.is_file() and stamp.read_text() == digest:
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [arch.cc, "-static", "-O2", "-Wall", "-Werror", "-o", str(out), str(src)]
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=subproc.clean_env())
    except FileNotFoundError:
        raise DependencyError(f"{arch.cc} not found: run 'make deps'") from None
    if proc.returncode:
        raise BuildError(f"building {src} for {arch.name} failed:\n{proc.stdout.strip()}")
    stamp.write_text(digest)
    return out


def _add_libs(a: "Archive", root: Path, arch: Arch, binaries: list[Path]) -> None:
    """The shared libraries binaries need (NEEDED, not the libraries'
    own: glibc's need only the loader), and their program interpreters,
    from the guest arch's root; each library also linked from /lib and
    /usr/lib, ld.so's default search path."""
    seen = set()
    for binary in binaries:
        needed, interp = _elf_deps(binary)
        for lib in needed:
            if lib in seen:
                continue
            seen.add(lib)
            path = _find_lib(root, lib, arch)
            rel = str(path.relative_to(root))
            a.sources.append(path.resolve())
            a.file(rel, path.resolve().read_bytes(), 0o755, BINARY_MTIME)
            for link in (f"lib/{lib}", f"usr/lib/{lib}"):
                if link != rel:
                    a.symlink(link, "/" + rel)
        if interp and interp not in seen:
            seen.add(interp)
            src = (root / interp.lstrip("/")).resolve()
            if not src.is_file():
                raise DependencyError(f"program interpreter {interp} for {arch.name} not "
                                      f"found under {root}: run 'make deps'")
            a.sources.append(src)
            a.file(interp, src.read_bytes(), 0o755, BINARY_MTIME)


def build_initramfs(repo: Path, build: Path, arch: Arch, selftests: Path) -> Path:
    """The cpio, packed again only when one of its inputs changed (by size
    and mtime): the staged selftests, the init and tools, the host's
    binaries, this file, and the shared libraries make and the programs
    needed at the last pack."""
    out = build / "initramfs" / f"{arch.name}.cpio"
    stamp = out.with_name(f".{out.name}.inputs")
    tools = {name: build_tool(repo, build, arch, name) for name in TOOLS}
    staged = sorted(f for f in selftests.rglob("*") if f.is_file())
    root = _host_root(build, arch)
    busybox = root / "bin" / "busybox"
    make = root / "usr" / "bin" / "make"
    # What is known before packing: a tool added to TOOLS, or a change in
    # how this file packs, is a new input.  The shared libraries (make's,
    # and a dynamic program's) are known only once the binaries are read:
    # those of the last pack are compared.
    known = [repo / "initramfs" / "init", *tools.values(), busybox, Path("/bin/busybox"),
             make, Path(__file__)]
    try:
        old = json.loads(stamp.read_text())
        libs = [Path(f) for f in old["libs"]]
        if out.is_file() and old["fingerprint"] == _fingerprint(known + libs + staged):
            return out
    except (OSError, ValueError, KeyError, TypeError):
        pass
    a = Archive()
    for d in ("proc", "sys", "dev", "tmp", "mnt/scratch", "root", "etc"):
        a.dir(d)
    a.chardev("dev/console", 5, 1)
    a.file("init", (repo / "initramfs" / "init").read_bytes(), 0o755)

    if not busybox.is_file():
        raise DependencyError(f"{busybox} missing: install busybox-static ('make deps')")
    a.file("bin/busybox", busybox.read_bytes(), 0o755)
    # The applet list of the host's busybox-static: the same Debian version
    # as the arm64 one (both come from 'make deps').
    applets = subprocess.run([str(Path("/bin/busybox")), "--list-full"],
                             stdout=subprocess.PIPE, text=True).stdout.split()
    if not applets:
        raise DependencyError("/bin/busybox --list-full listed nothing: install "
                              "busybox-static ('make deps')")
    for applet in applets:
        if applet != "bin/busybox":
            a.symlink(applet, "/bin/busybox")

    for name, path in TOOLS.items():
        a.file(path, tools[name].read_bytes(), 0o755, BINARY_MTIME)

    # make, and the shared libraries it and the selftest programs need (the
    # programs are linked as kselftest links them, against the guest's
    # libc), at the paths their loader expects.
    if not make.is_file():
        raise DependencyError(f"{make} missing: run 'make deps'")
    a.file("usr/bin/make", make.read_bytes(), 0o755, BINARY_MTIME)
    _add_libs(a, root, arch, [make] + [f for f in staged if _is_elf(f)])

    a.tree("selftests", selftests)
    out.parent.mkdir(parents=True, exist_ok=True)
    a.write(out)
    stamp.write_text(json.dumps({"libs": [str(f) for f in a.sources],
                                 "fingerprint": _fingerprint(known + a.sources + staged)}))
    return out
