#!/bin/sh
# Installs what building and booting the matrix needs, from Debian only.
# Idempotent and quick when everything is already there: 'make deps'.
set -eu

packages="linux-source-6.1 linux-source-6.12 gcc make flex bison bc libelf-dev libssl-dev openssl cpio
e2fsprogs qemu-system-x86 qemu-system-arm gcc-aarch64-linux-gnu
libc6-dev-arm64-cross binutils busybox-static attr ima-evm-utils
python3-pytest python3-yaml xz-utils lz4 patch"
# The aarch64 guest userland, unpacked from Debian's arm64 packages
# (multiarch): these cannot be co-installed with their amd64 versions.
arm64_debs="busybox-static make libc6"
debdir=${DEBDIR:-build/debs/arm64}

say() { printf 'deps: %s\n' "$*"; }

sudo=
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null || { say "not root and no sudo: install as root: $packages"; exit 1; }
	sudo=sudo
fi

# One dpkg-query for all of them: 'make deps' runs before every target.
installed=$(dpkg-query -W -f='${Package} ${Status}\n' $packages 2>/dev/null |
	sed -n 's/ install ok installed$//p')
missing=
for p in $packages; do
	case " $(echo $installed) " in
	*" $p "*) ;;
	*) missing="$missing $p" ;;
	esac
done

need_arm64=
dpkg --print-foreign-architectures | grep -qx arm64 || need_arm64=1
for p in $arm64_debs; do
	ls "$debdir/${p}_"*_arm64.deb >/dev/null 2>&1 || need_arm64=${need_arm64:-2}
done

if [ -z "$missing" ] && [ -z "$need_arm64" ]; then
	exit 0
fi

if [ "$need_arm64" = 1 ]; then
	say "enabling the arm64 architecture (dpkg multiarch)"
	$sudo dpkg --add-architecture arm64
fi
if [ -n "$missing" ] || [ "$need_arm64" = 1 ]; then
	say "apt-get update"
	$sudo apt-get update -q >/dev/null || { say "apt-get update failed: is a Debian mirror reachable?"; exit 1; }
fi
if [ -n "$missing" ]; then
	say "installing:$missing"
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing ||
		{ say "apt-get install failed for:$missing"; exit 1; }
fi

mkdir -p "$debdir"
for p in $arm64_debs; do
	if ! ls "$debdir/${p}_"*_arm64.deb >/dev/null 2>&1; then
		say "downloading $p:arm64 into $debdir"
		(cd "$debdir" && apt-get download -q -o APT::Sandbox::User=root "$p:arm64" >/dev/null) ||
			{ say "apt-get download $p:arm64 failed: run 'apt-get update' and retry"; exit 1; }
	fi
done
say "all dependencies present"
