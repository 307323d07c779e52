#!/bin/sh
# Boot with: ima_policy=appraise_tcb ima_appraise=fix ima_hash=sha256
# The file must be on a filesystem IMA appraises (ext4; not tmpfs), e.g.
#   truncate -s 64M /tmp/img; mkfs.ext4 -q /tmp/img; mount -o loop /tmp/img /mnt
# Run as root:  ./repro.sh /mnt/f      (gcc -Wall -o repro repro.c first)
# A file carries an fs-verity signature (security.ima type 0x06) that does
# not verify here (no key loaded, fs-verity not enabled on the file).
# Expected: fix mode lets the file be read, logs the failure, and keeps the
# signature (0x06...).  Actual on 7.2.13: security.ima is replaced by a
# hash (0x0404...), and the signature is lost.
f=${1:?usage: $0 /path/on/ext4/file}
rm -f "$f"; echo "signed elsewhere" > "$f"
# type 6 (IMA_VERITY_DIGSIG), version 3, sha256, a key id and a dummy sig
setfattr -n security.ima -v 0x06030400112233000401020304 "$f"
echo 3 > /proc/sys/vm/drop_caches
./repro "$f"
getfattr -n security.ima -e hex "$f"	# expected: 0x0603...
dmesg | grep 'type=1800' | tail -3
