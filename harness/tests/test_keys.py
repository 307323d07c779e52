"""The guest's certificates and security.ima signatures (harness/keys.py)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harness import keys


def _skid(cert: Path) -> bytes:
    text = subprocess.run(["openssl", "x509", "-inform", "DER", "-in", str(cert), "-noout",
                           "-ext", "subjectKeyIdentifier"], check=True, text=True,
                          stdout=subprocess.PIPE).stdout
    return bytes.fromhex(text.splitlines()[-1].strip().replace(":", ""))


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    build = tmp_path_factory.mktemp("build")
    key_dir = keys.ensure(build)
    return key_dir, keys.stage_guest_keys(key_dir, build / "stage")


def test_guest_gets_certificates_and_signatures_but_no_private_key(staged: tuple[Path, Path]) -> None:
    key_dir, out = staged
    assert sorted(p.name for p in out.iterdir()) == sorted(keys.GUEST_KEY_FILES)
    secrets = {p.read_bytes() for p in key_dir.glob("*.key")}
    assert all(p.read_bytes() not in secrets for p in out.iterdir())
    assert all(b"PRIVATE KEY" not in p.read_bytes() for p in out.iterdir())
    assert (out / "payload").read_bytes() == keys.PAYLOAD


@pytest.mark.parametrize("name,signer", [("payload.good.sig", "ima.der"),
                                         ("payload.unknown.sig", "unknown.der")])
def test_signature_header_names_the_signing_certificate(staged: tuple[Path, Path], name: str,
                                                        signer: str) -> None:
    key_dir, out = staged
    sig = (out / name).read_bytes()
    # struct signature_v2_hdr: type, version, hash_algo, be32 keyid, be16 sig_size
    assert sig[:3] == bytes([3, 2, 4])
    assert sig[3:7] == _skid(key_dir / signer)[-4:]      # what .ima's "id:" lookup matches
    assert int.from_bytes(sig[7:9], "big") == len(sig) - 9 == 256


def test_keyids_differ_and_corrupt_signature_keeps_its_header(staged: tuple[Path, Path]) -> None:
    _, out = staged
    good = (out / "payload.good.sig").read_bytes()
    bad = (out / "payload.corrupt.sig").read_bytes()
    assert good[3:7] != (out / "payload.unknown.sig").read_bytes()[3:7]
    assert len(bad) == len(good) and bad[:9] == good[:9]
    assert sum(a != b for a, b in zip(good, bad)) == 1


def test_staging_again_rewrites_nothing(staged: tuple[Path, Path]) -> None:
    key_dir, out = staged
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    keys.stage_guest_keys(key_dir, out.parent.parent)
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before


def test_check_signature_rejects_a_wrong_size() -> None:
    with pytest.raises(keys.BuildError):
        keys.check_signature(bytes([3, 2, 4, 1, 2, 3, 4, 1, 0]) + bytes(255))


def test_a_built_exec_helper_is_signed(staged: tuple[Path, Path]) -> None:
    key_dir, out = staged
    stage = out.parent.parent
    (stage / "ima_appraise" / "exec_helper").write_bytes(b"\x7fELF not really")
    try:
        keys.stage_guest_keys(key_dir, stage)
        names = sorted(p.name for p in out.iterdir())
        assert names == sorted(keys.GUEST_KEY_FILES + keys.EXEC_HELPER_SIGS)
        good = (out / "exec_helper.good.sig").read_bytes()
        assert good[:7] == (out / "payload.good.sig").read_bytes()[:7]
        assert good != (out / "payload.good.sig").read_bytes()
    finally:
        (stage / "ima_appraise" / "exec_helper").unlink()
        keys.stage_guest_keys(key_dir, stage)
