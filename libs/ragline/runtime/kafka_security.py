"""Kafka transport security (TLS, mutual TLS, SASL PLAIN / SCRAM) from settings, for FastStream
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

from ragline.config import Settings
from ragline.errors import ConfigError

__all__ = ["aiokafka_options", "faststream_security"]


def _ssl_context(settings: Settings) -> ssl.SSLContext | None:
    """The TLS context: the CA bundle (or the system trust store) and, for mutual TLS,
    the client certificate and key."""
    s = settings
    client = s.kafka_ssl_certfile or s.kafka_ssl_keyfile
    if not s.kafka_security_protocol.endswith("SSL"):
        if client or s.kafka_ssl_cafile:
            raise ConfigError(
                "RAGLINE_KAFKA_SSL_* files are set but RAGLINE_KAFKA_SECURITY_PROTOCOL is "
                f"{s.kafka_security_protocol}: use SSL or SASL_SSL"
            )
        return None
    if s.kafka_ssl_keyfile and not s.kafka_ssl_certfile:
        raise ConfigError("RAGLINE_KAFKA_SSL_KEYFILE needs RAGLINE_KAFKA_SSL_CERTFILE")
    try:
        ctx = ssl.create_default_context(cafile=s.kafka_ssl_cafile)
        if s.kafka_ssl_certfile:
            password = s.kafka_ssl_key_password
            ctx.load_cert_chain(
                s.kafka_ssl_certfile,
                s.kafka_ssl_keyfile,
                password=password.get_secret_value() if password else None,
            )
    except (OSError, ssl.SSLError) as exc:
        # the message names the file kind, never key material
        raise ConfigError(
            f"Kafka TLS files unusable (CA {s.kafka_ssl_cafile or 'system'}, client cert "
            f"{s.kafka_ssl_certfile or '-'}, key {s.kafka_ssl_keyfile or '-'}): "
            f"{type(exc).__name__}: {getattr(exc, 'strerror', None) or exc.args[-1]}"
        ) from exc
    return ctx


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
    ctx = _ssl_context(settings)
    if proto == "PLAINTEXT":
        return {}
    opts: dict[str, Any] = {"security_protocol": proto}
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
