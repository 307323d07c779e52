"""Kconfig fragments: parse them and check that a generated .config kept
every option they ask for (olddefconfig silently drops options whose
dependencies are not met)."""
from __future__ import annotations

import re
from pathlib import Path

from .errors import BuildError, ConfigError

_SET = re.compile(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$")
_UNSET = re.compile(r"^# (CONFIG_[A-Za-z0-9_]+) is not set$")


def parse(text: str, origin: str = "<string>") -> dict[str, str]:
    """Map option -> value ('n' for '# ... is not set')."""
    options: dict[str, str] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if m := _SET.match(line):
            options[m.group(1)] = m.group(2)
        elif m := _UNSET.match(line):
            options[m.group(1)] = "n"
        elif line and not line.startswith("#"):
            raise ConfigError(
                f"{origin}:{lineno}: expected 'CONFIG_FOO=value' or "
                f"'# CONFIG_FOO is not set', found {raw!r}")
    return options


def parse_file(path: Path) -> dict[str, str]:
    return parse(path.read_text(), str(path))


def missing_options(requested: dict[str, str], final: dict[str, str]) -> list[str]:
    """Requested options whose value the final .config does not have."""
    missing = []
    for name, value in requested.items():
        got = final.get(name, "n")
        if got != value:
            missing.append(f"{name}={value} (got {name}={got})")
    return missing


def check(requested: dict[str, str], config_path: Path, fragments: list[Path]) -> None:
    missing = missing_options(requested, parse_file(config_path))
    if missing:
        raise BuildError(
            f"Not all Kconfig options requested by {', '.join(map(str, fragments))} "
            f"are in the generated {config_path}. This usually means their "
            f"dependencies are not met: add those to a fragment.\nMissing:\n  "
            + "\n  ".join(missing))
