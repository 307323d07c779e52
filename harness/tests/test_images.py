"""Debian's kernels as they ship (harness/images.py): the image: entry of a
variant, the package's dependencies of the same version, the modules the
guest loads and their order, and the archive appended to the initramfs.
No network, no QEMU: packages are made of files written here."""
from __future__ import annotations

import lzma
from pathlib import Path

import pytest

from harness import flavors, images, matrix
from harness.archs import ARCHS
from harness.errors import ConfigError, DependencyError

REPO = Path(__file__).resolve().parents[2]


def write_matrix(tmp_path: Path, variant: str) -> Path:
    p = tmp_path / "matrix.yaml"
    p.write_text("variants:\n  stock: {}\n" + variant
                 + "matrix:\n  archs: [x86_64]\n  modes: [enforce]\n  policies: [builtin]\n"
                 "  variants: [stock, deb]\n")
    return p


IMAGE = ('  deb:\n    image: {package: "linux-image-6.1.0-57-{arch}", '
         'debian_version: "6.1.192-3", suite: bookworm-security}\n')


def test_an_image_variant_builds_nothing_and_takes_its_version(tmp_path: Path) -> None:
    m = matrix.load(write_matrix(tmp_path, IMAGE))
    v = m.variants["deb"]
    assert v.image == images.Image("linux-image-6.1.0-57-{arch}", "6.1.192-3",
                                   "bookworm-security")
    assert (v.series, v.tree, v.version, v.flavor) == (None, None, "6.1", flavors.PLAIN)
    assert v.image.package_for(ARCHS["aarch64"]) == "linux-image-6.1.0-57-arm64"
    assert v.image.root(Path("/b"), ARCHS["x86_64"]) == Path(
        "/b/debs/bookworm-security/linux-image-6.1.0-57-amd64_6.1.192-3_amd64")
    # AT_EXECVE_CHECK's skips judge it by its kernel's version
    assert images.Image("linux-image-7.2.13+deb14-{arch}", "7.2.13-1", "sid").version == "7.2"


@pytest.mark.parametrize("variant,message", [
    ('  deb:\n    image: {package: "linux-image-x", debian_version: "1.0-1", suite: sid}\n'
     '    series: s\n', "has both image: and series:"),
    ('  deb:\n    image: {package: "linux-image-x", debian_version: "1.0-1", suite: sid}\n'
     '    flavor: debug\n', "has both image: and flavor:"),
    ('  deb:\n    image: {package: "linux-image-x", suite: sid}\n',
     "missing key 'debian_version'"),
    ('  deb:\n    image: {package: "linux-image-x", debian_version: 6.1, suite: sid}\n',
     "debian_version: expected a quoted Debian package version"),
    ('  deb:\n    image: {package: "linux-source-7.2", debian_version: "7.2.13-1", '
     'suite: sid}\n', "package: expected a linux-image package name"),
    ('  deb:\n    image: {package: "linux-image-{flavor}", debian_version: "7.2.13-1", '
     'suite: sid}\n', "package: expected a linux-image package name"),
    ('  deb:\n    image: {package: "linux-image-x", debian_version: "7.2.13-1", '
     'suite: Sid}\n', "suite: expected a Debian suite"),
    ('  deb:\n    image: {package: "linux-image-x", debian_version: "7.2.13-1", '
     'suite: sid, arch: amd64}\n', "unknown key 'arch'"),
    ('  deb:\n    image: linux-image-6.1.0-57-amd64\n', "expected a mapping with keys"),
])
def test_bad_image_entries_are_named(tmp_path: Path, variant: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        matrix.load(write_matrix(tmp_path, variant))


def test_an_image_variant_is_no_base_for_others(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no plain variant"):
        matrix.load(write_matrix(tmp_path, IMAGE + "  deb-debug: {of: deb, flavor: debug}\n"))
    p = write_matrix(tmp_path, IMAGE)
    with pytest.raises(ConfigError, match="BASE=deb"):
        matrix.load(p, extra_patches=[p], base="deb")


def test_the_repositorys_debian_images() -> None:
    m = matrix.load(REPO / "matrix.yaml")
    shipped = {n: v.image for n, v in m.variants.items() if v.image}
    assert {"debian-6.1", "debian-7.2"} <= set(shipped)
    assert shipped["debian-6.1"].suite == "bookworm-security"
    assert shipped["debian-7.2"].suite == "sid"
    for image in shipped.values():
        assert "{arch}" in image.package     # one entry for both arches


# `dpkg-deb -f linux-image-7.2.13+deb14-amd64_7.2.13-1_amd64.deb`, its Depends:
SID_CONTROL = """Package: linux-image-7.2.13+deb14-amd64
Version: 7.2.13-1
Depends: dracut | initramfs-tools (>= 0.120+deb8u2) | linux-initramfs-tool,
 linux-base-7.2.13+deb14-amd64 (= 7.2.13-1), linux-binary-7.2.13+deb14-amd64 (= 7.2.13-1),
 linux-modules-7.2.13+deb14-amd64 (= 7.2.13-1)
Description: Linux 7.2.13 for 64-bit PCs
"""
# ... and bookworm's, one package with everything.
BOOKWORM_CONTROL = """Package: linux-image-6.1.0-57-amd64
Depends: kmod, linux-base (>= 4.3~), initramfs-tools (>= 0.120+deb8u2) | linux-initramfs-tool
"""


def test_the_packages_of_the_same_version_come_along() -> None:
    assert images._same_version_deps(SID_CONTROL, "7.2.13-1") == [
        "linux-base-7.2.13+deb14-amd64", "linux-binary-7.2.13+deb14-amd64",
        "linux-modules-7.2.13+deb14-amd64"]
    assert images._same_version_deps(BOOKWORM_CONTROL, "6.1.192-3") == []
    assert images._same_version_deps(SID_CONTROL, "7.2.13-2") == []


def fake_module(depends: str = "", name: str = "m") -> bytes:
    return (b"\x7fELF....\0" + f"license=GPL\0depends={depends}\0name={name}\0".encode()
            + b"vermagic=6.1.0 SMP\0~Module signature appended~\n")


def fake_package(root: Path, layout: str, compressed: bool) -> None:
    mods = {"kernel/drivers/virtio/virtio.ko": "",
            "kernel/drivers/virtio/virtio_ring.ko": "",
            "kernel/drivers/virtio/virtio_pci.ko": "virtio,virtio_ring",
            "kernel/drivers/block/virtio_blk.ko": "virtio,virtio_ring",
            "kernel/lib/crc16.ko": "",
            "kernel/fs/mbcache.ko": "",
            "kernel/fs/jbd2/jbd2.ko": "",
            "kernel/fs/ext4/ext4.ko": "mbcache,crc16,jbd2",
            "kernel/fs/overlayfs/overlay.ko": "",
            "kernel/sound/unused.ko": ""}
    if layout == "bookworm":
        release = "6.1.0-57-amd64"
        (root / "boot").mkdir(parents=True)
        (root / "boot" / f"vmlinuz-{release}").write_bytes(b"MZ kernel")
        (root / "boot" / f"config-{release}").write_text(
            'CONFIG_IMA=y\nCONFIG_IMA_DEFAULT_HASH="sha256"\n# CONFIG_IMA_WRITE_POLICY is not set\n')
        moddir = root / "lib" / "modules" / release
        mods["kernel/crypto/crc32c_generic.ko"] = ""
    else:
        release = "7.2.13+deb14-amd64"
        moddir = root / "usr" / "lib" / "modules" / release
        moddir.mkdir(parents=True)
        (moddir / "vmlinuz").write_bytes(b"MZ kernel")
        (moddir / "config").write_text("CONFIG_IMA=y\n")
    for rel, deps in mods.items():
        name = Path(rel).stem
        data = fake_module(deps, name)
        path = moddir / (rel + (".xz" if compressed else ""))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(lzma.compress(data) if compressed else data)
    (moddir / "modules.builtin").write_text("kernel/fs/fat/fat.ko\n")


def read_cpio(path: Path) -> dict[str, bytes]:
    blob, out, at = path.read_bytes(), {}, 0
    while True:
        hdr = blob[at:at + 110]
        size, namesize = int(hdr[54:62], 16), int(hdr[94:102], 16)
        name = blob[at + 110:at + 110 + namesize - 1].decode()
        at += 110 + namesize
        at += -at % 4
        if name == "TRAILER!!!":
            return out
        out[name] = blob[at:at + size]
        at += size
        at += -at % 4


@pytest.mark.parametrize("layout,compressed", [("bookworm", False), ("sid", True)])
def test_the_guests_modules_each_after_what_it_needs(tmp_path: Path, layout: str,
                                                    compressed: bool) -> None:
    fake_package(tmp_path / "pkg", layout, compressed)
    kernel = images.unpacked(tmp_path / "pkg")
    assert kernel.release == ("6.1.0-57-amd64" if layout == "bookworm"
                              else "7.2.13+deb14-amd64")
    assert kernel.vmlinuz.read_bytes() == b"MZ kernel"
    out = images.modules_cpio(kernel, tmp_path / "mods.cpio")
    files = read_cpio(out)
    order = files[images.LOAD_LIST].decode().split()
    # crc32c_generic is optional: 7.x has crc32c as a library
    want = ["virtio.ko", "virtio_ring.ko", "virtio_pci.ko", "virtio_blk.ko",
            *(["crc32c_generic.ko"] if layout == "bookworm" else []),
            "mbcache.ko", "crc16.ko", "jbd2.ko", "ext4.ko", "overlay.ko"]
    assert order == want
    assert "lib/modules/unused.ko" not in files
    # decompressed: busybox's insmod reads plain ELF, the signature kept
    assert files["lib/modules/ext4.ko"] == fake_module("mbcache,crc16,jbd2", "ext4")


def test_a_module_that_is_neither_built_nor_built_in_is_named(tmp_path: Path) -> None:
    fake_package(tmp_path / "pkg", "bookworm", False)
    kernel = images.unpacked(tmp_path / "pkg")
    images.modules_cpio(kernel, tmp_path / "a.cpio", ("fat", "ext4"))   # fat: built in
    with pytest.raises(DependencyError, match="module nosuch .the guest needs it. is neither"):
        images.modules_cpio(kernel, tmp_path / "b.cpio", ("ext4", "nosuch"))


def test_modinfo_depends() -> None:
    assert images.modinfo_depends(fake_module("a,b-c")) == ["a", "b-c"]
    assert images.modinfo_depends(fake_module("")) == []
    assert images.modinfo_depends(b"no modinfo") == []
    assert images.module_name("kernel/crypto/crc32c-generic.ko.xz") == "crc32c_generic"


def test_a_package_without_one_kernel_is_refused(tmp_path: Path) -> None:
    (tmp_path / "boot").mkdir()
    with pytest.raises(DependencyError, match="expected one kernel"):
        images.unpacked(tmp_path)


def test_the_guest_initrd_is_the_archs_with_the_modules_appended(tmp_path: Path) -> None:
    base, mods = tmp_path / "x86_64.cpio", tmp_path / "m.cpio"
    base.write_bytes(b"base-archive")
    mods.write_bytes(b"modules-archive")
    out = images.guest_initrd(base, mods, tmp_path / "x86_64-deb.cpio")
    assert out.read_bytes() == b"base-archivemodules-archive"


def test_the_cells_hash_is_spelt_out() -> None:
    """Debian's default hash is SHA-256: a sha1 cell says ima_hash=sha1."""
    assert images.boot_args("sha1") == "log_buf_len=1M ima_hash=sha1"
    assert images.boot_args("sha256") == "log_buf_len=1M"


def test_the_guest_init_loads_the_modules_before_mounting() -> None:
    init = (REPO / "initramfs" / "init").read_text()
    assert init.index("/lib/modules/load.list") < init.index("mount -t ext4")
    assert images.LOAD_LIST == "lib/modules/load.list"


def test_a_shipped_kernel_proves_no_lockdep() -> None:
    assert flavors.SHIPPED.missing_coverage("no banner at all") == []
    assert flavors.FLAVORS[flavors.PLAIN].missing_coverage("no banner at all") == ["lockdep"]
    assert "shipped" not in flavors.FLAVORS     # no variant asks for it by flavor:


def test_a_kernel_without_write_policy_tells_the_guest_off_is_off(tmp_path: Path) -> None:
    # Without CONFIG_IMA_WRITE_POLICY appraise_tcb has no POLICY_CHECK
    # rule and ima_appraise=off is off under it (selftests cell.h); a
    # kernel without CONFIG_IMA_READ_POLICY cannot show the guest its
    # policy, so the harness says it from the kernel's configuration.
    from harness import runner
    config = tmp_path / "config"
    config.write_text("CONFIG_IMA=y\n# CONFIG_IMA_WRITE_POLICY is not set\n")
    assert runner.kernel_facts(config) == "ima_selftest.policy_check=0"
    config.write_text("CONFIG_IMA=y\nCONFIG_IMA_WRITE_POLICY=y\n")
    assert runner.kernel_facts(config) == ""
