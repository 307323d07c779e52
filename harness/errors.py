"""Exceptions raised where a problem is found and reported once, at the edge,
and the one way the harness reads a JSON file it did not just write."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Callable


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


def count_arg(knob: str) -> Callable[[str], int]:
    """An argparse type: a count of 1 or more (JOBS=, MAKE_JOBS=).  knob
    names it in the error.  JOBS=0 meant the number of CPUs, by accident,
    and JOBS=-1 ended a run in a traceback from its thread pool, after the
    builds."""
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            n = 0
        if n < 1:
            raise argparse.ArgumentTypeError(
                f"{knob}={text}: a whole number of 1 or more (leave it out for the "
                "number of CPUs)")
        return n
    return parse
