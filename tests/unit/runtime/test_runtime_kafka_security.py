from __future__ import annotations

import ssl
import subprocess
from pathlib import Path

import pytest
from faststream.security import SASLScram512

from ragline.config import Settings
from ragline.errors import ConfigError
from ragline.runtime.kafka_security import aiokafka_options, faststream_security


def test_plaintext_by_default() -> None:
    s = Settings()
    assert faststream_security(s) is None
    assert aiokafka_options(s) == {}


def test_sasl_ssl_scram() -> None:
    s = Settings(
        kafka_security_protocol="SASL_SSL",
        kafka_sasl_username="svc",
        kafka_sasl_password="pw",  # type: ignore[arg-type]
    )
    sec = faststream_security(s)
    assert isinstance(sec, SASLScram512) and sec.use_ssl
    opts = aiokafka_options(s)
    assert opts["security_protocol"] == "SASL_SSL"
    assert opts["sasl_mechanism"] == "SCRAM-SHA-512"
    assert opts["sasl_plain_username"] == "svc" and "ssl_context" in opts


def test_sasl_without_credentials_is_a_clear_error() -> None:
    s = Settings(kafka_security_protocol="SASL_PLAINTEXT")
    with pytest.raises(ConfigError, match="RAGLINE_KAFKA_SASL_USERNAME"):
        aiokafka_options(s)


def _self_signed(tmp: Path, *, key_password: str | None = None) -> tuple[Path, Path]:
    cert, key = tmp / "client.crt", tmp / "client.key"
    cmd = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-days", "1", "-subj", "/CN=svc"]
    cmd += ["-keyout", str(key), "-out", str(cert)]
    cmd += ["-passout", f"pass:{key_password}"] if key_password else ["-nodes"]
    subprocess.run(cmd, check=True, capture_output=True)
    return cert, key


def test_mutual_tls_loads_the_client_certificate(tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path)
    s = Settings(
        kafka_security_protocol="SSL", kafka_ssl_certfile=str(cert), kafka_ssl_keyfile=str(key)
    )
    opts = aiokafka_options(s)
    assert opts["security_protocol"] == "SSL"
    assert isinstance(opts["ssl_context"], ssl.SSLContext)
    sec = faststream_security(s)
    assert sec is not None and sec.use_ssl and sec.ssl_context is not None


def test_encrypted_key_needs_its_password(tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path, key_password="k3y-pass")
    base = {"kafka_security_protocol": "SSL", "kafka_ssl_certfile": str(cert)}
    ok = Settings(**base, kafka_ssl_keyfile=str(key), kafka_ssl_key_password="k3y-pass")  # type: ignore[arg-type]
    assert "ssl_context" in aiokafka_options(ok)
    wrong = Settings(**base, kafka_ssl_keyfile=str(key), kafka_ssl_key_password="nope")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="Kafka TLS files unusable") as err:
        aiokafka_options(wrong)
    assert "nope" not in str(err.value) and "k3y-pass" not in str(err.value)


def test_tls_misconfigurations_are_clear_errors(tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path)
    with pytest.raises(ConfigError, match="KEYFILE needs"):
        aiokafka_options(Settings(kafka_security_protocol="SSL", kafka_ssl_keyfile=str(key)))
    with pytest.raises(ConfigError, match="use SSL or SASL_SSL"):
        aiokafka_options(Settings(kafka_ssl_certfile=str(cert)))  # PLAINTEXT
    with pytest.raises(ConfigError, match="unusable"):
        aiokafka_options(
            Settings(kafka_security_protocol="SSL", kafka_ssl_cafile=str(tmp_path / "missing"))
        )
