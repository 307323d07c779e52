"""Command-line entry points that are not the pytest matrix.

    /usr/bin/python3 -m harness selftests [ARCH ...]

builds the guest's /selftests tree for each arch (default: all) under
build/selftests/<arch>/, ready to copy into a guest of your own.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import initramfs, kbuild
from .archs import ARCHS
from .errors import HarnessError

REPO = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness")
    sub = parser.add_subparsers(dest="command", required=True)
    st = sub.add_parser("selftests", help="build build/selftests/<arch>/")
    st.add_argument("archs", nargs="*", metavar="ARCH", help=f"one of {', '.join(ARCHS)}")
    st.add_argument("--build-dir", type=Path, default=REPO / "build")
    args = parser.parse_args(argv)
    unknown = [a for a in args.archs if a not in ARCHS]
    if unknown:
        parser.error(f"unknown arch {unknown[0]!r}; allowed: {', '.join(ARCHS)}")
    try:
        build = args.build_dir.resolve()
        tree = kbuild.extract(build)
        for name in args.archs or ARCHS:
            stage = initramfs.build_selftests(REPO, tree, ARCHS[name], build, jobs=2)
            print(f"{name}: {stage}")
    except HarnessError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
