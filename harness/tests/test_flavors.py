"""The debug flavor: its kernels' configuration, how its guests boot, and
the coverage check each of its cells makes on its kernel log."""
from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest

from harness import cases, flavors, kbuild, qemu, results, runner
from harness.archs import ARCHS
from harness.cases import Case
from harness.matrix import Cell, load, tier_cells
from harness.qemu import BootOutcome

DATA = Path(__file__).parent / "test_data"
REPO = Path(__file__).resolve().parents[2]
DEBUG = flavors.FLAVORS[flavors.DEBUG]
RECORDED_DEBUG = DATA / "real_x86_64_debug_patched_enforce_custom_pass.log"


def test_a_plain_kernels_log_fails_the_debug_coverage_check() -> None:
    """A plain kernel (one CPU, no KASAN, tiny RCU) booted where a debug
    one was asked for: every detector is named as missing."""
    console = (DATA / "real_x86_64_stock_enforce_custom_whole_log.log").read_text()
    assert DEBUG.missing_coverage(console) == [
        "KASAN", "kasan_multi_shot", "KFENCE", "PROVE_RCU", "PREEMPT_RCU",
        "2 CPUs (no 'smp: Brought up' line)"]
    # A kernel with KFENCE, preemptible RCU and its lockdep checks, but
    # neither KASAN nor a second CPU.
    no_kasan = (DATA / "real_x86_64_kfence.log").read_text()
    assert DEBUG.missing_coverage(no_kasan) == ["KASAN", "kasan_multi_shot",
                                                "2 CPUs (brought up 1)"]


def test_the_plain_flavor_asks_for_lockdep_only() -> None:
    console = (DATA / "real_x86_64_stock_enforce_custom_whole_log.log").read_text()
    assert flavors.FLAVORS[flavors.PLAIN].missing_coverage(console) == []
    # A kernel built without PROVE_LOCKING and LOCKDEP (common.config
    # without them, 2026-12-05): its open_test passed, the cell fails.
    no_lockdep = (DATA / "real_x86_64_no_lockdep_open_test.log").read_text()
    assert flavors.FLAVORS[flavors.PLAIN].missing_coverage(no_lockdep) == ["lockdep"]
    cell = Cell("x86_64", "patched", "enforce", "custom")
    expected = cases.cases_of(REPO / "selftests" / "ima_appraise" / "open_test.c")
    outcome = BootOutcome(no_lockdep, 0, False, 9.0, ("qemu",))
    r = results.evaluate(cell, outcome, tuple(expected), "tcg",
                         missing_coverage=flavors.FLAVORS[flavors.PLAIN].missing_coverage)
    assert r.status == "fail"
    assert "the kernel ran without lockdep" in r.reason


@pytest.mark.parametrize("arch,extra", [
    ("x86_64", ["debug.config", "x86_64-debug.config"]),
    ("aarch64", ["debug.config"]),
])
def test_debug_kernels_get_the_debug_fragments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               arch: str, extra: list[str]) -> None:
    monkeypatch.setattr(runner.keys, "ensure", lambda build: tmp_path)
    plain = runner.fragments(REPO, arch, tmp_path)
    debug = runner.fragments(REPO, arch, tmp_path, flavors.DEBUG)
    assert [p.name for p in plain] == ["common.config", f"{arch}.config", "trusted-keys.config"]
    assert [p.name for p in debug] == ["common.config", f"{arch}.config", *extra,
                                       "trusted-keys.config"]
    assert all(p.is_file() for p in debug[:-1])


def test_a_debug_variant_is_its_own_kernel_in_its_own_workspace(tmp_path: Path) -> None:
    """Same tree and series as patched, other fragments: not shared with
    patched, and its turns are taken in a workspace of the debug flavor."""
    tree, series = tmp_path / "linux", (tmp_path / "0001.patch",)
    frags = {"patched": (tmp_path / "common.config",),
             "patched-debug": (tmp_path / "common.config", tmp_path / "debug.config")}
    plan = kbuild.plan(tmp_path, ARCHS["x86_64"],
                       {"patched": (tree, series), "patched-debug": (tree, series)}, frags,
                       {}, {"patched-debug": flavors.DEBUG})
    assert plan["patched"].out != plan["patched-debug"].out
    assert (plan["patched"].flavor, plan["patched-debug"].flavor) == ("plain", "debug")
    assert kbuild.workspace_name("6.1", "plain") == "workspace"
    assert kbuild.workspace_name("6.1", "debug") == "workspace-debug"
    assert kbuild.workspace_name("6.12", "debug") == "workspace-6.12-debug"


def test_several_cpus_run_in_threads_of_their_own(tmp_path: Path) -> None:
    req = qemu.BootRequest(ARCHS["x86_64"], tmp_path / "bzImage", tmp_path / "initrd", None,
                           "", "tcg", 512, 60, cpus=2)
    cmd = qemu.command(req)
    assert cmd[cmd.index("-smp") + 1] == "2"
    assert cmd[cmd.index("-accel") + 1] == "tcg,thread=multi"
    one = qemu.command(qemu.BootRequest(ARCHS["x86_64"], tmp_path / "bzImage",
                                        tmp_path / "initrd", None, "", "tcg", 512, 60))
    assert (one[one.index("-smp") + 1], one[one.index("-accel") + 1]) == ("1", "tcg")


def test_the_repos_debug_variants_share_their_bases_series_and_known_failures() -> None:
    m = load(REPO / "matrix.yaml")
    for name, base in (("stock-debug", "stock"), ("patched-debug", "patched")):
        v, b = m.variants[name], m.variants[base]
        assert (v.flavor, v.series, v.version) == ("debug", b.series, b.version)
        assert v.known_failures[:len(b.known_failures)] == b.known_failures
    debug_cells = [c for c in m.cells if m.variants[c.variant].flavor == flavors.DEBUG]
    assert debug_cells, "the default matrix boots no debug cell"
    # Not in make check: a cold debug build alone takes half its budget.
    assert not [c for c in tier_cells(m, "check") if c in debug_cells]


def test_an_exclusion_may_list_values(tmp_path: Path) -> None:
    (tmp_path / "series").write_text("")
    (tmp_path / "matrix.yaml").write_text(
        "variants:\n  stock: {}\n  patched: {series: series}\n"
        "matrix:\n  archs: [x86_64]\n  modes: [enforce, fix, log]\n"
        "  policies: [custom]\n  variants: [stock, patched]\n"
        "  exclude:\n    - {variant: patched, mode: [fix, log]}\n")
    m = load(tmp_path / "matrix.yaml")
    assert [c.id for c in m.cells] == [
        "x86_64-stock-enforce-custom-sha1-keep", "x86_64-stock-fix-custom-sha1-keep",
        "x86_64-stock-log-custom-sha1-keep", "x86_64-patched-enforce-custom-sha1-keep"]


def _multi_shot(console: str) -> str:
    """A debug console recorded before the flavor asked for
    kasan_multi_shot, with it on its command line as a boot has it now."""
    assert "pci=noacpi" in console and "kasan_multi_shot" not in console
    return console.replace("pci=noacpi", "pci=noacpi kasan_multi_shot")


def _debug_cell(console: str) -> results.CellResult:
    """The recorded debug cell (x86_64-patched-debug-enforce-custom-sha1-
    remove, 2026-12-04), judged as the runner judges a debug cell: the
    cases are those its kernel log marks."""
    found = re.findall(r"ima_selftest: begin (\w+)/(\S+)", console)
    expected = tuple(Case(s, n) for s, n in dict.fromkeys(found))
    assert len(expected) == 165
    cell = Cell("x86_64", "patched-debug", "enforce", "custom", "sha1", "remove")
    return results.evaluate(cell, BootOutcome(console, 0, False, 137.7, ("qemu",)), expected,
                            "tcg", missing_coverage=DEBUG.missing_coverage)


def test_a_real_debug_cell_shows_its_coverage_and_passes() -> None:
    r = _debug_cell(_multi_shot(RECORDED_DEBUG.read_text()))
    assert (r.status, r.problems) == ("pass", ())
    assert r.counts()["pass"] == 165


def test_a_debug_kernel_without_kasan_multi_shot_fails_its_cell() -> None:
    """6.1's KASAN reports only a boot's first bad access unless
    kasan_multi_shot is on the command line: after a report (the known
    one at boot, say) it would cover nothing, silently."""
    r = _debug_cell(RECORDED_DEBUG.read_text())
    assert r.status == "fail"
    assert r.problems == ("the kernel ran without kasan_multi_shot: the flavor's checks were "
                          "not in force",)


@pytest.mark.parametrize("arch", sorted(ARCHS))
def test_every_debug_boot_asks_kasan_for_every_report(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      arch: str) -> None:
    """kasan_multi_shot on the kernel command line of every debug boot,
    on every arch (x86_64's pci=noacpi still there); none on a plain one."""
    asked: list[str] = []

    def boot(req: qemu.BootRequest, console: Path) -> BootOutcome:
        asked.append(qemu.kernel_cmdline(req))
        return BootOutcome("", 0, False, 1.0, ())

    monkeypatch.setattr(qemu, "boot", boot)
    monkeypatch.setattr(qemu, "make_scratch_disk", lambda path, uuid: None)
    m = load(REPO / "matrix.yaml")
    kernel = runner.BuiltKernel(tmp_path / "kernel", tmp_path / "config", "")
    for variant in ("patched-debug", "patched"):
        cell = Cell(arch, variant, "enforce", "custom", "sha1", "remove")
        runner._boot_once(runner.CellBoot(m, cell, kernel, tmp_path / "initrd", "tcg",
                                          tmp_path, tmp_path),
                          ("open_test",), 1, select=False)
    debug, plain = (a.split() for a in asked)
    assert "kasan_multi_shot" in debug and "kasan_multi_shot" not in plain
    assert ("pci=noacpi" in debug) == (arch == "x86_64")


@pytest.mark.parametrize("edit,missing", [
    (("smp: Brought up 1 node, 2 CPUs", "smp: Brought up 1 node, 1 CPU"), "2 CPUs (brought up 1)"),
    (("kasan: KernelAddressSanitizer initialized", "kasan: off"), "KASAN"),
    (("rcu: Preemptible hierarchical RCU", "rcu: Hierarchical RCU"), "PREEMPT_RCU"),
])
def test_a_debug_cell_without_a_detector_fails_by_its_name(edit: tuple[str, str],
                                                           missing: str) -> None:
    console = _multi_shot(RECORDED_DEBUG.read_text())
    assert edit[0] in console
    r = _debug_cell(console.replace(*edit))
    assert r.status == "fail"
    assert r.problems == (f"the kernel ran without {missing}: the flavor's checks were not "
                          "in force",)


def test_a_debug_cell_is_expected_to_take_longer(tmp_path: Path) -> None:
    """The longest cells boot first: a debug cell with no history must not
    be guessed as short as a plain one."""
    m = load(REPO / "matrix.yaml")
    plain = Cell("x86_64", "patched", "enforce", "custom", "sha1", "remove")
    debug = Cell("x86_64", "patched-debug", "enforce", "custom", "sha1", "remove")
    guess = runner.expected_seconds([plain, debug], tmp_path, m)
    assert guess[debug.id] == 9 * guess[plain.id]


@pytest.fixture
def boot_stage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    """runner.boot_stage() of x86_64 enforce-custom-remove cells of the
    given variants, at JOBS=2, each cell's boot replaced by fake_boot(cell)."""
    def boot(variants: tuple[str, ...], fake_boot) -> list:  # noqa: ANN001
        m = load(REPO / "matrix.yaml")
        cells = [Cell("x86_64", v, "enforce", "custom", "sha1", "remove") for v in variants]
        monkeypatch.setattr(runner, "_boot_cell",
                            lambda cb, *args, **kwargs: fake_boot(cb.cell))
        monkeypatch.setattr(runner, "_choose_accels", lambda *a: {
            "x86_64": qemu.AccelChoice("tcg", "fake")})
        art = runner.Artifacts(kernels={("x86_64", c.variant): runner.BuiltKernel(
            tmp_path / "bzImage", tmp_path / "config", "") for c in cells},
            initrds={"x86_64": tmp_path / "initrd"})
        rr = runner.RunResult("run", tmp_path, [])
        runner.boot_stage(runner.RunRequest(m, cells, (), tmp_path, jobs=2, accel="tcg",
                                            log=lambda s: None),
                          art, runner.expected_seconds(cells, tmp_path, m), rr)
        return rr.cells
    return boot


def test_a_two_cpu_guest_takes_two_of_the_jobs(boot_stage) -> None:  # noqa: ANN001
    """JOBS=2: two plain guests run at once, a debug guest (two vCPUs)
    alone, so that its racers get both host cores."""
    running: set[str] = set()
    seen: list[frozenset[str]] = []
    lock = threading.Lock()

    def fake_boot(cell: Cell) -> results.CellResult:
        with lock:
            running.add(cell.variant)
            seen.append(frozenset(running))
        time.sleep(0.05)
        with lock:
            running.discard(cell.variant)
        return results.error_cell(cell, "fake")

    done = boot_stage(("patched", "stock", "patched-debug", "stock-debug"), fake_boot)
    assert len(done) == 4
    assert all(len(s) == 1 for s in seen if s & {"patched-debug", "stock-debug"})
    assert frozenset({"patched", "stock"}) in seen


def test_a_stopped_run_boots_no_cell_that_waits_for_its_slots(boot_stage) -> None:  # noqa: ANN001
    """Ctrl-C while a debug guest runs and another waits for both slots:
    the waiting one must not start a guest that never got the SIGINT."""
    booted: list[str] = []

    def fake_boot(cell: Cell) -> results.CellResult:
        booted.append(cell.variant)
        time.sleep(0.05)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        boot_stage(("patched-debug", "stock-debug"), fake_boot)
    time.sleep(0.2)
    assert booted == ["patched-debug"]
