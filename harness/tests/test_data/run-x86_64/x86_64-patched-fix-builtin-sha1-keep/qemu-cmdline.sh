#!/bin/sh
# Boots this cell again by hand.
qemu-system-x86_64 -M pc -cpu max -accel tcg -m 512 -smp 1 -nodefaults -display none -serial stdio -no-reboot -kernel /work/main/build/kernel/x86_64-patched/arch/x86/boot/bzImage -initrd /work/main/build/initramfs/x86_64.cpio -append 'console=ttyS0 panic=-1 ima_selftest.harness=1 ima_appraise=fix ima_policy=appraise_tcb' -drive file=/work/main/build/scratch/x86_64-patched-fix-builtin-sha1-keep.img,format=raw,if=none,id=scratch -device virtio-blk-pci,drive=scratch
