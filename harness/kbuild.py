"""Kernel source, patches, configuration and compilation.

Layout under the build directory:
  src/linux-source-<version>/    pristine tree, extracted from Debian's tarball
  src/linux-workspace/           hard-linked copy of 6.1's, the current turn's
                                 patches applied (linux-workspace-<version>/
                                 for another version)
  kernel/<arch>-workspace/       its out-of-tree (O=) build, shared by every turn
                                 (<arch>-workspace-<version>/ for another version)
  kernel/<arch>-<variant>/       a variant's image, vmlinux (to decode its
                                 stack traces) and .config, stamped with
                                 what they were built from
  src/linux-<variant>/           a variant with a tree of its own: patched copy
  kernel/<arch>-<variant>/       ... and its own build
Every step is skipped when its inputs did not change, and kbuild itself
recompiles only what changed.

Every variant of Debian's tree (stock, patched, mutants, EXTRA_PATCHES)
differs from the others in a file or two.  A tree of their own would cost a
full build each (kbuild's command lines name the tree, so no object can be
shared between trees), so they take turns in one tree and one build: each
turn re-copies only the files a patch touches (or touched last turn), kbuild
recompiles those, and the image and .config are copied to
kernel/<arch>-<variant>/.  A cold run costs one full build per arch and a
few objects and a relink per further variant; a warm one finds every image
stamped and builds nothing.  (ccache, the other way to share objects
between trees, was measured on 2026-12-07 and shares next to nothing here:
a tree at another path misses, since kbuild's command lines and debug
info name it: see doc/performance.md.)
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

from . import kconfig, ktree, subproc
from .archs import Arch
from .errors import BuildError, ConfigError, DependencyError

# The kernel version of a variant that names none (matrix.yaml version:).
DEFAULT_VERSION = "6.1"


def tarball_of(version: str) -> Path:
    """Debian's linux-source-<version> package installs this."""
    return Path(f"/usr/src/linux-source-{version}.tar.xz")


def tree_name(version: str) -> str:
    return f"linux-source-{version}"


TARBALL = tarball_of(DEFAULT_VERSION)
TREE_NAME = tree_name(DEFAULT_VERSION)


@dataclass(frozen=True)
class Kernel:
    arch: Arch
    variant: str
    tree: Path
    out: Path
    patches: tuple[Path, ...]
    fragments: tuple[Path, ...]
    version: str = DEFAULT_VERSION      # whose workspace its turn is taken in
    flavor: str = "plain"               # ... and of which flavor (harness/flavors.py)

    @property
    def image(self) -> Path:
        return self.out / self.arch.image

    @property
    def config(self) -> Path:
        return self.out / ".config"

    @property
    def vmlinux(self) -> Path:
        """The ELF image with its symbols and line info, for
        scripts/decode_stacktrace.sh."""
        return self.out / "vmlinux"


def _digest(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\0")
    return h.hexdigest()


def _run(cmd: list[str], log: Path, what: str, cwd: Path | None = None) -> str:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        try:
            proc = subproc.run(cmd, cwd=cwd, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, env=subproc.clean_env())
        except FileNotFoundError:
            raise DependencyError(f"{what}: {cmd[0]} not found; run 'make deps'") from None
        f.write(proc.stdout)
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.splitlines()[-25:])
        raise BuildError(f"{what} failed (exit {proc.returncode}); full log: {log}\n{tail}")
    return proc.stdout


def read_series(series: Path) -> tuple[Path, ...]:
    """Patch files named by a quilt series file, in order."""
    if not series.is_file():
        raise ConfigError(f"{series}: no such series file; create it (it may be empty)")
    patches = []
    for lineno, raw in enumerate(series.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, *options = line.split()
        if options not in ([], ["-p1"]):
            raise ConfigError(f"{series}:{lineno}: patch options {' '.join(options)!r} are not "
                              "supported; make the patch apply with -p1 from the tree's top")
        patch = series.parent / name
        if not patch.is_file():
            raise ConfigError(f"{series}:{lineno}: patch {name!r} does not exist "
                              f"(looked for {patch}); add the file or drop the line")
        patches.append(patch)
    return tuple(patches)


def extract(build: Path, tarball: Path | None = None,
            version: str = DEFAULT_VERSION) -> Path:
    """The pristine tree of a kernel version, extracted once per tarball."""
    tarball = tarball or tarball_of(version)
    name = tree_name(version)
    if not tarball.is_file():
        raise BuildError(f"{tarball} not found: 'make deps' installs or fetches Debian's "
                         f"{name} (matrix.yaml sources:), or says why it cannot")
    tree = build / "src" / name
    stamp = build / "src" / f".{name}.extracted"
    st = tarball.stat()
    want = f"{tarball} {st.st_size} {st.st_mtime_ns}\n"
    if stamp.is_file() and stamp.read_text() == want and tree.is_dir():
        return tree
    if tree.exists():
        shutil.rmtree(tree)
    tree.parent.mkdir(parents=True, exist_ok=True)
    # -m: the files get the extraction time, not the archive's.  kbuild
    # rebuilds an object only when a source is newer than it: an updated
    # Debian source with the archive's (older) mtimes would leave every
    # object built from the previous one in place.
    _run(["tar", "-C", str(tree.parent), "-m", "-xf", str(tarball)],
         build / "logs" / "extract.log", f"extracting {tarball}")
    if not tree.is_dir():
        raise BuildError(f"{tarball} did not contain {name}/")
    stamp.write_text(want)
    return tree


_PATCHED_FILE = re.compile(r"^(?:\+\+\+|---) (?:[ab]/)?(\S+)")


def _files_of(patch: Path) -> set[str]:
    files = set()
    for line in patch.read_text(errors="replace").splitlines():
        if m := _PATCHED_FILE.match(line):
            if m.group(1) != "/dev/null":
                files.add(m.group(1))
    return files


def patched_tree(pristine: Path, variant: str, patches: tuple[Path, ...],
                 log: Path, copies: Path | None = None,
                 lenient: tuple[Path, ...] = (), always_copy: bool = False,
                 overlay: ktree.Overlay | None = None) -> Path:
    """A copy of the pristine tree, made under copies (default: next to it),
    with the patches applied; the pristine tree itself when there are none,
    unless always_copy (the workspace: its build must keep one tree path).
    Patches in lenient (someone's EXTRA_PATCHES, written against the plain
    tree) may apply with fuzz where our series changed their context; the
    series itself must apply exactly, as git am would.  overlay's files (a
    tree of one's own that differs from pristine in these) replace the
    pristine ones, after the patches."""
    if not patches and not overlay and not always_copy:
        return pristine
    copies = copies or pristine.parent
    dest = copies / f"linux-{variant}"
    stamp = copies / f".linux-{variant}.patches"
    # The pristine tree's identity too: a re-extracted (updated) source must
    # not be patched over by a copy of the old one.
    origin = (pristine / "Makefile").stat()
    origin_id = f"origin {pristine} {origin.st_ino} {origin.st_mtime_ns}"
    want = _digest(origin_id, *(p.name + "\n" + p.read_text(errors="replace") for p in patches),
                   *((f"overlay {overlay.tree} {overlay.digest()}",) if overlay else ()))
    touched: set[str] = set().union(*(_files_of(p) for p in patches),
                                    overlay.files if overlay else ())
    previous: set[str] = set()
    same_origin = False
    if stamp.is_file():
        old = stamp.read_text().splitlines()
        if old and old[0] == want and dest.is_dir():
            return dest
        previous = {f for f in old[1:] if not f.startswith("origin ")}
        same_origin = dest.is_dir() and origin_id in old[1:2]
    if not same_origin:
        if dest.exists():
            shutil.rmtree(dest)
        _run(["cp", "-al", str(pristine), str(dest)], log, f"copying {pristine}")
    # The patches are applied to private copies of the files they touch (or
    # touched last time) in a staging directory: a patch that does not apply
    # leaves the tree as it was.
    restore = touched | previous
    staging = copies / f".linux-{variant}.staging"
    if staging.exists():
        shutil.rmtree(staging)
    for rel in restore:
        if (pristine / rel).is_file():
            (staging / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(pristine / rel, staging / rel)
    staging.mkdir(parents=True, exist_ok=True)
    for patch in patches:
        _apply(patch, staging, variant, pristine, log, patch in lenient)
    for rel in overlay.files if overlay else ():
        src, new = overlay.tree / rel, staging / rel
        new.unlink(missing_ok=True)
        if src.is_file():
            new.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, new)
            shutil.copymode(src, new)
    # Until the files are in, the stamp names every file to restore, so an
    # interrupted turn is undone next time.
    stamp.write_text("dirty\n" + origin_id + "\n" + "\n".join(sorted(restore)) + "\n")
    # Only a file whose content changes is replaced (never written through:
    # untouched files are hard links to the pristine tree's inodes), and gets
    # a fresh mtime, so kbuild recompiles it, also when its patch was just
    # dropped.  A file with the content it had keeps its mtime, and the
    # objects built from that content: a turn costs only what differs from
    # the previous one.
    for rel in sorted(restore):
        f, new = dest / rel, staging / rel
        if new.is_file() and f.is_file() and not f.is_symlink() \
                and f.read_bytes() == new.read_bytes():
            continue
        if f.is_file() or f.is_symlink():
            f.unlink()
        if new.is_file():
            f.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(new, f)
            shutil.copymode(new, f)
    shutil.rmtree(staging)
    stamp.write_text(want + "\n" + origin_id + "\n" + "\n".join(sorted(touched)) + "\n")
    return dest


def _apply(patch: Path, tree: Path, variant: str, pristine: Path, log: Path,
           lenient: bool) -> None:
    try:
        # --fuzz=0: what git am would reject must not apply here either.
        cmd = ["patch", "-p1", "--batch", "--forward", "--fuzz=0", "-d", str(tree),
               "-i", str(patch)]
        try:
            _run(cmd, log, f"applying {patch}")
        except BuildError:
            if not lenient:
                raise
            # patch --dry-run first: a failed attempt must leave no half.
            _run([*cmd[:4], "--dry-run", *cmd[5:]], log, f"applying {patch} with fuzz")
            _run([c for c in cmd if c != "--fuzz=0"], log, f"applying {patch} with fuzz")
    except BuildError as e:
        raise BuildError(
            f"{patch} does not apply to {pristine.name} (variant {variant!r}). "
            f"Refresh it against {pristine} or drop it from the series.\n{e}") from None


def _make(k: Kernel, *targets: str, jobs: int, log: Path) -> str:
    cmd = ["make", "-C", str(k.tree), f"O={k.out}", f"ARCH={k.arch.kernel_arch}",
           f"-j{jobs}", *targets]
    if k.arch.cross_compile:
        cmd.insert(5, f"CROSS_COMPILE={k.arch.cross_compile}")
    return _run(cmd, log, f"make {' '.join(targets)} for {k.arch.name}-{k.variant}")


def configure(k: Kernel, log: Path) -> None:
    """tinyconfig + fragments + olddefconfig, then check every requested
    option survived.  Skipped when the fragments did not change."""
    requested: dict[str, str] = {}
    for frag in k.fragments:
        requested.update(kconfig.parse_file(frag))
    want = _digest(str(k.tree), *(f.read_text() for f in k.fragments))
    stamp = k.out / ".harness-config"
    if not (stamp.is_file() and stamp.read_text() == want and k.config.is_file()):
        k.out.mkdir(parents=True, exist_ok=True)
        _make(k, "tinyconfig", jobs=1, log=log)
        env_merge = [str(k.tree / "scripts/kconfig/merge_config.sh"), "-m", "-O", str(k.out),
                     str(k.config), *(str(f.resolve()) for f in k.fragments)]
        _run(env_merge, log, "merge_config.sh", cwd=k.tree)
        _make(k, "olddefconfig", jobs=1, log=log)
    kconfig.check(requested, k.config, list(k.fragments))
    stamp.write_text(want)


def compile_kernel(k: Kernel, jobs: int, log: Path) -> int:
    """Run kbuild; returns how many objects it (re)compiled."""
    out = _make(k, k.arch.image_target, jobs=jobs, log=log)
    if not k.image.is_file():
        raise BuildError(f"kbuild succeeded but {k.image} is missing; see {log}")
    return sum(1 for line in out.splitlines() if re.match(r"^\s+(CC|AS)\s", line))


def plan(build: Path, arch: Arch, variants: dict[str, tuple[Path, tuple[Path, ...]]],
         fragments: dict[str, tuple[Path, ...]],
         versions: dict[str, str] | None = None,
         flavors: dict[str, str] | None = None) -> dict[str, Kernel]:
    """One Kernel per variant (source tree, patches; versions: its kernel
    version, default DEFAULT_VERSION; flavors: its flavor, default plain);
    variants with the same tree, patches and configuration share one."""
    kernels: dict[str, Kernel] = {}
    shared: dict[tuple[Path, tuple[Path, ...], tuple[Path, ...]], Kernel] = {}
    for variant, (tree, patches) in variants.items():
        key = (tree.resolve(), tuple(p.resolve() for p in patches),
               tuple(f.resolve() for f in fragments[variant]))
        if key in shared:
            kernels[variant] = shared[key]
            continue
        k = Kernel(arch=arch, variant=variant, tree=tree,
                   out=build / "kernel" / f"{arch.name}-{variant}",
                   patches=patches, fragments=fragments[variant],
                   version=(versions or {}).get(variant, DEFAULT_VERSION),
                   flavor=(flavors or {}).get(variant, "plain"))
        kernels[variant] = shared[key] = k
    return kernels


def own_out_dir(out: Path) -> None:
    """Makes out a directory of its own: it may still be the symlink of a
    variant that used to share another's build (see link_alias), and
    building through it would overwrite that other build."""
    if out.is_symlink():
        out.unlink()
    out.mkdir(parents=True, exist_ok=True)


WORKSPACE = "workspace"


def workspace_name(version: str, flavor: str = "plain") -> str:
    """Each kernel version takes its turns in a workspace of its own (no
    object is shared between versions), and so does each flavor (another
    configuration recompiles everything); plain 6.1's keeps the name it
    always had, so that its build survives."""
    name = WORKSPACE if version == DEFAULT_VERSION else f"{WORKSPACE}-{version}"
    return name if flavor == "plain" else f"{name}-{flavor}"


def build_kernel(build: Path, k: Kernel, jobs: int, workspace: bool = False,
                 lenient: tuple[Path, ...] = (),
                 overlay: ktree.Overlay | None = None) -> tuple[Kernel, int]:
    """With overlay (k.tree is Debian's tree plus a few changed files, see
    ktree), a turn of the workspace on overlay.base."""
    own_out_dir(k.out)
    log = build / "logs" / f"kernel-{k.arch.name}-{k.variant}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    if not (k.tree / "Makefile").is_file() or not (k.tree / "Kconfig").is_file():
        raise BuildError(f"{k.tree} is not a kernel source tree (no Makefile/Kconfig there); "
                         f"check the tree of variant {k.variant!r}")
    if overlay:
        return _build_in_workspace(build, replace(k, tree=overlay.base), jobs, log, lenient,
                                   overlay)
    if workspace:
        return _build_in_workspace(build, k, jobs, log, lenient)
    tree = patched_tree(k.tree, k.variant, k.patches, log, build / "src", lenient)
    k = replace(k, tree=tree)
    configure(k, log)
    compiled = compile_kernel(k, jobs, log)
    return k, compiled


def _build_in_workspace(build: Path, k: Kernel, jobs: int, log: Path,
                        lenient: tuple[Path, ...],
                        overlay: ktree.Overlay | None = None) -> tuple[Kernel, int]:
    origin = (k.tree / "Makefile").stat()
    want = _digest(f"{k.tree} {origin.st_ino} {origin.st_mtime_ns}",
                   *(p.name + "\n" + p.read_text(errors="replace") for p in k.patches),
                   *((f"overlay {overlay.tree} {overlay.digest()}",) if overlay else ()),
                   *(f.read_text() for f in k.fragments),
                   # Files the fragments name (the test CA): the .config
                   # text stays the same when they change.
                   *(_named_files(f) for f in k.fragments))
    stamp = k.out / ".harness-snapshot"
    image = k.out / k.arch.image
    vmlinux = k.out / "vmlinux"
    workspace = workspace_name(k.version, k.flavor)
    if stamp.is_file() and stamp.read_text() == want and image.is_file() and vmlinux.is_file():
        return replace(k, tree=build / "src" / f"linux-{workspace}"), 0
    tree = patched_tree(k.tree, workspace, k.patches, log, build / "src", lenient,
                        always_copy=True, overlay=overlay)
    ws = replace(k, variant=workspace, tree=tree,
                 out=build / "kernel" / f"{k.arch.name}-{workspace}")
    own_out_dir(ws.out)
    configure(ws, log)
    compiled = compile_kernel(ws, jobs, log)
    _drop_stale_build(k.out)
    image.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ws.image, image)
    shutil.copyfile(ws.vmlinux, vmlinux)
    shutil.copyfile(ws.config, k.config)
    stamp.write_text(want)
    return replace(k, tree=tree), compiled


def _named_files(fragment: Path) -> str:
    """The contents of the absolute paths a Kconfig fragment names."""
    named = re.findall(r'^CONFIG_\w+="(/[^"]+)"', fragment.read_text(), re.M)
    return "".join(Path(f).read_text(errors="replace") if Path(f).is_file() else f"{f} missing"
                   for f in named)


def _drop_stale_build(out: Path) -> None:
    """A variant that used to be built in a tree of its own leaves a whole
    kbuild output in its directory; only its image and .config are kept now."""
    if (out / "Makefile").is_file() and (out / "vmlinux").exists():
        shutil.rmtree(out)


def link_alias(build: Path, arch: Arch, alias: str, target: Kernel) -> None:
    """kernel/<arch>-<alias> -> the build it shares."""
    link = build / "kernel" / f"{arch.name}-{alias}"
    if link == target.out:
        return
    if link.is_symlink() or link.is_file():
        link.unlink()
    elif link.is_dir():
        shutil.rmtree(link)
    os.symlink(target.out.name, link)
