"""Kafka transport security (TLS, SASL PLAIN / SCRAM) from settings, for FastStream
brokers and raw aiokafka clients alike, so managed Kafka needs only variables."""

from __future__ import annotations

import ssl
from typing import Any

from faststream.security import (
    BaseSecurity,
    SASLPlaintext,
    SASLScram256,
    SASLScram512,
)

from ragline.errors import ConfigError
from ragline.runtime.settings import Settings

__all__ = ["aiokafka_options", "faststream_security"]


def _ssl_context(settings: Settings) -> ssl.SSLContext | None:
    if not settings.kafka_security_protocol.endswith("SSL"):
        return None
    return ssl.create_default_context(cafile=settings.kafka_ssl_cafile)


def _credentials(settings: Settings) -> tuple[str, str]:
    if not settings.kafka_sasl_username or settings.kafka_sasl_password is None:
        raise ConfigError(
            "RAGLINE_KAFKA_SASL_USERNAME and RAGLINE_KAFKA_SASL_PASSWORD are required for "
            f"security protocol {settings.kafka_security_protocol}"
        )
    return settings.kafka_sasl_username, settings.kafka_sasl_password.get_secret_value()


def faststream_security(settings: Settings) -> BaseSecurity | None:
    proto = settings.kafka_security_protocol
    ctx = _ssl_context(settings)
    if proto == "PLAINTEXT":
        return None
    if proto == "SSL":
        return BaseSecurity(ssl_context=ctx, use_ssl=True)
    user, password = _credentials(settings)
    use_ssl = proto == "SASL_SSL"
    mechanism = settings.kafka_sasl_mechanism
    cls = {"PLAIN": SASLPlaintext, "SCRAM-SHA-256": SASLScram256, "SCRAM-SHA-512": SASLScram512}[
        mechanism
    ]
    return cls(user, password, ssl_context=ctx, use_ssl=use_ssl)


def aiokafka_options(settings: Settings) -> dict[str, Any]:
    """Keyword arguments for AIOKafkaConsumer/Producer/AdminClient."""
    proto = settings.kafka_security_protocol
    if proto == "PLAINTEXT":
        return {}
    opts: dict[str, Any] = {"security_protocol": proto}
    ctx = _ssl_context(settings)
    if ctx is not None:
        opts["ssl_context"] = ctx
    if proto.startswith("SASL"):
        user, password = _credentials(settings)
        opts.update(
            sasl_mechanism=settings.kafka_sasl_mechanism,
            sasl_plain_username=user,
            sasl_plain_password=password,
        )
    return opts
