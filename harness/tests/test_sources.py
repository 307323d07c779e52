"""matrix.yaml sources: Debian's kernel source packages by version, the
per-version Kconfig fragments, and what make deps says when a suite moved
on (recorded apt-cache output; no network)."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness import matrix, runner, sources
from harness.errors import ConfigError, DependencyError

REPO = Path(__file__).resolve().parents[2]

# `apt-cache madison linux-source-7.2` against Debian sid, 2026-12-07.
MADISON_72 = "linux-source-7.2 |   7.2.13-1 | http://deb.debian.org/debian sid/main amd64 Packages\n"


def test_the_repositorys_sources() -> None:
    m = matrix.load(REPO / "matrix.yaml")
    assert set(m.sources) >= {"6.1", "6.12", "7.2"}
    s72 = m.sources["7.2"]
    assert (s72.package, s72.suite) == ("linux-source-7.2", "sid")
    build = Path("/b")
    assert s72.tarball(build) == Path(
        f"/b/debs/sid/linux-source-7.2_{s72.debian_version}/usr/src/linux-source-7.2.tar.xz")
    assert m.sources["6.1"].tarball(build) == Path("/usr/src/linux-source-6.1.tar.xz")
    # every variant's version has a source, and 7.2's configuration is its own
    assert m.source_of("stock-7.2-debug") is s72
    assert [p.name for p in s72.config] == ["7.2.config"]


def test_the_version_fragments_set_what_changed_type() -> None:
    """BOOTPARAM_HUNG_TASK_PANIC: a bool until 7.2, a count since (=y reads
    as 0 there: no panic); common.config must not set it for both."""
    cfg = REPO / "kernel-patches" / "config"
    assert "CONFIG_BOOTPARAM_HUNG_TASK_PANIC=" not in (cfg / "common.config").read_text()
    assert "CONFIG_BOOTPARAM_HUNG_TASK_PANIC=y\n" in (cfg / "6.1.config").read_text()
    assert "CONFIG_BOOTPARAM_HUNG_TASK_PANIC=1\n" in (cfg / "7.2.config").read_text()


def test_a_version_s_fragments_come_after_the_common_ones(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner.keys, "ensure", lambda build: tmp_path)
    m = matrix.load(REPO / "matrix.yaml")
    frags = runner.fragments(REPO, "x86_64", tmp_path, "plain", m.source_of("stock-7.2").config)
    names = [f.name for f in frags]
    assert names.index("common.config") < names.index("7.2.config") < len(names) - 1


def _matrix(tmp_path: Path, sources_yaml: str, version: str = "7.2") -> Path:
    (tmp_path / "7.2.config").write_text("CONFIG_BOOTPARAM_HUNG_TASK_PANIC=1\n")
    path = tmp_path / "matrix.yaml"
    path.write_text(f"""
sources:
{sources_yaml}
variants:
  stock: {{}}
  new: {{version: "{version}"}}
matrix: {{archs: [x86_64], modes: [enforce], policies: [builtin], variants: [new]}}
""")
    return path


@pytest.mark.parametrize("yaml_text, message", [
    ('  "6.1": {package: linux-source-6.1}\n', "variants.new.version: '7.2' is not in sources"),
    ('  "6.1": {package: linux-source-6.1}\n  "7.2": {package: linux-source-7.2, suite: sid}\n',
     "suite: and debian_version: go together"),
    ('  "6.1": {package: linux-source-6.1}\n  7.2: {package: linux-source-7.2}\n',
     "key 7.2: expected a kernel version"),
    ('  "6.1": {package: linux-source-6.1}\n  "7.2": {package: linux-source-7.2, '
     'suite: sid, debian_version: 7.2}\n', "debian_version: expected a quoted"),
    ('  "6.1": {package: linux-source-6.1}\n  "7.2": {package: linux-source-7.2, '
     'config: [nope.config]}\n', "7.2.config: nope.config: no such file"),
    ('  "6.1": {package: linux-source-6.1}\n  "7.2": {package: Linux Source}\n',
     "7.2.package: expected a Debian package name"),
    ('  "6.1": {package: linux-source-6.1}\n  "7.2": {package: linux-source-7.2, dist: sid}\n',
     "unknown key 'dist'"),
])
def test_bad_sources_are_one_clear_error(tmp_path: Path, yaml_text: str, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        matrix.load(_matrix(tmp_path, yaml_text))
    assert message in str(e.value)
    assert str(tmp_path / "matrix.yaml") in str(e.value)


def test_versions_compare_by_number_not_as_text() -> None:
    ordered = ["5.15", "6.1", "6.1.192", "6.2", "6.12", "7.2"]
    assert sorted(reversed(ordered), key=sources.version_key) == ordered
    assert sources.version_key("6.12") > sources.version_key("6.2")    # as text: smaller
    assert sources.version_key("6.1.192") < sources.version_key("6.12")
    assert sources.version_key("7.2") == (7, 2)
    assert sources.version_key("6.1.0") > sources.version_key("6.1")


def test_a_tree_of_one_s_own_is_configured_like_the_nearest_version_below(tmp_path: Path) -> None:
    srcs = matrix.load(REPO / "matrix.yaml").sources
    for version, want in [("7.3", "7.2"), ("7.2", "7.2"), ("6.18", "6.12"), ("6.6", "6.1"),
                          ("5.15", "6.1"), (None, "6.1")]:
        assert sources.nearest(srcs, version).version == want, version
    tree = tmp_path / "linux"
    tree.mkdir()
    (tree / "Makefile").write_text("# SPDX\nVERSION = 7\nPATCHLEVEL = 3\nSUBLEVEL = 0\n")
    assert sources.version_of_tree(tree) == "7.3"
    m = matrix.load(REPO / "matrix.yaml", kernel_tree=tree)
    assert m.source_of("local").version == "7.2"


def test_the_private_apt_names_the_machine_s_debian_mirror() -> None:
    deb822 = (Path("/etc/apt/sources.list.d/debian.sources"),
              "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm\n\n"
              "Types: deb\nURIs: http://mirror.example/debian-security\n")
    other = (Path("/etc/apt/sources.list.d/node.sources"),
             "Types: deb\nURIs: https://deb.nodesource.com/node_20.x\n")
    one_line = (Path("/etc/apt/sources.list"),
                "deb [arch=amd64] http://ftp.example.org/debian/ bookworm main\n")
    assert sources.mirror_of([other, deb822]) == "http://mirror.example/debian"
    assert sources.mirror_of([one_line]) == "http://ftp.example.org/debian"
    assert sources.mirror_of([other]) == sources.DEFAULT_MIRROR


def test_madison() -> None:
    assert sources.parse_madison(MADISON_72, "linux-source-7.2") == ["7.2.13-1"]
    assert sources.parse_madison(MADISON_72, "linux-source-7.3") == []
    assert sources.parse_madison("", "linux-source-7.2") == []


class FakeApt:
    """_Apt with the suite's answers recorded, no network."""
    answers: dict[tuple[str, ...], str] = {}

    def __init__(self, build: Path, suite: str) -> None:
        self.root = build / "apt"

    def run(self, tool: str, *args: str, cwd: Path | None = None) -> str:
        if args[-1].startswith("linux-source-7.2="):
            (cwd / "linux-source-7.2_7.2.13-1_all.deb").write_text("not a deb")
        return self.answers.get((tool, *args), "")


S72 = sources.Source("7.2", "linux-source-7.2", "sid", "7.2.13-1")


def test_make_deps_says_in_one_line_that_the_pinned_package_moved_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sources, "_Apt", FakeApt)
    # A new Debian revision of the same kernel.
    FakeApt.answers = {("apt-cache", "madison", "linux-source-7.2"):
                       MADISON_72.replace("7.2.13-1", "7.2.14-1")}
    with pytest.raises(DependencyError) as e:
        sources.fetch(S72, tmp_path, say=lambda _: None)
    line = str(e.value)
    assert "\n" not in line
    assert ("linux-source-7.2 7.2.13-1 is gone from Debian sid, which has "
            "linux-source-7.2 7.2.14-1 now") in line
    assert 'debian_version: "7.2.14-1"' in line and "matrix.yaml" in line
    # The next kernel: the package itself is gone.
    FakeApt.answers = {
        ("apt-cache", "pkgnames", "linux-source-"): "linux-source-7.3\nlinux-source\n",
        ("apt-cache", "madison", "linux-source-7.3"): MADISON_72.replace("7.2", "7.3"),
    }
    with pytest.raises(DependencyError) as e:
        sources.fetch(S72, tmp_path, say=lambda _: None)
    assert str(e.value).startswith("linux-source-7.2 7.2.13-1 is gone from Debian sid, "
                                   "which has linux-source-7.3 7.3.13-1 now: add that version")


def test_a_fetched_source_is_not_fetched_again(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*_a, **_k):
        raise AssertionError("fetched again")
    monkeypatch.setattr(sources, "_Apt", no_network)
    tarball = S72.tarball(tmp_path)
    tarball.parent.mkdir(parents=True)
    tarball.write_bytes(b"")
    assert sources.fetch(S72, tmp_path, say=no_network) == tarball


def test_a_download_that_is_no_source_package_is_named(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sources, "_Apt", FakeApt)
    FakeApt.answers = {("apt-cache", "madison", "linux-source-7.2"): MADISON_72}
    (tmp_path / "debs" / "sid").mkdir(parents=True)
    with pytest.raises(DependencyError) as e:
        sources.fetch(S72, tmp_path, say=lambda _: None)
    assert "linux-source-7.2_7.2.13-1_all.deb" in str(e.value)
    assert "delete it and run make deps again" in str(e.value)


def test_no_kernel_built_is_one_error(tmp_path: Path) -> None:
    art = runner.Artifacts()
    cells = [matrix.Cell("x86_64", "local", mode, "builtin") for mode in matrix.MODES]
    reason = "Not all Kconfig options requested ... are in the generated .config"
    art.broken[("x86_64", "local")] = reason
    why = runner.nothing_to_boot(cells, art)
    assert why.count(reason) == 1
    assert "x86_64-local: " + reason in why
    # one kernel that built: its cells boot, the others are error cells
    cells.append(matrix.Cell("x86_64", "stock", "enforce", "builtin"))
    assert runner.nothing_to_boot(cells, art) == ""


def test_a_run_with_nothing_built_is_one_error_and_a_bisect_skip(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No boot, one ERROR line, every cell "error" (exit 2), and git bisect
    run skips the commit (125) rather than stopping."""
    from harness import bisect
    m = matrix.load(REPO / "matrix.yaml", archs="x86_64", variants="stock-7.2",
                    modes="enforce")
    reason = "Not all Kconfig options requested by 7.2.config are in the generated .config"

    def build_stage(matrix, cells, repo, build, make_jobs, timings, log):
        art = runner.Artifacts()
        for c in cells:
            art.broken[(c.arch, c.variant)] = reason
        return art

    def no_boot(*a, **k):
        raise AssertionError("booted")
    monkeypatch.setattr(runner, "build_stage", build_stage)
    monkeypatch.setattr(runner, "boot_stage", no_boot)
    lines: list[str] = []
    rr = runner.run(runner.RunRequest(m, list(m.cells), (), tmp_path, log=lines.append))
    errors = [line for line in lines if line.startswith("ERROR:")]
    assert len(errors) == 1 and errors[0].count(reason) == 1
    assert rr.exit_status == runner.EXIT_INFRASTRUCTURE
    assert {c.status for c in rr.cells} == {matrix_status_error()}
    verdict = bisect.judge_file(rr.run_dir / "results.json", bisect.Target(test="open_test/*"))
    assert verdict.code == bisect.SKIP, verdict


def matrix_status_error():
    from harness.status import Status
    return Status.ERROR


def test_the_private_apt_keeps_only_how_the_machine_reaches_its_mirror() -> None:
    dump = ('APT::Update::Post-Invoke-Success:: "appstreamcli refresh";\n'
            'APT::Default-Release "bookworm";\n'
            'Acquire::Check-Valid-Until "false";\n'
            'Acquire::http::Proxy "http://proxy.example:3128/";\n'
            'DPkg::Post-Invoke:: "rm -f /var/cache/apt/*.bin";\n')
    assert sources.apt_acquire(dump) == ('Acquire::Check-Valid-Until "false";\n'
                                         'Acquire::http::Proxy "http://proxy.example:3128/";\n')


def test_an_unreachable_mirror_is_not_a_suite_that_moved_on(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    class Offline(FakeApt):
        def run(self, tool: str, *args: str, cwd: Path | None = None) -> str:
            if "update" in args:
                assert "--error-on=any" in args
                raise DependencyError("apt-get update failed: Could not connect")
            raise AssertionError("read the lists of a failed update")
    monkeypatch.setattr(sources, "_Apt", Offline)
    with pytest.raises(DependencyError) as e:
        sources.fetch(S72, tmp_path, say=lambda _: None)
    assert str(e.value).startswith("cannot read Debian sid's package lists from ")
    assert "gone" not in str(e.value)


def test_deps_modules_share_their_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    args = sources.deps_parser("sources", "", ("packages", "fetch")).parse_args(
        ["fetch", "--build-dir=/b"])
    assert (args.what, args.build_dir, args.matrix) == ("fetch", Path("/b"),
                                                         REPO / "matrix.yaml")
    assert sources.main(["packages", f"--matrix={REPO / 'matrix.yaml'}"]) == 0
    assert "linux-source-6.1" in capsys.readouterr().out.split()
    sources.deps_say("a line")
    assert capsys.readouterr().out == "deps: a line\n"
