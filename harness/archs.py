"""Per-architecture facts: toolchain, kernel image, QEMU parameters.

Data only, in the style of kunit_tool's qemu_configs/: one frozen record per
arch, with a why-comment where a value is not obvious.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Arch:
    name: str               # matrix.yaml spelling
    kernel_arch: str        # ARCH= for kbuild
    cross_compile: str      # CROSS_COMPILE= ('' for native)
    image: str              # kernel image, relative to the build directory
    image_target: str       # make target producing it
    debian_arch: str        # dpkg architecture of the guest userland
    multiarch: str          # its libraries' directory: /lib/<multiarch>/
    qemu: str               # emulator binary
    machine: str
    cpu: str
    console: str            # console= device in the guest
    # The program counter's register number in QEMU's gdbstub 'g' reply
    # (64-bit registers in GDB's order; harness/profile.py).
    gdb_pc_index: int = 0
    boot_args: str = ""     # more kernel command line, for every boot of this arch

    @property
    def cc(self) -> str:
        return f"{self.cross_compile}gcc"


ARCHS: dict[str, Arch] = {
    "x86_64": Arch(
        name="x86_64",
        kernel_arch="x86",
        cross_compile="",
        image="arch/x86/boot/bzImage",
        image_target="bzImage",
        debian_arch="amd64",
        multiarch="x86_64-linux-gnu",
        qemu="qemu-system-x86_64",
        # The kernels have no ACPI: 'reboot -f' plus -no-reboot is what makes
        # QEMU exit (a poweroff would leave it running until the timeout).
        machine="pc",
        cpu="max",
        console="ttyS0",
        gdb_pc_index=16,        # rax..r15, then rip
        # Under TCG the local APIC timer fails the kernel's verification and
        # is disabled anyway, after two 100 ms calibration loops.
        boot_args="noapictimer",
    ),
    "aarch64": Arch(
        name="aarch64",
        kernel_arch="arm64",
        cross_compile="aarch64-linux-gnu-",
        image="arch/arm64/boot/Image",
        image_target="Image",
        debian_arch="arm64",
        multiarch="aarch64-linux-gnu",
        qemu="qemu-system-aarch64",
        machine="virt",
        # 'max' gives TCG every feature the 6.1 kernel may probe for.
        cpu="max",
        console="ttyAMA0",
        gdb_pc_index=32,        # x0..x30, sp, then pc
    ),
}
