"""What every nested make needs from the environment."""
from __future__ import annotations

import os


def clean_env() -> dict[str, str]:
    """The environment without an outer make's variables: with them, lib.mk
    would take MAKELEVEL>0 to mean a parent sets OUTPUT, and kbuild would
    inherit the top Makefile's flags."""
    env = dict(os.environ)
    for var in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES"):
        env.pop(var, None)
    return env
