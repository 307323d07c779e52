#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t debugfs debugfs /sys/kernel/debug
echo "rec-init: up"
case " $(cat /proc/cmdline) " in
*" rec_trigger=kmemleak "*)
	sleep 5
	echo scan > /sys/kernel/debug/kmemleak
	sleep 2
	echo scan > /sys/kernel/debug/kmemleak
	echo "rec-init: scanned";;
esac
sleep 100000
