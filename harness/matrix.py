"""Load and validate matrix.yaml: the kernels the harness can build and the
cells (arch x variant x mode x policy) that `make run` boots.

    variants:                       # every kernel the harness knows how to build
      stock: {}
      patched: {series: kernel-patches/series, note: "..."}
      mine: {tree: ../linux}          # a kernel tree of your own (no series: as is)
    matrix:                         # what `make run` boots
      archs: [x86_64, aarch64]
      modes: [enforce, fix, log, off]
      policies: [builtin, legacy, custom]
      variants: [stock, patched]
      exclude:                      # a cell is excluded if all given keys match
        - {policy: legacy, variant: patched}
    timeout: 150                    # seconds per guest boot, optional
    memory: 512                     # MiB per guest, optional

A variant's series is relative to the matrix file's directory.
"""
from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .archs import ARCHS
from .errors import ConfigError

MODES: tuple[str, ...] = ("enforce", "fix", "log", "off")
# policy -> kernel command line fragment; "custom" is loaded by the tests.
POLICIES: dict[str, str] = {
    "builtin": "ima_policy=appraise_tcb",
    "legacy": "ima_appraise_tcb",
    "custom": "",
}
DEFAULT_TIMEOUT = 150
DEFAULT_MEMORY = 512

_TOP_KEYS = ("variants", "matrix", "timeout", "memory")
_MATRIX_KEYS = ("archs", "modes", "policies", "variants", "exclude")
# matrix axis -> what one value is called (and its key in an exclusion), in
# the order cells are generated
_AXES = {"archs": "arch", "variants": "variant", "modes": "mode", "policies": "policy"}
_VARIANT_KEYS = ("series", "tree", "note", "catches")
# The variant --kernel-tree / KERNEL_TREE= adds.
LOCAL_VARIANT = "local"
_VARIANT_NAME = re.compile(r"[a-z0-9][a-z0-9-]*")


@dataclass(frozen=True)
class Variant:
    name: str
    series: Path | None
    note: str = ""
    tree: Path | None = None    # a kernel tree of one's own instead of Debian's
    # For a deliberately broken kernel: what must fail on it, as fnmatch
    # patterns of test names ("exec_test/exec_file.*.execve") or
    # "splat:<kind>" (see harness/regressions.py).
    catches: tuple[str, ...] = ()


@dataclass(frozen=True)
class Cell:
    arch: str
    variant: str
    mode: str
    policy: str

    @property
    def id(self) -> str:
        return f"{self.arch}-{self.variant}-{self.mode}-{self.policy}"

    def cmdline(self) -> str:
        """The IMA part of the guest's kernel command line."""
        return " ".join(filter(None, (f"ima_appraise={self.mode}", POLICIES[self.policy])))


@dataclass(frozen=True)
class Matrix:
    path: Path
    variants: dict[str, Variant]    # every defined variant, in file order
    cells: tuple[Cell, ...]         # by arch, variant, mode, policy in axis order
    timeout: int
    memory: int


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


def _positive_int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{where}: expected a positive integer, found {value!r}")
    return value


def _read(path: Path) -> Any:
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


def _variants(value: Any, where: str, base: Path) -> dict[str, Variant]:
    if not isinstance(value, dict) or not value:
        raise ConfigError(f"{where}: expected a mapping of variant names to "
                          f"{{series, tree, note, catches}}; found {value!r}")
    variants = {}
    for name, spec in value.items():
        if not isinstance(name, str) or not _VARIANT_NAME.fullmatch(name):
            raise ConfigError(f"{where}: bad variant name {name!r}; use lower-case "
                              "letters, digits and '-', starting with a letter or digit")
        spec = _mapping({} if spec is None else spec, f"{where}.{name}", _VARIANT_KEYS)
        for key, field in spec.items():
            if key == "catches":
                if (not isinstance(field, list) or not field
                        or not all(isinstance(f, str) and f for f in field)):
                    raise ConfigError(f"{where}.{name}.catches: expected a non-empty list of "
                                      f"test-name patterns, found {field!r}")
            elif not isinstance(field, str) or not field:
                raise ConfigError(f"{where}.{name}.{key}: expected a non-empty string, "
                                  f"found {field!r}")
        series, tree = spec.get("series"), spec.get("tree")
        variants[name] = Variant(name, base / series if series else None,
                                 spec.get("note", ""), base / tree if tree else None,
                                 tuple(spec.get("catches", ())))
    return variants


class _Names:
    """The allowed values of the matrix axes."""

    def __init__(self, variants: Iterable[str]) -> None:
        self.allowed = {"archs": tuple(ARCHS), "variants": tuple(variants),
                        "modes": MODES, "policies": tuple(POLICIES)}

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


def _exclusions(value: Any, where: str, names: _Names) -> list[dict[str, str]]:
    if not isinstance(value, list):
        raise ConfigError(f"{where}: expected a list of mappings with keys "
                          f"{_join(_AXES.values())}; found {value!r}")
    rules = []
    for i, rule in enumerate(value):
        rule = _mapping(rule, f"{where}[{i}]", _AXES.values())
        for axis, key in _AXES.items():
            if key in rule:
                names.one(rule[key], axis, f"{where}[{i}].{key}")
        rules.append(rule)
    return rules


def load(path: Path, *, archs: Iterable[str] | None = None,
         modes: Iterable[str] | None = None,
         policies: Iterable[str] | None = None,
         variants: Iterable[str] | None = None,
         kernel_tree: Path | None = None) -> Matrix:
    """Reads and checks the matrix file.  The keyword arguments, when given,
    replace the matrix axis of the same name (command line --archs etc.; a
    string is split at commas); exclusions still apply to them.  kernel_tree
    defines the variant "local" built from that tree, and makes it the
    variants axis unless variants is given."""
    name = str(path)
    top = _mapping(_read(path), name, _TOP_KEYS)
    for key in ("variants", "matrix"):
        if key not in top:
            raise ConfigError(f"{name}: missing key {key!r}; required: variants, matrix")
    defined = _variants(top["variants"], f"{name}: variants", path.parent)
    if kernel_tree is not None:
        if LOCAL_VARIANT in defined:
            raise ConfigError(f"{name}: variants: {LOCAL_VARIANT!r} is reserved for "
                              "--kernel-tree; rename that variant")
        defined[LOCAL_VARIANT] = Variant(LOCAL_VARIANT, None, f"kernel tree {kernel_tree}",
                                         kernel_tree)
        if variants is None:
            variants = [LOCAL_VARIANT]
    names = _Names(defined)

    matrix = _mapping(top["matrix"], f"{name}: matrix", _MATRIX_KEYS)
    overrides = {"archs": archs, "variants": variants, "modes": modes, "policies": policies}
    axes = {}
    for axis in _AXES:
        if axis not in matrix:
            raise ConfigError(f"{name}: matrix: missing key {axis!r}; "
                              f"required: {_join(_AXES)}")
        axes[axis] = names.axis(matrix[axis], axis, f"{name}: matrix.{axis}")
        given = overrides[axis]
        if given is not None:
            value = ([v.strip() for v in given.split(",") if v.strip()]
                     if isinstance(given, str) else list(given))
            axes[axis] = names.axis(value, axis, f"command line --{axis}")
    rules = _exclusions(matrix.get("exclude", []), f"{name}: matrix.exclude", names)

    cells = tuple(
        cell for cell in itertools.starmap(Cell, itertools.product(*axes.values()))
        if not any(all(getattr(cell, k) == v for k, v in rule.items()) for rule in rules))
    if not cells:
        product = " x ".join(f"{axis} [{_join(values)}]" for axis, values in axes.items())
        raise ConfigError(f"{name}: matrix.exclude: excludes every cell of {product}; "
                          "drop an exclusion or choose other axis values")

    return Matrix(path=path, variants=defined, cells=cells,
                  timeout=_positive_int(top.get("timeout", DEFAULT_TIMEOUT),
                                        f"{name}: timeout"),
                  memory=_positive_int(top.get("memory", DEFAULT_MEMORY),
                                       f"{name}: memory"))
