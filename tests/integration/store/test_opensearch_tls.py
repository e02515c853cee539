"""OpenSearch over mutual TLS with a CA bundle (issue 36, item 6), against the session's
real OpenSearch node behind a TLS terminator: a TCP proxy in this process that presents
a server certificate of a test CA and requires a client certificate of another. The local
node runs without the security plugin, so TLS is terminated in front of it, as a load
balancer or a sidecar would; what is tested is the client's side: the settings reach the
driver, a trusted chain works end to end, and a wrong CA says what to fix."""

from __future__ import annotations

import asyncio
import datetime as dt
import ipaddress
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import pytest_asyncio
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ragline.config import Settings
from ragline.errors import BackendUnavailable
from ragline.store.os_client import make_client, os_errors

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


@dataclass(frozen=True)
class Pki:
    ca: Path
    other_ca: Path
    server_cert: Path
    server_key: Path
    client_ca: Path
    client_cert: Path
    client_key: Path


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write(path: Path, key: ec.EllipticCurvePrivateKey | None, cert: x509.Certificate) -> Path:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    if key is not None:
        path.with_suffix(".key").write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
    return path


def _cert(
    name: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: tuple[x509.Name, ec.EllipticCurvePrivateKey] | None,
    *,
    usage: x509.ObjectIdentifier | None = None,
) -> x509.Certificate:
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    b = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer[0] if issuer else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None), critical=True)
    )
    if usage is not None:
        b = b.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if usage == ExtendedKeyUsageOID.SERVER_AUTH:
        b = b.add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
    return b.sign(issuer[1] if issuer else key, hashes.SHA256())


def _ca(path: Path, name: str) -> tuple[Path, x509.Name, ec.EllipticCurvePrivateKey]:
    key = _key()
    cert = _cert(name, key, None)
    return _write(path, None, cert), cert.subject, key


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    d = tmp_path_factory.mktemp("pki")
    ca, ca_name, ca_key = _ca(d / "ca.pem", "ragline test CA")
    other_ca, _, _ = _ca(d / "other-ca.pem", "someone else's CA")
    client_ca, cl_name, cl_key = _ca(d / "client-ca.pem", "ragline client CA")
    skey, ckey = _key(), _key()
    server = _cert("127.0.0.1", skey, (ca_name, ca_key), usage=ExtendedKeyUsageOID.SERVER_AUTH)
    client = _cert("indexer", ckey, (cl_name, cl_key), usage=ExtendedKeyUsageOID.CLIENT_AUTH)
    return Pki(
        ca=ca,
        other_ca=other_ca,
        server_cert=_write(d / "server.pem", skey, server),
        server_key=d / "server.key",
        client_ca=client_ca,
        client_cert=_write(d / "client.pem", ckey, client),
        client_key=d / "client.key",
    )


@pytest_asyncio.fixture(loop_scope="session")
async def tls_url(stack: Settings, pki: Pki) -> AsyncIterator[str]:
    """An https URL whose TLS (client certificate required) ends in front of the real node."""
    upstream = urlsplit(stack.opensearch_url)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(pki.server_cert, pki.server_key)
    ctx.load_verify_locations(pki.client_ca)
    ctx.verify_mode = ssl.CERT_REQUIRED

    async def pipe(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            while data := await r.read(65536):
                w.write(data)
                await w.drain()
        except (ConnectionError, ssl.SSLError):
            pass
        finally:
            w.close()

    async def serve(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        ur, uw = await asyncio.open_connection(upstream.hostname, upstream.port)
        await asyncio.gather(pipe(r, uw), pipe(ur, w))

    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=ctx)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"https://127.0.0.1:{port}"
    finally:
        server.close()


def _settings(stack: Settings, url: str, **tls: object) -> Settings:
    return stack.model_copy(update={"opensearch_url": url, **tls})


async def test_mutual_tls_with_a_ca_bundle_reaches_the_node(
    stack: Settings, pki: Pki, tls_url: str
) -> None:
    settings = _settings(
        stack,
        tls_url,
        opensearch_ca_certs=pki.ca,
        opensearch_client_cert=pki.client_cert,
        opensearch_client_key=pki.client_key,
    )
    client = make_client(settings, timeout_s=30)
    try:
        with os_errors():
            health = await client.cluster.health()
            nodes = await client.cat.nodes(format="json")
    finally:
        await client.close()
    assert health["status"] in ("green", "yellow")
    assert len(nodes) >= 1  # the real node answered through the TLS hop


async def test_a_wrong_ca_says_the_certificate_is_not_trusted(
    stack: Settings, pki: Pki, tls_url: str
) -> None:
    settings = _settings(
        stack,
        tls_url,
        opensearch_ca_certs=pki.other_ca,
        opensearch_client_cert=pki.client_cert,
        opensearch_client_key=pki.client_key,
    )
    client = make_client(settings, timeout_s=30)
    try:
        with pytest.raises(BackendUnavailable) as err, os_errors():
            await client.cluster.health()
    finally:
        await client.close()
    msg = str(err.value)
    assert "certificate is not trusted" in msg and "RAGLINE_OPENSEARCH_CA_CERTS" in msg
    # without checking, the same wrong bundle gets through (the documented, insecure escape)
    loose = make_client(
        settings.model_copy(update={"opensearch_verify_certs": False}), timeout_s=30
    )
    try:
        with os_errors():
            assert (await loose.cluster.health())["status"] in ("green", "yellow")
    finally:
        await loose.close()


async def test_without_a_client_certificate_the_node_is_not_reached(
    stack: Settings, pki: Pki, tls_url: str
) -> None:
    client = make_client(_settings(stack, tls_url, opensearch_ca_certs=pki.ca), timeout_s=30)
    try:
        with pytest.raises(BackendUnavailable), os_errors():
            await client.cluster.health()
    finally:
        await client.close()
