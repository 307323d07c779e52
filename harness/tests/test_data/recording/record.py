#!/usr/bin/python3
"""Boot the recording kernel once per trigger and keep the console.

Run it from the directory that holds out/ (the O= build) and rec.cpio
(init.sh as /init, /bin/busybox static), e.g. ./record.py kfence.
"""
import subprocess, sys, time, re
from pathlib import Path

HERE = Path.cwd()
BOOTS = {
    "soft_lockup": ("rec_trigger=spin rec_seconds=20 watchdog_thresh=3 rcupdate.rcu_cpu_stall_suppress=1", r"spin done", 180),
    "rcu_stall": ("rec_trigger=spin rec_seconds=20 nowatchdog rcupdate.rcu_cpu_stall_timeout=3", r"spin done", 180),
    "hung_task": ("rec_trigger=hung", r"Kernel panic|end Kernel panic", 240),
    "abba_deadlock": ("rec_trigger=abba", r"Kernel panic|end Kernel panic", 240),
    "ubsan": ("rec_trigger=ubsan", r"rec_trigger: -?\d+\s*$", 120),
    "kfence": ("rec_trigger=kfence kfence.sample_interval=10", r"rec_trigger: (read|no KFENCE)", 180),
    "kmemleak": ("rec_trigger=kmemleak kmemleak.verbose=1", r"rec-init: scanned", 240),
}

def boot(name):
    args, done, timeout = BOOTS[name]
    cmd = ["qemu-system-x86_64", "-M", "pc", "-cpu", "max", "-accel", "tcg", "-m", "512",
           "-smp", "2", "-nodefaults", "-display", "none", "-serial", "stdio", "-no-reboot",
           "-kernel", str(HERE / "out/arch/x86/boot/bzImage"), "-initrd", str(HERE / "rec.cpio"),
           "-append", f"console=ttyS0 panic=-1 {args}"]
    log = HERE / f"{name}.log"
    t0 = time.monotonic()
    with open(log, "wb") as f:
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        pat = re.compile(done, re.M)
        while p.poll() is None and time.monotonic() - t0 < timeout:
            time.sleep(2)
            if pat.search(log.read_text(errors="replace")):
                time.sleep(5)   # the rest of the report
                break
        p.kill(); p.wait()
    print(name, f"{time.monotonic() - t0:.0f}s", log.stat().st_size, flush=True)

for n in sys.argv[1:] or BOOTS:
    boot(n)
