"""Command-line entry points that are not the pytest matrix.

    /usr/bin/python3 -m harness selftests [ARCH ...]

builds the guest's /selftests tree for each arch (default: all) under
build/selftests/<arch>/, ready to copy into a guest of your own.

    /usr/bin/python3 -m harness regressions [--archs A,B] [VARIANT ...]

boots every deliberately broken kernel of matrix.yaml (x86_64 only unless
told otherwise) and fails unless each is caught (harness/regressions.py).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import cases, initramfs, kbuild, matrix as matrix_mod, regressions, runner
from .archs import ARCHS
from .errors import HarnessError

REPO = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness")
    sub = parser.add_subparsers(dest="command", required=True)
    st = sub.add_parser("selftests", help="build build/selftests/<arch>/")
    st.add_argument("archs", nargs="*", metavar="ARCH", help=f"one of {', '.join(ARCHS)}")
    st.add_argument("--build-dir", type=Path, default=REPO / "build")
    rg = sub.add_parser("regressions", help="check every broken kernel is caught")
    rg.add_argument("variants", nargs="*", metavar="VARIANT",
                    help="variants with catches: in matrix.yaml (default: all of them)")
    rg.add_argument("--archs", default="x86_64", help="comma-separated (default: x86_64)")
    rg.add_argument("--matrix", type=Path, default=REPO / "matrix.yaml")
    rg.add_argument("--build-dir", type=Path, default=REPO / "build")
    args = parser.parse_args(argv)
    if args.command == "regressions":
        return _regressions(args)
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


def _regressions(args: argparse.Namespace) -> int:
    try:
        defined = matrix_mod.load(args.matrix).variants
        broken = {n: v for n, v in defined.items() if v.catches}
        for name in args.variants:
            if name not in broken:
                raise HarnessError(f"{name!r} is not a variant with catches: in {args.matrix}; "
                                   f"those are: {', '.join(broken)}")
        chosen = args.variants or list(broken)
        m = matrix_mod.load(args.matrix, archs=args.archs, variants=chosen)
        run = runner.run(m, list(m.cells), cases.expected_cases(REPO / "selftests"), REPO,
                         args.build_dir.resolve())
    except HarnessError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    verdicts = [regressions.judge(v, broken[v].catches,
                                  [c for c in run.cells if c.cell.variant == v])
                for v in chosen]
    print(regressions.report(verdicts))
    print(f"results: {run.run_dir}")
    return 0 if all(v.caught for v in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
