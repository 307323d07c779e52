"""The strings the host and the guest agree on, checked on both sides: if
one drifted, every test would SKIP or every result would be lost."""
from __future__ import annotations

import re

import pytest
from pathlib import Path

from harness import kernlog, ktap, qemu

REPO = Path(__file__).resolve().parents[2]
INIT = (REPO / "initramfs" / "init").read_text()
CELL_H = (REPO / "selftests" / "ima_appraise" / "cell.h").read_text()
MARK_H = (REPO / "selftests" / "ima_appraise" / "mark.h").read_text()
KMSG_DUMP_C = (REPO / "initramfs" / "kmsg-dump.c").read_text()


def test_harness_marker_is_what_the_selftests_look_for() -> None:
    assert f'#define IMA_SELFTEST_MARKER "{qemu.HARNESS_MARKER}"' in CELL_H


def test_init_prints_the_markers_the_parser_reads() -> None:
    assert f"echo '{ktap.BEGIN_MARKER}'" in INIT
    end = re.search(r'echo "(<<< ima-selftest end rc=\$rc >>>)"', INIT)
    assert end, "init must print the end marker with make's exit status"
    console = f"{ktap.BEGIN_MARKER}\nTAP version 13\n1..0\n{end[1].replace('$rc', '3')}\n"
    run = ktap.parse(console)
    assert (run.began, run.ended, run.exit_code) == (True, True, 3)


def test_init_answers_the_kvm_probe(tmp_path) -> None:
    # What the harness's probe boot appends (harness/qemu.py).
    assert '"ima_selftest.probe=1"' in Path(qemu.__file__).read_text()
    assert _settings("console=ttyS0 ima_selftest.probe=1", tmp_path)["probe"] == "1"
    assert f'if [ "$probe" = 1 ]; then\n\techo \'{qemu.PROBE_MARKER}\'' in INIT


def test_init_dumps_the_whole_kernel_log_between_the_markers_the_reader_expects() -> None:
    # To the dump disk (found by its serial) where there is one, a NUL after
    # it; else to the console.  Between the markers either way, with
    # kmsg-dump's exit status.
    dump = re.search(rf"echo '{re.escape(kernlog.DUMP_BEGIN)}'\n"
                     r'if \[ -n "\$dump" \]; then\n'
                     r"\t\{ kmsg-dump; dumped=\$\?; printf '\\000'; \} > \"\$dump\"\n"
                     r"else\n\tkmsg-dump\n\tdumped=\$\?\nfi\n"
                     r'echo "(<<< ima-selftest kmsg end rc=)\$dumped( >>>)"', INIT)
    assert dump, "init must run kmsg-dump between the dump markers, with its exit status"
    assert kernlog.DUMP_END.fullmatch(f"{dump[1]}0{dump[2]}")
    assert qemu.DUMP_BEGIN.decode() == kernlog.DUMP_BEGIN
    assert f'[ "$serial" = {qemu.DUMP_SERIAL} ] && dump=/dev/' in INIT
    assert "quiet_from" not in INIT


def test_kmsg_dump_prints_lines_the_reader_parses() -> None:
    fmt = re.search(r'"(kmsg %llu,%u \[%5llu\.%06llu\] )"', KMSG_DUMP_C)
    assert fmt, "kmsg-dump.c's line prefix changed: change harness/kernlog.py with it"
    line = fmt[1].replace("%llu,%u", "1,4").replace("%5llu.%06llu", "    3.000042") + "text"
    log = kernlog.read(f"{kernlog.DUMP_BEGIN}\nkmsg 0,6 [    0.000000] Linux\n{line}\n"
                       "<<< ima-selftest kmsg end rc=0 >>>\n")
    assert log.from_dump and not log.problems
    assert log.lines[-1] == kernlog.Line(3, 3.000042, "text", 1)


def test_the_selftests_markers_are_what_the_reader_reads() -> None:
    assert '#define MARK_PREFIX "ima_selftest: "' in MARK_H
    written = re.findall(r'mark\("(\w+) %s(?: lockdep=%s)?\\n"', MARK_H)
    assert sorted(written) == ["begin", "done", "end", "start"]
    assert 'echo "<4>ima_selftest: finished lockdep=$lockdep" > /dev/kmsg' in INIT
    for text, want in (("ima_selftest: begin open_test/a.b.c", ("begin", "open_test/a.b.c", None)),
                       ("ima_selftest: end open_test/a.b.c lockdep=off",
                        ("end", "open_test/a.b.c", "off")),
                       ("ima_selftest: start fput_test lockdep=on", ("start", "fput_test", "on")),
                       ("ima_selftest: finished lockdep=on", ("finished", "", "on"))):
        log = kernlog.read(f"[    1.000000] {text}\n")
        (m,) = kernlog.marks(log)
        assert (m.what, m.name, m.lockdep) == want


def test_a_changed_source_is_staged_newer_than_a_binary_built_before(tmp_path) -> None:
    # The stage is shared by worktrees: an edit older than the binary that
    # another worktree built there must still be recompiled.
    import os
    from harness.initramfs import _copy_if_changed
    src, dst, binary = tmp_path / "t.c", tmp_path / "stage" / "t.c", tmp_path / "t"
    src.write_text("new\n")
    os.utime(src, (1, 1))
    dst.parent.mkdir()
    dst.write_text("old\n")
    binary.write_text("")
    _copy_if_changed(src, dst)
    assert dst.read_text() == "new\n"
    assert dst.stat().st_mtime >= binary.stat().st_mtime


def _init_function(name: str) -> str:
    """A shell function of init, as written there (up to its closing brace)."""
    body = re.search(rf"^{name}\(\) {{\n.*?^}}\n", INIT, re.S | re.M)
    assert body, f"init has no function {name}()"
    return body[0]


def _busybox_sh(script: str, cwd: Path | None = None) -> str:
    """Runs script in the host's busybox sh, the guest's shell (busybox-static,
    which 'make deps' installs: the initramfs packs it)."""
    import subprocess
    done = subprocess.run(["/bin/busybox", "sh", "-c", script], cwd=cwd,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _settings(cmdline: str, cwd: Path) -> dict[str, str]:
    # In a directory where a glob of the command line would match, with
    # every setting in the environment already (a kernel passes init the
    # words without a dot): only the command line's settings count, and
    # globbing is back on after (init's later "/sys/block/vd*" needs it).
    names = ("probe", "scratch", "targets", "progs", "runner")
    (cwd / "ima_selftest.progs=evil").write_text("")
    out = _busybox_sh("".join(f"{n}=stale; " for n in names) +
                      _init_function("settings") + f"settings '{cmdline}'\n" +
                      "".join(f'echo "{n}=${n}"\n' for n in names) +
                      'echo "flags=$-"\n', cwd=cwd)
    got = dict(line.split("=", 1) for line in out.splitlines())
    assert "f" not in got.pop("flags")
    return got


def test_init_reads_its_settings_from_the_command_line_in_the_shell_alone(tmp_path) -> None:
    # What the harness puts on the command line, read by init's own
    # settings() in busybox sh, as the guest does.
    cmdline = (f"console=ttyS0 panic=-1 {qemu.HARNESS_MARKER} ima_appraise=fix "
               f"{qemu.PROGRAMS_PARAM}=open_test,exec_test {qemu.MAKE_RUNNER}")
    assert _settings(cmdline, tmp_path) == {
        "probe": "", "scratch": "", "targets": "ima_appraise",
        "progs": "/selftests/ima_appraise/open_test /selftests/ima_appraise/exec_test",
        "runner": "make"}
    assert _settings("ima_selftest.probe=1 ima_selftest.scratch=/dev/vdb", tmp_path) == {
        "probe": "1", "scratch": "/dev/vdb", "targets": "", "progs": "", "runner": ""}
    assert _settings("ima_selftest.targets=a,b ima_selftest.targets=c,d", tmp_path)["targets"] == "c d"
    # A name only ends another word, or starts one with more to it: not a setting.
    assert _settings("x.ima_selftest.progs=open_test ima_selftest.progsx=1 ima_selftest.prog*", tmp_path) == {
        "probe": "", "scratch": "", "targets": "", "progs": "", "runner": ""}
    assert "sed" not in _init_function("settings")
    assert 'TEST_GEN_PROGS="$progs"' in INIT


def test_a_changed_build_rule_rebuilds_every_program(tmp_path, monkeypatch) -> None:
    # lib.mk's programs depend on their sources only: a changed Makefile
    # (flags) or lib.mk must rebuild them all, an edited source only itself,
    # and a rebuild that failed is done again the next time.
    import subprocess
    from harness import initramfs, keys, subproc
    from harness.archs import ARCHS
    from harness.errors import BuildError
    repo, tree, build = tmp_path / "repo", tmp_path / "tree", tmp_path / "build"
    (repo / "selftests" / "ima_appraise").mkdir(parents=True)
    (repo / "selftests" / "Makefile").write_text("all:\n")
    (repo / "selftests" / "ima_appraise" / "Makefile").write_text("CFLAGS += -O2\n")
    (repo / "selftests" / "ima_appraise" / "a.c").write_text("int x;\n")
    ksft = tree / "tools" / "testing" / "selftests"
    for name in initramfs.KSELFTEST_FILES:
        (ksft / name).parent.mkdir(parents=True, exist_ok=True)
        (ksft / name).write_text(name)
    monkeypatch.setattr(keys, "ensure", lambda build: None)
    monkeypatch.setattr(keys, "stage_guest_keys", lambda k, stage: None)
    cmds, rc = [], [0]
    monkeypatch.setattr(subproc, "run", lambda cmd, **kw: (
        cmds.append(cmd), subprocess.CompletedProcess(
            cmd, 0 if "emit_tests" in cmd else rc[0],
            stdout="ima_appraise:a\n" if "emit_tests" in cmd else ""))[1])

    def build_once() -> bool:
        initramfs.build_selftests(repo, tree, ARCHS["x86_64"], build, jobs=2)
        return "--always-make" in [c for c in cmds if "all" in c][-1]

    assert build_once()                     # a new stage
    assert not build_once()                 # nothing changed
    (repo / "selftests" / "ima_appraise" / "a.c").write_text("int y;\n")
    assert not build_once()                 # lib.mk's own rule rebuilds a.c
    (repo / "selftests" / "ima_appraise" / "Makefile").write_text("CFLAGS += -Os\n")
    rc[0] = 2
    with pytest.raises(BuildError):
        build_once()
    assert "--always-make" in [c for c in cmds if "all" in c][-1]
    rc[0] = 0
    assert build_once()                     # the failed rebuild, again
    assert not build_once()
    (ksft / "lib.mk").write_text("changed")
    assert build_once()


def test_a_rule_file_staged_by_a_run_that_stopped_still_rebuilds(tmp_path, monkeypatch) -> None:
    # The new Makefile reached the stage, then the run stopped before make
    # (here: a file of the kernel tree missing): the next run rebuilds all.
    from harness import initramfs, keys, subproc
    from harness.archs import ARCHS
    import subprocess
    repo, tree, build = tmp_path / "repo", tmp_path / "tree", tmp_path / "build"
    (repo / "selftests").mkdir(parents=True)
    (repo / "selftests" / "Makefile").write_text("all:\n")
    ksft = tree / "tools" / "testing" / "selftests"
    for name in initramfs.KSELFTEST_FILES:
        (ksft / name).parent.mkdir(parents=True, exist_ok=True)
        (ksft / name).write_text(name)
    monkeypatch.setattr(keys, "ensure", lambda build: None)
    monkeypatch.setattr(keys, "stage_guest_keys", lambda k, stage: None)
    cmds = []
    monkeypatch.setattr(subproc, "run", lambda cmd, **kw: (
        cmds.append(cmd), subprocess.CompletedProcess(
            cmd, 0, stdout="ima_appraise:a\n" if "emit_tests" in cmd else ""))[1])
    initramfs.build_selftests(repo, tree, ARCHS["x86_64"], build, jobs=2)
    (repo / "selftests" / "Makefile").write_text("all:\n\t@true\n")
    (ksft / "kselftest.h").unlink()
    with pytest.raises(FileNotFoundError):
        initramfs.build_selftests(repo, tree, ARCHS["x86_64"], build, jobs=2)
    (ksft / "kselftest.h").write_text("back")
    initramfs.build_selftests(repo, tree, ARCHS["x86_64"], build, jobs=2)
    assert "--always-make" in [c for c in cmds if "all" in c][-1]


def test_init_runs_ksft_run_on_the_listed_programs_unless_make_is_asked() -> None:
    from harness import initramfs
    name, value = qemu.MAKE_RUNNER.split("=")
    assert name == "ima_selftest.runner" and f"{name}=*) runner=${{word#*=}} ;;" in INIT
    assert f'elif [ "$runner" = {value} ]; then\n\tmake -C /selftests run_tests' in INIT
    assert "BASE_DIR=/selftests ksft-run $list" in INIT
    assert INIT.count(f"/selftests/{initramfs.TEST_LIST}") >= 3
    assert initramfs.TOOLS["ksft-run"] == "usr/bin/ksft-run"


@pytest.mark.parametrize("targets,progs,listed,want", [
    # every target the list names, in its order, each in its directory
    ("", "", "a:one\na:two\nb:three\n",
     "0 a /S/a/one /S/a/two|0 b /S/b/three|rc=0"),
    ("b", "", "a:one\nb:three\nb:four\n", "0 b /S/b/three /S/b/four|rc=0"),
    # the last line without its newline; a target met again later
    ("", "", "a:one\nb:three\na:two", "0 a /S/a/one /S/a/two|0 b /S/b/three|rc=0"),
    ("", "", "b:one", "0 b /S/b/one|rc=0"),
    # ima_selftest.progs: those programs, the list not needed
    ("ima_appraise", "/S/ima_appraise/x", None, "0 ima_appraise /S/ima_appraise/x|rc=0"),
    # a failing run ends it with its status
    ("", "", "fail:one\nb:two\n", "3 fail /S/fail/one|rc=3"),
    # no list, or no program of a target: 126 and a reason
    ("", "", None, "rc=126"),
    ("c", "", "a:one\n", "rc=126"),
])
def test_init_runs_what_the_program_list_says(tmp_path, targets, progs, listed, want) -> None:
    # init's ksft_run() in busybox sh, with /selftests moved to tmp_path/S
    # and ksft-run a shell function that prints where it ran and what.
    root = tmp_path / "S"
    root.mkdir()
    for t in ("a", "b", "fail", "ima_appraise"):
        (root / t).mkdir()
    if listed is not None:
        (root / "kselftest-list.txt").write_text(listed)
    body = _init_function("ksft_run").replace("/selftests", str(root))
    fake = ('ksft_run_() { r=0; case $PWD in */fail) r=3 ;; esac; '
            'echo "$r ${PWD##*/} $*" | sed "s|' + str(root) + '|/S|g" >> ' +
            str(tmp_path / "out") + '; return $r; }\n')
    script = (fake + body.replace("ksft-run $list", "ksft_run_ $list") +
              f"targets='{targets}'; progs='{progs.replace('/S', str(root))}'\n"
              "cd " + str(tmp_path) + "; : > out; ksft_run 2> err; rc=$?; echo \"$PWD\" > " + str(tmp_path / "pwd") + "; cd " +
              str(tmp_path) + "; tr '\\n' '|' < out; echo rc=$rc; cat err >&2\n")
    got = _busybox_sh(script, cwd=tmp_path).strip()
    assert got == want
    # ksft-run's directory is left behind it (init's later paths are absolute,
    # but a failing umount of a busy directory would not be)
    assert (tmp_path / "pwd").read_text().strip() in ("/", str(tmp_path))


def test_the_program_list_is_emit_tests_output_or_an_error(tmp_path, monkeypatch) -> None:
    import subprocess
    from harness import initramfs, subproc
    from harness.archs import ARCHS
    from harness.errors import BuildError
    out = ["ima_appraise:open_test\nima_appraise:exec_test\n"]
    monkeypatch.setattr(subproc, "run", lambda cmd, **kw: subprocess.CompletedProcess(
        cmd, 0, stdout=out[0]))
    log = tmp_path / "log"
    initramfs._write_test_list(tmp_path, ARCHS["x86_64"], log)
    assert (tmp_path / initramfs.TEST_LIST).read_text() == out[0]
    for bad in ("", "make: Entering directory '/x'\nima_appraise:open_test\n",
                "for TEST in a b; do echo; done\n"):
        out[0] = bad
        with pytest.raises(BuildError, match="emit_tests"):
            initramfs._write_test_list(tmp_path, ARCHS["x86_64"], log)
