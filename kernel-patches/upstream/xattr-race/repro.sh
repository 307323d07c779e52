#!/bin/sh
# Boot with: ima_policy=appraise_tcb ima_appraise=enforce ima_hash=sha256
# on an SMP guest (two CPUs or more; the window is a few instructions).
# The file must be on a filesystem IMA appraises (ext4; not tmpfs), e.g.
#   truncate -s 64M /tmp/img; mkfs.ext4 -q /tmp/img; mount -o loop /tmp/img /mnt
# Run as root:  ./repro.sh /mnt/f      (gcc -Wall -o repro repro.c first)
# Expected: "ok".  Actual on 7.2.13 (sometimes, more rounds help): "round N:
# opened after removexattr()" or "round N: denied after setxattr()": an
# appraisal read the old value while the xattr call was in progress, and
# its verdict stays cached until the inode is evicted.
f=${1:?usage: $0 /path/on/ext4/file}
rm -f "$f"; head -c 16384 /dev/urandom > "$f"; sync
label=0404$(sha256sum "$f" | cut -d' ' -f1)
getfattr -n security.ima -e hex "$f"
./repro "$f" "$label" ${ROUNDS:-2000}
rc=$?
dmesg | grep 'type=1800' | tail -3
exit $rc
