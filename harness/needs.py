"""The modules the harness needs beyond Python's own, and the one line a
python3 without them prints instead of a traceback.

PyYAML reads matrix.yaml; pytest runs the matrix and the unit tests.
`make deps` installs them as Debian's python3-yaml and python3-pytest, so
only Debian's /usr/bin/python3 (the one make uses) is sure to have them;
another python3 first on PATH (pyenv's, a virtualenv) often lacks one.
Nothing here imports either: `python3 -m harness --help` works without
them, and each command names what it lacks before it starts.
"""
from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterable

# module -> (what it is called, the Debian package make deps installs)
MODULES = {"yaml": ("PyYAML", "python3-yaml"), "pytest": ("pytest", "python3-pytest")}
DEBIAN_PYTHON = "/usr/bin/python3"
# Where apt's python3-* packages go: an interpreter with it on sys.path
# gets them from make deps.
_DIST_PACKAGES = "/usr/lib/python3/dist-packages"


class MissingModule(Exception):
    """A module of MODULES is not importable; str() is the line to print."""


def missing(modules: Iterable[str]) -> list[str]:
    """Those of modules this interpreter cannot import."""
    return [m for m in modules if importlib.util.find_spec(m) is None]


def debian_python(path: list[str] | None = None) -> bool:
    """Whether make deps installs the modules for this interpreter."""
    return _DIST_PACKAGES in (sys.path if path is None else path)


def message(command: str, absent: list[str], executable: str | None = None,
            path: list[str] | None = None) -> str:
    """What to say when command lacks the modules absent: which ones, and
    what to do, which depends on whether make deps can install them here."""
    executable = executable or sys.executable or "python3"
    names = " and ".join(f"{m} ({MODULES[m][0]})" if MODULES[m][0] != m else m for m in absent)
    packages = " and ".join(MODULES[m][1] for m in absent)
    if debian_python(path):
        todo = f"run make deps first (it installs {packages})"
    else:
        todo = (f"use {DEBIAN_PYTHON} -m harness {command} (as make does), after make deps "
                f"(it installs {packages} there)")
    return (f"{executable} has no module {names}, which python3 -m harness {command} "
            f"needs: {todo}")


def require(command: str, modules: Iterable[str]) -> None:
    """MissingModule if this interpreter lacks any of modules."""
    absent = missing(modules)
    if absent:
        raise MissingModule(message(command, absent))


def of_error(command: str, e: ModuleNotFoundError) -> MissingModule | None:
    """The MissingModule for an import that failed deep inside command
    (one its needs did not declare), or None if e is not about MODULES."""
    top = (e.name or "").split(".")[0]
    return MissingModule(message(command, [top])) if top in MODULES else None
