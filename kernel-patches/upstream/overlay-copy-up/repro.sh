#!/bin/sh
# Boot with: ima_policy=appraise_tcb ima_appraise=enforce ima_hash=sha256
# Needs CONFIG_OVERLAY_FS.  Run as root:  ./repro.sh  (gcc -Wall -o repro repro.c)
# A lower file without a label is denied through the overlay; a chmod
# through the overlay copies it up.  Expected: the copy-up has no
# security.ima either (the lower file's label, i.e. none), and the file is
# still denied.  Actual on 7.2.13: the copy-up is labelled with the hash of
# the unverified data (ima_post_create_tmpfile() took the kernel's copy-up
# tmpfile for a new file), and the overlay serves it as good.
set -e
d=$(mktemp -d); truncate -s 64M $d/img; mkfs.ext4 -q $d/img
mkdir $d/m; mount -o loop $d/img $d/m
mkdir $d/m/lower $d/m/upper $d/m/work $d/merged
echo "data nobody vouched for" > $d/m/lower/f	# labelled by its last writer
setfattr -x security.ima $d/m/lower/f		# ... so take the label away
mount -t overlay overlay -o lowerdir=$d/m/lower,upperdir=$d/m/upper,workdir=$d/m/work $d/merged
set +e
echo "before copy-up: $(./repro $d/merged/f)"	# denied: Permission denied
chmod 0600 $d/merged/f				# copy-up
echo "upper security.ima: $(getfattr -n security.ima -e hex $d/m/upper/f 2>&1 | tail -n +2)"
echo 3 > /proc/sys/vm/drop_caches
echo "after copy-up: $(./repro $d/merged/f)"	# expected: denied
dmesg | grep 'type=1800' | tail -3
umount $d/merged $d/m
