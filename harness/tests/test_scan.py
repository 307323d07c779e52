"""harness/scan.py on the recorded consoles and on logs that are not the
harness's: test_data/foreign_dmesg_lockdep.log is a plain `dmesg` of a
laptop with the lockdep report of real_x86_64_lockdep_deadlock_killed.log
among its boot messages; the other tools' forms of it are made from it
here, as each tool prints the same records."""
from __future__ import annotations

import gzip
import io
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness import __main__ as cli, kernlog, matrix as matrix_mod, scan, splats

DATA = Path(__file__).parent / "test_data"
FOREIGN = DATA / "foreign_dmesg_lockdep.log"
SIGNATURE = ("lockdep-circular (&iint_mutex_key[depth], &sb->s_type->i_mutex_key) "
             "in ima_file_free")
HEADLINE = 48       # the line of "WARNING: possible circular ..." in FOREIGN
_STAMP = re.compile(r"\[ *(\d+)\.(\d+)\] ?")


def _lines() -> list[str]:
    return FOREIGN.read_text().splitlines()


def _wall(line: str) -> str:
    """The wall-clock time of a record printed at line's printk time, as
    syslog, dmesg -T and journalctl print it (boot at 18:10:00)."""
    seconds = int(_STAMP.match(line)[1])
    return f"{18 + (10 * 60 + seconds) // 3600:02d}:{(10 * 60 + seconds) // 60 % 60:02d}:" \
           f"{seconds % 60:02d}"


def _without_stamp(line: str) -> str:
    return line[_STAMP.match(line).end():]


# Each tool's form of the same records.
FORMS = {
    "dmesg": lambda l: l,
    "dmesg -t": _without_stamp,
    "dmesg -T": lambda l: f"[Sat Dec  7 {_wall(l)} 2026] {_without_stamp(l)}",
    "dmesg -r": lambda l: f"<4>{l}",
    "dmesg -x": lambda l: f"kern  :warn  : {l}",
    "dmesg --time-format=iso": lambda l: f"2026-12-07T{_wall(l)},123456+00:00 {_without_stamp(l)}",
    "journalctl -k": lambda l: f"Dec 07 {_wall(l)} thinkpad kernel: {_without_stamp(l)}",
    "journalctl -k -o short-iso": lambda l: f"2026-12-07T{_wall(l)}+0000 thinkpad kernel: "
                                            f"{_without_stamp(l)}",
    "journalctl -k -o short-monotonic": lambda l: f"{_STAMP.match(l)[0].rstrip()} thinkpad "
                                                  f"kernel: {_without_stamp(l)}",
    "kern.log": lambda l: f"Dec  7 {_wall(l)} thinkpad kernel: {l}",
}


@pytest.mark.parametrize("form", FORMS)
def test_every_form_of_a_foreign_dmesg(form: str) -> None:
    text = "\n".join(FORMS[form](l) for l in _lines()) + "\n"
    report = scan.scan(text, form)
    assert [(s.kind, s.signature, s.line) for s in report.splats] == [
        ("lockdep-circular", SIGNATURE, HEADLINE)]
    s = report.splats[0]
    assert s.title == ("possible circular locking dependency: acquiring "
                       "&iint_mutex_key[depth] while holding &sb->s_type->i_mutex_key#7")
    assert s.known is None and s.test is None and report.exit_status == 1
    # The body is the report's, in the kernel's form: from its "=====" to </TASK>.
    assert s.body[0].endswith("=" * 54) and s.body[-1].endswith(" </TASK>")
    assert len(s.body) == 85


def test_the_tools_are_named() -> None:
    text = "\n".join(FORMS["dmesg -T"](l) for l in _lines())
    assert scan.scan(text).formats == ("dmesg -T",)
    assert scan.scan(FOREIGN.read_text()).formats == ()


def test_a_serial_console_with_other_noise() -> None:
    # Another machine's serial console: colours, carriage returns, the
    # init system's and a shell's lines among the kernel's.
    noise = ["\x1b[0;32m  OK  \x1b[0m] Started \x1b[0;1;39mssh.service\x1b[0m - OpenBSD Secure "
             "Shell server.", "Debian GNU/Linux 12 thinkpad ttyS0", "", "thinkpad login: root",
             "root@thinkpad:~# cp -a /usr/lib/firmware /mnt/backup/"]
    lines = _lines()
    console = lines[:HEADLINE - 2] + noise + lines[HEADLINE - 2:]
    report = scan.scan("\r\n".join(console) + "\r\n")
    assert [(s.kind, s.signature, s.line) for s in report.splats] == [
        ("lockdep-circular", SIGNATURE, HEADLINE + len(noise))]
    assert not any("\r" in line or "\x1b" in line for line in report.splats[0].body)


def test_a_programs_log_line_in_a_journal_is_not_the_kernels() -> None:
    # journalctl without -k: a program that logs a kernel-like headline.
    text = ("-- Boot 3a1c9f0e2b7d4c51a0e8f6d2b9c7a1e4 --\n"
            "Dec 07 18:40:01 thinkpad myapp[812]: BUG: KASAN: use-after-free in my_function\n"
            + "\n".join(FORMS["journalctl -k"](l) for l in _lines()))
    report = scan.scan(text)
    assert [s.signature for s in report.splats] == [SIGNATURE]
    assert report.splats[0].line == HEADLINE + 2


@pytest.mark.parametrize("name", [
    "lockdep_circular.log", "lockdep_reports.log", "kasan.log", "null_deref_panic.log",
    "arm64_oops.log", "real_x86_64_abba_deadlock.log", "real_x86_64_kmemleak.log",
    "real_x86_64_0011_0051_boot1.log", "real_x86_64_debug_kasan_at_boot.log",
    "real_x86_64_stock_enforce_custom_whole_log.log",
])
def test_the_recorded_consoles_as_a_run_reads_them(name: str) -> None:
    # The harness's reading: a whole dump of the kernel log stands for the console.
    text = (DATA / name).read_text()
    expected = splats.scan(kernlog.read(text).scan_text)
    report = scan.scan(text, name)
    assert [(s.kind, s.title, s.signature, s.line) for s in report.splats] == \
           [(s.kind, s.title, s.signature, s.line) for s in expected]
    assert report.exit_status == (1 if expected else 0)


def test_a_harness_console_names_the_case() -> None:
    report = scan.scan((DATA / "real_x86_64_0011_0051_boot1.log").read_text())
    assert report.from_dump
    assert [s.test for s in report.splats] == ["fput_test/deferred_fput.munmap_last_reference"]
    assert "fput_test/deferred_fput.munmap_last_reference" in report.lines()[0]


def _matrix(*known: matrix_mod.KnownSplat) -> SimpleNamespace:
    v = matrix_mod.Variant("stock-debug", None, known_splats=known)
    return SimpleNamespace(path=Path("matrix.yaml"), variants={v.name: v})


KASAN_AT_BOOT = "kasan: wild-memory-access in rcu_is_watching"


def test_known_splats_of_a_variant() -> None:
    text = (DATA / "real_x86_64_debug_kasan_at_boot.log").read_text()
    entry = matrix_mod.KnownSplat(KASAN_AT_BOOT, (("arch", ("x86_64",)),), "not IMA",
                                  at_boot=True)
    m = _matrix(entry)
    # The log's markers place it before the first program: known at boot.
    for arch in (None, "x86_64"):
        report = scan.scan(text, known=scan.known_splat(m, "stock-debug", arch))
        assert [s.known for s in report.splats] == ["not IMA"] and report.exit_status == 0
        assert report.lines()[0].startswith("kasan  known  " + KASAN_AT_BOOT)
    # The entry's cells: name another arch.
    report = scan.scan(text, known=scan.known_splat(m, "stock-debug", "aarch64"))
    assert [s.known for s in report.splats] == [None] and report.exit_status == 1
    # A log with no markers cannot place it at boot: at_boot entries do not hold.
    headline = next(l for l in text.splitlines() if "BUG: KASAN" in l)
    lone = re.sub(r"^kmsg \d+,\d ", "", headline)
    assert scan.scan(lone, known=scan.known_splat(m, "stock-debug", None)).splats[0].known is None
    anywhere = _matrix(matrix_mod.KnownSplat(KASAN_AT_BOOT, (), "anywhere"))
    assert scan.scan(lone, known=scan.known_splat(anywhere, "stock-debug", None)) \
        .splats[0].known == "anywhere"


def test_an_unknown_variant() -> None:
    with pytest.raises(scan.ScanError, match="--variant nope: not a variant of matrix.yaml; "
                       "there are: stock-debug"):
        scan.known_splat(_matrix(), "nope", None)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = cli.main(["scan", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(capsys, str(FOREIGN))
    lines = out.splitlines()
    assert rc == 1 and not err
    assert lines[0] == f"{FOREIGN}: 1 splat(s), 1 not known (read as a console)"
    assert lines[1].startswith(f"lockdep-circular  NEW    {SIGNATURE}  (line {HEADLINE}): ")
    assert f"---- splat 1: lockdep-circular at line {HEADLINE} ----" in lines
    assert lines[-1].endswith(" </TASK>")

    rc, out, _ = _run(capsys, str(DATA / "ktap_pass.log"))
    assert (rc, out) == (0, f"{DATA / 'ktap_pass.log'}: no splat (read as a console)\n")

    rc, out, _ = _run(capsys, "--json", str(FOREIGN))
    doc = json.loads(out)
    assert rc == 1 and doc["unknown"] == 1
    assert [(s["kind"], s["signature"], s["line"], s["known"], s["console"])
            for s in doc["splats"]] == [("lockdep-circular", SIGNATURE, HEADLINE, None,
                                         str(FOREIGN))]
    assert doc["splats"][0]["body"][-1].endswith(" </TASK>")


def test_cli_reads_gzip_and_standard_input(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    gz = tmp_path / "console.log.gz"
    gz.write_bytes(gzip.compress(FOREIGN.read_bytes()))
    assert _run(capsys, str(gz))[0] == 1
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(FOREIGN.read_bytes())))
    rc, out, _ = _run(capsys, "-")
    assert rc == 1 and out.startswith("-: 1 splat(s)")


def test_cli_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    binary = tmp_path / "vmlinux.bin"
    binary.write_bytes(b"\x7fELF\0\0\0")
    prose = tmp_path / "notes.txt"
    prose.write_text("nothing the kernel printed\n")
    for argv, message in [
        ([str(tmp_path / "none.log")], "none.log: cannot read it (No such file or directory)"),
        ([str(tmp_path)], f"{tmp_path}: a directory; give a console log or dmesg file"),
        ([str(binary)], "vmlinux.bin: binary data, not a text log"),
        ([str(prose)], "notes.txt: no kernel message in it"),
        ([str(FOREIGN), "--vmlinux", str(tmp_path / "vmlinux")],
         "--vmlinux " + str(tmp_path / "vmlinux") + ": no such file"),
        ([str(FOREIGN), "--vmlinux", str(prose)],
         str(tmp_path / "scripts" / "decode_stacktrace.sh") + ": not there; give --tree"),
    ]:
        rc, out, err = _run(capsys, *argv)
        assert (rc, out) == (2, "")
        assert err.startswith("error: ") and message in err, err


def test_cli_decodes_with_a_vmlinux(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A stand-in for the tree's scripts/decode_stacktrace.sh: what it was
    # given, then each line of the body it read, marked.
    script = tmp_path / "linux" / "scripts" / "decode_stacktrace.sh"
    script.parent.mkdir(parents=True)
    script.write_text('#!/bin/sh\necho "args: $*"\nsed "s/$/ fs\\/x.c:1/"\n')
    script.chmod(0o755)
    tree = script.parent.parent
    vmlinux = tmp_path / "build" / "vmlinux"
    vmlinux.parent.mkdir()
    vmlinux.write_text("ELF")
    rc, out, _ = _run(capsys, str(FOREIGN), "--vmlinux", str(vmlinux), "--tree", str(tree))
    assert rc == 1
    assert f"args: {vmlinux} {tree} {vmlinux.parent}" in out.splitlines()
    assert "[ 1839.186471]  ima_file_free+0x6a/0xea fs/x.c:1" in out.splitlines()
    rc, out, _ = _run(capsys, "--json", str(FOREIGN), "--vmlinux", str(vmlinux), "--tree",
                      str(tree))
    assert "fs/x.c:1" in json.loads(out)["splats"][0]["decoded"]
    # A script that fails: the bodies as they are, and why.
    script.write_text("#!/bin/sh\necho 'addr2line: not found' >&2\nexit 1\n")
    rc, out, _ = _run(capsys, str(FOREIGN), "--vmlinux", str(vmlinux), "--tree", str(tree))
    assert rc == 1 and "fs/x.c:1" not in out
    assert ("note: splat 1: scripts/decode_stacktrace.sh failed: exit 1: addr2line: not found"
            in out.splitlines())
