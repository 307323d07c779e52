"""The covering tier `make check` boots, and the shards of a CI run."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness import matrix
from harness.errors import ConfigError
from harness.matrix import Cell

REPO = Path(__file__).parents[2]


def _repo_matrix() -> matrix.Matrix:
    return matrix.load(REPO / "matrix.yaml")


def _projection(cells, *axes: str) -> set[tuple[str, ...]]:
    return {tuple(getattr(c, a) for a in axes) for c in cells}


def assert_covers(m: matrix.Matrix, tier: tuple[Cell, ...]) -> None:
    assert set(tier) <= set(m.cells)
    group = ("arch", "variant", "mode", "policy")
    assert _projection(tier, *group) == _projection(m.cells, *group)
    for axis in ("hash", "setattr"):
        assert _projection(tier, "arch", "variant", axis) == \
            _projection(m.cells, "arch", "variant", axis), axis


def test_the_repository_tier_covers_every_axis_value() -> None:
    m = _repo_matrix()
    tier = matrix.covering_tier(m)
    assert_covers(m, tier)
    # One cell per arch x variant x mode x policy: nothing added by hand.
    assert len(tier) == len(_projection(m.cells, "arch", "variant", "mode", "policy"))
    assert len(tier) < len(m.cells) / 2


def test_every_variant_has_the_cells_mutants_are_caught_in() -> None:
    m = _repo_matrix()
    tier = set(matrix.covering_tier(m))
    for variant in ("stock", "patched"):
        for c in matrix.mutant_cells(m, [variant]):
            assert c in tier, c.id


def _measured_failing_kinds() -> dict[str, set[str]]:
    """The regressions README's table of a real `make mutants` run: per
    mutant, the mode-policy cells in which it failed something."""
    text = (REPO / "kernel-patches" / "regressions" / "README.md").read_text()
    table = text.split("| patch | cells that fail |", 1)[1].split("\n\n", 1)[0]
    kinds = {}
    for number, cells in re.findall(r"^\| (\d{4}) \| ([^|]+) \|", table, re.M):
        kinds[number] = {re.sub(r"\s*\(.*\)", "", c).strip() for c in cells.split(",")}
    return kinds


def test_the_tier_boots_a_cell_every_measured_mutant_failed_in() -> None:
    m = _repo_matrix()
    base = m.mutants["base"]
    tier = {f"{c.mode}-{c.policy}" for c in matrix.covering_tier(m)
            if c.variant == base and c.arch == "x86_64"}
    kinds = _measured_failing_kinds()
    # A mutant not measured yet is covered by construction (the test above).
    patches = {p.name[:4] for p in m.mutants["patches"].glob("*.patch")}
    assert len(kinds) >= 30 and set(kinds) <= patches
    missed = {n: k for n, k in kinds.items() if not k & tier}
    assert missed == {}


def test_the_tier_grows_with_kernels_not_with_the_axes_product(tmp_path: Path) -> None:
    doc = yaml.safe_load((REPO / "matrix.yaml").read_text())
    (tmp_path / "kernel-patches").symlink_to(REPO / "kernel-patches")
    for name in ("debug", "v6-6", "v6-6-debug"):
        doc["variants"][name] = {"note": "a later kernel"}
        doc["matrix"]["variants"].append(name)
    path = tmp_path / "matrix.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    small, big = _repo_matrix(), matrix.load(path)
    tier = matrix.covering_tier(big)
    assert_covers(big, tier)
    # 2 archs x 4 modes x 3 policies per new kernel (only patched drops legacy).
    assert len(tier) - len(matrix.covering_tier(small)) == 3 * 2 * 4 * 3
    assert len(tier) < len(big.cells) / 2


def test_the_tier_is_the_same_every_time() -> None:
    assert matrix.covering_tier(_repo_matrix()) == matrix.covering_tier(_repo_matrix())


def test_a_narrowed_matrix_narrows_its_tier() -> None:
    m = matrix.load(REPO / "matrix.yaml", archs="aarch64", variants="stock")
    tier = matrix.covering_tier(m)
    assert_covers(m, tier)
    assert {c.arch for c in tier} == {"aarch64"}


def test_tier_cells() -> None:
    m = _repo_matrix()
    assert matrix.tier_cells(m, "full") == m.cells
    with pytest.raises(ConfigError) as e:
        matrix.tier_cells(m, "quick")
    assert str(e.value) == "unknown tier 'quick'; allowed: full, covering, check"


def test_the_check_tier_is_the_covering_tier_of_the_kernels_check_names() -> None:
    m = _repo_matrix()
    tier = matrix.tier_cells(m, "check")
    kernels = {(c.arch, c.variant) for c in tier}
    assert kernels == {(a, v) for a in ("x86_64", "aarch64") for v in ("stock", "patched")} \
        | {("x86_64", "stock-7.2"), ("x86_64", "patched-7.2")}
    # Each kernel named keeps every covering cell it has.
    assert set(tier) == {c for c in matrix.covering_tier(m) if (c.arch, c.variant) in kernels}
    # x86_64's 7.2 cells include those its known-bad kernels are caught in.
    caught_in = {(c.mode, c.policy, c.hash, c.setattr)
                 for c in matrix.mutant_cells(m, ["patched-7.2"])}
    assert caught_in <= {(c.mode, c.policy, c.hash, c.setattr) for c in tier
                         if c.variant == "patched-7.2"}


def _with_check(tmp_path: Path, check) -> Path:
    doc = yaml.safe_load((REPO / "matrix.yaml").read_text())
    (tmp_path / "kernel-patches").symlink_to(REPO / "kernel-patches")
    if check is None:
        del doc["check"]
    else:
        doc["check"] = check
    path = tmp_path / "matrix.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_without_a_check_section_check_is_covering(tmp_path: Path) -> None:
    m = matrix.load(_with_check(tmp_path, None))
    assert matrix.tier_cells(m, "check") == matrix.covering_tier(m)


def test_a_selection_check_does_not_name_is_an_error(tmp_path: Path) -> None:
    path = _with_check(tmp_path, [{"variants": ["stock", "patched"]},
                                  {"variants": ["stock-6.12"], "archs": ["x86_64"]}])
    m = matrix.load(path, archs="aarch64", variants="stock-6.12")
    with pytest.raises(ConfigError) as e:
        matrix.tier_cells(m, "check")
    assert str(e.value) == (f"{path}: check: names none of the selected "
                            "kernels (aarch64-stock-6.12); use TIER=covering for them")


@pytest.mark.parametrize("check, message", [
    ([], "check: expected a non-empty list of mappings with keys variants, archs; found []"),
    ([{"archs": ["x86_64"]}], "check[0]: missing key 'variants'"),
    ([{"variants": ["stock"], "arch": ["x86_64"]}], "check[0]: unknown key 'arch'"),
    ([{"variants": ["stock-6.6"]}], "check[0].variants: unknown variant 'stock-6.6'"),
    ([{"variants": ["stock"], "archs": ["riscv64"]}], "check[0].archs: unknown arch 'riscv64'"),
])
def test_check_section_errors(tmp_path: Path, check, message: str) -> None:
    path = _with_check(tmp_path, check)
    with pytest.raises(ConfigError) as e:
        matrix.load(path)
    assert str(e.value).startswith(f"{path}: {message}")


# ---- shards -----------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [("1/1", (1, 1)), ("2/4", (2, 4)), (" 3 / 3 ", (3, 3))])
def test_parse_shard(text: str, expected: tuple[int, int]) -> None:
    assert matrix.parse_shard(text) == expected


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", "1/0", ""])
def test_parse_shard_errors(text: str) -> None:
    with pytest.raises(ConfigError) as e:
        matrix.parse_shard(text)
    assert str(e.value) == f"--shard {text!r}: expected i/N with 1 <= i <= N, e.g. 2/4"


def test_partition_is_a_partition_balanced_longest_first() -> None:
    cells = _repo_matrix().cells
    expected = {c.id: (40.0 if c.arch == "aarch64" else 15.0)
                * (2 if (c.mode, c.policy) == ("off", "custom") else 1) for c in cells}
    for n in (1, 2, 3, 7):
        shards = matrix.partition(cells, n, expected)
        assert len(shards) == n
        flat = [c for s in shards for c in s]
        assert sorted(c.id for c in flat) == sorted(c.id for c in cells)
        loads = [sum(expected[c.id] for c in s) for s in shards]
        # Longest-first greedy: no shard exceeds another by more than its longest cell.
        assert max(loads) - min(loads) <= max(expected.values())
        for s in shards:
            assert s == [c for c in cells if c in s]
    # Every machine computes the same shards, whatever order it read the cells in.
    assert [sorted(s, key=lambda c: c.id) for s in matrix.partition(cells, 3, expected)] == \
        [sorted(s, key=lambda c: c.id) for s in matrix.partition(cells[::-1], 3, expected)]


def test_partition_without_expected_times() -> None:
    cells = _repo_matrix().cells[:4]
    # The two without a time count as the mean of the others: 60 s each.
    shards = matrix.partition(cells, 2, {cells[0].id: 100.0, cells[1].id: 20.0})
    assert shards == [[cells[0], cells[1]], list(cells[2:])]
    assert matrix.partition(cells, 8, {})[5:] == [[], [], []]


def test_the_tier_of_each_arch_and_version_is_its_share_of_the_whole() -> None:
    # CI builds each arch and kernel version on a machine of its own
    # (--archs, --variants: .github/workflows/matrix.yml) and boots the
    # union: it must be the tier `make check` boots.
    path = REPO / "matrix.yaml"
    m = matrix.load(path)
    versions: dict[str, list[str]] = {}
    for name in dict.fromkeys(c.variant for c in m.cells):
        versions.setdefault(m.variants[name].version, []).append(name)
    parts = [c for arch in ("x86_64", "aarch64") for names in versions.values()
             for c in matrix.covering_tier(matrix.load(path, archs=arch, variants=names))]
    assert sorted(parts, key=lambda c: c.id) == sorted(matrix.covering_tier(m),
                                                        key=lambda c: c.id)
    assert set(versions) == {"6.1", "6.12", "7.2"}


def test_make_run_says_which_kernels_check_does_not_name(tmp_path: Path) -> None:
    # One line, before any cell is collected: not a collection traceback.
    path = _with_check(tmp_path, [{"variants": ["stock-6.12"], "archs": ["x86_64"]}])
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only",
         "harness/matrix_run.py", "--tier=check", "--archs=aarch64",
         "--variants=stock-6.12", f"--matrix={path}"], cwd=REPO, capture_output=True,
        text=True, timeout=120)
    assert run.returncode == pytest.ExitCode.USAGE_ERROR, run.stdout + run.stderr
    assert run.stderr.strip() == (f"ERROR: {path}: check: names none of the "
                                  "selected kernels (aarch64-stock-6.12); use TIER=covering "
                                  "for them")


def test_every_kernel_runs_make_run_tests_in_a_few_cells_of_every_tier() -> None:
    # The user's path (lib.mk and runner.sh) stays booted on every kernel,
    # in the full matrix and in the check tier; ksft-run takes the rest.
    m = _repo_matrix()
    kernels = _projection(m.cells, "arch", "variant")
    for tier in ("full", "check"):
        cells = matrix.tier_cells(m, tier)
        by_make = [c for c in cells if matrix.make_path(m, c)]
        named = _projection(cells, "arch", "variant")
        assert _projection(by_make, "arch", "variant") == named, tier
        assert len(by_make) <= len(cells) // 5, tier
    assert len(kernels) > 4
    full = [c for c in m.cells if matrix.make_path(m, c)]
    # Its first mode and policy: every such cell of the kernel, none other.
    for c in m.cells:
        first = next(f for f in m.cells if (f.arch, f.variant) == (c.arch, c.variant))
        assert (c in full) == ((c.mode, c.policy) == (first.mode, first.policy))
    assert not matrix.make_path(m, Cell("x86_64", "m0001-not-in-the-matrix", "enforce",
                                        "builtin"))


@pytest.mark.parametrize("axes", [{}, {"modes": "fix,log"}, {"policies": "custom"},
                                  {"setattr": "keep"}, {"modes": "off", "hashes": "sha256"}])
@pytest.mark.parametrize("tier", ["full", "check"])
def test_a_shard_runs_make_in_the_cells_a_single_run_does(axes, tier: str) -> None:
    # The boot stage loads the whole matrix and narrows it to the
    # manifest's cells (harness/__main__.py _boot).
    single = matrix.load(REPO / "matrix.yaml", **axes)
    cells = matrix.tier_cells(single, tier)
    whole = matrix.load(REPO / "matrix.yaml")
    want = {c for c in cells if matrix.make_path(single, c)}
    assert _projection(want, "arch", "variant") == _projection(cells, "arch", "variant")
    assert {c for c in cells if matrix.make_path(matrix.narrowed(whole, cells), c)} == want
    if "modes" in axes:
        # Not narrowed, the first mode of the whole matrix (enforce) is
        # not in the selection: no cell would run make.
        assert not any(matrix.make_path(whole, c) for c in cells)


def test_the_workflow_builds_every_variant_of_the_matrix() -> None:
    # CI's build jobs name their variants by hand: a kernel of matrix.yaml
    # left out of them (the debug flavor was) is a kernel CI never boots.
    import yaml
    flow = yaml.safe_load((REPO / ".github/workflows/matrix.yml").read_text())
    strategy = flow["jobs"]["build"]["strategy"]["matrix"]
    built = {v for entry in strategy["include"] for v in entry["variants"].split(",")}
    m = matrix.load(REPO / "matrix.yaml")
    assert built == set(dict.fromkeys(c.variant for c in m.cells))
    for entry in strategy["include"]:
        flavors = {m.variants[v].flavor for v in entry["variants"].split(",")}
        versions = {m.variants[v].version for v in entry["variants"].split(",")}
        assert (flavors, versions) == ({entry["flavor"]}, {entry["version"]}), entry
    assert strategy["flavor"] == flow["jobs"]["boot"]["strategy"]["matrix"]["flavor"] \
        == flow["jobs"]["merge"]["strategy"]["matrix"]["flavor"] == ["plain", "debug"]
