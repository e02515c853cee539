from __future__ import annotations

import pytest
from faststream.security import SASLScram512

from ragline.errors import ConfigError
from ragline.runtime.kafka_security import aiokafka_options, faststream_security
from ragline.runtime.settings import Settings


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
