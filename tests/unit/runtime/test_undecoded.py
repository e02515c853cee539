"""The runtime's handler gets each Kafka message as it is (issue 35).

FastStream's defaults parsed every body as JSON (which ``read_event`` then parsed again)
and resolved the handler's ``KafkaMessage`` argument through dependency injection, which
runs the sync context lookup in an anyio worker thread: a thread round trip per message
(per poll of a batch stage). ``StageRunner`` builds its broker without injection and
its subscribers with the ``undecoded`` decoder. Checked on FastStream's in-memory
broker, through the subscribers exactly as the runner wires them, for a single-message
and a batch stage.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio.to_thread
import pytest
from faststream.kafka import TestKafkaBroker
from faststream.message import utils as message_utils

from ragline.chunking.config import ChunkerSettings
from ragline.chunking.stage import ChunkerStage
from ragline.config import Settings
from ragline.events import INTERACTIVE
from ragline.runtime.consumer import StageRunner
from ragline.runtime.topology import physical_topic
from ragline.scanning.settings import ScannerSettings
from ragline.scanning.stage import ScannerStage


@pytest.mark.parametrize("batch", [False, True])
async def test_the_handler_gets_the_raw_message_without_a_thread_or_a_json_parse(
    monkeypatch: pytest.MonkeyPatch, batch: bool
) -> None:
    threads: list[Any] = []
    parsed: list[bytes] = []
    run_sync = anyio.to_thread.run_sync
    json_loads = message_utils.json_loads

    async def counting_run_sync(fn: Any, *args: Any, **kwargs: Any) -> Any:
        threads.append(fn)
        return await run_sync(fn, *args, **kwargs)

    def counting_loads(body: Any) -> Any:
        parsed.append(body)
        return json_loads(body)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counting_run_sync)
    monkeypatch.setattr(message_utils, "json_loads", counting_loads)
    settings = Settings()
    stage = (
        ScannerStage(settings, ScannerSettings())  # a batch stage
        if batch
        else ChunkerStage(settings, ChunkerSettings())
    )
    runner = StageRunner(stage, settings, logging.getLogger("test.undecoded"))
    got: list[Any] = []

    async def on_message(msg: Any, lane: str = INTERACTIVE) -> None:
        got.append(msg)

    runner.on_message = on_message  # type: ignore[method-assign]
    body = json.dumps({"event_type": "doc.whatever", "n": 1}).encode()
    topic = physical_topic(stage.input_topics[0], settings.kafka_topic_prefix)
    async with TestKafkaBroker(runner.broker) as broker:
        await broker.publish(body, topic)
    (msg,) = got
    raw = msg.raw_message
    records = raw if isinstance(raw, tuple | list) else (raw,)  # the test broker: a list
    assert [r.value for r in records] == [body]  # the message itself, bytes untouched
    assert threads == []  # no worker thread to hand over the message
    assert parsed == []  # and no JSON parse of a body read_event validates anyway
