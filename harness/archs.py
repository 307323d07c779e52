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
    # Where QEMU's gdbstub 'g' reply (GDB's register order, little-endian)
    # has the program counter (the byte offset of a 64-bit register) and
    # the privilege level: (byte offset of a 32-bit register, mask, the
    # masked value in user mode).  harness/profile.py.
    gdb_pc_offset: int
    gdb_user: tuple[int, int, int]
    boot_args: str = ""     # more kernel command line, for every boot of this arch

    def gdb_pc(self, regs: bytes) -> int:
        return int.from_bytes(regs[self.gdb_pc_offset:self.gdb_pc_offset + 8], "little")

    def gdb_user_mode(self, regs: bytes) -> bool:
        offset, mask, user = self.gdb_user
        if len(regs) < max(offset + 4, self.gdb_pc_offset + 8):
            raise ValueError(f"a 'g' reply of {len(regs)} bytes has no pc or mode for {self.name}")
        return int.from_bytes(regs[offset:offset + 4], "little") & mask == user

    def tool(self, name: str) -> str:
        """A binutils or gcc program for this arch: gcc, nm, addr2line."""
        return f"{self.cross_compile}{name}"

    @property
    def cc(self) -> str:
        return self.tool("gcc")


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
        # rax..r15, rip, eflags (32 bits), cs: CPL 3 is user mode.
        gdb_pc_offset=16 * 8, gdb_user=(17 * 8 + 4, 0x3, 0x3),
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
        # x0..x30, sp, pc, cpsr (32 bits): EL0 (cpsr bits 3:2) is user mode.
        gdb_pc_offset=32 * 8, gdb_user=(33 * 8, 0xc, 0x0),
    ),
}
