from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness import matrix
from harness.errors import ConfigError
from harness.matrix import Cell, Variant


def config() -> dict[str, Any]:
    return {
        "variants": {
            "stock": {},
            "patched": {"series": "kernel-patches/series"},
            "skip-exec-appraisal": {
                "series": "kernel-patches/regressions/skip-exec-appraisal.series",
                "note": "reverts the exec appraisal fix"},
        },
        "matrix": {
            "archs": ["x86_64", "aarch64"],
            "modes": ["enforce", "fix", "log", "off"],
            "policies": ["builtin", "legacy", "custom"],
            "variants": ["stock", "patched"],
            "exclude": [{"policy": "legacy", "variant": "patched"}],
        },
        "timeout": 200,
    }


@pytest.fixture
def write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Writes a config (or text) to ./matrix.yaml in a temporary directory and
    returns the relative path, so that messages start with "matrix.yaml:"."""
    monkeypatch.chdir(tmp_path)

    def write(content: Any) -> Path:
        path = Path("matrix.yaml")
        if not isinstance(content, str):
            content = yaml.safe_dump(content, sort_keys=False)
        path.write_text(content)
        return path
    return write


def test_the_repository_matrix_loads() -> None:
    assert matrix.load(Path(__file__).parents[2] / "matrix.yaml").cells


def test_load(write) -> None:
    m = matrix.load(write(config()))
    assert m.path == Path("matrix.yaml")
    assert m.variants == {
        "stock": Variant("stock", None),
        "patched": Variant("patched", Path("kernel-patches/series")),
        "skip-exec-appraisal": Variant(
            "skip-exec-appraisal",
            Path("kernel-patches/regressions/skip-exec-appraisal.series"),
            "reverts the exec appraisal fix"),
    }
    assert (m.timeout, m.memory) == (200, matrix.DEFAULT_MEMORY)
    # 2 archs x 2 variants x 4 modes x 3 policies, less 2 x 4 legacy-patched.
    assert len(m.cells) == 48 - 8
    assert [c.id for c in m.cells[:7]] == [
        "x86_64-stock-enforce-builtin-sha1-keep", "x86_64-stock-enforce-legacy-sha1-keep",
        "x86_64-stock-enforce-custom-sha1-keep", "x86_64-stock-fix-builtin-sha1-keep",
        "x86_64-stock-fix-legacy-sha1-keep", "x86_64-stock-fix-custom-sha1-keep",
        "x86_64-stock-log-builtin-sha1-keep"]
    assert m.cells[12] == Cell("x86_64", "patched", "enforce", "builtin")
    assert m.cells[13] == Cell("x86_64", "patched", "enforce", "custom")
    assert m.cells[-1].id == "aarch64-patched-off-custom-sha1-keep"
    assert not any(c.policy == "legacy" and c.variant == "patched" for c in m.cells)


def test_series_is_relative_to_the_matrix_file(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    path = tmp_path / "conf" / "matrix.yaml"
    path.write_text(yaml.safe_dump(config(), sort_keys=False))
    m = matrix.load(path)
    assert m.variants["patched"].series == tmp_path / "conf" / "kernel-patches/series"


def test_a_short_timeout_alone_leaves_no_earlier_boot_deadline(write) -> None:
    c = config()
    c["timeout"] = 60
    assert (matrix.load(write(c)).timeout, matrix.load(write(c)).boot_timeout) == (60, 60)


def test_defaults(write) -> None:
    c = config()
    del c["timeout"], c["matrix"]["exclude"]
    c["variants"]["stock"] = None   # "stock:" with nothing after it
    m = matrix.load(write(c))
    assert (m.timeout, m.boot_timeout, m.memory) == (150, 120, 512)
    assert len(m.cells) == 48
    assert m.variants["stock"] == Variant("stock", None, "")


@pytest.mark.parametrize("policy, expected", [
    ("builtin", "ima_appraise=enforce ima_policy=appraise_tcb"),
    ("legacy", "ima_appraise=enforce ima_appraise_tcb"),
    ("custom", "ima_appraise=enforce"),
])
def test_cmdline(policy: str, expected: str) -> None:
    assert Cell("x86_64", "stock", "enforce", policy).cmdline() == expected


def test_exclusions(write) -> None:
    c = config()
    c["matrix"]["exclude"] = [{"arch": "aarch64"}, {"mode": "off", "policy": "custom"},
                              {"arch": "x86_64", "variant": "stock", "mode": "fix",
                               "policy": "builtin"}]
    cells = matrix.load(write(c)).cells
    assert len(cells) == 24 - 2 - 1
    assert all(c.arch == "x86_64" for c in cells)
    assert Cell("x86_64", "stock", "off", "builtin") in cells
    assert Cell("x86_64", "stock", "off", "custom") not in cells
    assert Cell("x86_64", "stock", "fix", "builtin") not in cells
    assert Cell("x86_64", "patched", "fix", "builtin") in cells


def test_overrides(write) -> None:
    path = write(config())
    m = matrix.load(path, archs=["aarch64"], variants=["skip-exec-appraisal", "patched"],
                    modes=("enforce",), policies=iter(["legacy", "builtin"]))
    assert [c.id for c in m.cells] == [
        "aarch64-skip-exec-appraisal-enforce-legacy-sha1-keep",
        "aarch64-skip-exec-appraisal-enforce-builtin-sha1-keep",
        "aarch64-patched-enforce-builtin-sha1-keep"]      # legacy-patched is excluded
    assert len(matrix.load(path, archs="x86_64,aarch64", modes="off").cells) == 10


def test_kernel_tree_is_the_local_variant(write, tmp_path: Path) -> None:
    path = write(config())
    m = matrix.load(path, kernel_tree=tmp_path / "linux", modes=["enforce"], archs=["x86_64"])
    assert m.variants["local"] == Variant("local", None, f"kernel tree {tmp_path / 'linux'}",
                                          tmp_path / "linux")
    assert [c.id for c in m.cells] == ["x86_64-local-enforce-builtin-sha1-keep",
                                       "x86_64-local-enforce-legacy-sha1-keep",
                                       "x86_64-local-enforce-custom-sha1-keep"]
    both = matrix.load(path, kernel_tree=tmp_path, variants=["stock", "local"], modes=["fix"],
                       archs=["x86_64"], policies=["custom"])
    assert [c.variant for c in both.cells] == ["stock", "local"]


def test_tree_variant_is_relative_to_the_matrix_file(write) -> None:
    c = config()
    c["variants"]["mine"] = {"tree": "../linux"}
    assert matrix.load(write(c)).variants["mine"].tree == Path("../linux")


def test_local_is_reserved_for_the_command_line(write, tmp_path: Path) -> None:
    c = config()
    c["variants"]["local"] = {}
    with pytest.raises(ConfigError) as e:
        matrix.load(write(c), kernel_tree=tmp_path)
    assert str(e.value) == ("matrix.yaml: variants: 'local' is reserved for --kernel-tree; "
                            "rename that variant")


@pytest.mark.parametrize("overrides, message", [
    ({"archs": ["riscv"]},
     "command line --archs: unknown arch 'riscv'; allowed: x86_64, aarch64"),
    ({"variants": ["foo"]},
     "command line --variants: unknown variant 'foo'; "
     "defined variants: stock, patched, skip-exec-appraisal"),
    ({"modes": []},
     "command line --modes: expected a non-empty list of modes out of "
     "enforce, fix, log, off; found []"),
    ({"policies": ["custom", "custom"]},
     "command line --policies: policy 'custom' is listed twice"),
    ({"variants": ["patched"], "policies": ["legacy"]},
     "matrix.yaml: matrix.exclude: excludes every cell of archs [x86_64, aarch64] x "
     "variants [patched] x modes [enforce, fix, log, off] x policies [legacy] x hashes [sha1] x setattr [keep]; "
     "drop an exclusion or choose other axis values"),
])
def test_override_errors(write, overrides: dict[str, list[str]], message: str) -> None:
    path = write(config())
    with pytest.raises(ConfigError) as e:
        matrix.load(path, **overrides)
    assert str(e.value) == message


def _set(keys: str, value: Any) -> dict[str, Any]:
    """config() with the value at the dotted key path replaced (or deleted,
    for value=KeyError)."""
    c = config()
    *parents, last = keys.split(".")
    node = c
    for key in parents:
        node = node[key]
    if value is KeyError:
        del node[last]
    else:
        node[last] = value
    return c


@pytest.mark.parametrize("content, message", [
    (_set("matrix.archs", ["x86_64", "riscv"]),
     "matrix.yaml: matrix.archs: unknown arch 'riscv'; allowed: x86_64, aarch64"),
    (_set("matrix.mode", ["enforce"]),
     "matrix.yaml: matrix: unknown key 'mode'; "
     "allowed: archs, variants, modes, policies, hashes, setattr, exclude"),
    (_set("matrix.variants", ["stock", "foo"]),
     "matrix.yaml: matrix.variants: unknown variant 'foo'; "
     "defined variants: stock, patched, skip-exec-appraisal"),
    ("variants: {stock: {}}\nmatrix: {archs: [x86_64], modes: [off], policies: [custom],"
     " variants: [stock]}\n",
     "matrix.yaml: matrix.modes: unknown mode False; allowed: enforce, fix, log, off "
     "(YAML reads a bare off as false: quote it)"),
    (_set("timeout", "abc"),
     "matrix.yaml: timeout: expected a positive integer, found 'abc'"),
    (_set("memory", 0),
     "matrix.yaml: memory: expected a positive integer, found 0"),
    (_set("boot_timeout", -5),
     "matrix.yaml: boot_timeout: expected a positive integer, found -5"),
    (_set("boot_timeout", 200),
     "matrix.yaml: boot_timeout (200) must be below timeout (200): a guest's init "
     "begins before it ends"),
    (_set("memory", True),
     "matrix.yaml: memory: expected a positive integer, found True"),
    (_set("matrix.modes", ["enforce", "log", "enforce"]),
     "matrix.yaml: matrix.modes: mode 'enforce' is listed twice"),
    (_set("matrix.policies", []),
     "matrix.yaml: matrix.policies: expected a non-empty list of policies out of "
     "builtin, legacy, custom; found []"),
    (_set("matrix.policies", "builtin"),
     "matrix.yaml: matrix.policies: expected a non-empty list of policies out of "
     "builtin, legacy, custom; found 'builtin'"),
    (_set("matrix.archs", KeyError),
     "matrix.yaml: matrix: missing key 'archs'; "
     "required: archs, variants, modes, policies"),
    (_set("matrix", KeyError),
     "matrix.yaml: missing key 'matrix'; required: variants, matrix"),
    (_set("arch", ["x86_64"]),
     "matrix.yaml: unknown key 'arch'; allowed: variants, matrix, mutants, check, timeout, boot_timeout, memory, sources, skips"),
    (_set("matrix.exclude", [{"policy": "legacy", "variant": "patched"}, {"modes": "off"}]),
     "matrix.yaml: matrix.exclude[1]: unknown key 'modes'; "
     "allowed: arch, variant, mode, policy, hash, setattr"),
    (_set("matrix.exclude", [{"mode": "audit"}]),
     "matrix.yaml: matrix.exclude[0].mode: unknown mode 'audit'; "
     "allowed: enforce, fix, log, off"),
    (_set("matrix.exclude", [{}]),
     "matrix.yaml: matrix.exclude: excludes every cell of archs [x86_64, aarch64] x "
     "variants [stock, patched] x modes [enforce, fix, log, off] x "
     "policies [builtin, legacy, custom] x hashes [sha1] x setattr [keep]; drop an exclusion or choose other axis values"),
    (_set("matrix.exclude", {"policy": "legacy"}),
     "matrix.yaml: matrix.exclude: expected a list of mappings with keys "
     "arch, variant, mode, policy, hash, setattr; found {'policy': 'legacy'}"),
    (_set("variants.Patched", {}),
     "matrix.yaml: variants: bad variant name 'Patched'; use lower-case letters, "
     "digits, '-' and '.', starting with a letter or digit"),
    (_set("variants.new", {"version": 6.12}),
     "matrix.yaml: variants.new.version: expected a kernel version such as \"6.12\" "
     "(Debian's linux-source-<version>), found 6.12 (quote it: YAML reads 6.10 as the "
     "number 6.1)"),
    (_set("variants.new", {"version": "6.12.118"}),
     "matrix.yaml: variants.new.version: expected a kernel version such as \"6.12\" "
     "(Debian's linux-source-<version>), found '6.12.118'"),
    (_set("variants.mine", {"tree": "../linux", "version": "6.12"}),
     "matrix.yaml: variants.mine: has both tree: and version:; version: picks one of "
     "Debian's trees, tree: is a tree of your own: drop one"),
    (_set("variants.patched", {"series": ["a.patch"]}),
     "matrix.yaml: variants.patched.series: expected a non-empty string, "
     "found ['a.patch']"),
    (_set("variants.patched", {"series": ""}),
     "matrix.yaml: variants.patched.series: expected a non-empty string, found ''"),
    (_set("variants.patched", {"serie": "kernel-patches/series"}),
     "matrix.yaml: variants.patched: unknown key 'serie'; allowed: series, version, tree, note, "
     "known_failures, known_splats, flavor, of, image"),
    (_set("variants.stock.known_failures", [{"tests": ["a/b"], "reason": "r", "racy": "yes"}]),
     "matrix.yaml: variants.stock.known_failures[0].racy: expected true or false, found 'yes'"),
    (_set("variants.patched", {"flavor": "kasan"}),
     "matrix.yaml: variants.patched.flavor: unknown flavor 'kasan'; expected one of plain, debug"),
    (_set("variants.patched", {"of": "nosuch", "flavor": "debug"}),
     "matrix.yaml: variants.patched.of: 'nosuch' is no plain variant defined above it; of: "
     "names the variant whose tree, series and known failures this one shares"),
    (_set("variants.patched", {"of": "stock", "series": "kernel-patches/series"}),
     "matrix.yaml: variants.patched: has both of: and series:; a variant of 'stock' has its "
     "series: drop one"),
    (_set("variants", {}),
     "matrix.yaml: variants: expected a mapping of variant names to {series, version, tree, note, "
     "known_failures, known_splats, flavor, of, image}; "
     "found {}"),
    ([1, 2],
     "matrix.yaml: expected a mapping with keys variants, matrix, mutants, check, timeout, boot_timeout, memory, sources, skips; "
     "found [1, 2]"),
    ("",
     "matrix.yaml: expected a mapping with keys variants, matrix, mutants, check, timeout, boot_timeout, memory, sources, skips; "
     "found None"),
    ("variants:\n  stock: {}\nmatrix: [x86_64\n",
     "matrix.yaml:4: YAML syntax error: expected ',' or ']', but got '<stream end>'; "
     "fix the file (schema: harness/matrix.py)"),
])
def test_errors(write, content: Any, message: str) -> None:
    path = write(content)
    with pytest.raises(ConfigError) as e:
        matrix.load(path)
    assert str(e.value) == message


def test_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "missing.yaml"
    with pytest.raises(ConfigError) as e:
        matrix.load(path)
    assert str(e.value) == f"{path}: cannot read the matrix file: No such file or directory"


def test_every_selftest_case_has_a_mutant_that_catches_it() -> None:
    # A test that cannot fail is a defect: each case must be named by the
    # Caught-by: of some known-bad patch (checked for real by `make mutants`),
    # of every kernel version that runs it (test_mutants.py).
    from harness.tests.test_mutants import uncaught_cases
    assert uncaught_cases("6.1") == []


def test_every_caught_by_and_known_failure_names_a_test() -> None:
    import fnmatch

    from harness import mutants
    from harness.cases import expected_cases
    repo = Path(__file__).parents[2]
    m = matrix.load(repo / "matrix.yaml")
    names = [c.id for c in expected_cases(repo / "selftests")]
    dangling = [f"{mu.patch.name}: {p}" for mu in mutants.discover(m.mutants["patches"])
                for p in mu.caught_by
                if not p.startswith("splat:") and not any(fnmatch.fnmatchcase(n, p) for n in names)]
    dangling += [f"{v.name}: {p}" for v in m.variants.values()
                 for p in matrix.check_known_failures(v, names)]
    assert dangling == []


def test_known_failures(write) -> None:
    c = config()
    c["variants"]["stock"] = {"known_failures": [
        {"tests": ["lastwriter_test/new_file.*"], "cells": {"mode": "enforce"},
         "reason": "known bug in 6.1.192", "failing": "Expected 0"},
        {"tests": ["setattr_test/*"], "cells": {"setattr": ["remove"], "policy": ["custom"]},
         "reason": "needs kernel-patches/series", "failing": "get_ima"}]}
    v = matrix.load(write(c)).variants["stock"]
    cell = Cell("x86_64", "stock", "enforce", "custom")
    assert v.expected_failure(cell, "lastwriter_test/new_file.fchmod.reopen") == \
        "known bug in 6.1.192"
    assert v.expected_failure(Cell("x86_64", "stock", "fix", "custom"),
                              "lastwriter_test/new_file.fchmod.reopen") is None
    assert v.expected_failure(cell, "setattr_test/x") is None
    assert v.expected_failure(Cell("x86_64", "stock", "log", "custom", "sha256", "remove"),
                              "setattr_test/x") == "needs kernel-patches/series"
    assert v.expected_failure(cell, "lastwriter_test/new_file.fchmod.reopen").failing == \
        "Expected 0"
    assert matrix.check_known_failures(v, ["lastwriter_test/new_file.a"]) == ["setattr_test/*"]


SIG = "lockdep-circular (&iint->mutex, &sb->s_type->i_mutex_key) in process_measurement"


@pytest.mark.parametrize("key, entry, message", [
    ("known_failures", {"tests": ["a/*"]}, "matrix.yaml: variants.stock.known_failures[0]: missing key 'reason'; "
     "required: tests, reason"),
    ("known_failures", {"tests": "a/*", "reason": "r"}, "matrix.yaml: variants.stock.known_failures[0].tests: "
     "expected a non-empty list of test-name patterns, found 'a/*'"),
    ("known_failures", {"tests": ["a/b"], "reason": "r"},
     "matrix.yaml: variants.stock.known_failures[0]: missing failing: (a regular expression "
     "of the check it fails by, matched against the case's failed-check lines "
     "'<file>:<line>:<test>:Expected ...'); without it any failure of the case would pass "
     "for this one"),
    ("known_failures", {"tests": ["a/b"], "reason": "r", "failing": "get_ima("},
     "matrix.yaml: variants.stock.known_failures[0].failing: 'get_ima(' is no regular "
     "expression: missing ), unterminated subpattern at position 7"),
    ("known_failures", {"tests": ["a/b"], "reason": "r", "failing": "x", "racy": True},
     "matrix.yaml: variants.stock.known_failures[0]: a racy entry needs cells: (where its race "
     "was seen or can be hit); without them it excuses the test everywhere"),
    ("known_failures", {"tests": ["a/*"], "reason": "r", "cells": {"modes": ["fix"]}},
     "matrix.yaml: variants.stock.known_failures[0].cells: unknown key 'modes'; "
     "allowed: arch, mode, policy, hash, setattr"),
    ("known_failures", {"tests": ["a/*"], "reason": "r", "cells": {"mode": ["fixx"]}},
     "matrix.yaml: variants.stock.known_failures[0].cells.mode: unknown mode 'fixx'; "
     "allowed: enforce, fix, log, off"),
    ("known_splats", {"signature": SIG}, "matrix.yaml: variants.stock.known_splats[0]: missing key 'reason'; "
     "required: signature, reason"),
    ("known_splats", {"signature": ["x"], "reason": "r"}, "matrix.yaml: variants.stock.known_splats[0]."
     "signature: expected a splat signature as results.json's splats[].signature gives it, "
     "found ['x']"),
    ("known_splats", {"signature": "panic: Fatal exception", "reason": "r"},
     "matrix.yaml: variants.stock.known_splats[0].signature: 'panic: Fatal exception': a "
     "panic ends the guest and loses the tests after it; it cannot be a known splat"),
    ("known_splats", {"tests": ["a/*"], "signature": SIG, "reason": "r"},
     "matrix.yaml: variants.stock.known_splats[0]: unknown key 'tests'; "
     "allowed: signature, cells, reason, at_boot"),
    ("known_splats", {"signature": SIG, "reason": "r", "at_boot": "true"},
     "matrix.yaml: variants.stock.known_splats[0].at_boot: expected true or false, "
     "found 'true'"),
])
def test_known_entry_errors(write, key, entry, message) -> None:
    c = config()
    c["variants"]["stock"] = {key: [entry]}
    with pytest.raises(ConfigError) as e:
        matrix.load(write(c))
    assert str(e.value) == message


def test_known_splats(write) -> None:
    c = config()
    c["variants"]["stock"] = {"known_splats": [
        {"signature": SIG, "cells": {"mode": ["fix"]}, "reason": "inversion in 6.1.192"}]}
    v = matrix.load(write(c)).variants["stock"]
    assert v.known_splat(Cell("x86_64", "stock", "fix", "custom"), SIG) == "inversion in 6.1.192"
    assert v.known_splat(Cell("x86_64", "stock", "log", "custom"), SIG) is None
    # The whole signature or nothing: lock classes such as
    # &iint_mutex_key[depth] would be character classes to a glob.
    assert v.known_splat(Cell("x86_64", "stock", "fix", "custom"), SIG[:-1]) is None


def test_a_known_splat_at_boot_is_known_only_at_boot(write) -> None:
    """at_boot: true: before the first program started; the same report
    during a test is as unknown as any other."""
    c = config()
    c["variants"]["stock"] = {"known_splats": [
        {"signature": SIG, "reason": "at boot", "at_boot": True},
        {"signature": "warning in f", "reason": "any time", "at_boot": False}]}
    v = matrix.load(write(c)).variants["stock"]
    cell = Cell("x86_64", "stock", "fix", "custom")
    assert [k.at_boot for k in v.known_splats] == [True, False]
    assert v.known_splat(cell, SIG, at_boot=True) == "at boot"
    assert v.known_splat(cell, SIG, at_boot=False) is None
    assert v.known_splat(cell, SIG) is None
    assert v.known_splat(cell, "warning in f", at_boot=False) == "any time"
    assert v.known_splat(cell, "warning in f", at_boot=True) == "any time"


def test_the_repositorys_kasan_at_boot_splat_is_known_at_boot_only() -> None:
    m = matrix.load(Path(__file__).parents[2] / "matrix.yaml")
    sig = "kasan: wild-memory-access in rcu_is_watching"
    for name in ("stock-debug", "patched-debug"):
        entries = [k for k in m.variants[name].known_splats if k.signature == sig]
        assert entries and all(k.at_boot for k in entries), name


def test_hash_and_setattr_axes(write) -> None:
    c = config()
    c["matrix"].update(hashes=["sha1", "sha256"], setattr=["keep", "remove"])
    c["matrix"]["exclude"] = [{"setattr": "remove", "policy": "builtin"}]
    m = matrix.load(write(c), archs="x86_64", variants="stock", modes="fix")
    assert [c.id for c in m.cells] == [
        "x86_64-stock-fix-builtin-sha1-keep", "x86_64-stock-fix-builtin-sha256-keep",
        "x86_64-stock-fix-legacy-sha1-keep", "x86_64-stock-fix-legacy-sha1-remove",
        "x86_64-stock-fix-legacy-sha256-keep", "x86_64-stock-fix-legacy-sha256-remove",
        "x86_64-stock-fix-custom-sha1-keep", "x86_64-stock-fix-custom-sha1-remove",
        "x86_64-stock-fix-custom-sha256-keep", "x86_64-stock-fix-custom-sha256-remove"]
    assert m.cells[-1].cmdline() == \
        "ima_appraise=fix ima_hash=sha256 ima_appraise_setattr=remove"
    assert len(matrix.load(write(c), archs="x86_64", variants="stock", modes="fix",
                           hashes="sha256", setattr="keep").cells) == 3


def test_extra_patches_variant(write, tmp_path: Path) -> None:
    (tmp_path / "a.patch").write_text("x")
    m = matrix.load(write(config()), extra_patches=[tmp_path / "a.patch"])
    v = m.variants[matrix.EXTRA_VARIANT]
    assert (v.series, v.patches, v.workspace) == \
        (Path("kernel-patches/series"), (tmp_path / "a.patch",), True)
    assert {c.variant for c in m.cells} == {"extra"}
    with pytest.raises(ConfigError) as e:
        matrix.load(write(config()), extra_patches=[tmp_path / "nope.patch"])
    assert str(e.value) == (f"EXTRA_PATCHES: {tmp_path / 'nope.patch'}: no such patch file "
                            "(paths are relative to where make runs)")


def test_mutant_cells(write) -> None:
    c = config()
    c["mutants"] = {"patches": "kernel-patches/regressions", "base": "patched",
                    "archs": ["x86_64"], "modes": ["enforce"], "policies": ["custom"]}
    m = matrix.load(write(c))
    assert m.mutants["patches"] == Path("kernel-patches/regressions")
    assert [c.id for c in matrix.mutant_cells(m, ["patched"])] == \
        ["x86_64-patched-enforce-custom-sha1-keep"]
    c["mutants"]["base"] = "nope"
    with pytest.raises(ConfigError) as e:
        matrix.load(write(c))
    assert str(e.value) == ("matrix.yaml: mutants.base: unknown variant 'nope'; "
                            "defined variants: stock, patched, skip-exec-appraisal")


def test_a_variant_of_another_kernel_version(write) -> None:
    c = config()
    c["variants"]["patched-6.12"] = {"version": "6.12", "series": "kernel-patches/6.12/series"}
    m = matrix.load(write(c), variants="stock,patched-6.12")
    assert (m.variants["stock"].version, m.variants["patched-6.12"].version) == ("6.1", "6.12")
    assert m.variants["patched-6.12"].series == Path("kernel-patches/6.12/series")
    assert "x86_64-patched-6.12-enforce-builtin-sha1-keep" in [c.id for c in m.cells]


MUTANTS = {"patches": "kernel-patches/regressions", "base": "patched", "archs": ["x86_64"],
           "modes": ["enforce"], "policies": ["custom"]}


def test_mutants_of_each_version(write) -> None:
    c = config()
    c["variants"]["patched-6.12"] = {"version": "6.12", "series": "kernel-patches/6.12/series"}
    c["mutants"] = {**MUTANTS, "versions": {"6.12": {"base": "patched-6.12",
                                                     "patches": "kernel-patches/regressions/6.12"}}}
    m = matrix.load(write(c))
    assert m.mutants["versions"] == {
        "6.1": {"base": "patched", "patches": Path("kernel-patches/regressions")},
        "6.12": {"base": "patched-6.12", "patches": Path("kernel-patches/regressions/6.12")}}


@pytest.mark.parametrize("versions, message", [
    ({"6.12": {"base": "patched", "patches": "x"}},
     "matrix.yaml: mutants.versions.6.12.base: variant 'patched' is a 6.1 kernel, not 6.12"),
    ({"6.12": {"base": "patched-6.12"}},
     "matrix.yaml: mutants.versions.6.12.patches: expected a non-empty string, found None"),
    ({"6.1": {"base": "patched", "patches": "x"}},
     "matrix.yaml: mutants.versions.6.1: 6.1 is already the version of mutants.base"),
    ({6.12: {"base": "patched-6.12", "patches": "x"}},
     "matrix.yaml: mutants.versions: key: expected a kernel version such as \"6.12\" "
     "(Debian's linux-source-<version>), found 6.12 (quote it: YAML reads 6.10 as the "
     "number 6.1)"),
    ([1],
     "matrix.yaml: mutants.versions: expected a mapping of kernel versions to "
     "{patches, base}; found [1]"),
])
def test_mutant_version_errors(write, versions: Any, message: str) -> None:
    c = config()
    c["variants"]["patched-6.12"] = {"version": "6.12", "series": "kernel-patches/6.12/series"}
    c["mutants"] = {**MUTANTS, "versions": versions}
    with pytest.raises(ConfigError) as e:
        matrix.load(write(c))
    assert str(e.value) == message


def test_the_matrixs_skips_follow_policy_and_kernel_version() -> None:
    # Each skip the suite makes (CELL_SKIP) is data: where, and on which
    # kernels; every name is a case of the suite.
    from harness.cases import expected_cases
    repo = Path(__file__).parents[2]
    m = matrix.load(repo / "matrix.yaml")
    names = {c.id for c in expected_cases(repo / "selftests")}
    assert [t for k in m.variants["stock"].skips for t in k.tests if t not in names] == []
    check = "exec_test/exec_file.wrong_hash.execve_check"
    rules = "rules_test/rules.appraise.open"
    builtin, custom = (Cell("x86_64", "stock", "enforce", p) for p in ("builtin", "custom"))
    assert m.variants["stock"].expected_skip(custom, check).startswith("execveat(2)'s")
    assert m.variants["stock-7.2"].expected_skip(dataclasses.replace(custom, variant="stock-7.2"),
                                                 check) is None
    assert m.variants["patched-7.2"].expected_skip(builtin, rules).startswith("needs rules")
    assert m.variants["patched-7.2"].expected_skip(custom, rules) is None
    # A tree of one's own is judged by its own version, not the nearest
    # Debian tree it is configured like.
    mine = dataclasses.replace(m.variants["stock"], own_version="6.15")
    assert mine.expected_skip(custom, check) is None


def test_a_skip_names_the_variants_it_is_for(write) -> None:
    # A kernel configured without what a case needs (Debian's, without
    # lockdep) skips it; the same case runs on every other kernel.
    c = config()
    c["skips"] = [{"tests": ["fput_test/deferred_fput.munmap_last_reference"],
                   "variants": ["patched"], "cells": {"policy": ["builtin"]},
                   "reason": "needs lockdep"}]
    m = matrix.load(write(c))
    test = "fput_test/deferred_fput.munmap_last_reference"
    builtin, custom = (Cell("x86_64", "patched", "enforce", p) for p in ("builtin", "custom"))
    assert m.variants["patched"].expected_skip(builtin, test) == "needs lockdep"
    assert m.variants["patched"].expected_skip(custom, test) is None
    assert m.variants["stock"].expected_skip(dataclasses.replace(builtin, variant="stock"),
                                             test) is None
    assert m.variants["stock"].skips[0].variants == ("patched",)


@pytest.mark.parametrize("entry, message", [
    ({"tests": ["a/*"], "reason": "r"}, "matrix.yaml: skips[0].tests: 'a/*': name each case "
     "exactly"),
    ({"tests": ["a/b"], "reason": "r", "before": 6.14}, "matrix.yaml: skips[0].before: expected "
     "a kernel version such as \"6.14\", found 6.14"),
    ({"tests": ["a/b"], "reason": "r", "policy": "custom"}, "matrix.yaml: skips[0]: unknown key "
     "'policy'; allowed: tests, cells, variants, before, reason"),
    ({"tests": ["a/b"], "reason": "r", "variants": ["debian"]}, "matrix.yaml: skips[0].variants: "
     "unknown variant 'debian'; defined variants: stock, patched, skip-exec-appraisal"),
    ({"tests": ["a/b"], "reason": "r", "variants": "stock"}, "matrix.yaml: skips[0].variants: "
     "expected a non-empty list of variants out of stock, patched, skip-exec-appraisal; "
     "found 'stock'"),
    ({"tests": ["a/b"], "reason": "r", "variants": ["stock", "stock"]}, "matrix.yaml: "
     "skips[0].variants: variant 'stock' is listed twice"),
])
def test_skip_entry_errors(write, entry: dict, message: str) -> None:
    c = config()
    c["skips"] = [entry]
    with pytest.raises(ConfigError) as e:
        matrix.load(write(c))
    assert str(e.value) == message
