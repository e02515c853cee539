"""Every stage that takes a document consumes a poll's records together (issue 35).

A stage without ``batch`` had one offset commit and one awaited produce round trip per
document: on SciFact abstracts that runtime work cost the parser, chunker and enricher
more CPU than their own (bench/stage_drain.py). With ``batch`` the runtime hands the
records of one poll to ``handle_batch`` (the default ``process_batch`` still handles them
one by one), commits once and publishes their outputs concurrently, per document in
order. Checked through the subscribers ``StageRunner`` builds."""

from __future__ import annotations

import logging

import pytest

from ragline.chunking.config import ChunkerSettings
from ragline.chunking.stage import ChunkerStage
from ragline.config import Settings
from ragline.enrichment.settings import EnricherSettings
from ragline.enrichment.stage import EnricherStage
from ragline.parsing.settings import ParserSettings
from ragline.parsing.stage import ParserStage
from ragline.runtime.consumer import StageRunner
from ragline.runtime.stage import Stage

_STAGES = {
    "parser": lambda s: ParserStage(s, ParserSettings(workers=0)),
    "chunker": lambda s: ChunkerStage(s, ChunkerSettings()),
    "enricher": lambda s: EnricherStage(s, ChunkerSettings(), EnricherSettings()),
}


@pytest.mark.parametrize("name", sorted(_STAGES))
def test_the_document_stages_consume_a_poll_at_once(name: str) -> None:
    settings = Settings()
    stage: Stage = _STAGES[name](settings)  # type: ignore[type-arg]
    assert stage.batch is not None and stage.batch.max_records > 1
    runner = StageRunner(stage, settings, logging.getLogger("test.poll_batches"))
    for sub in runner._subscribers.values():  # both lanes
        assert sub.max_records == stage.batch.max_records
        assert sub.batch_timeout_ms == stage.batch.linger_ms
