from __future__ import annotations

from pathlib import Path

import pytest

from harness import kconfig
from harness.errors import BuildError, ConfigError

REPO = Path(__file__).resolve().parents[2]


def test_parse_set_unset_and_comments() -> None:
    assert kconfig.parse("# a comment\nCONFIG_A=y\n\n# CONFIG_B is not set\nCONFIG_C=\"x y\"\n") == {
        "CONFIG_A": "y", "CONFIG_B": "n", "CONFIG_C": '"x y"'}


def test_parse_rejects_garbage_naming_file_and_line() -> None:
    with pytest.raises(ConfigError) as e:
        kconfig.parse("CONFIG_A=y\nIMA=y\n", "frag.config")
    assert str(e.value) == ("frag.config:2: expected 'CONFIG_FOO=value' or "
                            "'# CONFIG_FOO is not set', found 'IMA=y'")


def test_missing_options() -> None:
    requested = {"CONFIG_A": "y", "CONFIG_B": "n", "CONFIG_C": "y", "CONFIG_D": "n"}
    final = {"CONFIG_A": "y", "CONFIG_C": "m", "CONFIG_D": "y"}
    assert kconfig.missing_options(requested, final) == [
        "CONFIG_C=y (got CONFIG_C=m)", "CONFIG_D=n (got CONFIG_D=y)"]


def test_check_names_the_dropped_options(tmp_path: Path) -> None:
    config = tmp_path / ".config"
    config.write_text("CONFIG_IMA=y\n# CONFIG_IMA_APPRAISE is not set\n")
    with pytest.raises(BuildError) as e:
        kconfig.check({"CONFIG_IMA": "y", "CONFIG_IMA_APPRAISE": "y", "CONFIG_AUDIT": "y"},
                      config, [Path("common.config")])
    assert str(e.value) == (
        f"Not all Kconfig options requested by common.config are in the generated {config}. "
        "This usually means their dependencies are not met: add those to a fragment.\n"
        "Missing:\n  CONFIG_IMA_APPRAISE=y (got CONFIG_IMA_APPRAISE=n)\n"
        "  CONFIG_AUDIT=y (got CONFIG_AUDIT=n)")


@pytest.mark.parametrize("fragment", sorted((REPO / "kernel-patches" / "config").glob("*.config")),
                         ids=lambda p: p.name)
def test_shipped_fragments_parse(fragment: Path) -> None:
    assert kconfig.parse_file(fragment)


def test_selftests_config_is_covered_by_the_fragments() -> None:
    # selftests/ima_appraise/config says what the tests need; the kernels
    # the harness builds must provide all of it.
    fragments: dict[str, str] = {}
    for frag in (REPO / "kernel-patches" / "config").glob("*.config"):
        fragments.update(kconfig.parse_file(frag))
    needed = kconfig.parse_file(REPO / "selftests" / "ima_appraise" / "config")
    assert kconfig.missing_options(needed, fragments) == []
