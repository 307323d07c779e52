"""Kernel flavors: what a variant's kernels are built and booted as.

A variant of matrix.yaml is `plain` (the default: one CPU, lockdep) or
`debug` (`flavor: debug`): the same tree and series, built with
kernel-patches/config/debug.config on top (SMP, full preemption, lockdep
with RCU checking, KASAN, KFENCE) in a workspace of its own, and booted
with several CPUs under multi-threaded TCG, so that IMA's paths really
run at the same time.  Data only, like archs.py.

Every cell proves its own coverage: its kernel log must show each
detector of its flavor's `coverage` starting (lockdep for a plain cell;
KASAN, with kasan_multi_shot on its command line, KFENCE and RCU's checks
for a debug one), and a debug cell every CPU coming up; a kernel that
booted without one (a config that lost an option, one CPU where two were
asked for) fails its cell by name rather than passing without it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Flavor:
    name: str
    cpus: int = 1
    # Kconfig fragments after common.config and <arch>.config, relative
    # to kernel-patches/config; "{arch}" is replaced by the arch's name,
    # and such a fragment is optional (most arches need none).
    fragments: tuple[str, ...] = ()
    # More kernel command line: for every arch, then per arch (cmdline()).
    args: str = ""
    boot_args: dict[str, str] = field(default_factory=dict)
    # A guest takes this many times the matrix's timeout.
    timeout_factor: int = 1
    # A cell takes about this many times a plain one (the scheduler's
    # guess before a cell has run on this build directory).
    time_factor: int = 1
    # (what, regex): each must match a line of every boot's console.
    coverage: tuple[tuple[str, str], ...] = ()

    def fragment_paths(self, config_dir: Path, arch: str) -> tuple[Path, ...]:
        return tuple(config_dir / f.format(arch=arch) for f in self.fragments
                     if "{arch}" not in f or (config_dir / f.format(arch=arch)).is_file())

    def cmdline(self, arch: str) -> str:
        """What the flavor adds to the kernel command line on arch."""
        return " ".join(filter(None, (self.args, self.boot_args.get(arch, ""))))

    def missing_coverage(self, console: str) -> list[str]:
        """What the console does not show running: each detector of
        coverage, and fewer CPUs brought up than the guest had."""
        missing = [what for what, pattern in self.coverage
                   if not re.search(pattern, console, re.M)]
        if self.cpus > 1:
            m = re.search(r"smp: Brought up \d+ nodes?, (\d+) CPUs?", console)
            if not m:
                missing.append(f"{self.cpus} CPUs (no 'smp: Brought up' line)")
            elif int(m.group(1)) != self.cpus:
                missing.append(f"{self.cpus} CPUs (brought up {m.group(1)})")
        return missing


PLAIN = "plain"
DEBUG = "debug"
# A Debian image as it ships (matrix.yaml image:, harness/images.py): its
# configuration has no lockdep or KASAN, so its cells prove none; not a
# flavor a variant can ask for.
SHIPPED = Flavor("shipped")

FLAVORS: dict[str, Flavor] = {
    # Lockdep in every cell: kconfig.check() fails a build without
    # PROVE_LOCKING, and each boot must show it (its banner) running.
    PLAIN: Flavor(PLAIN, coverage=(("lockdep", r"Lock dependency validator"),)),
    DEBUG: Flavor(
        DEBUG,
        # Two: this machine's two cores.  More vCPUs than host threads
        # only time-slice, and the second guest shares them anyway.
        cpus=2,
        fragments=("debug.config", "{arch}-debug.config"),
        # KASAN (6.1, 6.12) reports only the first bad access of a boot without
        # it (mm/kasan/report.c, report_enabled()): after one report, the
        # known one at boot included, it would check nothing, silently.
        args="kasan_multi_shot",
        # x86_64: ACPI finds the second CPU (x86_64-debug.config), but
        # evaluating the PCI routing methods hangs under TCG; the PCI
        # interrupts are in the MP table's legacy form.
        boot_args={"x86_64": "pci=noacpi"},
        # KASAN makes a debug cell about ten times slower than a plain one
        # (130-190 s against 13-20 s on this 2-core machine).
        timeout_factor=4,
        time_factor=9,
        coverage=(
            ("KASAN", r"KernelAddressSanitizer initialized"),
            # It prints nothing when set: the kernel's own echo of its
            # command line is the proof that this boot had it.
            ("kasan_multi_shot", r"Kernel command line: .*\bkasan_multi_shot\b"),
            ("KFENCE", r"kfence: initialized"),
            ("PROVE_RCU", r"RCU lockdep checking is enabled"),
            ("PREEMPT_RCU", r"Preemptible hierarchical RCU implementation"),
        ),
    ),
}
