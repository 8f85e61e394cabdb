"""Certificates: generation and reuse, the rotation check, and the reloading TLS context."""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import shutil
import ssl
import stat
import threading
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.secret_volume import kubelet_layout, kubelet_swap
from webhook.cli.main import main
from webhook.errors import ConfigError
from webhook.install import certs

SERVICE, NAMESPACE = "topospread", "topospread"
SVC_HOST = "topospread.topospread.svc"
T0 = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
DAY = dt.timedelta(days=1)


# --- helpers ---------------------------------------------------------------------------------


def self_signed(not_before: dt.datetime, not_after: dt.datetime) -> bytes:
    """A throwaway certificate with exactly the given validity window."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "t")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM)


def load(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def files(d: Path) -> dict[str, bytes]:
    return {n: (d / n).read_bytes() for n in ("ca.crt", "ca.key", "tls.crt", "tls.key")}


def client_context(ca_file: Path, **kw: object) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(ca_file))
    for k, v in kw.items():
        setattr(ctx, k, v)
    return ctx


def handshake(
    server_ctx: ssl.SSLContext, client_ctx: ssl.SSLContext, hostname: str = SVC_HOST
) -> bytes:
    """Run a TLS handshake in memory; return the DER certificate the server presented."""
    s_in, s_out, c_in, c_out = (ssl.MemoryBIO() for _ in range(4))
    server = server_ctx.wrap_bio(s_in, s_out, server_side=True)
    client = client_ctx.wrap_bio(c_in, c_out, server_hostname=hostname)
    pending = {"client": True, "server": True}
    for _ in range(20):
        for name, end in (("client", client), ("server", server)):
            if pending[name]:
                try:
                    end.do_handshake()
                    pending[name] = False
                except ssl.SSLWantReadError:
                    pass
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        if not any(pending.values()):
            break
    der = client.getpeercert(binary_form=True)
    assert der is not None
    return der


def der(path: Path) -> bytes:
    return load(path).public_bytes(serialization.Encoding.DER)


# --- needs_rotation --------------------------------------------------------------------------

NB = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
NA = dt.datetime(2030, 2, 1, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("at", "expected"),
    [
        pytest.param(NB - dt.timedelta(seconds=1), True, id="one second before notBefore"),
        pytest.param(NB, False, id="at notBefore"),
        pytest.param(NB + 10 * DAY, False, id="inside the window"),
        pytest.param(NA - dt.timedelta(seconds=1), False, id="one second before notAfter"),
        pytest.param(NA, True, id="at notAfter"),
        pytest.param(NA + DAY, True, id="after notAfter"),
        pytest.param(dt.datetime(2030, 1, 15), False, id="naive datetime read as UTC, inside"),
        pytest.param(dt.datetime(2030, 2, 1), True, id="naive datetime read as UTC, at notAfter"),
    ],
)
def test_needs_rotation_window(at: dt.datetime, expected: bool) -> None:
    """A certificate needs rotation exactly when `at` is outside [notBefore, notAfter)."""
    assert certs.needs_rotation(self_signed(NB, NA), at) is expected


@pytest.mark.parametrize(
    "pem",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"not a certificate", id="garbage"),
        pytest.param(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", id="bad"),
    ],
)
def test_needs_rotation_unreadable(pem: bytes) -> None:
    """Something that is not a certificate always needs rotation (and never raises)."""
    assert certs.needs_rotation(pem, T0) is True


# --- generate --------------------------------------------------------------------------------


def test_generate_writes_the_tls_secret_layout_with_private_keys_0600(tmp_path: Path) -> None:
    """ca.crt, ca.key, tls.crt, tls.key; keys readable by the owner only."""
    certs.generate(SERVICE, NAMESPACE, tmp_path / "out")
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == ["ca.crt", "ca.key", "tls.crt", "tls.key"]
    assert stat.S_IMODE((out / "tls.key").stat().st_mode) == 0o600
    assert stat.S_IMODE((out / "ca.key").stat().st_mode) == 0o600
    assert stat.S_IMODE((out / "tls.crt").stat().st_mode) == 0o644


def test_generated_leaf_names_every_service_dns_name_and_localhost(tmp_path: Path) -> None:
    """SANs: NAME, NAME.NS, NAME.NS.svc, NAME.NS.svc.cluster.local, localhost, 127.0.0.1."""
    certs.generate("web-hook", "tools", tmp_path)
    san = load(tmp_path / "tls.crt").extensions.get_extension_for_class(x509.SubjectAlternativeName)
    assert sorted(san.value.get_values_for_type(x509.DNSName)) == sorted(
        [
            "web-hook",
            "web-hook.tools",
            "web-hook.tools.svc",
            "web-hook.tools.svc.cluster.local",
            "localhost",
        ]
    )
    assert san.value.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]


def test_generated_leaf_is_a_p256_server_certificate_signed_by_the_ca(tmp_path: Path) -> None:
    """ECDSA P-256, serverAuth, not a CA, issued by ca.crt which is a CA."""
    certs.generate(SERVICE, NAMESPACE, tmp_path)
    ca, leaf = load(tmp_path / "ca.crt"), load(tmp_path / "tls.crt")
    leaf.verify_directly_issued_by(ca)
    key = leaf.public_key()
    assert isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name == "secp256r1"
    assert leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value == (
        x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH])
    )
    assert leaf.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True


def test_leaf_validity_is_days_from_now_backdated_five_minutes(tmp_path: Path) -> None:
    """--days 30 at T0: notBefore T0-5m, notAfter T0+30d."""
    certs.issue(SERVICE, NAMESPACE, tmp_path, days=30, now=T0)
    leaf = load(tmp_path / "tls.crt")
    assert leaf.not_valid_before_utc == T0 - dt.timedelta(minutes=5)
    assert leaf.not_valid_after_utc == T0 + 30 * DAY
    assert load(tmp_path / "ca.crt").not_valid_after_utc == T0 + 3650 * DAY


def test_the_leaf_serves_tls_for_the_service_name(tmp_path: Path) -> None:
    """A client trusting ca.crt accepts the server for NAME.NS.svc (as kube-apiserver calls it)."""
    certs.generate(SERVICE, NAMESPACE, tmp_path)
    reloader = certs.CertReloader(tmp_path)
    assert handshake(reloader.context(), client_context(tmp_path / "ca.crt")) == der(
        tmp_path / "tls.crt"
    )


def test_rerun_keeps_a_valid_ca_and_leaf(tmp_path: Path) -> None:
    """Running certs twice changes nothing."""
    certs.issue(SERVICE, NAMESPACE, tmp_path, now=T0)
    before = files(tmp_path)
    result = certs.issue(SERVICE, NAMESPACE, tmp_path, now=T0 + DAY)
    assert (result.ca_created, result.leaf_issued) == (False, False)
    assert files(tmp_path) == before


def test_force_replaces_a_valid_ca_and_reissues_the_leaf(tmp_path: Path) -> None:
    """--force makes a new CA; the leaf follows it."""
    certs.issue(SERVICE, NAMESPACE, tmp_path, now=T0)
    before = files(tmp_path)
    certs.issue(SERVICE, NAMESPACE, tmp_path, force=True, now=T0)
    after = files(tmp_path)
    assert all(after[n] != before[n] for n in before)
    load(tmp_path / "tls.crt").verify_directly_issued_by(load(tmp_path / "ca.crt"))


@pytest.mark.parametrize(
    ("days", "rerun_at", "reissued"),
    [
        # 365-day leaf: renewal window is the last 30 days.
        pytest.param(365, T0 + 334 * DAY, False, id="365d leaf, 31 days left: kept"),
        pytest.param(365, T0 + 336 * DAY, True, id="365d leaf, 29 days left: reissued"),
        pytest.param(365, T0 + 400 * DAY, True, id="365d leaf, expired: reissued"),
        # 30-day leaf: window is a third of its lifetime (10 days and 100 seconds).
        pytest.param(30, T0 + 19 * DAY, False, id="30d leaf, 11 days left: kept"),
        pytest.param(30, T0 + 21 * DAY, True, id="30d leaf, 9 days left: reissued"),
    ],
)
def test_leaf_reissued_when_expiring_ca_kept(
    tmp_path: Path, days: int, rerun_at: dt.datetime, reissued: bool
) -> None:
    """A leaf near expiry is reissued from the same CA; one with time left is kept."""
    certs.issue(SERVICE, NAMESPACE, tmp_path, days=days, now=T0)
    before = files(tmp_path)
    result = certs.issue(SERVICE, NAMESPACE, tmp_path, days=days, now=rerun_at)
    after = files(tmp_path)
    assert result.ca_created is False
    assert (after["ca.crt"], after["ca.key"]) == (before["ca.crt"], before["ca.key"])
    assert (after["tls.crt"] != before["tls.crt"]) is reissued
    assert result.leaf_issued is reissued


def _other_key_pem() -> bytes:
    return ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda d: (d / "tls.crt").unlink(), id="tls.crt missing"),
        pytest.param(lambda d: (d / "tls.key").unlink(), id="tls.key missing"),
        pytest.param(lambda d: (d / "tls.key").write_bytes(_other_key_pem()), id="key mismatch"),
        pytest.param(lambda d: (d / "tls.crt").write_bytes(b"junk"), id="tls.crt garbage"),
    ],
)
def test_broken_leaf_is_reissued_from_the_same_ca(tmp_path: Path, damage: object) -> None:
    """A missing, garbage or mismatched leaf is reissued; the CA stays."""
    certs.issue(SERVICE, NAMESPACE, tmp_path, now=T0)
    before = files(tmp_path)
    damage(tmp_path)  # type: ignore[operator]
    result = certs.issue(SERVICE, NAMESPACE, tmp_path, now=T0)
    assert (result.ca_created, result.leaf_issued) == (False, True)
    assert files(tmp_path)["ca.crt"] == before["ca.crt"]
    load(tmp_path / "tls.crt").verify_directly_issued_by(load(tmp_path / "ca.crt"))


def test_other_service_name_reissues_the_leaf_from_the_same_ca(tmp_path: Path) -> None:
    """A SAN mismatch (other Service or namespace) reissues the leaf, keeping the CA."""
    certs.issue(SERVICE, NAMESPACE, tmp_path, now=T0)
    before = files(tmp_path)
    result = certs.issue(SERVICE, "other", tmp_path, now=T0)
    assert (result.ca_created, result.leaf_issued) == (False, True)
    assert files(tmp_path)["ca.crt"] == before["ca.crt"]
    san = load(tmp_path / "tls.crt").extensions.get_extension_for_class(x509.SubjectAlternativeName)
    assert "topospread.other.svc" in san.value.get_values_for_type(x509.DNSName)


def test_leaf_signed_by_another_ca_is_reissued(tmp_path: Path) -> None:
    """A leaf from a different CA than ca.crt is replaced."""
    certs.issue(SERVICE, NAMESPACE, tmp_path / "a", now=T0)
    certs.issue(SERVICE, NAMESPACE, tmp_path / "b", now=T0)
    shutil.copy(tmp_path / "b" / "tls.crt", tmp_path / "a" / "tls.crt")
    shutil.copy(tmp_path / "b" / "tls.key", tmp_path / "a" / "tls.key")
    result = certs.issue(SERVICE, NAMESPACE, tmp_path / "a", now=T0)
    assert (result.ca_created, result.leaf_issued) == (False, True)


@pytest.mark.parametrize(
    ("damage", "rerun_at"),
    [
        pytest.param(lambda d: (d / "ca.key").unlink(), T0, id="ca.key missing"),
        pytest.param(lambda d: (d / "ca.key").write_bytes(_other_key_pem()), T0, id="ca mismatch"),
        pytest.param(lambda d: None, T0 + 3600 * DAY, id="CA with 50 days left (< 90)"),
    ],
)
def test_unusable_ca_is_replaced_and_the_leaf_follows(
    tmp_path: Path, damage: object, rerun_at: dt.datetime
) -> None:
    """A CA that cannot sign or is near expiry is recreated, without --force."""
    certs.issue(SERVICE, NAMESPACE, tmp_path, now=T0)
    before = files(tmp_path)
    damage(tmp_path)  # type: ignore[operator]
    result = certs.issue(SERVICE, NAMESPACE, tmp_path, now=rerun_at)
    assert (result.ca_created, result.leaf_issued) == (True, True)
    assert files(tmp_path)["ca.crt"] != before["ca.crt"]
    load(tmp_path / "tls.crt").verify_directly_issued_by(load(tmp_path / "ca.crt"))


def _write_ca(d: Path, key: object, *, password: bytes | None = None) -> None:
    """An outside CA (no SubjectKeyIdentifier) with the given key, valid five years."""
    d.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "outside-ca")])
    algorithm = None if isinstance(key, ed25519.Ed25519PrivateKey) else hashes.SHA256()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())  # type: ignore[attr-defined]
        .serial_number(7)
        .not_valid_before(now - DAY)
        .not_valid_after(now + 5 * 365 * DAY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, algorithm)  # type: ignore[arg-type]
    )
    encryption = (
        serialization.BestAvailableEncryption(password)
        if password
        else serialization.NoEncryption()
    )
    (d / "ca.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (d / "ca.key").write_bytes(
        key.private_bytes(  # type: ignore[attr-defined]
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
        )
    )


def test_an_outside_rsa_ca_is_kept_and_signs_the_leaf(tmp_path: Path) -> None:
    """A valid RSA CA without SubjectKeyIdentifier is reused, not replaced."""
    _write_ca(tmp_path, rsa.generate_private_key(public_exponent=65537, key_size=2048))
    before = (tmp_path / "ca.crt").read_bytes(), (tmp_path / "ca.key").read_bytes()
    result = certs.issue(SERVICE, NAMESPACE, tmp_path)
    assert (result.ca_created, result.leaf_issued) == (False, True)
    assert ((tmp_path / "ca.crt").read_bytes(), (tmp_path / "ca.key").read_bytes()) == before
    load(tmp_path / "tls.crt").verify_directly_issued_by(load(tmp_path / "ca.crt"))


@pytest.mark.parametrize(
    ("key", "password", "message"),
    [
        pytest.param(ec.generate_private_key(ec.SECP256R1()), b"secret", "encrypted", id="enc"),
        pytest.param(ed25519.Ed25519PrivateKey.generate(), None, "Ed25519", id="ed25519"),
    ],
)
def test_a_valid_ca_this_tool_cannot_sign_with_is_never_overwritten(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    key: object,
    password: bytes | None,
    message: str,
) -> None:
    """Encrypted or unsupported CA key: exit 2 naming the problem, the CA left as it was."""
    _write_ca(tmp_path, key, password=password)
    before = (tmp_path / "ca.crt").read_bytes(), (tmp_path / "ca.key").read_bytes()
    rc = main(["certs", "--service", SERVICE, "--namespace", NAMESPACE, "--out", str(tmp_path)])
    assert rc == 2
    assert message in capsys.readouterr().err
    assert ((tmp_path / "ca.crt").read_bytes(), (tmp_path / "ca.key").read_bytes()) == before
    assert not (tmp_path / "tls.crt").exists()


def test_cli_certs_writes_files_and_exits_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`topospread certs` exits 0 and says what it did."""
    rc = main(["certs", "--service", "s", "--namespace", "n", "--out", str(tmp_path / "c")])
    assert rc == 0
    assert (tmp_path / "c" / "tls.crt").is_file()
    assert "created a new CA" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["--service", "Web", "--namespace", "n"], id="service upper case"),
        pytest.param(["--service", "1web", "--namespace", "n"], id="service starts with digit"),
        pytest.param(["--service", "w" * 64, "--namespace", "n"], id="service 64 chars"),
        pytest.param(["--service", "web", "--namespace", "a.b"], id="namespace with dot"),
        pytest.param(["--service", "web", "--namespace", "n", "--days", "0"], id="days 0"),
        pytest.param(["--service", "web", "--namespace", "n", "--days", "3651"], id="days 3651"),
    ],
)
def test_cli_certs_rejects_bad_input_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """Bad names or days: a message on stderr, exit code 2, nothing written."""
    rc = main(["certs", *argv, "--out", str(tmp_path / "c")])
    assert rc == 2
    assert "topospread certs:" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()


def test_cli_certs_out_is_a_file_exits_2(tmp_path: Path) -> None:
    """--out naming a regular file is a usage error, not a traceback."""
    (tmp_path / "f").write_text("x")
    assert main(["certs", "--service", "s", "--namespace", "n", "--out", str(tmp_path / "f")]) == 2


def test_service_name_63_chars_is_accepted(tmp_path: Path) -> None:
    """63 characters is the DNS label limit, inclusive."""
    certs.generate("w" * 63, "n", tmp_path)
    assert (tmp_path / "tls.crt").is_file()


# --- CertReloader ----------------------------------------------------------------------------


@pytest.fixture
def two_pairs(tmp_path: Path) -> tuple[Path, Path]:
    """Two leaves for the same service from the same CA."""
    a, b = tmp_path / "a", tmp_path / "b"
    certs.issue(SERVICE, NAMESPACE, a, now=dt.datetime.now(dt.UTC) - 10 * DAY)
    shutil.copytree(a, b)
    (b / "tls.crt").unlink()
    certs.issue(SERVICE, NAMESPACE, b)
    assert der(a / "tls.crt") != der(b / "tls.crt")
    return a, b


def test_reloader_follows_a_kubelet_symlink_swap(
    tmp_path: Path, two_pairs: tuple[Path, Path]
) -> None:
    """After ..data points at a new directory, new handshakes get the new certificate."""
    a, b = two_pairs
    live = tmp_path / "live"
    live.mkdir()
    kubelet_layout(live, a, "2030_01_01_00_00_00.1")
    reloader = certs.CertReloader(live, check_interval=3600)
    client = client_context(a / "ca.crt")
    assert handshake(reloader.context(), client) == der(a / "tls.crt")
    kubelet_swap(live, b, "2030_01_02_00_00_00.2")
    assert reloader.check() is True
    assert handshake(reloader.context(), client) == der(b / "tls.crt")
    assert reloader.generation == 1


def test_reloader_follows_plain_file_replacement(
    tmp_path: Path, two_pairs: tuple[Path, Path]
) -> None:
    """Ordinary files replaced in place are picked up too."""
    a, b = two_pairs
    live = tmp_path / "live"
    shutil.copytree(a, live)
    reloader = certs.CertReloader(live, check_interval=0)
    shutil.copy(b / "tls.key", live / "tls.key")
    shutil.copy(b / "tls.crt", live / "tls.crt")
    assert handshake(reloader.context(), client_context(a / "ca.crt")) == der(b / "tls.crt")


def test_reloader_unchanged_files_keep_the_same_context(tmp_path: Path) -> None:
    """No change, no rebuild: the very same context object comes back."""
    certs.generate(SERVICE, NAMESPACE, tmp_path)
    reloader = certs.CertReloader(tmp_path, check_interval=0)
    first = reloader.context()
    assert reloader.check() is False
    assert reloader.context() is first
    assert reloader.generation == 0


def test_reloader_hot_path_does_not_stat_inside_the_interval(
    tmp_path: Path, two_pairs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Within check_interval, context() touches no file, even when the files changed."""
    a, b = two_pairs
    live = tmp_path / "live"
    shutil.copytree(a, live)
    reloader = certs.CertReloader(live, check_interval=3600)
    first = reloader.context()
    shutil.copy(b / "tls.key", live / "tls.key")
    shutil.copy(b / "tls.crt", live / "tls.crt")
    calls: list[object] = []
    real_stat = os.stat
    monkeypatch.setattr(certs.os, "stat", lambda *a, **k: calls.append(a) or real_stat(*a, **k))
    for _ in range(100):
        assert reloader.context() is first
    assert calls == []


def test_reloader_checks_once_the_interval_has_passed(
    tmp_path: Path, two_pairs: tuple[Path, Path]
) -> None:
    """Once the interval is over, the next context() looks at the files and reloads."""
    a, b = two_pairs
    live = tmp_path / "live"
    shutil.copytree(a, live)
    clock = [1000.0]
    reloader = certs.CertReloader(live, check_interval=5, clock=lambda: clock[0])
    first = reloader.context()
    shutil.copy(b / "tls.key", live / "tls.key")
    shutil.copy(b / "tls.crt", live / "tls.crt")
    clock[0] = 1004.9
    assert reloader.context() is first
    clock[0] = 1005.0
    assert reloader.context() is not first
    assert reloader.generation == 1


def _mismatched(live: Path, a: Path, b: Path) -> None:
    shutil.copy(b / "tls.crt", live / "tls.crt")


def _garbage(live: Path, a: Path, b: Path) -> None:
    (live / "tls.crt").write_bytes(
        b"-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n"
    )


def _empty_key(live: Path, a: Path, b: Path) -> None:
    (live / "tls.key").write_bytes(b"")


def _missing(live: Path, a: Path, b: Path) -> None:
    (live / "tls.key").unlink()


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(_mismatched, id="new cert with the old key"),
        pytest.param(_garbage, id="garbage certificate"),
        pytest.param(_empty_key, id="empty key"),
        pytest.param(_missing, id="key file gone"),
    ],
)
def test_reloader_keeps_the_old_context_on_a_broken_pair(
    tmp_path: Path, two_pairs: tuple[Path, Path], damage: object
) -> None:
    """A pair that does not load keeps serving the previous certificate."""
    a, b = two_pairs
    live = tmp_path / "live"
    shutil.copytree(a, live)
    reloader = certs.CertReloader(live, check_interval=0)
    first = reloader.context()
    damage(live, a, b)  # type: ignore[operator]
    assert reloader.check() is False
    assert reloader.context() is first
    assert handshake(reloader.context(), client_context(a / "ca.crt")) == der(a / "tls.crt")


def test_reloader_does_not_reread_files_that_already_failed(
    tmp_path: Path, two_pairs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broken pair is read once; later checks only stat until the files change again."""
    a, b = two_pairs
    live = tmp_path / "live"
    shutil.copytree(a, live)
    reloader = certs.CertReloader(live, check_interval=0)
    shutil.copy(b / "tls.crt", live / "tls.crt")
    builds: list[str] = []
    real = certs._server_context
    monkeypatch.setattr(
        certs, "_server_context", lambda *args: builds.append(args[0]) or real(*args)
    )
    for _ in range(5):
        reloader.context()
    assert len(builds) == 1
    shutil.copy(b / "tls.key", live / "tls.key")
    reloader.context()
    assert len(builds) == 2
    assert reloader.generation == 1


def test_reloader_recovers_when_the_pair_is_completed(
    tmp_path: Path, two_pairs: tuple[Path, Path]
) -> None:
    """A half-written pair (cert first) is loaded once the key follows."""
    a, b = two_pairs
    live = tmp_path / "live"
    shutil.copytree(a, live)
    reloader = certs.CertReloader(live, check_interval=0)
    shutil.copy(b / "tls.crt", live / "tls.crt")
    assert reloader.check() is False
    shutil.copy(b / "tls.key", live / "tls.key")
    assert reloader.check() is True
    assert handshake(reloader.context(), client_context(a / "ca.crt")) == der(b / "tls.crt")


@pytest.mark.parametrize(
    "damage",
    [pytest.param(_garbage, id="garbage"), pytest.param(_missing, id="missing key")],
)
def test_reloader_refuses_to_start_without_a_usable_pair(
    tmp_path: Path, two_pairs: tuple[Path, Path], damage: object
) -> None:
    """No usable pair at start: a ConfigError naming the directory."""
    a, b = two_pairs
    damage(a, a, b)  # type: ignore[operator]
    with pytest.raises(ConfigError, match=str(a)):
        certs.CertReloader(a)


@pytest.mark.parametrize(
    ("version", "ok"),
    [
        pytest.param(ssl.TLSVersion.TLSv1_2, True, id="TLS 1.2 accepted"),
        pytest.param(ssl.TLSVersion.TLSv1_3, True, id="TLS 1.3 accepted"),
    ],
)
def test_reloader_speaks_tls12_and_tls13(tmp_path: Path, version: ssl.TLSVersion, ok: bool) -> None:
    """Clients pinned to TLS 1.2 or 1.3 both connect."""
    certs.generate(SERVICE, NAMESPACE, tmp_path)
    ctx = certs.CertReloader(tmp_path).context()
    client = client_context(tmp_path / "ca.crt", minimum_version=version, maximum_version=version)
    assert handshake(ctx, client) == der(tmp_path / "tls.crt")


def test_reloader_context_refuses_below_tls12_and_weak_ciphers(tmp_path: Path) -> None:
    """minimum_version is TLS 1.2 and every TLS 1.2 suite is ECDHE with an AEAD."""
    certs.generate(SERVICE, NAMESPACE, tmp_path)
    ctx = certs.CertReloader(tmp_path).context()
    assert ctx.minimum_version == ssl.TLSVersion.TLSv1_2
    tls12 = [c for c in ctx.get_ciphers() if c["protocol"] == "TLSv1.2"]
    assert tls12
    assert all(c["kea"] == "kx-ecdhe" and c["aead"] for c in tls12)
    assert ctx.verify_mode == ssl.CERT_NONE


def _client_cert(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A client CA, and a clientAuth certificate and key it signed."""
    d = tmp_path / "client"
    d.mkdir()
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "client-ca")])
    now = dt.datetime.now(dt.UTC)
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(1)
        .not_valid_before(now - DAY)
        .not_valid_after(now + DAY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(2)
        .not_valid_before(now - DAY)
        .not_valid_after(now + DAY)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    (d / "ca.crt").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (d / "tls.crt").write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    (d / "tls.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return d / "ca.crt", d / "tls.crt", d / "tls.key"


def test_mutual_tls_requires_a_client_certificate_from_client_ca(tmp_path: Path) -> None:
    """With client_ca, a client without a certificate is refused and one with it admitted."""
    certs.generate(SERVICE, NAMESPACE, tmp_path / "srv")
    client_ca, client_crt, client_key = _client_cert(tmp_path)
    ctx = certs.CertReloader(tmp_path / "srv", client_ca=str(client_ca)).context()
    assert ctx.verify_mode == ssl.CERT_REQUIRED
    anonymous = client_context(tmp_path / "srv" / "ca.crt")
    with pytest.raises(ssl.SSLError):
        handshake(ctx, anonymous)
    with_cert = client_context(tmp_path / "srv" / "ca.crt")
    with_cert.load_cert_chain(str(client_crt), str(client_key))
    assert handshake(ctx, with_cert) == der(tmp_path / "srv" / "tls.crt")


def test_gunicorn_hook_returns_the_cached_context(tmp_path: Path) -> None:
    """The hook ignores gunicorn's default factory and returns the reloader's context."""
    certs.generate(SERVICE, NAMESPACE, tmp_path)
    reloader = certs.CertReloader(tmp_path, check_interval=3600)

    def factory() -> ssl.SSLContext:
        raise AssertionError("the default factory must not be used")

    assert reloader.gunicorn_ssl_context(object(), factory) is reloader.context()


def test_reloader_is_safe_under_concurrent_calls_during_swaps(
    tmp_path: Path, two_pairs: tuple[Path, Path]
) -> None:
    """Threads calling context() while the files swap always get a usable context."""
    a, b = two_pairs
    live = tmp_path / "live"
    live.mkdir()
    kubelet_layout(live, a, "0")
    reloader = certs.CertReloader(live, check_interval=0)
    client = client_context(a / "ca.crt")
    errors: list[BaseException] = []
    stop = threading.Event()

    def hammer() -> None:
        try:
            while not stop.wait(0.0002):
                assert isinstance(reloader.context(), ssl.SSLContext)
        except BaseException as exc:  # collected for the main thread to re-raise
            errors.append(exc)

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        for i in range(1, 11):
            kubelet_swap(live, b if i % 2 else a, str(i))
            handshake(reloader.context(), client)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert errors == []
    reloader.check()
    assert handshake(reloader.context(), client) == der(a / "tls.crt")
