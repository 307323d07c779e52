#!/bin/sh
# Installs what building and booting the matrix needs, from Debian only.
# Idempotent and quick when everything is already there: 'make deps'.
set -eu

packages="gcc make flex bison bc libelf-dev libssl-dev openssl cpio
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

# The packages of $1 that are not installed: one dpkg-query for all of
# them ('make deps' runs before every target).
missing_of() {
	installed=$(dpkg-query -W -f='${Package} ${Status}\n' $1 2>/dev/null |
		sed -n 's/ install ok installed$//p')
	for p in $1; do
		case " $(echo $installed) " in
		*" $p "*) ;;
		*) printf ' %s' "$p" ;;
		esac
	done
}

updated=
update() {
	[ -z "$updated" ] || return 0
	say "apt-get update"
	$sudo apt-get update -q >/dev/null || { say "apt-get update failed: is a Debian mirror reachable?"; exit 1; }
	updated=1
}
install() {
	[ -n "$1" ] || return 0
	update
	say "installing:$1"
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $1 ||
		{ say "apt-get install failed for:$1"; exit 1; }
}

need_arm64=
dpkg --print-foreign-architectures | grep -qx arm64 || need_arm64=1
for p in $arm64_debs; do
	ls "$debdir/${p}_"*_arm64.deb >/dev/null 2>&1 || need_arm64=${need_arm64:-2}
done
if [ "$need_arm64" = 1 ]; then
	say "enabling the arm64 architecture (dpkg multiarch)"
	$sudo dpkg --add-architecture arm64
	update
fi

install "$(missing_of "$packages")"
# Debian's kernel sources, by version, are matrix.yaml's sources: (PyYAML is
# one of the packages above): the machine's own suites' are installed,
# the others' fetched into the build directory.
python=${PYTHON:-/usr/bin/python3}
build=${BUILD:-build}
top=$(dirname "$0")/..
sources=$(PYTHONPATH=$top "$python" -m harness.sources packages) || exit 1
install "$(missing_of "$sources")"
# SOURCES=no (make unit): no kernel is built, none is fetched.  A source
# that cannot be fetched (the suite moved on, no network) is said here and
# fails the kernels of its version only, when they are built.
if [ "${SOURCES:-yes}" != no ]; then
	PYTHONPATH=$top "$python" -m harness.sources fetch --build-dir="$build" ||
		say "the kernels of that version cannot be built until this is fixed; the others can"
fi
# Debian's kernel images as they ship (matrix.yaml image:), without their
# -dbg packages (fetched when a splat is to be decoded): IMAGES=yes only.
# A run fetches the images of the cells it boots anyway, and make check,
# which boots none, would download and unpack a gigabyte for nothing.
if [ "${IMAGES:-no}" = yes ]; then
	PYTHONPATH=$top "$python" -m harness.images fetch --build-dir="$build" ||
		say "those images' cells cannot boot until this is fixed; the others can"
fi

mkdir -p "$debdir"
for p in $arm64_debs; do
	if ! ls "$debdir/${p}_"*_arm64.deb >/dev/null 2>&1; then
		say "downloading $p:arm64 into $debdir"
		(cd "$debdir" && apt-get download -q -o APT::Sandbox::User=root "$p:arm64" >/dev/null) ||
			{ say "apt-get download $p:arm64 failed: run 'apt-get update' and retry"; exit 1; }
	fi
done
[ -z "$updated$need_arm64" ] || say "all dependencies present"
