"""harness/profile.py: the sampler against real QEMU gdbstubs, and the
report from a real vmlinux's nm and readelf lines."""
from __future__ import annotations

import json
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from harness import matrix, profile, qemu, runner
from harness.archs import ARCHS
from harness.runner import BuiltKernel

# `nm -n` of the x86_64 patched 6.1.192 vmlinux (2026-12-05), around the
# functions a profiled x86_64 cell spent most samples in.
NM = """\
ffffffff81000000 T _stext
ffffffff810594fa t lookup_chain_cache
ffffffff8105c3f3 T debug_check_no_locks_freed
ffffffff8105c4fb T debug_check_no_locks_held
ffffffff8105c57d t __lock_acquire
ffffffff8105d6af t reacquire_held_locks
ffffffff8105d808 T lock_release
ffffffff8105d99b t rcu_read_unlock
ffffffff811079de t d_lru_isolate
ffffffff811083aa t rcu_read_unlock
ffffffff811f7819 T blake2s_compress_generic
ffffffff811f88ad T sha1_transform
ffffffff811f8adc T sha1_init
ffffffff81e1e000 D init_task
"""
TREE = "/work/b/src/linux-workspace"
# Excerpts of readelf --debug-dump=info --dwarf-depth=1 and of
# --debug-dump=aranges of the same vmlinux: the units of the functions
# above, and each unit's range that holds them.
UNITS_INFO = f"""\
Contents of the .debug_info section:

  Compilation Unit @ offset 0x1eae40:
   Length:        0x118b5 (32-bit)
    <1eae52>   DW_AT_name        : (indirect line string, offset: 0x45eb): {TREE}/kernel/locking/lockdep.c
    <1eae56>   DW_AT_comp_dir    : (indirect line string, offset: 0): /work/b/kernel/x86_64-workspace
  Compilation Unit @ offset 0x4a8737:
   Length:        0xbc89 (32-bit)
    <4a8749>   DW_AT_name        : (indirect line string, offset: 0x6dc6): {TREE}/fs/dcache.c
  Compilation Unit @ offset 0x7d2d0e:
   Length:        0x8f2 (32-bit)
    <7d2d20>   DW_AT_name        : (indirect line string, offset: 0xad8d): {TREE}/lib/crypto/sha1.c
"""
UNITS_ARANGES = """\
Contents of the .debug_aranges section:

  Length:                   396
  Version:                  2
  Offset into .debug_info:  0x1eae40
  Pointer Size:             8
  Segment Size:             0

    Address            Length
    ffffffff81059485 000000000000521b
    ffffffff81f7a189 000000000000001d
    0000000000000000 0000000000000000
  Length:                   60
  Version:                  2
  Offset into .debug_info:  0x4a8737
  Pointer Size:             8
  Segment Size:             0

    Address            Length
    ffffffff811079de 0000000000003281
    0000000000000000 0000000000000000
  Length:                   60
  Version:                  2
  Offset into .debug_info:  0x7d2d0e
  Pointer Size:             8
  Segment Size:             0

    Address            Length
    ffffffff811f88ad 0000000000000252
    0000000000000000 0000000000000000
"""


def _syms() -> profile.KernelSymbols:
    return profile.parse_nm(NM, profile.parse_units(UNITS_INFO, UNITS_ARANGES, TREE))


def _sampled(tmp_path: Path, arch: str, cpus: int, end: str) -> profile.Sampler:
    """A real QEMU of the arch with no kernel, sampled at 100 Hz until it
    stopped ten times; then QEMU quits from its monitor or is terminated.  x86_64 runs a
    firmware of one instruction: 'jmp .' (eb fe) at the reset vector,
    0xfff0.  An aarch64 CPU with nothing at address 0 takes its
    undefined-instruction exception at vector 0x200 again and again."""
    a = ARCHS[arch]
    sock = tmp_path / "gdb.sock"
    req = qemu.BootRequest(a, tmp_path / "none", tmp_path / "none", None, "", "tcg", 64, 5,
                           cpus=cpus, gdb_socket=sock)
    cmd = [c for c in qemu.command(req) if c not in ("-serial", "stdio")]
    cut = cmd.index("-kernel")      # no kernel, no initrd, no -append
    cmd = cmd[:cut] + cmd[cut + 6:] + ["-monitor", "stdio"]
    if arch == "x86_64":
        bios = bytearray(b"\xf4" * 0x10000)     # hlt
        bios[0xfff0:0xfff2] = b"\xeb\xfe"
        (tmp_path / "bios.bin").write_bytes(bytes(bios))
        cmd += ["-bios", str(tmp_path / "bios.bin")]
    assert "-gdb" in cmd and f"unix:{sock},server=on,wait=off" in cmd
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    sampler = profile.Sampler(sock, a, 100)
    sampler.start()
    try:
        # Ten stops, however long a loaded host takes to start QEMU.
        deadline = time.monotonic() + 60
        while sampler.samples < 10 and sampler.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sampler.is_alive() and sampler.samples >= 10, sampler.error
        if end == "quit":
            proc.communicate(b"quit\n", timeout=20)
        else:
            proc.terminate()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    sampler.stop()
    assert not sampler.is_alive(), "the sampler outlived QEMU"
    return sampler


@pytest.mark.parametrize("cpus,end", [(1, "quit"), (2, "terminate")])
def test_every_x86_64_vcpu_is_sampled_at_its_instruction_pointer(tmp_path, cpus, end) -> None:
    s = _sampled(tmp_path, "x86_64", cpus, end)
    assert s.error == "" and s.vcpus == cpus and s.user == 0
    assert sum(s.pcs.values()) == s.samples * cpus
    assert 0 < s.paused_s < s.elapsed_s
    # Both at the reset vector: the first spins there, the second waits
    # for its start-up IPI.
    assert s.pcs == {0xfff0: s.samples * cpus}, sorted(map(hex, s.pcs))


@pytest.mark.parametrize("cpus,end", [(1, "terminate"), (2, "quit")])
def test_every_aarch64_vcpu_is_sampled_at_its_pc(tmp_path, cpus, end) -> None:
    s = _sampled(tmp_path, "aarch64", cpus, end)
    assert s.error == "" and s.vcpus == cpus and s.user == 0
    # The first CPU loops at its exception vector; the second (PSCI: off)
    # never started, and sits at 0.
    assert s.pcs[0x200] == s.samples
    assert set(s.pcs) <= {0x200, 0}


def test_a_socket_qemu_never_opens_ends_the_sampler_without_samples(tmp_path) -> None:
    s = profile.Sampler(tmp_path / "gdb.sock", ARCHS["x86_64"], 100)
    s.start()
    time.sleep(0.2)
    s.stop()
    assert not s.is_alive() and s.samples == 0 and s.error == ""


def test_pcs_name_their_function() -> None:
    syms = profile.parse_nm(NM)
    assert "init_task" not in syms.names    # data, not code
    assert syms.function(0xffffffff8105c57d) == "__lock_acquire"
    assert syms.function(0xffffffff8105d6ae) == "__lock_acquire"
    assert syms.function(0xffffffff811f88ad + 0x40) == "sha1_transform"
    # The decompressor, or the kernel before it runs at its link address.
    assert syms.function(0x1000000) == profile.OUTSIDE


def _regs(arch: str, pc: int, mode: int) -> bytes:
    """A 'g' reply's bytes with pc and the mode register set."""
    a = ARCHS[arch]
    regs = bytearray(a.gdb_user[0] + 16)
    regs[a.gdb_pc_offset:a.gdb_pc_offset + 8] = pc.to_bytes(8, "little")
    regs[a.gdb_user[0]:a.gdb_user[0] + 4] = mode.to_bytes(4, "little")
    return bytes(regs)


@pytest.mark.parametrize("arch,mode,user", [
    ("x86_64", 0x33, True),     # Linux's __USER_CS
    ("x86_64", 0x10, False),    # __KERNEL_CS
    ("x86_64", 0xf000, False),  # the firmware's real-mode segment
    ("aarch64", 0x0, True),     # EL0t
    ("aarch64", 0x3c5, False),  # EL1h, interrupts masked
    ("aarch64", 0x80000000, True)])   # EL0t with the N flag set
def test_user_mode_is_the_privilege_level_not_the_address(arch, mode, user) -> None:
    a = ARCHS[arch]
    regs = _regs(arch, 0xffffffff8105c57d, mode)
    assert a.gdb_pc(regs) == 0xffffffff8105c57d
    assert a.gdb_user_mode(regs) is user
    with pytest.raises(ValueError, match="no pc or mode"):
        a.gdb_user_mode(regs[:a.gdb_user[0]])


def test_the_report_splits_user_kernel_directories_and_functions() -> None:
    syms = _syms()
    pcs = Counter({0xffffffff8105c600: 30, 0xffffffff8105d900: 10,
                   0xffffffff811f88b0: 20})
    p = profile.Profile.of(pcs, 40, syms, samples=100, vcpus=1, hz=200, seconds=0.5,
                           paused_s=0.05)
    assert profile.Profile.from_json(json.loads(json.dumps(p.to_json()))) == p
    text = p.text("x86_64-patched-enforce-custom-sha1-keep")
    lines = text.splitlines()
    assert lines[0].startswith("Guest profile of x86_64-patched-enforce-custom-sha1-keep: "
                               "100 stops in 0.5 s (200 a second, asked for 200; the VM "
                               "stopped 10 % of the time), 1 vCPU(s), 100 samples")
    assert any(line.split() == ["user", "mode", "40", "40.0"] for line in lines)
    assert any(line.split() == ["kernel", "mode", "60", "60.0"] for line in lines)
    dirs = lines[lines.index("kernel mode, by source directory:") + 1:][:2]
    assert [d.split() for d in dirs] == [["kernel/locking", "40", "40.0"],
                                         ["lib/crypto", "20", "20.0"]]
    funcs = text.split("most samples):\n")[1].splitlines()
    assert [f.split() for f in funcs] == [
        ["__lock_acquire", "30", "30.0", "kernel/locking/lockdep.c"],
        ["sha1_transform", "20", "20.0", "lib/crypto/sha1.c"],
        ["lock_release", "10", "10.0", "kernel/locking/lockdep.c"]]


def test_each_function_goes_by_the_unit_that_emitted_it() -> None:
    """The file is the compilation unit's, not the line table's: a static
    copy of rcu_read_unlock() (include/linux/rcupdate.h) is lockdep.c's in
    lockdep.c and dcache.c's in dcache.c, two functions; lookup_chain_cache
    goes to lockdep.c, not to the hash.h of hash_64() inlined at its start."""
    syms = _syms()
    assert syms.file(0xffffffff810594fa) == "kernel/locking/lockdep.c"   # lookup_chain_cache
    assert syms.function(0xffffffff8105c600) == "__lock_acquire"
    assert syms.file(0xffffffff8105c600) == "kernel/locking/lockdep.c"
    assert syms.function(0xffffffff8105d9a0) == "rcu_read_unlock@kernel/locking/lockdep.c"
    assert syms.function(0xffffffff811083b0) == "rcu_read_unlock@fs/dcache.c"
    assert syms.file(0xffffffff811f88b0) == "lib/crypto/sha1.c"
    assert syms.file(0xffffffff811f8adc) == "lib/crypto/sha1.c"        # sha1_init
    # Neither blake2s.c nor head_64.S (_stext) is in the excerpt.
    assert syms.file(0xffffffff811f7819) == "?" and syms.file(0xffffffff81000000) == "?"
    # Without units, the copies are one function.
    assert profile.parse_nm(NM).function(0xffffffff811083b0) == "rcu_read_unlock"
    p = profile.Profile.of(Counter({0xffffffff8105d9a0: 3, 0xffffffff811083b0: 5,
                                    0xffffffff8105c600: 2}), 0, syms, 10, 1, 200)
    assert p.files == {"rcu_read_unlock@kernel/locking/lockdep.c": "kernel/locking/lockdep.c",
                       "rcu_read_unlock@fs/dcache.c": "fs/dcache.c",
                       "__lock_acquire": "kernel/locking/lockdep.c"}
    text = p.text("t")
    dirs = text.split("by source directory:\n")[1].split("\n\n")[0].splitlines()
    assert [d.split() for d in dirs] == [["kernel/locking", "5", "50.0"], ["fs", "5", "50.0"]]
    funcs = text.split("most samples):\n")[1].splitlines()
    assert [f.split() for f in funcs] == [
        ["rcu_read_unlock", "5", "50.0", "fs/dcache.c"],
        ["rcu_read_unlock", "3", "30.0", "kernel/locking/lockdep.c"],
        ["__lock_acquire", "2", "20.0", "kernel/locking/lockdep.c"]]


def test_units_are_read_with_the_arch_readelf(monkeypatch) -> None:
    asked = []

    def readelf(cmd, input, capture_output, text, errors):
        asked.append(cmd)
        out = UNITS_INFO if "--debug-dump=info" in cmd else UNITS_ARANGES
        return subprocess.CompletedProcess(cmd, 0, out, "")

    monkeypatch.setattr(profile.subprocess, "run", readelf)
    units = profile.load_units(Path("vmlinux"), ARCHS["aarch64"], TREE)
    assert units.file(0xffffffff8105c57d) == "kernel/locking/lockdep.c"
    assert [c[0] for c in asked] == ["aarch64-linux-gnu-readelf"] * 2
    monkeypatch.setattr(profile.subprocess, "run",
                        lambda cmd, **kw: subprocess.CompletedProcess(cmd, 0, "", ""))
    with pytest.raises(profile.ProfileError, match="no address ranges of compilation units"):
        profile.load_units(Path("vmlinux"), ARCHS["aarch64"], TREE)


def test_a_profiled_boot_keeps_its_command_line_runnable_and_its_verdict(
        tmp_path, monkeypatch) -> None:
    """The by-hand qemu-cmdline.sh has no -gdb (its socket's directory is
    gone); the gdbstub socket's path is short; a guest the sampler never
    reached still gets a profile.txt that says so, and its outcome."""
    repo = Path(__file__).parents[2]
    m = matrix.load(repo / "matrix.yaml", archs="x86_64", variants="patched", modes="enforce",
                    policies="custom", hashes="sha1", setattr="remove")
    (cell,) = m.cells
    sockets = []

    def boot(req: qemu.BootRequest, console_log: Path) -> qemu.BootOutcome:
        sockets.append(req.gdb_socket)
        assert "-gdb" in qemu.command(req)
        console_log.write_text("no output\n")
        return qemu.BootOutcome("no output\n", 0, False, 1.0, ())

    monkeypatch.setattr(qemu, "boot", boot)
    monkeypatch.setattr(qemu, "make_scratch_disk", lambda path, uuid: None)
    kernel = BuiltKernel(tmp_path / "bzImage", tmp_path / "config", "variant patched\n")
    (tmp_path / cell.id).mkdir()
    b = runner._boot_once(runner.CellBoot(m, cell, kernel, tmp_path / "initrd", "tcg",
                                          tmp_path / cell.id, tmp_path, profile_hz=200),
                          ("open_test",), 1, select=False)
    assert b.outcome.console == "no output\n"
    (sock,) = sockets
    assert len(str(sock)) < 100 and not sock.parent.exists()
    assert "-gdb" not in (tmp_path / cell.id / "qemu-cmdline.sh").read_text()
    text = (tmp_path / cell.id / "profile.txt").read_text()
    assert text.startswith(f"Guest profile of {cell.id}: 0 stops in 0.0 s")
    assert json.loads((tmp_path / cell.id / "profile.json").read_text())["samples"] == 0
    assert "no vmlinux to name functions" in text


def test_the_run_adds_its_cells_profiles_up_per_arch(tmp_path) -> None:
    syms = _syms()
    cells = {"x86_64-a": (Counter({0xffffffff8105c600: 30}), 40),
             "x86_64-b": (Counter({0xffffffff811f88b0: 50}), 60),
             "aarch64-a": (Counter({0xffffffff8105c600: 5}), 5)}
    for cell, (pcs, stops) in cells.items():
        (tmp_path / cell).mkdir()
        p = profile.Profile.of(pcs, stops - sum(pcs.values()), syms, stops, 1, 200, 1.0, 0.1)
        (tmp_path / cell / "profile.json").write_text(json.dumps(p.to_json()))
    (tmp_path / "x86_64-c").mkdir()          # a cell not profiled
    arches = {"x86_64-a": "x86_64", "x86_64-b": "x86_64", "x86_64-c": "x86_64",
              "aarch64-a": "aarch64"}
    written = profile.write_run(tmp_path, arches)
    assert [f.name for f in written] == ["profile-aarch64.txt", "profile-x86_64.txt"]
    text = (tmp_path / "profile-x86_64.txt").read_text()
    assert text.startswith("Guest profile of the run's x86_64 guests: 2 guests, 100 stops in "
                           "2.0 s (50 a second, asked for 200; the VM stopped 10 % of the time)")
    funcs = text.split("most samples):\n")[1].splitlines()
    assert [f.split()[:3] for f in funcs] == [["sha1_transform", "50", "50.0"],
                                              ["__lock_acquire", "30", "30.0"]]
    assert any(line.split() == ["user", "mode", "20", "20.0"] for line in text.splitlines())

    (tmp_path / "x86_64-c" / "profile-2.json").write_text("{}")
    with pytest.raises(profile.ProfileError, match="x86_64-c/profile-2.json: not a profile"):
        profile.write_run(tmp_path, arches)
    assert profile.write_run(tmp_path, {}) == []


def test_a_sampler_that_fails_detaches_so_the_guest_runs_on(tmp_path) -> None:
    """A gdbstub that refuses a vCPU: the sampler says so and detaches
    ('D': QEMU lets the VM run again), never leaving the guest stopped."""
    import socket
    import threading

    path = tmp_path / "gdb.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    got: list[bytes] = []

    def stub() -> None:
        conn, _ = server.accept()
        replies = {b"?": b"T05thread:01;", b"qfThreadInfo": b"m01", b"qsThreadInfo": b"l",
                   b"Hg01": b"E01"}
        conn.sendall(profile.packet(b"T02thread:01;"))     # QEMU stops the VM on connect
        buf = b""
        try:
            while chunk := conn.recv(4096):
                buf += chunk
                while True:
                    if buf.startswith((b"+", b"\x03")):
                        if buf[:1] == b"\x03":
                            conn.sendall(profile.packet(b"T02thread:01;"))
                        buf = buf[1:]
                        continue
                    end = buf.find(b"#")
                    if not buf.startswith(b"$") or end < 0 or len(buf) < end + 3:
                        break
                    data, buf = buf[1:end], buf[end + 3:]
                    got.append(data)
                    conn.sendall(b"+")
                    if data in replies:
                        conn.sendall(profile.packet(replies[data]))
                    elif data == b"D":
                        conn.sendall(profile.packet(b"OK"))
        except (BrokenPipeError, ConnectionResetError):
            pass            # the sampler closed after its detach
        conn.close()

    t = threading.Thread(target=stub, daemon=True)
    t.start()
    s = profile.Sampler(path, ARCHS["x86_64"], 100)
    s.start()
    s.join(timeout=10)
    t.join(timeout=10)          # the stub has read all the sampler sent
    assert not s.is_alive() and not t.is_alive()
    assert got[-2:] == [b"Hg01", b"D"]
    assert s.error == "sampling stopped: ProfileError: gdbstub refused to select thread 01"
    server.close()
