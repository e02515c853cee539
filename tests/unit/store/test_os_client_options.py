"""The OpenSearch client's TLS and auth options (issue 36, item 6): a file that is not
there names its setting at build time; AWS request signing needs the `aws` extra and says
so; with it, requests carry a SigV4 signature. The TLS path end to end is
tests/integration/store/test_opensearch_tls.py (the real node behind mutual TLS)."""

from __future__ import annotations

import asyncio
import importlib.util
import ssl
from pathlib import Path

import pytest

from ragline.config import Settings
from ragline.errors import ConfigError
from ragline.store.os_client import client_options, make_client

HAS_BOTOCORE = importlib.util.find_spec("botocore") is not None


def _settings(**kw: object) -> Settings:
    return Settings(opensearch_url="https://127.0.0.1:9200", **kw)  # type: ignore[arg-type]


def test_a_missing_file_names_its_setting(tmp_path: Path) -> None:
    for field, env in (
        ("opensearch_ca_certs", "RAGLINE_OPENSEARCH_CA_CERTS"),
        ("opensearch_client_cert", "RAGLINE_OPENSEARCH_CLIENT_CERT"),
    ):
        with pytest.raises(ConfigError, match=env):
            client_options(_settings(**{field: tmp_path / "absent.pem"}))
    key = tmp_path / "client.key"
    key.write_text("")
    with pytest.raises(ConfigError, match="without a client certificate"):
        client_options(_settings(opensearch_client_key=key))


def test_certificate_checking_is_on_unless_turned_off() -> None:
    async def verify_mode(settings: Settings) -> ssl.VerifyMode:
        client = make_client(settings)
        try:
            await client.transport._async_init()  # the pool is built at the first request
            (conn,) = client.transport.connection_pool.connections
            return conn._ssl_context.verify_mode  # type: ignore[no-any-return]
        finally:
            await client.close()

    assert asyncio.run(verify_mode(_settings())) == ssl.CERT_REQUIRED
    with pytest.warns(UserWarning, match="insecure"):
        off = asyncio.run(verify_mode(_settings(opensearch_verify_certs=False)))
    assert off == ssl.CERT_NONE


@pytest.mark.skipif(HAS_BOTOCORE, reason="checks the message of a missing `aws` extra")
def test_request_signing_without_the_aws_extra_says_how_to_get_it() -> None:
    with pytest.raises(ConfigError, match=r"pip install 'ragline\[aws\]'"):
        client_options(_settings(opensearch_aws_region="eu-west-1"))


@pytest.mark.skipif(not HAS_BOTOCORE, reason="needs the `aws` extra (botocore)")
def test_request_signing_signs_each_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    opts = client_options(_settings(opensearch_aws_region="eu-west-1"))
    headers = opts["http_auth"]("GET", "https://127.0.0.1:9200/_cluster/health", None, {})
    assert headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/eu-west-1/es/aws4_request" in headers["Authorization"]
    assert opts["connection_class"].__name__ == "AsyncHttpConnection"
    with pytest.raises(ConfigError, match="not both"):
        client_options(_settings(opensearch_aws_region="eu-west-1", opensearch_user="u"))
