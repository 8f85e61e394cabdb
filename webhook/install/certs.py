"""Certificates: a CA and a serving certificate, and a TLS context that follows them.

Owns three things:
  generate()       writes ca.crt, ca.key, tls.crt, tls.key (a kubernetes.io/tls Secret's
                   layout plus the CA key); reuses a valid CA and a valid leaf
  needs_rotation() pure: is this certificate unusable at a given moment?
  CertReloader     an ssl.SSLContext cached for the hot path and rebuilt when the files
                   change, including the `..data` symlink swap a mounted Secret goes through

Keys are ECDSA P-256. The CA lives ten years; the leaf `days` (default 365).
"""

from __future__ import annotations

import argparse
import datetime as dt
import ipaddress
import logging
import os
import re
import socket
import ssl
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from webhook.errors import ConfigError, InputError

__all__ = [
    "CA_CERT",
    "CA_KEY",
    "TLS_CERT",
    "TLS_KEY",
    "CertReloader",
    "check_names",
    "cli_certs",
    "generate",
    "needs_rotation",
    "service_dns_names",
]

log = logging.getLogger("topospread.certs")

TLS_CERT = "tls.crt"
TLS_KEY = "tls.key"
CA_CERT = "ca.crt"
CA_KEY = "ca.key"

CA_DAYS = 3650
MAX_DAYS = 3650
# Renew a leaf when less than this much validity is left (capped at a third of its
# lifetime, so that short-lived development certificates are not reissued on every run).
LEAF_LOOKAHEAD = dt.timedelta(days=30)
CA_LOOKAHEAD = dt.timedelta(days=90)
# Backdate notBefore a little: clocks across a cluster are rarely in perfect agreement.
CLOCK_SKEW = dt.timedelta(minutes=5)
DEV_DNS_NAMES = ("localhost",)
DEV_IPS = (ipaddress.ip_address("127.0.0.1"),)

# TLS 1.2 suites offered: forward secret AEAD only. TLS 1.3 suites are OpenSSL's defaults,
# all of which are modern.
TLS12_CIPHERS = "ECDHE+AESGCM:ECDHE+CHACHA20"

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def service_dns_names(service: str, namespace: str) -> list[str]:
    """The names kube-apiserver and in-cluster clients may use to reach a Service."""
    return [
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
    ]


def _utc(at: dt.datetime) -> dt.datetime:
    # A naive datetime is read as UTC: that is what certificates speak.
    return at if at.tzinfo is not None else at.replace(tzinfo=dt.UTC)


def needs_rotation(cert_pem: bytes, at: dt.datetime) -> bool:
    """True when the certificate cannot be used at `at`: unreadable, not yet valid, or expired.

    Callers ask about a moment ahead (now + lookahead) to renew before expiry.
    """
    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
    except (ValueError, TypeError):
        return True
    moment = _utc(at)
    return not (cert.not_valid_before_utc <= moment < cert.not_valid_after_utc)


# A CA found on disk may be RSA; the keys this module makes are ECDSA P-256.
_SigningKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_usage(*, ca: bool) -> x509.KeyUsage:
    """Signatures only; a CA also signs certificates and CRLs."""
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )


def _make_ca(
    service: str, namespace: str, now: dt.datetime
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _new_key()
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "topospread"),
            # X.509 caps a common name at 64 characters; SANs carry the real names.
            x509.NameAttribute(NameOID.COMMON_NAME, f"topospread-ca {service}.{namespace}"[:64]),
        ]
    )
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(now + dt.timedelta(days=CA_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(ca=True), critical=True)
        .add_extension(ski, critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False
        )
        .sign(key, hashes.SHA256())
    )
    return cert, key


def _make_leaf(
    service: str,
    namespace: str,
    ca_cert: x509.Certificate,
    ca_key: _SigningKey,
    days: int,
    now: dt.datetime,
) -> tuple[x509.Certificate, bytes]:
    key = _new_key()
    dns = service_dns_names(service, namespace)
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in (*dns, *DEV_DNS_NAMES)]
    sans += [x509.IPAddress(ip) for ip in DEV_IPS]
    try:
        ski = ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
        aki = x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski)
    except x509.ExtensionNotFound:
        aki = x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key())
    not_after = min(now + dt.timedelta(days=days), ca_cert.not_valid_after_utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(
            x509.Name(
                [
                    x509.NameAttribute(NameOID.ORGANIZATION_NAME, "topospread"),
                    x509.NameAttribute(
                        NameOID.COMMON_NAME, dns[2] if len(dns[2]) <= 64 else service
                    ),
                ]
            )
        )
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(ca=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(aki, critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return cert, _key_pem(key)


def _lookahead(cert: x509.Certificate, cap: dt.timedelta) -> dt.timedelta:
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    return min(cap, lifetime / 3)


def _write(path: Path, data: bytes, mode: int) -> None:
    """Write atomically (temp file + rename) so a reader never sees half a PEM."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class _CA:
    cert: x509.Certificate
    key: _SigningKey
    pem: bytes


def _same_public_key(key: Any, cert: x509.Certificate) -> bool:
    """Whether the private key belongs to the certificate (their public keys match)."""
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    der = serialization.Encoding.DER
    return bool(
        key.public_key().public_bytes(der, spki) == cert.public_key().public_bytes(der, spki)
    )


def _load_ca(out: Path, now: dt.datetime) -> _CA | None:
    """The CA in `out` when it is complete, a CA, matches its key, and is not near expiry.

    None when it is missing, broken or expiring (a new one is made); InputError when it is
    a good CA this tool cannot sign with (encrypted or unsupported key): never overwrite
    that without --force.
    """
    try:
        pem = (out / CA_CERT).read_bytes()
        key_pem = (out / CA_KEY).read_bytes()
    except OSError:
        return None
    try:
        cert = x509.load_pem_x509_certificate(pem)
    except ValueError:
        return None
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
    except TypeError as exc:
        raise InputError(
            f"{out / CA_KEY} is encrypted; decrypt it, or replace the CA with --force"
        ) from exc
    except ValueError:
        return None
    if not _same_public_key(key, cert):
        return None
    try:
        if not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca:
            return None
    except x509.ExtensionNotFound:
        return None
    if needs_rotation(pem, now + _lookahead(cert, CA_LOOKAHEAD)):
        return None
    if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise InputError(
            f"{out / CA_KEY} is a {type(key).__name__}; an ECDSA or RSA CA key is needed "
            "(or replace the CA with --force)"
        )
    return _CA(cert=cert, key=key, pem=pem)


def _leaf_ok(out: Path, ca: _CA, service: str, namespace: str, now: dt.datetime) -> bool:
    """The leaf is signed by `ca`, matches its key, names exactly our SANs, and lives on."""
    try:
        pem = (out / TLS_CERT).read_bytes()
        key_pem = (out / TLS_KEY).read_bytes()
        cert = x509.load_pem_x509_certificate(pem)
        key = serialization.load_pem_private_key(key_pem, password=None)
    except (OSError, ValueError, TypeError):
        return False
    if not _same_public_key(key, cert):
        return False
    try:
        cert.verify_directly_issued_by(ca.cert)
    except (ValueError, TypeError, InvalidSignature):
        return False
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    want_dns = {*service_dns_names(service, namespace), *DEV_DNS_NAMES}
    if set(san.get_values_for_type(x509.DNSName)) != want_dns:
        return False
    if set(san.get_values_for_type(x509.IPAddress)) != set(DEV_IPS):
        return False
    return not needs_rotation(pem, now + _lookahead(cert, LEAF_LOOKAHEAD))


@dataclass(frozen=True)
class GenerateResult:
    """What generate() did, for the CLI to report."""

    ca_created: bool
    leaf_issued: bool
    leaf_not_after: dt.datetime


def check_names(service: str, namespace: str, days: int) -> None:
    """Raise InputError unless the Service and namespace names and the day count are usable."""
    if not (len(service) <= 63 and _DNS1035_LABEL.match(service)):
        raise InputError(
            f"--service {service!r}: a Service name must be a DNS-1035 label "
            "(lower case letters, digits and '-', starting with a letter, at most 63 characters)"
        )
    if not (len(namespace) <= 63 and _DNS1123_LABEL.match(namespace)):
        raise InputError(
            f"--namespace {namespace!r}: a namespace must be a DNS-1123 label "
            "(lower case letters, digits and '-', at most 63 characters)"
        )
    if not 1 <= days <= MAX_DAYS:
        raise InputError(f"--days {days}: must be between 1 and {MAX_DAYS}")


def issue(
    service: str,
    namespace: str,
    out_dir: str | os.PathLike[str],
    days: int = 365,
    force: bool = False,
    *,
    now: dt.datetime | None = None,
) -> GenerateResult:
    """generate(), returning what was done; `now` is for tests."""
    check_names(service, namespace, days)
    moment = _utc(now) if now is not None else dt.datetime.now(dt.UTC)
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise InputError(f"cannot create {out}: {exc.strerror}") from exc
    if not out.is_dir():
        raise InputError(f"{out} is not a directory")

    ca = None if force else _load_ca(out, moment)
    ca_created = ca is None
    try:
        if ca is None:
            ca_cert, ca_key = _make_ca(service, namespace, moment)
            ca = _CA(cert=ca_cert, key=ca_key, pem=_cert_pem(ca_cert))
            _write(out / CA_KEY, _key_pem(ca_key), 0o600)
            _write(out / CA_CERT, ca.pem, 0o644)
        if not ca_created and _leaf_ok(out, ca, service, namespace, moment):
            leaf = x509.load_pem_x509_certificate((out / TLS_CERT).read_bytes())
            return GenerateResult(False, False, leaf.not_valid_after_utc)
        leaf, leaf_key_pem = _make_leaf(service, namespace, ca.cert, ca.key, days, moment)
        # Key first: a reloader that sees the new cert with the old key rejects the pair
        # and keeps serving the previous one until both are in place.
        _write(out / TLS_KEY, leaf_key_pem, 0o600)
        _write(out / TLS_CERT, _cert_pem(leaf), 0o644)
    except OSError as exc:
        raise InputError(f"cannot write certificates into {out}: {exc.strerror}") from exc
    return GenerateResult(ca_created, True, leaf.not_valid_after_utc)


def generate(
    service: str,
    namespace: str,
    out_dir: str | os.PathLike[str],
    days: int = 365,
    force: bool = False,
) -> None:
    """Write ca.crt, ca.key, tls.crt, tls.key into `out_dir`.

    A valid CA already there is kept unless `force`; the leaf is reissued when absent,
    expiring, not signed by the CA, or naming other SANs.
    """
    issue(service, namespace, out_dir, days, force)


def cli_certs(args: argparse.Namespace) -> int:
    """`topospread certs --service NAME --namespace NS --out DIR [--days N] [--force]`."""
    result = issue(args.service, args.namespace, args.out, args.days, bool(args.force))
    ca = "created a new CA" if result.ca_created else "kept the existing CA"
    leaf = "issued" if result.leaf_issued else "kept"
    print(
        f"{args.out}: {ca}; {leaf} {TLS_CERT} for {args.service}.{args.namespace}.svc, "
        f"valid until {result.leaf_not_after:%Y-%m-%dT%H:%M:%SZ}"
    )
    return 0


# ---------------------------------------------------------------------------------------------
# Reloading TLS context


class _TimedSSLSocket(ssl.SSLSocket):
    """An SSL socket whose "blocking" mode keeps its context's I/O timeout."""

    def setblocking(self, flag: bool) -> None:
        timeout = getattr(self.context, "io_timeout", None)
        if flag and timeout:
            self.settimeout(timeout)
        else:
            super().setblocking(flag)


class _TimedContext(ssl.SSLContext):
    """A server context whose sockets time out a stalled handshake, read or write.

    gunicorn's gthread worker reads a request in blocking mode, with no timeout, in one
    of a few threads: a client that connects and then stalls (mid-handshake or
    mid-request) would hold that thread for good, and a handful of them would stop the
    server. Every socket wrapped here starts with `io_timeout` and keeps it whenever
    gthread switches it back to blocking between keep-alive requests; an idle keep-alive
    connection waits in gthread's poller, not in a read, so the timeout never cuts it.
    """

    io_timeout: float | None = None
    sslsocket_class = _TimedSSLSocket

    def wrap_socket(self, sock: socket.socket, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        if self.io_timeout:
            sock.settimeout(self.io_timeout)
        return super().wrap_socket(sock, *args, **kwargs)


def _server_context(
    cert: str, key: str, client_ca: str | None, io_timeout: float | None = None
) -> ssl.SSLContext:
    ctx = _TimedContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.io_timeout = io_timeout
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_ciphers(TLS12_CIPHERS)
    ctx.options |= ssl.OP_NO_COMPRESSION | ssl.OP_CIPHER_SERVER_PREFERENCE
    ctx.options |= ssl.OP_NO_RENEGOTIATION
    ctx.set_alpn_protocols(["http/1.1"])
    ctx.load_cert_chain(certfile=cert, keyfile=key)
    if client_ca is not None:
        ctx.load_verify_locations(cafile=client_ca)
        ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


_Stamp = tuple[tuple[int, int, int, int, int], ...]


def _stamp(paths: tuple[str, ...]) -> _Stamp | None:
    """Identity of the files behind `paths` (symlinks followed); None when one is missing."""
    out = []
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            return None
        out.append((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return tuple(out)


class CertReloader:
    """A cached server SSLContext, rebuilt when tls.crt / tls.key (or the client CA) change.

    context() is the hot path, called for every accepted connection: it returns the cached
    context and at most once per `check_interval` stats the files. A change is loaded from
    the files' resolved paths: a mounted Secret swaps its `..data` symlink to a new directory
    whose files never change, so the pair read is consistent. A pair that fails to load
    (half written, mismatched, garbage) keeps the previous context and is retried at the next
    check. Connections already open keep the context they were accepted with.

    Thread-safe: one thread checks at a time; the others take the cached context meanwhile.
    """

    def __init__(
        self,
        cert_dir: str | os.PathLike[str],
        *,
        client_ca: str | None = None,
        check_interval: float = 1.0,
        io_timeout: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cert_dir = os.fspath(cert_dir)
        self.cert_file = os.path.join(self.cert_dir, TLS_CERT)
        self.key_file = os.path.join(self.cert_dir, TLS_KEY)
        self.client_ca = client_ca
        self.check_interval = check_interval
        # Seconds a blocking read or write on a client socket may stall (None: forever).
        self.io_timeout = io_timeout
        self._clock = clock
        self._paths: tuple[str, ...] = (self.cert_file, self.key_file) + (
            (client_ca,) if client_ca is not None else ()
        )
        self._lock = threading.Lock()
        self._generation = 0
        self._failed_stamp: _Stamp | None = None
        stamp = _stamp(self._paths)
        try:
            self._context = self._build()
        except (OSError, ssl.SSLError, ValueError) as exc:
            raise ConfigError(
                f"cannot load a TLS certificate and key from {self.cert_dir}: {exc}"
            ) from exc
        self._stamp = stamp
        self._next_check = clock() + check_interval

    @property
    def generation(self) -> int:
        """How many times the context was rebuilt after the first load."""
        return self._generation

    def _build(self) -> ssl.SSLContext:
        resolved = [os.path.realpath(p) for p in self._paths]
        return _server_context(
            resolved[0],
            resolved[1],
            resolved[2] if self.client_ca is not None else None,
            self.io_timeout,
        )

    def context(self) -> ssl.SSLContext:
        """The current server context; cheap."""
        if self._clock() < self._next_check:
            return self._context
        if not self._lock.acquire(blocking=False):
            return self._context
        try:
            self._next_check = self._clock() + self.check_interval
            self._maybe_reload()
        finally:
            self._lock.release()
        return self._context

    def check(self) -> bool:
        """Look at the files now, whatever the interval; True when a new context was loaded."""
        with self._lock:
            self._next_check = self._clock() + self.check_interval
            return self._maybe_reload()

    def _maybe_reload(self) -> bool:
        stamp = _stamp(self._paths)
        # Unchanged, missing, or the very files that already failed to load: nothing to read.
        if stamp is None or stamp == self._stamp or stamp == self._failed_stamp:
            return False
        try:
            ctx = self._build()
        except (OSError, ssl.SSLError, ValueError) as exc:
            log.warning(
                "new certificate files in %s are not usable yet, still serving the "
                "previous ones: %s",
                self.cert_dir,
                exc,
            )
            # Give up on these files only if they held still while we read them; a swap
            # in between may have mixed two pairs, which is worth another look.
            if _stamp(self._paths) == stamp:
                self._failed_stamp = stamp
            return False
        # Stat again: when the files moved while we loaded them, this pair may be mixed;
        # keep the context (it loaded, so cert and key match) but look again next time.
        self._stamp = stamp if _stamp(self._paths) == stamp else None
        self._context = ctx
        self._generation += 1
        self._failed_stamp = None
        log.info("reloaded the TLS certificate from %s", self.cert_dir)
        return True

    def gunicorn_ssl_context(self, conf: object, default_factory: object) -> ssl.SSLContext:
        """gunicorn's `ssl_context(conf, default_ssl_context_factory)` hook."""
        return self.context()
