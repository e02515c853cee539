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
from pydantic import ValidationError

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


def test_a_url_list_names_every_node_and_a_bad_entry_is_refused() -> None:
    s = Settings(opensearch_url=" http://a:9200, http://b:9201 ,http://c:9202/")
    assert s.opensearch_hosts == ("http://a:9200", "http://b:9201", "http://c:9202/")
    one = Settings(opensearch_url="http://127.0.0.1:19200")
    assert one.opensearch_hosts == ("http://127.0.0.1:19200",)  # one URL as before
    bad = {
        "http://a:9200,ftp://b:9200": "entry 2 .*http:// or https://",
        "http://a:9200,https://b:9200": r"entry 2 .*same scheme \(http://\)",
        "https://u:p@a:9200,https://b:9200": "entry 2 .*same credentials",
        "http://a:9200,http://b:92000": "entry 2 .*port",
        "http://a:9200,http://a:9200": "listed twice",
        "http://a:9200/x,http://b:9200/y": "same path prefix",
        " , ": "empty",
        "a:9200": "http:// or https://",
    }
    for value, why in bad.items():
        with pytest.raises(ValidationError, match=why):
            Settings(opensearch_url=value)
    with pytest.raises(ValidationError) as err:
        Settings(opensearch_url="https://u:s3cret@a:9200,http://u:s3cret@b:9200")
    assert "s3cret" not in str(err.value)  # a password in a bad URL is never echoed


def test_the_client_gets_every_node_and_moves_only_failed_connections() -> None:
    async def transport(settings: Settings) -> tuple[int, int, bool, tuple[int, ...]]:
        client = make_client(settings)
        try:
            await client.transport._async_init()
            t = client.transport
            pool = t.connection_pool.connections
            return len(pool), t.max_retries, t.retry_on_timeout, tuple(t.retry_on_status)
        finally:
            await client.close()

    three = Settings(opensearch_url="https://a:9200,https://b:9200,https://c:9200")
    assert asyncio.run(transport(three)) == (3, 2, False, ())
    assert asyncio.run(transport(_settings())) == (1, 0, False, ())
