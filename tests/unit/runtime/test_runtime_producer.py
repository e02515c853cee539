"""The Kafka client every service builds (runtime/publisher.make_broker): a bootstrap
list reaches aiokafka as a list of addresses."""

from __future__ import annotations

from typing import Any

from ragline.config import Settings
from ragline.runtime.publisher import make_broker


def _config(bootstrap: str) -> Any:
    return make_broker(Settings(kafka_bootstrap=bootstrap), "test").config.broker_config


def test_a_comma_separated_bootstrap_is_several_addresses() -> None:
    builder = _config("b-1.kafka:9092, b-2.kafka:9092,b-3.kafka:9092").builder
    assert builder.keywords["bootstrap_servers"] == [
        "b-1.kafka:9092",
        "b-2.kafka:9092",
        "b-3.kafka:9092",
    ]
