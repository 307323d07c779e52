"""Load and validate matrix.yaml: the kernels the harness can build and the
cells (arch x variant x mode x policy x hash x setattr) that `make run` boots.

    variants:                       # every kernel the harness knows how to build
      stock:
        known_failures:             # expected to fail on this kernel: xfail
          - tests: [lastwriter_test/new_file.*]     # fnmatch patterns
            cells: {mode: [enforce]}                # optional: where (any listed value)
            reason: "known bug in 6.1.192"
        known_splats:               # reported as known instead of failing the cell
          - signature: "lockdep-circular (&a->lock, &b->lock) in f"  # splats.signature()
            cells: {arch: [x86_64]}                 # optional, as above
            reason: "known lock inversion in 6.1.192"
            at_boot: true           # optional: known only before the first program starts
      patched: {series: kernel-patches/series, note: "..."}
      patched-6.12:                 # another of Debian's kernels: linux-source-6.12
        version: "6.12"             # (quoted: YAML reads 6.10 as the number 6.1)
        series: kernel-patches/6.12/series
      mine: {tree: ../linux}          # a kernel tree of your own (no series: as is)
    matrix:                         # what `make run` boots
      archs: [x86_64, aarch64]
      modes: [enforce, fix, log, off]
      policies: [builtin, legacy, custom]
      hashes: [sha1, sha256]        # optional, default [sha1]
      setattr: [keep, remove]       # optional, default [keep]
      variants: [stock, patched]
      exclude:                      # a cell is excluded if all given keys match
        - {policy: legacy, variant: patched}
    mutants:                        # the cells `make mutants` boots per known-bad patch
      patches: kernel-patches/regressions
      base: patched                 # the variant whose series they apply on top of
      versions:                     # optional: the mutants of other kernel versions
        "6.12": {base: patched-6.12, patches: kernel-patches/regressions/6.12}
      archs: [x86_64]  ...          # axes as in matrix: (all optional)
    timeout: 150                    # seconds per guest boot, optional
    boot_timeout: 120               # seconds for its init to begin, optional
    memory: 512                     # MiB per guest, optional

A variant's series is relative to the matrix file's directory.  A known
failure that passes is an XPASS, which fails its cell like a failure.
A known splat matches a splat's signature exactly; one that does not occur
is no error: which splats a boot shows depends on the programs it ran, and
lockdep reports only the first of them.  One known `at_boot` matches only
a report printed before the boot's first `ima_selftest: start` mark: a
report of the kernel's own start-up (arch code, not IMA) may be accepted
there without accepting it during a test, where it would be the test's
finding (and would take lockdep, or single-shot KASAN, from the rest of
the boot unnoticed).
"""
from __future__ import annotations

import fnmatch
import itertools
import re
from collections.abc import Iterable
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import images as images_mod
from . import sources as sources_mod
from .archs import ARCHS
from .errors import ConfigError
from .flavors import FLAVORS, PLAIN
from .kbuild import DEFAULT_VERSION

MODES: tuple[str, ...] = ("enforce", "fix", "log", "off")
# policy -> kernel command line fragment; "custom" is loaded by the tests.
POLICIES: dict[str, str] = {
    "builtin": "ima_policy=appraise_tcb",
    "legacy": "ima_appraise_tcb",
    "custom": "",
}
# hash -> command line: sha1 is the kernels' default (CONFIG_IMA_DEFAULT_HASH_SHA1)
HASHES: dict[str, str] = {"sha1": "", "sha256": "ima_hash=sha256"}
# setattr -> command line: kernel-patches/series makes post_setattr remove
# security.ima of a file a chmod/chown takes out of policy, when asked to.
SETATTR: dict[str, str] = {"keep": "", "remove": "ima_appraise_setattr=remove"}
DEFAULT_TIMEOUT = 150
DEFAULT_BOOT_TIMEOUT = 120
DEFAULT_MEMORY = 512

_TOP_KEYS = ("variants", "matrix", "mutants", "check", "timeout", "boot_timeout", "memory",
             "sources", "skips")
# A check: entry: which kernels' covering cells `make check` boots.
_CHECK_KEYS = ("variants", "archs")
# matrix axis -> what one value is called (and its key in an exclusion or a
# known failure's cells:), in the order cells are generated
_AXES = {"archs": "arch", "variants": "variant", "modes": "mode", "policies": "policy",
         "hashes": "hash", "setattr": "setattr"}
# axes a matrix may leave out, and their value then
_OPTIONAL_AXES = {"hashes": ("sha1",), "setattr": ("keep",)}
_MATRIX_KEYS = (*_AXES, "exclude")
_MUTANT_KEYS = ("patches", "base", "versions", *(a for a in _AXES if a != "variants"),
                "exclude")
_MUTANT_VERSION_KEYS = ("patches", "base")
_VARIANT_KEYS = ("series", "version", "tree", "note", "known_failures", "known_splats",
                 "flavor", "of", "image")
# What a variant with image: (a Debian binary kernel, nothing built) cannot have.
_BUILT_ONLY_KEYS = ("series", "version", "tree", "flavor", "of")
_KNOWN_FAILURE_KEYS = ("tests", "cells", "reason", "racy", "failing")
_KNOWN_SPLAT_KEYS = ("signature", "cells", "reason", "at_boot")
_SKIP_KEYS = ("tests", "cells", "variants", "before", "reason")
# The variants --kernel-tree / KERNEL_TREE= and --extra-patches / EXTRA_PATCHES= add.
LOCAL_VARIANT = "local"
EXTRA_VARIANT = "extra"
_VARIANT_NAME = re.compile(r"[a-z0-9][a-z0-9.-]*")
# A Debian linux-source-<version> package: major.minor.
_VERSION = re.compile(r"\d+\.\d+")


@dataclass(frozen=True)
class Cell:
    arch: str
    variant: str
    mode: str
    policy: str
    hash: str = "sha1"
    setattr: str = "keep"

    @property
    def id(self) -> str:
        return (f"{self.arch}-{self.variant}-{self.mode}-{self.policy}-{self.hash}"
                f"-{self.setattr}")

    def cmdline(self) -> str:
        """The IMA part of the guest's kernel command line."""
        return " ".join(filter(None, (f"ima_appraise={self.mode}", POLICIES[self.policy],
                                      HASHES[self.hash], SETATTR[self.setattr])))


class KnownReason(str):
    """The reason of a known failure, with the check it fails by: failing,
    a regular expression every failed-check line of the case's log must
    match ("" for none given), so that the same case failing by another
    check is a failure of the cell, not this known one."""
    failing = ""

    def __new__(cls, reason: str, failing: str = "") -> "KnownReason":
        self = super().__new__(cls, reason)
        self.failing = failing
        return self


class RacyReason(KnownReason):
    """The reason of a known failure that is a race (racy: true): the test
    fails when its racers hit the window, and a pass, when they did not,
    is no unexpected pass."""


@dataclass(frozen=True)
class KnownFailure:
    tests: tuple[str, ...]                      # fnmatch patterns of "<suite>/<case>"
    cells: tuple[tuple[str, tuple[str, ...]], ...]   # (cell field, allowed values)
    reason: str
    racy: bool = False
    failing: str = ""       # the check it fails by (see KnownReason)

    def applies(self, cell: Cell, test: str) -> bool:
        return (all(getattr(cell, key) in values for key, values in self.cells)
                and any(fnmatch.fnmatchcase(test, p) for p in self.tests))


@dataclass(frozen=True)
class ExpectedSkip:
    """Cases that skip themselves ("not for this cell: ...") in some cells:
    those cells:, of the kernels variants: names (() for any), on kernels
    older than before: (a version; "" for any)."""
    tests: tuple[str, ...]                      # exact "<suite>/<case>" names
    cells: tuple[tuple[str, tuple[str, ...]], ...]
    reason: str
    before: str = ""
    # Variant names: kernels whose configuration lacks what the cases need.
    variants: tuple[str, ...] = ()

    def applies(self, cell: Cell, version: str, test: str, variant: str = "") -> bool:
        """variant: the kernel's variant name (default: the cell's)."""
        return (test in self.tests
                and all(getattr(cell, key) in values for key, values in self.cells)
                and (not self.variants or (variant or cell.variant) in self.variants)
                and (not self.before or sources_mod.version_key(version)
                     < sources_mod.version_key(self.before)))


@dataclass(frozen=True)
class KnownSplat:
    signature: str                              # exactly as splats.signature() names it
    cells: tuple[tuple[str, tuple[str, ...]], ...]
    reason: str
    # Known only before the boot's first program started (at_boot: true).
    at_boot: bool = False

    def applies(self, cell: Cell, signature: str, at_boot: bool = False) -> bool:
        """Whether it is this splat, in cell; at_boot: the splat was
        printed before the boot's first program started (a splat not known
        to be is not)."""
        return (signature == self.signature and (at_boot or not self.at_boot)
                and all(getattr(cell, key) in values for key, values in self.cells))


@dataclass(frozen=True)
class Variant:
    name: str
    series: Path | None
    note: str = ""
    tree: Path | None = None    # a kernel tree of one's own instead of Debian's
    known_failures: tuple[KnownFailure, ...] = ()
    # Applied after the series: EXTRA_PATCHES=, or a mutant (harness/mutants.py).
    patches: tuple[Path, ...] = ()
    # Built in the shared incremental workspace (see kbuild.build_kernel).
    workspace: bool = False
    # For a known-bad kernel: what must fail on it (harness/mutants.py).
    catches: tuple[str, ...] = ()
    known_splats: tuple[KnownSplat, ...] = ()
    # Whose Debian tree (linux-source-<version>) it is built from.
    version: str = DEFAULT_VERSION
    # How its kernels are configured and booted (harness/flavors.py).
    flavor: str = PLAIN
    # The matrix's skips: (judged by version, and by name where an entry
    # names variants:).
    skips: tuple[ExpectedSkip, ...] = ()
    # A tree of one's own: its Makefile's version (version: is the nearest
    # of sources:, which configures it); "": version.
    own_version: str = ""
    # A Debian linux-image package booted as it ships (harness/images.py):
    # nothing is built; version: is its kernel's major.minor.
    image: images_mod.Image | None = None

    def known_splat(self, cell: Cell, signature: str, at_boot: bool = False) -> str | None:
        """Why a splat of this signature is expected in cell, or None;
        at_boot: it came before the boot's first program started."""
        return next((k.reason for k in self.known_splats
                     if k.applies(cell, signature, at_boot)), None)

    def expected_skip(self, cell: Cell, test: str) -> str | None:
        """Why test skips itself in cell on this kernel (the matrix's
        skips:), or None: it must run."""
        version = self.own_version or self.version
        return next((k.reason for k in self.skips
                     if k.applies(cell, version, test, self.name)), None)

    def expected_failure(self, cell: Cell, test: str) -> str | None:
        """Why test is expected to fail in cell on this kernel, or None (a
        RacyReason when it fails only if a race is hit)."""
        return next(((RacyReason if k.racy else KnownReason)(k.reason, k.failing)
                     for k in self.known_failures if k.applies(cell, test)), None)


@dataclass(frozen=True)
class Matrix:
    path: Path
    variants: dict[str, Variant]    # every defined variant, in file order
    cells: tuple[Cell, ...]         # by arch, variant, mode, policy, ... in axis order
    timeout: int
    memory: int
    mutants: dict[str, Any] | None = None   # the raw mutants: section, checked
    # seconds from QEMU's start for a guest's init to begin (ktap.began);
    # below timeout, or no earlier deadline than it
    boot_timeout: int = DEFAULT_BOOT_TIMEOUT
    # check: section: (variants, archs) pairs; None: every kernel's
    check: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] | None = None
    # sources: per kernel version, Debian's package (harness/sources.py)
    sources: dict[str, sources_mod.Source] = dataclasses.field(
        default_factory=lambda: sources_mod.default_sources())

    def source_of(self, variant: str) -> sources_mod.Source:
        """The Debian source a variant is built from, or, for a tree of
        one's own, configured like (the nearest version at or below the
        tree's)."""
        v = self.variants[variant]
        if v.tree is not None:
            return sources_mod.nearest(self.sources, sources_mod.version_of_tree(v.tree))
        return self.sources[v.version]


def make_path(m: Matrix, cell: Cell) -> bool:
    """Whether the cell's guest runs its programs as a user would by hand,
    `make -C /selftests run_tests` (lib.mk and kselftest's runner.sh),
    rather than through ksft-run, which prints the same in a fraction of
    the processes (initramfs/init): the cells of its kernel's first mode
    and policy in the matrix (its first cell's, in axis order).  Every
    kernel of the matrix has some, and so does every tier: the covering
    tier boots each arch x variant x mode x policy.  A cell outside the
    matrix (a mutant's) uses ksft-run."""
    first = next((c for c in m.cells if (c.arch, c.variant) == (cell.arch, cell.variant)),
                 None)
    return first is not None and (first.mode, first.policy) == (cell.mode, cell.policy)


def narrowed(m: Matrix, cells: Iterable[Cell]) -> Matrix:
    """m with only these cells, in m's order (any it lacks last): what a
    boot from a manifest knows of the selection its build stage made
    (--modes, --policies, ...), so that make_path() there answers as in a
    single run of that selection.  Every tier keeps each kernel's first
    arch x variant x mode x policy group."""
    order = {c: i for i, c in enumerate(m.cells)}
    chosen = sorted(dict.fromkeys(cells), key=lambda c: order.get(c, len(order)))
    return dataclasses.replace(m, cells=tuple(chosen))


def check_known_failures(variant: Variant, tests: Iterable[str]) -> list[str]:
    """Patterns of variant's known failures that name no test."""
    names = list(tests)
    return [p for k in variant.known_failures for p in k.tests
            if not any(fnmatch.fnmatchcase(n, p) for n in names)]


def _join(names: Iterable[str]) -> str:
    return ", ".join(names)


def _mapping(value: Any, where: str, keys: Iterable[str]) -> dict[Any, Any]:
    keys = tuple(keys)
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a mapping with keys {_join(keys)}; "
                          f"found {value!r}")
    for key in value:
        if key not in keys:
            raise ConfigError(f"{where}: unknown key {key!r}; allowed: {_join(keys)}")
    return value


def positive_int(value: Any, where: str, error: type[Exception] = ConfigError) -> int:
    """value if it is a positive int (not a bool); else error naming where."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise error(f"{where}: expected a positive integer, found {value!r}")
    return value


def _read(path: Path) -> Any:
    # Here, not at the top: the command line (its --help, its tiers) works
    # without PyYAML, and a command that reads the matrix says it is missing
    # (harness/needs.py).
    import yaml

    try:
        text = path.read_text()
    except OSError as e:
        raise ConfigError(f"{path}: cannot read the matrix file: {e.strerror}") from e
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f":{mark.line + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e)
        raise ConfigError(f"{path}{at}: YAML syntax error: {problem}; "
                          "fix the file (schema: harness/matrix.py)") from e


def _strings(value: Any, where: str, what: str) -> tuple[str, ...]:
    if (not isinstance(value, list) or not value
            or not all(isinstance(f, str) and f for f in value)):
        raise ConfigError(f"{where}: expected a non-empty list of {what}, found {value!r}")
    return tuple(value)


def _known_entries(value: Any, where: str, keys: tuple[str, ...], what: str,
                   ) -> list[tuple[dict, tuple[tuple[str, tuple[str, ...]], ...], str]]:
    """(entry, cells, reason) of each entry of a known_failures or
    known_splats list; what is the key that names what is known."""
    if not isinstance(value, list):
        raise ConfigError(f"{where}: expected a list of {{{_join(keys)}}}; found {value!r}")
    axes = {key: axis for axis, key in _AXES.items() if axis != "variants"}
    out = []
    for i, entry in enumerate(value):
        at = f"{where}[{i}]"
        entry = _mapping(entry, at, keys)
        for key in (what, "reason"):
            if key not in entry:
                raise ConfigError(f"{at}: missing key {key!r}; required: {what}, reason")
        reason = entry["reason"]
        if not isinstance(reason, str) or not reason:
            raise ConfigError(f"{at}.reason: expected a non-empty string, found {reason!r}")
        cells = []
        for key, values in _mapping(entry.get("cells", {}), f"{at}.cells", axes).items():
            values = [values] if isinstance(values, str) else values
            cells.append((key, _Names(()).axis(values, axes[key], f"{at}.cells.{key}")))
        out.append((entry, tuple(cells), reason))
    return out


def _known_failures(value: Any, where: str) -> tuple[KnownFailure, ...]:
    out = []
    for i, (entry, cells, reason) in enumerate(
            _known_entries(value, where, _KNOWN_FAILURE_KEYS, "tests")):
        tests = _strings(entry["tests"], f"{where}[{i}].tests", "test-name patterns")
        racy = entry.get("racy", False)
        if not isinstance(racy, bool):
            raise ConfigError(f"{where}[{i}].racy: expected true or false, found {racy!r}")
        if racy and not cells:
            raise ConfigError(f"{where}[{i}]: a racy entry needs cells: (where its race was "
                              "seen or can be hit); without them it excuses the test everywhere")
        failing = entry.get("failing")
        if not isinstance(failing, str) or not failing:
            raise ConfigError(f"{where}[{i}]: missing failing: (a regular expression of the "
                              "check it fails by, matched against the case's failed-check "
                              "lines '<file>:<line>:<test>:Expected ...'); without it any "
                              "failure of the case would pass for this one")
        try:
            re.compile(failing)
        except re.error as e:
            raise ConfigError(f"{where}[{i}].failing: {failing!r} is no regular expression: "
                              f"{e}") from e
        out.append(KnownFailure(tests, cells, reason, racy, failing))
    return tuple(out)


def _skips(value: Any, where: str, variants: Iterable[str]) -> tuple[ExpectedSkip, ...]:
    """The skips: entries; variants: the defined variants' names."""
    names = _Names(variants)
    out = []
    for i, (entry, cells, reason) in enumerate(
            _known_entries(value, where, _SKIP_KEYS, "tests")):
        tests = _strings(entry["tests"], f"{where}[{i}].tests", "exact test names")
        if wild := [t for t in tests if set(t) & set("*?[")]:
            raise ConfigError(f"{where}[{i}].tests: {wild[0]!r}: name each case exactly")
        before = entry.get("before", "")
        if before and not (isinstance(before, str) and re.fullmatch(r"\d+\.\d+", before)):
            raise ConfigError(f"{where}[{i}].before: expected a kernel version such as \"6.14\", "
                              f"found {before!r}")
        kernels = (names.axis(entry["variants"], "variants", f"{where}[{i}].variants")
                   if "variants" in entry else ())
        out.append(ExpectedSkip(tests, cells, reason, before, kernels))
    return tuple(out)


def _known_splats(value: Any, where: str) -> tuple[KnownSplat, ...]:
    out = []
    for i, (entry, cells, reason) in enumerate(
            _known_entries(value, where, _KNOWN_SPLAT_KEYS, "signature")):
        sig = entry["signature"]
        if not isinstance(sig, str) or not sig.strip():
            raise ConfigError(f"{where}[{i}].signature: expected a splat signature as "
                              f"results.json's splats[].signature gives it, found {sig!r}")
        if sig.startswith("panic"):
            raise ConfigError(f"{where}[{i}].signature: {sig!r}: a panic ends the guest "
                              "and loses the tests after it; it cannot be a known splat")
        at_boot = entry.get("at_boot", False)
        if not isinstance(at_boot, bool):
            raise ConfigError(f"{where}[{i}].at_boot: expected true or false, "
                              f"found {at_boot!r}")
        out.append(KnownSplat(sig, cells, reason, at_boot))
    return tuple(out)


def _variants(value: Any, where: str, base: Path) -> dict[str, Variant]:
    if not isinstance(value, dict) or not value:
        raise ConfigError(f"{where}: expected a mapping of variant names to "
                          f"{{{_join(_VARIANT_KEYS)}}}; found {value!r}")
    variants = {}
    for name, spec in value.items():
        if not isinstance(name, str) or not _VARIANT_NAME.fullmatch(name):
            raise ConfigError(f"{where}: bad variant name {name!r}; use lower-case "
                              "letters, digits, '-' and '.', starting with a letter or digit")
        spec = _mapping({} if spec is None else spec, f"{where}.{name}", _VARIANT_KEYS)
        if "image" in spec:
            if both := [k for k in _BUILT_ONLY_KEYS if k in spec]:
                raise ConfigError(f"{where}.{name}: has both image: and {both[0]}:; a variant "
                                  "with image: boots a Debian package as it ships, nothing "
                                  f"is built: drop {both[0]}: (or image:)")
            image = images_mod.parse(spec["image"], f"{where}.{name}.image")
            variants[name] = Variant(
                name, None, spec.get("note", ""),
                known_failures=_known_failures(spec.get("known_failures", []),
                                               f"{where}.{name}.known_failures"),
                known_splats=_known_splats(spec.get("known_splats", []),
                                           f"{where}.{name}.known_splats"),
                version=image.version, image=image)
            continue
        for key, field in spec.items():
            if key == "version":
                _version(field, f"{where}.{name}.version")
            elif key not in ("known_failures", "known_splats") \
                    and (not isinstance(field, str) or not field):
                raise ConfigError(f"{where}.{name}.{key}: expected a non-empty string, "
                                  f"found {field!r}")
        if "flavor" in spec and spec["flavor"] not in FLAVORS:
            raise ConfigError(f"{where}.{name}.flavor: unknown flavor {spec['flavor']!r}; "
                              f"expected one of {_join(FLAVORS)}")
        parent = None
        if "of" in spec:
            parent = variants.get(spec["of"])
            if parent is None or parent.flavor != PLAIN or parent.image is not None:
                raise ConfigError(f"{where}.{name}.of: {spec['of']!r} is no plain variant "
                                  "defined above it; of: names the variant whose tree, "
                                  "series and known failures this one shares")
            for key in ("series", "tree", "version"):
                if key in spec:
                    raise ConfigError(f"{where}.{name}: has both of: and {key}:; a variant "
                                      f"of {spec['of']!r} has its {key}: drop one")
        series, tree = spec.get("series"), spec.get("tree")
        if tree and "version" in spec:
            raise ConfigError(f"{where}.{name}: has both tree: and version:; version: "
                              "picks one of Debian's trees, tree: is a tree of your own: "
                              "drop one")
        failures = _known_failures(spec.get("known_failures", []),
                                   f"{where}.{name}.known_failures")
        splats = _known_splats(spec.get("known_splats", []), f"{where}.{name}.known_splats")
        if parent:
            variants[name] = Variant(name, parent.series, spec.get("note", ""), parent.tree,
                                     parent.known_failures + failures,
                                     known_splats=parent.known_splats + splats,
                                     version=parent.version,
                                     flavor=spec.get("flavor", PLAIN))
            continue
        variants[name] = Variant(name, base / series if series else None,
                                 spec.get("note", ""), base / tree if tree else None,
                                 failures, known_splats=splats,
                                 version=spec.get("version", DEFAULT_VERSION),
                                 flavor=spec.get("flavor", PLAIN))
    return variants


def _version(value: Any, where: str) -> str:
    if not isinstance(value, str) or not _VERSION.fullmatch(value):
        hint = (" (quote it: YAML reads 6.10 as the number 6.1)"
                if isinstance(value, (int, float)) else "")
        raise ConfigError(f"{where}: expected a kernel version such as \"6.12\" "
                          f"(Debian's linux-source-<version>), found {value!r}{hint}")
    return value


class _Names:
    """The allowed values of the matrix axes."""

    def __init__(self, variants: Iterable[str]) -> None:
        self.allowed = {"archs": tuple(ARCHS), "variants": tuple(variants),
                        "modes": MODES, "policies": tuple(POLICIES),
                        "hashes": tuple(HASHES), "setattr": tuple(SETATTR)}

    def one(self, value: Any, axis: str, where: str) -> str:
        allowed = self.allowed[axis]
        if value not in allowed:
            label = "defined variants" if axis == "variants" else "allowed"
            hint = (" (YAML reads a bare off as false: quote it)"
                    if isinstance(value, bool) else "")
            raise ConfigError(f"{where}: unknown {_AXES[axis]} {value!r}; "
                              f"{label}: {_join(allowed)}{hint}")
        return value

    def axis(self, value: Any, axis: str, where: str) -> tuple[str, ...]:
        """value as a tuple of names, none twice."""
        if not isinstance(value, list) or not value:
            raise ConfigError(f"{where}: expected a non-empty list of {axis} out of "
                              f"{_join(self.allowed[axis])}; found {value!r}")
        for i, name in enumerate(value):
            self.one(name, axis, where)
            if name in value[:i]:
                raise ConfigError(f"{where}: {_AXES[axis]} {name!r} is listed twice")
        return tuple(value)


def _exclusions(value: Any, where: str, names: _Names,
                axes: Iterable[str] = tuple(_AXES)) -> list[dict[str, tuple[str, ...]]]:
    """Each rule excludes the cells that match all its keys; a key's value
    is one name or a list of them (any of)."""
    keys = [_AXES[a] for a in axes]
    if not isinstance(value, list):
        raise ConfigError(f"{where}: expected a list of mappings with keys "
                          f"{_join(keys)}; found {value!r}")
    rules = []
    for i, rule in enumerate(value):
        rule = _mapping(rule, f"{where}[{i}]", keys)
        rules.append({key: names.axis(rule[key], axis, f"{where}[{i}].{key}")
                      if isinstance(rule[key], list)
                      else (names.one(rule[key], axis, f"{where}[{i}].{key}"),)
                      for axis, key in _AXES.items() if key in rule})
    return rules


def _split(given: Any) -> list[str]:
    return ([v.strip() for v in given.split(",") if v.strip()]
            if isinstance(given, str) else list(given))


def _cells(section: dict[str, Any], where: str, names: _Names,
           overrides: dict[str, Any], fixed: dict[str, tuple[str, ...]]) -> tuple[Cell, ...]:
    """The cells of a matrix-like section: the product of its axes (fixed
    ones given, optional ones defaulted, overrides replacing) minus its
    exclusions."""
    axes: dict[str, tuple[str, ...]] = {}
    for axis in _AXES:
        if axis in fixed:
            axes[axis] = fixed[axis]
        elif axis in section:
            axes[axis] = names.axis(section[axis], axis, f"{where}.{axis}")
        elif axis in _OPTIONAL_AXES:
            axes[axis] = _OPTIONAL_AXES[axis]
        else:
            raise ConfigError(f"{where}: missing key {axis!r}; required: "
                              f"{_join(a for a in _AXES if a not in _OPTIONAL_AXES)}")
        given = overrides.get(axis)
        if given is not None:
            axes[axis] = names.axis(_split(given), axis, f"command line --{axis}")
    rules = _exclusions(section.get("exclude", []), f"{where}.exclude", names)
    cells = tuple(
        cell for cell in itertools.starmap(Cell, itertools.product(*axes.values()))
        if not any(all(getattr(cell, k) in v for k, v in rule.items()) for rule in rules))
    if not cells:
        product = " x ".join(f"{axis} [{_join(values)}]" for axis, values in axes.items())
        raise ConfigError(f"{where}.exclude: excludes every cell of {product}; "
                          "drop an exclusion or choose other axis values")
    return cells


def load(path: Path, *, archs: Iterable[str] | str | None = None,
         modes: Iterable[str] | str | None = None,
         policies: Iterable[str] | str | None = None,
         variants: Iterable[str] | str | None = None,
         hashes: Iterable[str] | str | None = None,
         setattr: Iterable[str] | str | None = None,
         kernel_tree: Path | None = None,
         extra_patches: Iterable[Path] | None = None,
         base: str | None = None) -> Matrix:
    """Reads and checks the matrix file.  The keyword arguments, when given,
    replace the matrix axis of the same name (command line --archs etc.; a
    string is split at commas); exclusions still apply to them.  kernel_tree
    defines the variant "local" built from that tree, extra_patches the
    variant "extra" (base's series, version, flavor and known failures,
    default patched's, then these patches); either becomes the variants
    axis unless variants is given.  The local tree is configured, and
    compared for a workspace turn, as the nearest of sources: at or below
    its own version."""
    name = str(path)
    top = _mapping(_read(path), name, _TOP_KEYS)
    for key in ("variants", "matrix"):
        if key not in top:
            raise ConfigError(f"{name}: missing key {key!r}; required: variants, matrix")
    defined = _variants(top["variants"], f"{name}: variants", path.parent)
    skips = _skips(top.get("skips", []), f"{name}: skips", defined)
    defined = {n: dataclasses.replace(v, skips=skips) for n, v in defined.items()}
    sources = _sources(top, path, tuple(v.version for v in defined.values()))
    for v in defined.values():
        if v.tree is None and v.image is None and v.version not in sources:
            raise ConfigError(f"{name}: variants.{v.name}.version: {v.version!r} is not in "
                              f"sources: ({_join(sources)}); add Debian's package for it")
    if kernel_tree is not None:
        if LOCAL_VARIANT in defined:
            raise ConfigError(f"{name}: variants: {LOCAL_VARIANT!r} is reserved for "
                              "--kernel-tree; rename that variant")
        own = sources_mod.version_of_tree(kernel_tree)
        defined[LOCAL_VARIANT] = Variant(
            LOCAL_VARIANT, None, f"kernel tree {kernel_tree}", kernel_tree,
            version=sources_mod.nearest(sources, own).version, skips=skips, own_version=own or "")
        if variants is None:
            variants = [LOCAL_VARIANT]
    extra = tuple(extra_patches or ())
    if extra:
        if EXTRA_VARIANT in defined:
            raise ConfigError(f"{name}: variants: {EXTRA_VARIANT!r} is reserved for "
                              "EXTRA_PATCHES; rename that variant")
        for patch in extra:
            if not patch.is_file():
                raise ConfigError(f"EXTRA_PATCHES: {patch}: no such patch file "
                                  "(paths are relative to where make runs)")
        base_name = base or "patched"
        of = defined.get(base_name)
        if of is None or of.tree is not None or of.image is not None:
            raise ConfigError(f"BASE={base_name}: no variant of Debian's trees by that name "
                              f"in {name}; one of: "
                              f"{_join(n for n, v in defined.items() if v.tree is None and v.image is None)}")
        defined[EXTRA_VARIANT] = dataclasses.replace(
            of, name=EXTRA_VARIANT, note=f"{base_name} + " + " ".join(p.name for p in extra),
            patches=extra, workspace=True)
        if variants is None:
            variants = [EXTRA_VARIANT]
    names = _Names(defined)

    matrix = _mapping(top["matrix"], f"{name}: matrix", _MATRIX_KEYS)
    overrides = {"archs": archs, "variants": variants, "modes": modes, "policies": policies,
                 "hashes": hashes, "setattr": setattr}
    cells = _cells(matrix, f"{name}: matrix", names, overrides, {})

    mutants = None
    if "mutants" in top:
        mutants = dict(_mapping(top["mutants"], f"{name}: mutants", _MUTANT_KEYS))
        where = f"{name}: mutants"
        for key in ("patches", "base"):
            if not isinstance(mutants.get(key), str) or not mutants[key]:
                raise ConfigError(f"{where}.{key}: expected a non-empty string, "
                                  f"found {mutants.get(key)!r}")
        names.one(mutants["base"], "variants", f"{where}.base")
        mutants["patches"] = path.parent / mutants["patches"]
        mutants["versions"] = _mutant_versions(mutants.get("versions", {}),
                                               f"{where}.versions", path.parent, names,
                                               defined, mutants)
        _cells(mutants, where, names, {}, {"variants": (mutants["base"],)})   # check it

    check = None
    if "check" in top:
        check = _check(top["check"], f"{name}: check", names)

    timeout = positive_int(top.get("timeout", DEFAULT_TIMEOUT), f"{name}: timeout")
    # Unset, it is no later than the timeout (equal: no deadline of its own).
    boot_timeout = positive_int(top.get("boot_timeout", min(DEFAULT_BOOT_TIMEOUT, timeout)),
                                 f"{name}: boot_timeout")
    if "boot_timeout" in top and boot_timeout >= timeout:
        raise ConfigError(f"{name}: boot_timeout ({boot_timeout}) must be below timeout "
                          f"({timeout}): a guest's init begins before it ends")
    return Matrix(path=path, variants=defined, cells=cells,
                  timeout=timeout,
                  memory=positive_int(top.get("memory", DEFAULT_MEMORY),
                                       f"{name}: memory"),
                  mutants=mutants, check=check, boot_timeout=boot_timeout,
                  sources=sources)


def _sources(top: dict[str, Any], path: Path,
             versions: tuple[str, ...]) -> dict[str, sources_mod.Source]:
    if "sources" not in top:
        return sources_mod.default_sources(versions)
    return sources_mod.parse(top["sources"], f"{path}: sources", path.parent)


def load_sources(path: Path) -> dict[str, sources_mod.Source]:
    """The Debian sources of a matrix (make deps, before anything is built)."""
    return load(path).sources


def _check(value: Any, where: str,
           names: _Names) -> tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]:
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{where}: expected a non-empty list of mappings with keys "
                          f"{_join(_CHECK_KEYS)}; found {value!r}")
    out = []
    for i, entry in enumerate(value):
        at = f"{where}[{i}]"
        entry = _mapping(entry, at, _CHECK_KEYS)
        if "variants" not in entry:
            raise ConfigError(f"{at}: missing key 'variants'")
        out.append((names.axis(entry["variants"], "variants", f"{at}.variants"),
                    names.axis(entry.get("archs", list(ARCHS)), "archs", f"{at}.archs")))
    return tuple(out)


def _mutant_versions(value: Any, where: str, base: Path, names: _Names,
                     defined: dict[str, Variant],
                     mutants: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per kernel version: the variant its mutants apply on top of and the
    directory of its known-bad patches.  The section's own base and patches
    are those of its base variant's version."""
    own = defined[mutants["base"]].version
    out = {own: {"base": mutants["base"], "patches": mutants["patches"]}}
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a mapping of kernel versions to "
                          f"{{{_join(_MUTANT_VERSION_KEYS)}}}; found {value!r}")
    for version, spec in value.items():
        at = f"{where}.{version}"
        _version(version, f"{where}: key")
        spec = _mapping(spec, at, _MUTANT_VERSION_KEYS)
        for key in _MUTANT_VERSION_KEYS:
            if not isinstance(spec.get(key), str) or not spec[key]:
                raise ConfigError(f"{at}.{key}: expected a non-empty string, "
                                  f"found {spec.get(key)!r}")
        names.one(spec["base"], "variants", f"{at}.base")
        if defined[spec["base"]].version != version:
            raise ConfigError(f"{at}.base: variant {spec['base']!r} is a "
                              f"{defined[spec['base']].version} kernel, not {version}")
        if version in out:
            raise ConfigError(f"{at}: {version} is already the version of mutants.base")
        out[version] = {"base": spec["base"], "patches": base / spec["patches"]}
    return out


def mutant_cells(m: Matrix, variant_names: Iterable[str], *,
                 archs: Iterable[str] | str | None = None) -> tuple[Cell, ...]:
    """The cells `make mutants` boots for each of variant_names."""
    if m.mutants is None:
        raise ConfigError(f"{m.path}: no mutants: section; add one (see harness/matrix.py)")
    names = _Names(m.variants)
    return _cells(m.mutants, f"{m.path}: mutants", names, {"archs": archs},
                  {"variants": tuple(variant_names)})


# ---- tiers ------------------------------------------------------------------

TIERS = ("full", "covering", "check")
# The axes the covering tier boots every combination of (per arch and
# variant); the others only need each of their values somewhere.
_GROUP_AXES = ("arch", "variant", "mode", "policy")
_SPREAD_AXES = ("hash", "setattr")


def _kind(cell: Cell) -> tuple[str, str, str, str, str]:
    """What a cell is apart from its kernel: the arch and the command line."""
    return (cell.arch, cell.mode, cell.policy, cell.hash, cell.setattr)


def covering_tier(m: Matrix) -> tuple[Cell, ...]:
    """The cells `make check` boots, chosen by rule so that the tier grows
    with the number of kernels and archs, not with the product of every axis:

    - one cell per arch x variant x mode x policy of m.cells;
    - each value of the other axes (hash, setattr) with every arch and
      variant it has cells with;
    - on every variant, the kinds of cell `make mutants` catches its
      known-bad kernels in (matrix.yaml mutants:, on its archs), so that a
      mutant (EXTRA_PATCHES=) or a real regression of that kind is caught
      by the tier too.

    Among the cells of a group, a mutant kind comes first, then the one
    whose hash-and-setattr pair the tier has least often with its arch,
    variant and policy so far, then the one whose values it has least often
    with its arch and variant (so values and pairs spread), then matrix
    order: the choice is deterministic."""
    catching = set()
    if m.mutants is not None:
        catching = {_kind(c) for c in mutant_cells(m, [m.mutants["base"]])}
    chosen: dict[Cell, None] = {}
    uses: dict[tuple[str, ...], int] = {}    # per value and per pair: how often taken

    def values(cell: Cell) -> list[tuple[str, ...]]:
        return [(cell.arch, cell.variant, a, getattr(cell, a)) for a in _SPREAD_AXES]

    def pair(cell: Cell) -> tuple[str, ...]:
        return (cell.arch, cell.variant, cell.policy, *(getattr(cell, a) for a in _SPREAD_AXES))

    def rarity(cell: Cell) -> tuple[int, int]:
        return uses.get(pair(cell), 0), sum(uses.get(v, 0) for v in values(cell))

    def take(cell: Cell) -> None:
        chosen[cell] = None
        for v in (*values(cell), pair(cell)):
            uses[v] = uses.get(v, 0) + 1

    for cell in m.cells:
        if _kind(cell) in catching:
            take(cell)
    groups: dict[tuple[str, ...], list[Cell]] = {}
    for cell in m.cells:
        groups.setdefault(tuple(getattr(cell, a) for a in _GROUP_AXES), []).append(cell)
    for members in groups.values():
        if not any(c in chosen for c in members):
            # min() keeps the first of equals: matrix order breaks ties.
            take(min(members, key=rarity))
    for cell in m.cells:
        if any(v not in uses for v in values(cell)):
            take(cell)
    return tuple(c for c in m.cells if c in chosen)


def check_tier(m: Matrix) -> tuple[Cell, ...]:
    """The covering cells of the kernels matrix.yaml's check: section names
    (what `make check` boots inside CI's budget; every kernel's when it has
    none).  Covering groups are per arch and variant, so each named kernel
    keeps all of its covering cells."""
    if m.check is None:
        return covering_tier(m)
    cells = tuple(c for c in covering_tier(m)
                  if any(c.variant in vs and c.arch in archs for vs, archs in m.check))
    if m.cells and not cells:
        raise ConfigError(f"{m.path}: check: names none of the selected kernels "
                          f"({_join(sorted({f'{c.arch}-{c.variant}' for c in m.cells}))}); "
                          "use TIER=covering for them")
    return cells


def tier_cells(m: Matrix, tier: str) -> tuple[Cell, ...]:
    if tier == "full":
        return m.cells
    if tier == "covering":
        return covering_tier(m)
    if tier == "check":
        return check_tier(m)
    raise ConfigError(f"unknown tier {tier!r}; allowed: {_join(TIERS)}")


# ---- shards -----------------------------------------------------------------

def parse_shard(text: str) -> tuple[int, int]:
    """'i/N' (1 <= i <= N) as (i, N)."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise ConfigError(f"--shard {text!r}: expected i/N with 1 <= i <= N, e.g. 2/4")
    return int(m.group(1)), int(m.group(2))


def partition(cells: Iterable[Cell], n: int,
              expected_s: dict[str, float]) -> list[list[Cell]]:
    """cells in n shards of about equal expected time: the longest cell
    first into the shard with the least so far (ties: the lower shard, then
    the cell id), so every machine computes the same shards from the same
    manifest.  A cell without an expected time counts as the mean of the
    others (1 s if none has one).  Each shard keeps the order of cells."""
    cells = list(cells)
    known = [expected_s[c.id] for c in cells if c.id in expected_s]
    default = sum(known) / len(known) if known else 1.0
    cost = {c.id: expected_s.get(c.id, default) for c in cells}
    shard_of: dict[Cell, int] = {}
    load = [0.0] * n
    for cell in sorted(cells, key=lambda c: (-cost[c.id], c.id)):
        i = min(range(n), key=lambda k: (load[k], k))
        shard_of[cell] = i
        load[i] += cost[cell.id]
    return [[c for c in cells if shard_of[c] == i] for i in range(n)]
