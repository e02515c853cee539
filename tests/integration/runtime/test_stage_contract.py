"""The stage contract, checked once over EVERY stage (``runtime.stage``).

One document walks the whole pipeline through the real stages (Postgres, OpenSearch of
the test stack; the embedder with a deterministic stand-in model): each stage's input is
the previous stage's real output. For every stage:

- it refuses before ``start`` and refuses an event of another type (``ContractError``);
- the envelope is copied: tenant, document, content hash, sequence, trace, ``occurred_at``
  and the document fields both events carry (meta, findings, change), under a new id;
- a redelivered input yields the same output ids;
- every output is an event type the stage declares and survives its topic's wire contract;
- quarantine shape: the ``doc.quarantined`` the runtime builds for a failed input is valid
  on the wire with the input's envelope, and a stage's own quarantine (parser, scanner,
  connector) carries a reason code and no document text or matched value.

The list of stages comes from the service registry (entry points), so a new stage
without a case here fails ``test_every_stage_has_a_case``.
"""

from __future__ import annotations

import base64
import logging
import re
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, get_origin, get_type_hints

import pytest
import pytest_asyncio

from ragline.cache.settings import CacheSettings
from ragline.cache.stage import CacheInvalidatorStage
from ragline.catalog import HTTP_SERVICES, SERVICES
from ragline.chunking.config import ChunkerSettings
from ragline.chunking.stage import ChunkerStage
from ragline.config import Settings
from ragline.connector.settings import ConnectorSettings
from ragline.connector.stage import ConnectorStage
from ragline.embedding.settings import EmbedderSettings
from ragline.embedding.stage import EmbedderStage
from ragline.enrichment.settings import EnricherSettings
from ragline.enrichment.stage import EnricherStage
from ragline.errors import ContractError, NotBuiltError, QuarantineError
from ragline.events import (
    Block,
    BlockKind,
    ContentRef,
    DocFetched,
    DocParsed,
    DocQuarantined,
    DocumentMeta,
    EventBase,
    ParsedDocument,
    SourceUpsert,
    Topics,
    input_adapter,
    meta_sealed,
)
from ragline.indexing.samples import PseudoEmbedder
from ragline.indexing.settings import IndexerSettings
from ragline.indexing.stage import IndexerStage
from ragline.parsing.settings import ParserSettings
from ragline.parsing.stage import ParserStage
from ragline.platform.stack.testing import unique_tenant
from ragline.runtime.stage import Output, Stage, StageContext, quarantined_event
from ragline.scanning.settings import ScannerSettings
from ragline.scanning.stage import ScannerStage

pytestmark = pytest.mark.integration

AnyStage = Stage[Any, Any]
TRACE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
TEXT = "# Gateway guide\n\nInstall the gateway on every edge node.\n\nThen start it.\n"
PRIVATE_KEY = "-----BEGIN RSA PRIVATE KEY-----\nQUJDREVG\n-----END RSA PRIVATE KEY-----"
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
ENVELOPE = ("tenant_id", "document_id", "source_seq", "traceparent", "occurred_at")
DOCUMENT_FIELDS = ("meta", "findings", "change")
# the pipeline order (the catalog's): each stage takes what the one before it emitted
PIPELINE = tuple(s for s in SERVICES if s not in HTTP_SERVICES)


def _factories(settings: Settings, policy: Path) -> dict[str, Callable[[], AnyStage]]:
    return {
        "connector": lambda: ConnectorStage(settings, ConnectorSettings()),
        "parser": lambda: ParserStage(settings, ParserSettings(workers=0)),
        # no rule asks for names: start() loads no spaCy model
        "scanner": lambda: ScannerStage(settings, ScannerSettings(policy_file=policy, workers=0)),
        "chunker": lambda: ChunkerStage(settings, ChunkerSettings()),
        "enricher": lambda: EnricherStage(settings, ChunkerSettings(), EnricherSettings()),
        "embedder": lambda: EmbedderStage(
            settings, EmbedderSettings(cache=False), embedder=PseudoEmbedder()
        ),
        # refresh "true": searchable on return without the 1 s wait (indexing/conftest.py)
        "indexer": lambda: IndexerStage(settings, IndexerSettings(os_refresh="true")),
        "cache_invalidator": lambda: CacheInvalidatorStage(settings, CacheSettings()),
    }


@dataclass(frozen=True)
class Step:
    stage: AnyStage
    make: Callable[[], AnyStage]
    input: EventBase
    outputs: Sequence[Output[EventBase]]
    redelivered: Sequence[Output[EventBase]]  # the same input again, at once


@dataclass(frozen=True)
class Walk:
    steps: dict[str, Step]
    ctx: StageContext
    tenant: str


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def walk(stack: Settings, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Walk]:
    policy = tmp_path_factory.mktemp("policy") / "policy.yaml"
    policy.write_text(
        "replace_defaults: true\nrules:\n"
        "  - name: no-keys\n    secrets: {'*': redact, private_key: block}\n"
    )
    ctx = StageContext(settings=stack, logger=logging.getLogger("test.contract"))
    tenant = unique_tenant("contract")
    event: EventBase = SourceUpsert(
        tenant_id=tenant,
        document_id="wiki:gateway-guide",
        source_seq=3,
        traceparent=TRACE,
        meta=DocumentMeta(title="Gateway guide", mime_type="text/markdown", acl_groups=("eng",)),
        content_text=TEXT,
    )
    steps: dict[str, Step] = {}
    started: list[AnyStage] = []
    try:
        for name, make in _factories(stack, policy).items():
            stage = make()
            await stage.start()
            started.append(stage)
            outputs = await stage.handle(event, ctx)
            # redelivered before the stages downstream ran (a crash before the commit):
            # once the document is indexed, the connector drops a repeat as unchanged
            again = await stage.handle(event, ctx)
            steps[name] = Step(stage, make, input=event, outputs=outputs, redelivered=again)
            if name != PIPELINE[-1]:
                (out,) = outputs  # one document in, one event on to the next stage
                event = out.event
        yield Walk(steps=steps, ctx=ctx, tenant=tenant)
    finally:
        for stage in reversed(started):
            await stage.stop()


def test_every_stage_has_a_case() -> None:
    """Every registered service whose ``build`` returns a Stage is walked here."""
    stages = {
        ep.name
        for ep in entry_points(group="ragline.services")
        if get_origin(get_type_hints(ep.load())["return"]) is Stage
    }
    assert stages == set(PIPELINE)


@pytest.mark.parametrize("name", PIPELINE)
async def test_refuses_before_start_and_other_event_types(walk: Walk, name: str) -> None:
    step = walk.steps[name]
    fresh = step.make()
    with pytest.raises(NotBuiltError):
        await fresh.handle(step.input, walk.ctx)
    foreign = walk.steps["parser" if name == "cache_invalidator" else "cache_invalidator"].input
    with pytest.raises(ContractError):
        await step.stage.handle(foreign, walk.ctx)
    # one foreign event in a batch fails only itself
    results = await step.stage.handle_batch([foreign, step.input], walk.ctx)
    assert isinstance(results[0], ContractError)
    assert not isinstance(results[1], BaseException)


@pytest.mark.parametrize("name", PIPELINE)
async def test_the_envelope_is_copied(walk: Walk, name: str) -> None:
    step = walk.steps[name]
    if not step.stage.emits:
        assert not step.outputs  # the cache invalidator publishes nothing
        return
    assert step.outputs
    for out in step.outputs:
        ev, src = out.event, step.input
        assert ev.event_id != src.event_id
        for field in ENVELOPE:
            assert getattr(ev, field) == getattr(src, field), field
        if src.content_hash is not None:
            assert ev.content_hash == src.content_hash
        for field in DOCUMENT_FIELDS:
            if field in type(ev).model_fields and field in type(src).model_fields:
                got, want = getattr(ev, field), getattr(src, field)
                if name == "scanner" and field == "meta":  # the scanner seals it (issue 31)
                    got = got.model_copy(update={"scan_seal": None})
                assert got == want, field


@pytest.mark.parametrize("name", PIPELINE)
async def test_a_redelivery_yields_the_same_output_ids(walk: Walk, name: str) -> None:
    step = walk.steps[name]
    assert [(o.topic, o.event.event_id) for o in step.redelivered] == [
        (o.topic, o.event.event_id) for o in step.outputs
    ]


@pytest.mark.parametrize("name", PIPELINE)
async def test_outputs_are_declared_and_valid_on_the_wire(walk: Walk, name: str) -> None:
    step = walk.steps[name]
    assert step.stage.accepts and isinstance(step.input, step.stage.accepts)
    for topic in step.stage.input_topics:  # every input topic carries a type it accepts
        assert input_adapter(topic) is not None
    for out in step.outputs:
        assert isinstance(out.event, step.stage.emits)
        wire = out.event.model_dump_json()
        assert input_adapter(out.topic).validate_json(wire) == out.event


def _assert_quarantine_shape(q: DocQuarantined, src: EventBase, name: str) -> str:
    wire = q.model_dump_json()
    assert input_adapter(Topics.DOC_QUARANTINED).validate_json(wire) == q
    assert q.stage == name and re.fullmatch(r"[a-z0-9_]{1,64}", q.reason_code)
    for field in ("tenant_id", "document_id", "source_seq", "traceparent"):
        assert getattr(q, field) == getattr(src, field), field
    return wire


@pytest.mark.parametrize("name", PIPELINE)
async def test_quarantine_shape(walk: Walk, name: str) -> None:
    """What the runtime publishes for any input the stage could not process."""
    step = walk.steps[name]
    exc = QuarantineError("dead_lettered", f"{name} could not process this version")
    q = quarantined_event(step.input, exc, stage=name)
    _assert_quarantine_shape(q, step.input, name)
    if hasattr(step.input, "meta"):
        # the scanner's sealed meta travels on; an unscanned input's keeps no text field
        # (doc.quarantined is a post-scanner topic: issue 31)
        meta = step.input.meta
        assert q.meta == (meta if meta_sealed(meta) else meta.without_text())


def _own_quarantines(walk: Walk) -> dict[str, EventBase]:
    """An input each stage that quarantines on its own refuses, laced with secrets."""
    fetched = walk.steps["parser"].input
    parsed = walk.steps["scanner"].input
    assert isinstance(fetched, DocFetched) and isinstance(parsed, DocParsed)
    secret_meta = parsed.meta.model_copy(update={"title": f"keys {AWS_KEY}"})
    return {
        "connector": SourceUpsert(
            tenant_id=walk.tenant,
            document_id="wiki:outside",
            source_seq=1,
            traceparent=TRACE,
            meta=DocumentMeta(title="outside", acl_groups=("eng",)),
            content_ref=ContentRef(kind="file", location=f"/etc/{AWS_KEY}"),
        ),
        "parser": fetched.model_copy(
            update={
                "meta": fetched.meta.model_copy(update={"mime_type": "application/pdf"}),
                "content_b64": base64.b64encode(f"%PDF-1.7\n{AWS_KEY}\n".encode()).decode(),
            }
        ),
        "scanner": parsed.model_copy(
            update={
                "meta": secret_meta,
                "document": ParsedDocument(
                    format="markdown",
                    blocks=(Block(kind=BlockKind.PARAGRAPH, text=f"{AWS_KEY}\n{PRIVATE_KEY}"),),
                ),
            }
        ),
    }


@pytest.mark.parametrize("name", ["connector", "parser", "scanner"])
async def test_a_stage_quarantine_carries_no_document_text(walk: Walk, name: str) -> None:
    step = walk.steps[name]
    bad = _own_quarantines(walk)[name]
    with pytest.raises(QuarantineError) as info:
        await step.stage.handle(bad, walk.ctx)
    wire = _assert_quarantine_shape(quarantined_event(bad, info.value, stage=name), bad, name)
    for secret in (AWS_KEY, "QUJDREVG"):
        assert secret not in info.value.reason
        assert secret not in wire
