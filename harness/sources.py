"""Debian's kernel source packages, one per kernel version (matrix.yaml
sources:), and how `make deps` gets them.

    sources:
      "6.1":  {package: linux-source-6.1, config: [kernel-patches/config/6.1.config]}
      "7.2":
        package: linux-source-7.2
        suite: sid                  # not the machine's own suites: fetched
        debian_version: "7.2.13-1"  # ... at exactly this version
        config: [kernel-patches/config/7.2.config]

A source without suite: is a package of the machine's own apt sources
(Debian 12's linux-source-6.1 and -6.12), installed as usual; its tarball is
/usr/src/<package>.tar.xz.  A source with a suite (unstable's 7.2) is
downloaded with a private apt configuration (a sources list naming the
machine's Debian mirror with that suite, and lists and caches of its own
under build/debs/<suite>/apt/), which leaves the machine's apt
configuration and state alone, and unpacked with dpkg-deb under
build/debs/<suite>/: nothing is installed, nothing is committed.

A suite moves on: when Debian replaces the pinned package (a new Debian
revision, or a new kernel version and package name), the download fails
with one line saying what is gone and what the suite has now; following
it is a change of matrix.yaml (debian_version:, or a new version's entry),
not of code.

config: the Kconfig fragments of that version only, applied after
common.config (an option that changed type or name between versions, say
CONFIG_BOOTPARAM_HUNG_TASK_PANIC, a bool before 7.2 and a count since).
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .errors import ConfigError, DependencyError, HarnessError

# Where the machine's Debian mirror cannot be read from its apt sources.
DEFAULT_MIRROR = "http://deb.debian.org/debian"
DEFAULT_SECURITY_MIRROR = "http://deb.debian.org/debian-security"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
_SOURCE_KEYS = ("package", "suite", "debian_version", "config")
_PACKAGE = re.compile(r"[a-z0-9][a-z0-9.+-]+")
_SUITE = re.compile(r"[a-z][a-z0-9-]*")
_DEBIAN_VERSION = re.compile(r"[0-9][A-Za-z0-9.+~:-]*")


@dataclass(frozen=True)
class Source:
    version: str                    # "7.2": what a variant's version: names
    package: str                    # linux-source-7.2
    suite: str | None = None        # None: the machine's own apt sources
    debian_version: str | None = None   # with a suite: the pinned package version
    config: tuple[Path, ...] = ()   # this version's Kconfig fragments

    def deb_dir(self, build: Path) -> Path:
        return build / "debs" / str(self.suite)

    def deb(self, build: Path) -> Path:
        """What apt-get download names the pinned package's file."""
        version = (self.debian_version or "").replace(":", "%3a")
        return self.deb_dir(build) / f"{self.package}_{version}_all.deb"

    def tarball(self, build: Path) -> Path:
        if self.suite is None:
            return Path(f"/usr/src/{self.package}.tar.xz")
        return (self.deb_dir(build) / f"{self.package}_{self.debian_version}"
                / "usr" / "src" / f"{self.package}.tar.xz")

    def describe(self) -> str:
        if self.suite is None:
            return f"Debian's {self.package} (the machine's apt sources)"
        return f"Debian {self.suite}'s {self.package} {self.debian_version}"


def default_sources(versions: tuple[str, ...] = ()) -> dict[str, Source]:
    """A matrix without sources: builds each version its variants name (and
    6.1) from the machine's own linux-source-<version>, with no fragments of
    its own."""
    return {v: Source(v, f"linux-source-{v}") for v in dict.fromkeys(("6.1", *versions))}


def parse(value: object, where: str, base: Path) -> dict[str, Source]:
    """matrix.yaml's sources: section; paths relative to base."""
    if not isinstance(value, dict) or not value:
        raise ConfigError(f"{where}: expected a mapping of kernel versions (quoted, "
                          f"\"7.2\") to {{{', '.join(_SOURCE_KEYS)}}}; found {value!r}")
    out = {}
    for version, spec in value.items():
        at = f"{where}.{version}"
        if not isinstance(version, str) or not re.fullmatch(r"\d+\.\d+", version):
            raise ConfigError(f"{where}: key {version!r}: expected a kernel version such as "
                              "\"7.2\" (quote it: YAML reads 6.10 as the number 6.1)")
        if not isinstance(spec, dict):
            raise ConfigError(f"{at}: expected a mapping with keys {', '.join(_SOURCE_KEYS)}; "
                              f"found {spec!r}")
        for key in spec:
            if key not in _SOURCE_KEYS:
                raise ConfigError(f"{at}: unknown key {key!r}; allowed: "
                                  f"{', '.join(_SOURCE_KEYS)}")
        package = spec.get("package")
        if not isinstance(package, str) or not _PACKAGE.fullmatch(package):
            raise ConfigError(f"{at}.package: expected a Debian package name such as "
                              f"linux-source-{version}, found {package!r}")
        suite, pinned = spec.get("suite"), spec.get("debian_version")
        if suite is not None and (not isinstance(suite, str) or not _SUITE.fullmatch(suite)):
            raise ConfigError(f"{at}.suite: expected a Debian suite such as sid, "
                              f"found {suite!r}")
        if (suite is None) != (pinned is None):
            raise ConfigError(f"{at}: suite: and debian_version: go together (a package "
                              "of another suite is pinned to the version tested); the "
                              "machine's own packages have neither")
        if pinned is not None and (not isinstance(pinned, str)
                                   or not _DEBIAN_VERSION.fullmatch(pinned)):
            raise ConfigError(f"{at}.debian_version: expected a quoted Debian package "
                              f"version such as \"7.2.13-1\", found {pinned!r}")
        config = spec.get("config", [])
        if not isinstance(config, list) or not all(isinstance(c, str) and c for c in config):
            raise ConfigError(f"{at}.config: expected a list of Kconfig fragment paths, "
                              f"found {config!r}")
        for c in config:
            if not (base / c).is_file():
                raise ConfigError(f"{at}.config: {c}: no such file (paths are relative "
                                  f"to {base})")
        out[version] = Source(version, package, suite, pinned,
                              tuple(base / c for c in config))
    return out


def version_of_tree(tree: Path) -> str | None:
    """major.minor of a kernel tree, from its top Makefile."""
    try:
        text = (tree / "Makefile").read_text(errors="replace")[:2000]
    except OSError:
        return None
    v = re.search(r"^VERSION\s*=\s*(\d+)\s*$", text, re.M)
    p = re.search(r"^PATCHLEVEL\s*=\s*(\d+)\s*$", text, re.M)
    return f"{v.group(1)}.{p.group(1)}" if v and p else None


def version_key(version: str) -> tuple[int, ...]:
    """A kernel version ("6.1", "6.12", "6.1.192") as the tuple that sorts
    and compares it by number: 6.1 < 6.1.192 < 6.12 < 7.2."""
    return tuple(int(x) for x in version.split("."))


def nearest(sources: dict[str, Source], version: str | None) -> Source:
    """The source whose configuration a tree of this version takes: the
    newest at or below it (a 7.3 tree configures like 7.2), else the
    oldest; with no version known, the oldest."""
    ordered = sorted(sources.values(), key=lambda s: version_key(s.version))
    if version is None:
        return ordered[0]
    below = [s for s in ordered if version_key(s.version) <= version_key(version)]
    return below[-1] if below else ordered[0]


# ---- make deps ----------------------------------------------------------------

def mirror_of(apt_sources: list[tuple[Path, str]]) -> str:
    """The machine's Debian archive URI (not -security, not another
    vendor's), from its one-line and deb822 sources files' texts."""
    for _path, text in apt_sources:
        for uri in re.findall(r"^\s*URIs:\s*(\S+)", text, re.M) + \
                re.findall(r"^\s*deb\s+(?:\[[^\]]*\]\s+)?(\S+)", text, re.M):
            if re.search(r"/debian/?$", uri) and "security" not in uri:
                return uri.rstrip("/")
    return DEFAULT_MIRROR


def mirror_for(suite: str, apt_sources: list[tuple[Path, str]]) -> str:
    """The archive a suite is in: the machine's security archive for a
    <release>-security suite (Debian's own if the machine names none),
    its Debian mirror for any other."""
    if not suite.endswith("-security"):
        return mirror_of(apt_sources)
    for _path, text in apt_sources:
        for uri in re.findall(r"^\s*URIs:\s*(\S+)", text, re.M) + \
                re.findall(r"^\s*deb\s+(?:\[[^\]]*\]\s+)?(\S+)", text, re.M):
            if re.search(r"/debian-security/?$", uri):
                return uri.rstrip("/")
    return DEFAULT_SECURITY_MIRROR


def _machine_apt_sources() -> list[tuple[Path, str]]:
    out = []
    for p in [Path("/etc/apt/sources.list"),
              *sorted(Path("/etc/apt/sources.list.d").glob("*.sources")),
              *sorted(Path("/etc/apt/sources.list.d").glob("*.list"))]:
        try:
            out.append((p, p.read_text(errors="replace")))
        except OSError:
            pass
    return out


def parse_madison(text: str, package: str) -> list[str]:
    """The versions `apt-cache madison <package>` lists."""
    out = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) >= 3 and parts[0] == package:
            out.append(parts[1])
    return out


def moved_on(source: Source, available: list[str], siblings: dict[str, str]) -> str:
    """The one line make deps prints when the pinned package is gone from
    its suite: what is gone, what is there now, and what to change.
    available: the versions of the same package the suite has; siblings:
    other linux-source-* packages of the suite and their versions."""
    gone = f"{source.package} {source.debian_version} is gone from Debian {source.suite}"
    if available:
        return (f"{gone}, which has {source.package} {', '.join(available)} now: set "
                f"sources: \"{source.version}\": debian_version: \"{available[0]}\" in "
                "matrix.yaml (README: \"A new kernel in unstable\")")
    if siblings:
        now = ", ".join(f"{p} {v}" for p, v in sorted(siblings.items()))
        return (f"{gone}, which has {now} now: add that version to sources: and its "
                "variants in matrix.yaml (README: \"A new kernel in unstable\")")
    return f"{gone}, and it has no linux-source package at all; is the mirror right?"


class _Apt:
    """apt-get and apt-cache with a private configuration for one suite."""

    def __init__(self, build: Path, suite: str, archs: tuple[str, ...] = ("amd64",)) -> None:
        self.root = build / "debs" / suite / "apt"
        self.suite = suite
        lists = self.root / "lists"
        (lists / "partial").mkdir(parents=True, exist_ok=True)
        (self.root / "cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
        listfile = self.root / "sources.list"
        keyring = f" [signed-by={KEYRING}]" if Path(KEYRING).is_file() else ""
        text = f"deb{keyring} {mirror_for(suite, _machine_apt_sources())} {suite} main\n"
        if not listfile.is_file() or listfile.read_text() != text:
            listfile.write_text(text)
        # APT_CONFIG is read before the machine's configuration, and says
        # where that is: nowhere.  So none of apt.conf.d's hooks run (an
        # update's Post-Invoke, docker-clean deleting the machine's caches)
        # and no Default-Release or pin of the machine's applies; only how
        # it reaches its mirror is kept (apt_acquire(): proxies, a
        # registry's Check-Valid-Until).
        (self.root / "apt.conf.d").mkdir(exist_ok=True)
        self.conf = self.root / "apt.conf"
        conf = (f'Dir::Etc::Parts "{self.root / "apt.conf.d"}";\n'
                'Dir::Etc::main "/dev/null";\n'
                'Dir::Etc::Preferences "/dev/null";\n'
                'Dir::Etc::PreferencesParts "/dev/null";\n' + apt_acquire())
        if not self.conf.is_file() or self.conf.read_text() != conf:
            self.conf.write_text(conf)
        self.options = [
            "-o", f"Dir::Etc::SourceList={listfile}",
            "-o", "Dir::Etc::SourceParts=/dev/null",
            "-o", f"Dir::State::Lists={lists}",
            "-o", f"Dir::Cache={self.root / 'cache'}",
            "-o", "Dir::State::status=/dev/null",
            *(x for a in archs for x in ("-o", f"APT::Architectures::={a}")),
            "-o", "APT::Sandbox::User=root",
            "-o", "Debug::NoLocking=1",
        ]

    def run(self, tool: str, *args: str, cwd: Path | None = None) -> str:
        try:
            proc = subprocess.run([tool, *self.options, *args], cwd=cwd, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  env={**os.environ, "APT_CONFIG": str(self.conf)})
        except FileNotFoundError:
            raise DependencyError(f"{tool} not found: make deps needs Debian's apt") from None
        if proc.returncode != 0:
            tail = "\n".join(proc.stdout.splitlines()[-5:])
            raise DependencyError(f"{tool} {' '.join(args)} (Debian {self.suite}, private "
                                  f"configuration in {self.root}) failed:\n{tail}")
        return proc.stdout


def apt_acquire(dump: str | None = None) -> str:
    """The machine's Acquire:: settings (apt-config dump), as apt
    configuration lines: the private configuration reaches the mirror the
    way the machine's does (its proxies, a registry's
    Check-Valid-Until "false"), and nothing else of the machine's applies."""
    if dump is None:
        try:
            dump = subprocess.run(["apt-config", "dump"], text=True, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL).stdout
        except FileNotFoundError:
            dump = ""
    return "".join(line + "\n" for line in dump.splitlines()
                   if re.match(r'^Acquire::\S* ".*";$', line))


def fetch(source: Source, build: Path, say=print) -> Path:
    """The tarball of a suite's pinned package, downloaded and unpacked
    once; nothing is fetched when it is there."""
    tarball = source.tarball(build)
    if tarball.is_file():
        return tarball
    deb = source.deb(build)
    if not deb.is_file():
        apt = _Apt(build, str(source.suite))
        say(f"updating the package lists of Debian {source.suite} (private: {apt.root})")
        try:
            # --error-on=any: a mirror that cannot be reached is an error,
            # not an empty suite (which would read as "gone from sid").
            apt.run("apt-get", "-q", "--error-on=any", "update")
        except DependencyError as e:
            raise DependencyError(f"cannot read Debian {source.suite}'s package lists from "
                                  f"{mirror_of(_machine_apt_sources())} (is the network, or "
                                  f"the machine's proxy, there?): {e}") from None
        available = parse_madison(apt.run("apt-cache", "madison", source.package),
                                  source.package)
        if source.debian_version not in available:
            names = apt.run("apt-cache", "pkgnames", "linux-source-").split()
            siblings = {}
            for name in names:
                if re.fullmatch(r"linux-source-\d+\.\d+", name) and name != source.package:
                    vs = parse_madison(apt.run("apt-cache", "madison", name), name)
                    if vs:
                        siblings[name] = vs[0]
            raise DependencyError(moved_on(source, available, siblings))
        say(f"downloading {source.package} {source.debian_version} from Debian "
            f"{source.suite} into {deb.parent}")
        apt.run("apt-get", "-q", "download", f"{source.package}={source.debian_version}",
                cwd=deb.parent)
        if not deb.is_file():
            raise DependencyError(f"apt-get download left no {deb}; see {apt.root}")
    unpacked = tarball.parents[2]
    tmp = unpacked.with_name(unpacked.name + ".tmp")
    subprocess.run(["rm", "-rf", str(tmp)], check=True)
    proc = subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp)], text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise DependencyError(f"dpkg-deb -x {deb} failed: {proc.stdout.strip()}; delete "
                              "it and run make deps again")
    if not (tmp / "usr" / "src" / tarball.name).is_file():
        raise DependencyError(f"{deb} holds no usr/src/{tarball.name}: is "
                              f"{source.package} a kernel source package?")
    subprocess.run(["rm", "-rf", str(unpacked)], check=True)
    tmp.rename(unpacked)
    return tarball


def deps_parser(module: str, description: str,
                what: tuple[str, ...]) -> argparse.ArgumentParser:
    """The command line of `python3 -m harness.<module>`, which
    scripts/deps.sh runs: what to do (one of what), the build directory
    and the matrix file; the module adds its own options."""
    ap = argparse.ArgumentParser(prog=f"python3 -m harness.{module}", description=description)
    ap.add_argument("what", choices=what)
    ap.add_argument("--build-dir", type=Path, default=Path("build"))
    ap.add_argument("--matrix", type=Path,
                    default=Path(__file__).resolve().parent.parent / "matrix.yaml")
    return ap


def deps_say(text: str) -> None:
    """A line of make deps's progress."""
    print(f"deps: {text}", flush=True)


def main(argv: list[str] | None = None) -> int:
    from . import matrix as matrix_mod
    args = deps_parser(
        "sources", "Prints the machine's own source packages (packages), or fetches "
        "those of other suites into the build directory (fetch).",
        ("packages", "fetch")).parse_args(argv)
    try:
        sources = matrix_mod.load_sources(args.matrix)
        if args.what == "packages":
            print(" ".join(s.package for s in sources.values() if s.suite is None))
            return 0
        for s in sources.values():
            if s.suite is not None:
                fetch(s, args.build_dir.resolve(), say=deps_say)
    except HarnessError as e:
        print(f"deps: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
