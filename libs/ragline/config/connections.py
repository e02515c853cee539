"""Connection settings from the environment (12-factor): the same code points at the
embedded local stack or at a real Kafka / Postgres / OpenSearch by changing variables.

Every variable is prefixed ``RAGLINE_``; domains add their own settings classes with
their own prefix (``RAGLINE_SCANNER_...``) next to their code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal
from urllib.parse import quote, urlsplit

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["Settings", "split_urls"]


def split_urls(value: str) -> tuple[str, ...]:
    """The entries of a comma-separated URL list (blanks around commas ignored)."""
    return tuple(part.strip() for part in value.split(",") if part.strip())


def _check_opensearch_urls(value: str) -> str:
    """``RAGLINE_OPENSEARCH_URL``: one URL, or several nodes of one cluster separated by
    commas, each ``http(s)://host[:port][/prefix]``, all with the same scheme, the same
    credentials (if any are in the URL) and the same path prefix; returns the list
    normalised (``a,b``)."""
    urls = split_urls(value)
    if not urls:
        raise ValueError("RAGLINE_OPENSEARCH_URL is empty")
    seen: set[str] = set()
    first: tuple[str, str | None, str | None, str] | None = None
    for i, url in enumerate(urls, 1):
        parts = urlsplit(url)
        shown = parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()  # no password
        where = (
            f"RAGLINE_OPENSEARCH_URL entry {i} ({shown!r})"
            if len(urls) > 1
            else (f"RAGLINE_OPENSEARCH_URL={shown!r}")
        )
        if parts.scheme not in {"http", "https"}:
            raise ValueError(f"{where}: needs http:// or https://")
        try:
            parts.port  # noqa: B018 - raises on a port that is not a number in range
        except ValueError:
            raise ValueError(f"{where}: the port is not a number from 1 to 65535") from None
        if not parts.hostname:
            raise ValueError(f"{where}: no host")
        if parts.query or parts.fragment:
            raise ValueError(f"{where}: a node URL has no ?query or #fragment")
        shape = (parts.scheme, parts.username, parts.password, parts.path.rstrip("/"))
        if first is None:
            first = shape
        elif shape[0] != first[0]:
            raise ValueError(f"{where}: every node needs the same scheme ({first[0]}://)")
        elif shape[1:3] != first[1:3]:
            raise ValueError(f"{where}: every node needs the same credentials")
        elif shape[3] != first[3]:
            raise ValueError(f"{where}: every node needs the same path prefix")
        node = f"{parts.hostname}:{parts.port}"
        if node in seen:
            raise ValueError(f"{where}: {node} is listed twice")
        seen.add(node)
    return ",".join(urls)


class Settings(BaseSettings):
    # a bad value is named by its field and reason, never echoed (a URL or DSN may hold
    # a password)
    model_config = SettingsConfigDict(
        env_prefix="RAGLINE_", extra="ignore", frozen=True, hide_input_in_errors=True
    )

    state_dir: Path = Field(
        default=Path(".ragline"), description="local stack state: data, logs, pids"
    )
    kafka_bootstrap: str = "127.0.0.1:19092"
    kafka_security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    kafka_sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] = "SCRAM-SHA-512"
    kafka_sasl_username: str | None = None
    kafka_sasl_password: SecretStr | None = None
    kafka_ssl_cafile: str | None = Field(default=None, description="CA bundle for TLS")
    kafka_ssl_certfile: str | None = Field(
        default=None, description="client certificate (PEM) for mutual TLS"
    )
    kafka_ssl_keyfile: str | None = Field(
        default=None, description="client private key (PEM); omit if in the certfile"
    )
    kafka_ssl_key_password: SecretStr | None = None
    kafka_partitions: int = Field(default=6, ge=1)
    kafka_topic_prefix: str = Field(
        default="",
        max_length=100,
        pattern=r"^[A-Za-z0-9._-]*$",
        description="prefix of every topic and consumer-group name (e.g. 'staging.'): "
        "installs with different prefixes share a Kafka cluster without cross-talk",
    )
    kafka_compression: Literal["none", "gzip", "snappy", "lz4", "zstd"] = Field(
        default="zstd", description="producer compression of every record batch"
    )
    kafka_max_message_bytes: int = Field(
        default=900_000, description="bodies above this go through the claim check"
    )
    pg_dsn: SecretStr | None = Field(
        default=None, description="admin/pipeline DSN; default: the embedded server"
    )
    pg_query_dsn: SecretStr | None = Field(
        default=None, description="DSN of the RLS-bound query role; default: derived"
    )
    pg_query_role: str = "ragline_query"
    pg_query_password: SecretStr = SecretStr("ragline-query-local")
    pg_database: str = "ragline"
    opensearch_url: str = Field(
        default="http://127.0.0.1:19200",
        description="one URL (a Kubernetes Service, a load balancer) or the nodes of one "
        "cluster separated by commas: the client spreads requests over them and moves a "
        "request whose connection fails to the next node",
    )
    opensearch_index_prefix: str = "ragline"
    opensearch_user: str | None = None
    opensearch_password: SecretStr | None = None
    # TLS to an https:// URL (docs/operations.md "OpenSearch beside existing clusters")
    opensearch_verify_certs: bool = Field(
        default=True, description="check the node's certificate and host name (https)"
    )
    opensearch_ca_certs: Path | None = Field(
        default=None, description="CA bundle (PEM) the node's certificate is checked against"
    )
    opensearch_client_cert: Path | None = Field(
        default=None, description="client certificate (PEM) for mutual TLS"
    )
    opensearch_client_key: Path | None = Field(
        default=None, description="client private key (PEM); omit if in the certificate file"
    )
    opensearch_aws_region: str | None = Field(
        default=None,
        description="sign requests with AWS SigV4 (Amazon OpenSearch; the `aws` extra), "
        "credentials from the standard AWS chain",
    )
    opensearch_aws_service: Literal["es", "aoss"] = Field(
        default="es", description="es: Amazon OpenSearch Service; aoss: Serverless"
    )
    metrics_port: int | None = Field(
        default=None, description="per-service /metrics port; default 9400 + service index"
    )
    metrics_host: str = "127.0.0.1"
    http_port: int | None = Field(
        default=None,
        description="HTTP port (query 8080, connector 8081)",
    )
    http_host: str = "127.0.0.1"
    health_loop_stall_s: float = Field(
        default=30.0,
        gt=0,
        description="consumer /healthz fails when its event loop is blocked this long",
    )
    health_handler_timeout_s: float = Field(
        default=600.0,
        gt=0,
        description="consumer /healthz fails when one message is handled this long",
    )
    max_attempts: int = Field(default=4, ge=1, description="tries before the DLQ")
    retry_backoff_s: float = Field(default=0.5, ge=0)
    release_memory_bytes: int = Field(
        default=1_000_000,
        ge=0,
        description="after a message this large (its body), a consumer collects garbage "
        "and returns free heap pages to the system (malloc_trim); 0 = never",
    )
    log_level: str = "INFO"
    log_id_key: SecretStr | None = Field(
        default=None,
        description="key of the digest that stands for a document id in log lines (a file "
        "name may hold a secret: docs/scanning.md); unset: a fixed key, digests are then "
        "only as hard to invert as the ids are to guess",
    )

    @field_validator("opensearch_url")
    @classmethod
    def _opensearch_urls(cls, value: str) -> str:
        return _check_opensearch_urls(value)

    @property
    def opensearch_hosts(self) -> tuple[str, ...]:
        """Every node URL of ``opensearch_url`` (one for a single URL)."""
        return split_urls(self.opensearch_url)

    @property
    def pg_socket_dir(self) -> Path:
        return (self.state_dir / "pgdata").resolve()

    def admin_dsn(self) -> str:
        if self.pg_dsn is not None:
            return self.pg_dsn.get_secret_value()
        return f"postgresql://postgres@/{self.pg_database}?host={quote(str(self.pg_socket_dir))}"

    def query_dsn(self) -> str:
        if self.pg_query_dsn is not None:
            return self.pg_query_dsn.get_secret_value()
        if self.pg_dsn is not None:
            raise ValueError("RAGLINE_PG_QUERY_DSN must be set when RAGLINE_PG_DSN is")
        pw = quote(self.pg_query_password.get_secret_value())
        return (
            f"postgresql://{self.pg_query_role}:{pw}@/{self.pg_database}"
            f"?host={quote(str(self.pg_socket_dir))}"
        )
