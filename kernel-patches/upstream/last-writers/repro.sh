#!/bin/sh
# Boot with: ima_policy=appraise_tcb ima_appraise=enforce ima_hash=sha256
# (for ima_appraise= the kernel needs CONFIG_IMA_APPRAISE_BOOTPARAM=y).
# The file must be on a filesystem IMA appraises (ext4; not tmpfs), e.g.
#   truncate -s 64M /tmp/img; mkfs.ext4 -q /tmp/img; mount -o loop /tmp/img /mnt
# Run as root:  ./repro.sh /mnt/f      (gcc -Wall -o repro repro.c first)
# Expected: every round "ok" (security.ima = 0x0404 + sha256 of the file).
# Actual on 7.2.13: some rounds (every one on an SMP guest, sooner or later)
# print "STALE": the label keeps the old digest, and after
# echo 3 > /proc/sys/vm/drop_caches the file is denied (audit
# cause=invalid-hash) although root wrote it.
f=${1:?usage: $0 /path/on/ext4/file}
rm -f "$f"; echo start > "$f"
bad=0
for r in $(seq 1 ${ROUNDS:-50}); do
	./repro "$f" "$r" || exit 2
	want=0x0404$(sha256sum "$f" | cut -d' ' -f1)
	got=$(getfattr -n security.ima -e hex "$f" 2>/dev/null |
	      sed -n 's/^security.ima=//p')
	if [ "$got" = "$want" ]; then echo "round $r: ok"
	else echo "round $r: STALE: security.ima=$got, want $want"; bad=1; fi
done
dmesg | grep 'type=1800' | tail -3
exit $bad
