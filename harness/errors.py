"""Exceptions raised where a problem is found and reported once, at the edge,
and the one way the harness reads a JSON file it did not just write."""
from __future__ import annotations

import json
from pathlib import Path


class HarnessError(Exception):
    """Base class: the message says what was expected, what was found, and
    what to do about it."""


class ConfigError(HarnessError):
    """matrix.yaml or a Kconfig fragment is wrong."""


class BuildError(HarnessError):
    """Extracting, patching, configuring or compiling failed."""


class DependencyError(HarnessError):
    """A host tool or package is missing."""


class BootError(HarnessError):
    """QEMU could not be started at all (not: the guest failed)."""


def read_json(path: Path, error: type[HarnessError], remedy: str) -> object:
    """path's JSON document; error(message naming path, what went wrong and
    remedy, what to do about it) if it cannot be read or parsed."""
    try:
        return json.loads(path.read_text())
    except OSError as e:
        raise error(f"{path}: cannot read it ({e.strerror}); {remedy}") from e
    except ValueError as e:
        raise error(f"{path}: not valid JSON ({e}); {remedy}") from e
