"""Debian's kernels as they ship: a variant with `image:` boots a
linux-image package of Debian's archive, its own vmlinuz, configuration and
modules, and builds nothing.

    variants:
      debian-6.1:
        image:
          package: "linux-image-6.1.0-57-{arch}"   # {arch}: amd64, arm64
          debian_version: "6.1.192-3"
          suite: bookworm-security

The package (and the packages of the same version it depends on, as sid's
linux-image-X is linux-binary-X plus linux-modules-X) is downloaded with a
private apt configuration (harness/sources.py's: lists and caches of its
own under build/debs/<suite>/apt/, the machine's apt untouched) into
build/debs/<suite>/ and unpacked there with dpkg-deb: nothing is installed
on the host.  Its modules the guest needs (GUEST_MODULES and what
modules.dep says they need) go into a cpio of their own, appended to the
arch's initramfs; the guest's /init insmods them in the order
/lib/modules/load.list gives, before it mounts anything.  Compressed
modules are decompressed here (busybox's insmod reads plain ELF only).

Splats are decoded with the package's -dbg vmlinux, downloaded on demand
(it is 0.9-1.2 GB): only when a cell of that kernel has a splat, or with
`python3 -m harness.images fetch --dbg`.
"""
from __future__ import annotations

import lzma
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from . import sources
from .archs import ARCHS, Arch
from .errors import ConfigError, DependencyError, HarnessError

IMAGE_KEYS = ("package", "debian_version", "suite")
_SUITE = re.compile(r"[a-z][a-z0-9-]*")
# What the guest needs that Debian builds as modules: the scratch and dump
# disks (virtio over PCI on both arches' machines), the scratch filesystem
# and the crc32c its metadata checksums take (ext4 and jbd2 ask the crypto
# API for it, which would call a modprobe the guest does not have), and
# overlayfs (overlay_test).  A name the kernel has built in is skipped; one
# with a "?" may be neither (7.x has crc32c as a library: no crc32c_generic).
GUEST_MODULES = ("virtio_pci", "virtio_blk", "crc32c_generic?", "ext4", "overlay")
LOAD_LIST = "lib/modules/load.list"
# More kernel command line for every boot of a Debian image: its log buffer
# (CONFIG_LOG_BUF_SHIFT=17, 128 KiB) wraps before a cell ends, and a log
# that is not whole is the cell's error (doc/verdicts.md); the harness's
# own kernels have 1 MiB.
BOOT_ARGS = "log_buf_len=1M"


def boot_args(hash_name: str) -> str:
    """BOOT_ARGS, and the cell's hash spelt out: a sha1 cell of the matrix
    has no ima_hash= (the harness's kernels default to SHA-1), and Debian's
    default is SHA-256 (CONFIG_IMA_DEFAULT_HASH): the cell tests what its
    name says, SHA-1 labels, with ima_hash=sha1.  Without it the tests
    would follow the kernel's default (selftests cell.h reads it from the
    boot_aggregate) and the sha1 cell would test SHA-256 again."""
    return f"{BOOT_ARGS} ima_hash=sha1" if hash_name == "sha1" else BOOT_ARGS


@dataclass(frozen=True)
class Image:
    package: str            # a Debian package name; {arch} is the dpkg architecture
    debian_version: str
    suite: str

    def package_for(self, arch: Arch) -> str:
        return self.package.replace("{arch}", arch.debian_arch)

    def root(self, build: Path, arch: Arch) -> Path:
        """Where the package and its own dependencies are unpacked."""
        return (build / "debs" / self.suite
                / f"{self.package_for(arch)}_{self.debian_version}_{arch.debian_arch}")

    def describe(self, arch: Arch) -> str:
        return f"Debian {self.suite}'s {self.package_for(arch)} {self.debian_version}"

    @property
    def version(self) -> str:
        """major.minor of the kernel: what the matrix's skips: judge by."""
        m = re.match(r"(?:\d+:)?(\d+)\.(\d+)", self.debian_version)
        return f"{m.group(1)}.{m.group(2)}" if m else "0.0"


def parse(value: object, where: str) -> Image:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a mapping with keys {', '.join(IMAGE_KEYS)} "
                          "(a Debian linux-image package as it ships); found "
                          f"{value!r}")
    for key in value:
        if key not in IMAGE_KEYS:
            raise ConfigError(f"{where}: unknown key {key!r}; allowed: {', '.join(IMAGE_KEYS)}")
    for key in IMAGE_KEYS:
        if key not in value:
            raise ConfigError(f"{where}: missing key {key!r}; an image names its package, "
                              "its exact debian_version and the suite it is in, e.g. "
                              "{package: \"linux-image-6.1.0-57-{arch}\", debian_version: "
                              "\"6.1.192-3\", suite: bookworm-security}")
    package, version, suite = value["package"], value["debian_version"], value["suite"]
    if not isinstance(package, str) or not re.fullmatch(r"linux-image-[a-z0-9.+{}-]+", package) \
            or package.replace("{arch}", "").count("{") or package.count("}") \
            != package.count("{arch}"):
        raise ConfigError(f"{where}.package: expected a linux-image package name, "
                          "{arch} standing for the dpkg architecture (amd64, arm64), "
                          f"such as \"linux-image-6.1.0-57-{{arch}}\"; found {package!r}")
    if not isinstance(version, str) or not sources._DEBIAN_VERSION.fullmatch(version) \
            or not re.match(r"(?:\d+:)?\d+\.\d+", version):
        raise ConfigError(f"{where}.debian_version: expected a quoted Debian package "
                          f"version such as \"6.1.192-3\", found {version!r}")
    if not isinstance(suite, str) or not _SUITE.fullmatch(suite):
        raise ConfigError(f"{where}.suite: expected a Debian suite such as bookworm, "
                          f"bookworm-security or sid, found {suite!r}")
    return Image(package, version, suite)


# ---- fetching -------------------------------------------------------------------

def _deb_name(package: str, version: str, arch: str) -> str:
    return f"{package}_{version.replace(':', '%3a')}_{arch}.deb"


def _same_version_deps(control: str, version: str) -> list[str]:
    """The packages a Depends: field pins to exactly this version (sid's
    linux-image-X is linux-binary-X and linux-modules-X, "(= 7.2.13-1)")."""
    m = re.search(r"^Depends:(.*(?:\n[ \t].*)*)", control, re.M)
    if not m:
        return []
    out = []
    for alternatives in m.group(1).split(","):
        for alt in alternatives.split("|"):
            dep = re.fullmatch(r"\s*([a-z0-9][a-z0-9.+-]+)(?::\w+)?\s*\(\s*=\s*([^)\s]+)\s*\)\s*",
                               alt)
            if dep and dep.group(2) == version:
                out.append(dep.group(1))
    return out


def fetch(image: Image, arch: Arch, build: Path, say=print) -> Path:
    """The unpacked package (and its pinned dependencies) of arch, downloaded
    once; nothing is fetched when it is there."""
    root = image.root(build, arch)
    if (root / ".complete").is_file():
        return root
    debdir = build / "debs" / image.suite
    apt = None
    todo, seen, debs = [image.package_for(arch)], set(), []
    while todo:
        name = todo.pop(0)
        if name in seen:
            continue
        seen.add(name)
        deb = debdir / _deb_name(name, image.debian_version, arch.debian_arch)
        if not deb.is_file():
            if apt is None:
                apt = sources._Apt(build, image.suite, archs=(arch.debian_arch,))
                say(f"updating the package lists of Debian {image.suite} "
                    f"(private: {apt.root})")
                apt.run("apt-get", "-q", "--error-on=any", "update")
            # (a foreign arch's package is listed as name:arch)
            text = apt.run("apt-cache", "madison", f"{name}:{arch.debian_arch}")
            available = (sources.parse_madison(text, name)
                         + sources.parse_madison(text, f"{name}:{arch.debian_arch}"))
            if image.debian_version not in available:
                raise DependencyError(
                    f"{name} {image.debian_version} ({arch.debian_arch}) is not in Debian "
                    f"{image.suite}" + (f", which has {', '.join(available)}: set that "
                                        "image's debian_version: in matrix.yaml"
                                        if available else
                                        ": is the package name right (apt-cache search "
                                        "--names-only '^linux-image-')?"))
            say(f"downloading {name} {image.debian_version} ({arch.debian_arch}) from "
                f"Debian {image.suite} into {debdir}")
            apt.run("apt-get", "-q", "download",
                    f"{name}:{arch.debian_arch}={image.debian_version}", cwd=debdir)
            if not deb.is_file():
                raise DependencyError(f"apt-get download left no {deb}")
        debs.append(deb)
        control = subprocess.run(["dpkg-deb", "-f", str(deb)], text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT).stdout
        todo += _same_version_deps(control, image.debian_version)
    tmp = root.with_name(root.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    for deb in debs:
        proc = subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp)], text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if proc.returncode:
            raise DependencyError(f"dpkg-deb -x {deb} failed: {proc.stdout.strip()}; "
                                  "delete it and try again")
    (tmp / ".complete").write_text("".join(f"{d.name}\n" for d in debs))
    shutil.rmtree(root, ignore_errors=True)
    tmp.rename(root)
    return root


@dataclass(frozen=True)
class Unpacked:
    """A kernel package's files."""
    root: Path
    release: str            # uname -r: 6.1.0-57-amd64
    vmlinuz: Path
    config: Path

    @property
    def modules(self) -> Path:
        for d in (self.root / "lib" / "modules" / self.release,
                  self.root / "usr" / "lib" / "modules" / self.release):
            if d.is_dir():
                return d
        raise DependencyError(f"{self.root}: no lib/modules/{self.release}: is the package "
                              "a kernel image with its modules?")

    def kconfig(self) -> dict[str, str]:
        out = {}
        for line in self.config.read_text(errors="replace").splitlines():
            m = re.match(r"(CONFIG_\w+)=(.*)", line)
            if m:
                out[m.group(1)] = m.group(2).strip('"')
        return out


def unpacked(root: Path) -> Unpacked:
    """The kernel in an unpacked package: boot/vmlinuz-<release> and
    boot/config-<release> (bookworm), or usr/lib/modules/<release>/vmlinuz
    and config (trixie on)."""
    found = [(k, k.name[len("vmlinuz-"):], k.with_name("config-" + k.name[len("vmlinuz-"):]))
             for k in sorted(root.glob("boot/vmlinuz-*"))]
    found += [(k, k.parent.name, k.with_name("config"))
              for k in sorted(root.glob("usr/lib/modules/*/vmlinuz"))]
    if len(found) != 1:
        raise DependencyError(f"{root}: expected one kernel (boot/vmlinuz-<release> or "
                              f"usr/lib/modules/<release>/vmlinuz), found "
                              f"{[str(k.relative_to(root)) for k, _, _ in found]}; "
                              f"delete {root} and fetch again")
    vmlinuz, release, config = found[0]
    if not config.is_file():
        raise DependencyError(f"{config} missing: the package has no configuration")
    return Unpacked(root, release, vmlinuz, config)


def module_name(path: str) -> str:
    """kernel/fs/ext4/ext4.ko.xz -> ext4; '-' and '_' are one to modprobe."""
    name = path.rsplit("/", 1)[-1]
    name = re.sub(r"\.ko(\.(xz|zst|gz))?$", "", name)
    return name.replace("-", "_")


def modinfo_depends(data: bytes) -> list[str]:
    """The depends= of a module's .modinfo: the modules it needs (no
    modules.dep is shipped since trixie: depmod writes it at install)."""
    m = re.search(rb"(?:^|\0)depends=([\w,-]*)\0", data)
    return [d.decode() for d in m.group(1).split(b",") if d] if m else []


def builtin_names(text: str) -> set[str]:
    return {module_name(line.strip()) for line in text.splitlines() if line.strip()}


def load_order(index: dict[str, str], depends, builtin: set[str],
               wanted: tuple[str, ...]) -> list[str]:
    """The module paths to insmod, each after what it needs, for wanted
    (names; a built-in one is skipped, and one ending in "?" that is
    neither a module nor built in).  index: name -> path; depends(path):
    the names it needs.  An error names a module that is neither."""
    order: list[str] = []

    def visit(name: str, why: str, stack: tuple[str, ...] = ()) -> None:
        optional = name.endswith("?")
        name = name.rstrip("?")
        key = name.replace("-", "_")
        if key not in index:
            if key in builtin or optional:
                return
            raise DependencyError(f"module {name} ({why}) is neither a module of the "
                                  "package nor built in (modules.builtin)")
        path = index[key]
        if path in order or key in stack:
            return
        for dep in depends(path):
            visit(dep, f"needed by {name}", (*stack, key))
        order.append(path)

    for name in wanted:
        visit(name, "the guest needs it")
    return order


def module_bytes(path: Path) -> bytes:
    """A module as insmod takes it: decompressed, its signature kept (it
    signs the uncompressed module)."""
    data = path.read_bytes()
    if path.name.endswith(".xz"):
        return lzma.decompress(data)
    if path.name.endswith(".zst"):
        proc = subprocess.run(["zstd", "-dc", str(path)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
        if proc.returncode:
            raise DependencyError(f"zstd -dc {path}: {proc.stderr.decode().strip()}: "
                                  "install zstd")
        return proc.stdout
    if path.name.endswith(".gz"):
        import gzip
        return gzip.decompress(data)
    return data


def modules_cpio(kernel: Unpacked, out: Path, wanted: tuple[str, ...] = GUEST_MODULES) -> Path:
    """A cpio of the modules the guest loads and LOAD_LIST naming them in
    load order, to append to the arch's initramfs (the kernel unpacks
    concatenated archives one over the other).  Written again only when it
    differs."""
    from .initramfs import Archive
    mods = kernel.modules
    index = {module_name(str(p)): str(p.relative_to(mods))
             for p in sorted(mods.rglob("*.ko*")) if re.search(r"\.ko(\.\w+)?$", p.name)}
    data: dict[str, bytes] = {}

    def read(rel: str) -> bytes:
        if rel not in data:
            data[rel] = module_bytes(mods / rel)
        return data[rel]

    builtin_file = mods / "modules.builtin"
    builtin = builtin_names(builtin_file.read_text()) if builtin_file.is_file() else set()
    a = Archive()
    names = []
    for rel in load_order(index, lambda rel: modinfo_depends(read(rel)), builtin, wanted):
        name = re.sub(r"\.(xz|zst|gz)$", "", rel.rsplit("/", 1)[-1])
        a.file(f"lib/modules/{name}", read(rel))
        names.append(name)
    a.file(LOAD_LIST, "".join(f"{n}\n" for n in names).encode())
    out.parent.mkdir(parents=True, exist_ok=True)
    a.write(out)
    return out


def guest_initrd(base: Path, modules: Path, out: Path) -> Path:
    """base (the arch's initramfs) with the modules' cpio after it."""
    blob = base.read_bytes() + modules.read_bytes()
    if not (out.is_file() and out.read_bytes() == blob):
        tmp = out.with_suffix(".tmp")
        tmp.write_bytes(blob)
        tmp.replace(out)
    return out


# ---- debug symbols --------------------------------------------------------------

def dbg_vmlinux(image: Image, arch: Arch, build: Path, release: str, say=print) -> Path:
    """The package's -dbg vmlinux (only that file of it, unpacked with
    dpkg-deb --fsys-tarfile), downloaded on first use."""
    root = image.root(build, arch)
    out = root.with_name(root.name + "-dbg") / "vmlinux"
    if out.is_file():
        return out
    name = f"{image.package_for(arch)}-dbg"
    debdir = build / "debs" / image.suite
    deb = debdir / _deb_name(name, image.debian_version, arch.debian_arch)
    if not deb.is_file():
        apt = sources._Apt(build, image.suite, archs=(arch.debian_arch,))
        say(f"downloading {name} {image.debian_version} (debug symbols, about a GB) "
            f"into {debdir}")
        apt.run("apt-get", "-q", "--error-on=any", "update")
        apt.run("apt-get", "-q", "download",
                f"{name}:{arch.debian_arch}={image.debian_version}", cwd=debdir)
    member = f"./usr/lib/debug/lib/modules/{release}/vmlinux"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        tar = subprocess.Popen(["tar", "-xO", "-f", "-", member], stdin=subprocess.PIPE,
                               stdout=f, stderr=subprocess.PIPE)
        deb_proc = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=tar.stdin)
        tar.stdin.close()
        err = tar.stderr.read().decode()
        if tar.wait() or deb_proc.returncode or tmp.stat().st_size == 0:
            tmp.unlink(missing_ok=True)
            raise DependencyError(f"{deb} holds no {member}: {err.strip()}")
    tmp.replace(out)
    return out


def main(argv: list[str] | None = None) -> int:
    from . import matrix as matrix_mod
    ap = sources.deps_parser(
        "images", "Fetches the Debian kernel images matrix.yaml's variants with image: "
        "boot (and with --dbg their debug symbols) into the build directory.", ("fetch",))
    ap.add_argument("--archs", default=",".join(ARCHS))
    ap.add_argument("--variants", default="", help="only these (comma-separated)")
    ap.add_argument("--dbg", action="store_true", help="their -dbg vmlinux too")
    args = ap.parse_args(argv)
    status = 0
    try:
        m = matrix_mod.load(args.matrix)
    except HarnessError as e:
        print(f"deps: {e}", file=sys.stderr)
        return 1
    only = set(filter(None, args.variants.split(",")))
    for v in m.variants.values():
        if v.image is None or (only and v.name not in only):
            continue
        for a in filter(None, args.archs.split(",")):
            try:
                root = fetch(v.image, ARCHS[a], args.build_dir.resolve(), sources.deps_say)
                if args.dbg:
                    dbg_vmlinux(v.image, ARCHS[a], args.build_dir.resolve(),
                                unpacked(root).release, sources.deps_say)
            except HarnessError as e:
                print(f"deps: {v.name} {a}: {e}", file=sys.stderr)
                status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
