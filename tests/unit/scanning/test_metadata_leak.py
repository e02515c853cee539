"""Issue 31: the metadata PII leak, reproduced deterministically, and the structure that
keeps any text that went around the scanner off post-scanner topics and index rows.

1. The leak the canary hit: an SSN-shaped value right after ``SSN:`` that presidio's
   validity rules reject (serial 0000, group 00, area 000/666/9xx) was left in place; the
   canary draws a serial of 0000 once in 10,000 values, so it failed only sometimes.
2. The path around the scanner: a quarantine of a version that failed before or in the
   scanner carried the input's raw meta onto ``doc.quarantined`` (a post-scanner topic).
3. The seal: every post-scanner event's text fields are the scanner's sealed output;
   an unsealed or changed meta/document is refused at stage output, publish, read and
   index write, on either lane and on any re-send.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import pytest

from ragline.config import Settings
from ragline.errors import ContractError, QuarantineError
from ragline.events import (
    BULK,
    Block,
    BlockKind,
    ChunkLevel,
    DocChunked,
    DocEmbedded,
    DocParsed,
    DocScanned,
    FindingsSummary,
    Topics,
    read_event,
    seal_problem,
)
from ragline.indexing.projection import DocumentFields, chunk_rows, document_values
from ragline.indexing.samples import embedded_event
from ragline.runtime.lanes import with_lane
from ragline.runtime.stage import Output, Stage, StageContext, quarantined_event
from ragline.scanning.scanner import ScanBlocked, Scanner

from .helpers import make_event

# SSN-shaped values presidio's US_SSN recognizer invalidates, each labelled "SSN:"
UNISSUED = ["412-34-0000", "259-65-0000", "666-12-3456", "000-12-3456", "412-00-1234"]


def _scan(scanner: Scanner, event: DocParsed) -> DocScanned:
    return asyncio.run(scanner.scan(event))


@pytest.mark.parametrize("value", UNISSUED)
def test_a_labelled_ssn_is_redacted_in_every_field_even_if_never_issued(
    make_scanner: Callable[..., Scanner], value: str
) -> None:
    """Fails before the fix: ``SSN: 259-65-0000`` in a sidecar metadata value (the
    canary's ``metadata_value`` location) reached doc.scanned and documents.metadata."""
    event = make_event(
        [f"The on-call note says SSN: {value} today."],
        title=f"Runbook SSN: {value}",
        metadata={"note": f"SSN: {value}", "owner": "ops"},
    )
    out = _scan(make_scanner(), event)
    assert value not in out.model_dump_json()
    assert out.meta.metadata["note"] == "SSN: [REDACTED:US_SSN]"


def test_an_unlabelled_unissued_ssn_shape_stays_text(make_scanner: Callable[..., Scanner]) -> None:
    """The rescue needs the label: a part number shaped 3-2-4 stays readable."""
    out = _scan(make_scanner(), make_event(["Order part 412-34-0000 from the catalog."]))
    assert "412-34-0000" in out.document.blocks[0].text


def test_a_quarantine_of_an_unscanned_version_carries_no_text() -> None:
    """Fails before the fix: a version that failed in the parser or scanner (dead-lettered,
    or the parser's own quarantine) was quarantined with the input's raw meta."""
    event = make_event(
        ["body"], title="keys AKIAPTGZ4JFEBZ9SDO78", metadata={"note": "SSN: 412-34-5678"}
    )
    for exc in (QuarantineError("dead_lettered", "x"), QuarantineError("parse_failed", "y")):
        q = quarantined_event(event, exc, stage="scanner")
        wire = q.model_dump_json()
        assert "412-34-5678" not in wire and "AKIA" not in wire
        assert q.meta is not None and q.meta.acl_groups == event.meta.acl_groups
        assert seal_problem(q) is None


def test_a_blocked_document_quarantine_keeps_the_scanners_sealed_meta(
    make_scanner: Callable[..., Scanner],
) -> None:
    event = make_event(["body"], doc_id="wiki:AKIAPTGZ4JFEBZ9SDO78", title="SSN: 412-34-5678")
    with pytest.raises(ScanBlocked) as info:
        _scan(make_scanner(), event)
    q = quarantined_event(event, info.value, stage="scanner")
    assert q.meta is not None and q.meta.title == "SSN: [REDACTED:US_SSN]"
    assert seal_problem(q) is None


# ------------------------------------------------------------------ the seal


@pytest.fixture
def scanned(make_scanner: Callable[..., Scanner]) -> DocScanned:
    event = make_event(["A clean body."], title="Runbook", metadata={"note": "SSN: 412-34-5678"})
    return _scan(make_scanner(), event)


def _chunked(event: DocScanned, **update: Any) -> DocChunked:
    from ragline.chunking.chunker import Chunker
    from ragline.chunking.config import ChunkerSettings
    from ragline.chunking.stage import chunk_event
    from ragline.text import load_token_counter

    conf = ChunkerSettings()
    out = chunk_event(event, Chunker(conf, load_token_counter(conf.tokenizer_path)))
    return out.model_copy(update=update)


def test_scanner_output_is_sealed_and_travels_sealed(scanned: DocScanned) -> None:
    assert seal_problem(scanned) is None
    assert seal_problem(_chunked(scanned)) is None
    # both lanes, and a re-send (the same bytes read back) keep the seal
    for ev in (with_lane(scanned, BULK), read_event(Topics.DOC_SCANNED, scanned.model_dump_json())):
        assert seal_problem(ev) is None


def test_raw_or_changed_text_after_the_scanner_is_refused(scanned: DocScanned) -> None:
    raw = make_event(["x"], metadata={"note": "SSN: 412-34-5678"}).meta
    changed = scanned.meta.model_copy(update={"metadata": {"note": "SSN: 412-34-5678"}})
    for meta, why in ((raw, "not sealed"), (changed, "changed after")):
        problem = seal_problem(_chunked(scanned, meta=meta))
        assert problem is not None and why in problem
        assert "412-34-5678" not in problem  # the reason never names a value
    block = Block(kind=BlockKind.PARAGRAPH, text="SSN: 412-34-5678")
    doc = scanned.document.model_copy(update={"blocks": (block,)})
    assert "document changed" in (seal_problem(scanned.model_copy(update={"document": doc})) or "")
    unsealed = scanned.model_copy(update={"document": doc.model_copy(update={"scan_seal": None})})
    assert "document was not sealed" in (seal_problem(unsealed) or "")


def test_a_sealed_event_changed_on_the_wire_is_refused_on_read(scanned: DocScanned) -> None:
    wire = scanned.model_dump_json().replace("[REDACTED:US_SSN]", "412-34-5678")
    with pytest.raises(ValueError, match="changed after"):
        read_event(Topics.DOC_SCANNED, wire)
    with pytest.raises(ValueError, match="changed after"):
        read_event(f"{Topics.DOC_SCANNED}.bulk", wire)


class _Passes(Stage[DocScanned, DocChunked]):
    """A post-scanner stage with a bug: it emits ``make(input)``."""

    name: ClassVar[str] = "chunker"
    input_topics: ClassVar[tuple[str, ...]] = (Topics.DOC_SCANNED.value,)

    def __init__(self, make: Callable[[DocScanned], DocChunked]) -> None:
        super().__init__(Settings())
        self.make = make

    async def process(self, event: DocScanned, ctx: StageContext) -> Sequence[Output[DocChunked]]:
        return [Output(topic=Topics.DOC_CHUNKED.value, event=self.make(event))]


def test_a_stage_output_with_text_around_the_scanner_fails_its_input(scanned: DocScanned) -> None:
    """A re-send, repair or metadata-only path that swaps in raw meta is dead-lettered
    by the runtime's stage contract, never published."""
    raw = make_event(["x"], title="t", metadata={"note": "SSN: 412-34-5678"}).meta
    ctx = StageContext(settings=Settings(), logger=__import__("logging").getLogger("t"))

    async def run(make: Callable[[DocScanned], DocChunked]) -> Any:
        stage = _Passes(make)
        await stage.start()
        return (await stage.handle_batch([scanned], ctx))[0]

    ok = asyncio.run(run(lambda ev: _chunked(ev)))
    assert not isinstance(ok, BaseException)
    bad = asyncio.run(run(lambda ev: _chunked(ev, meta=raw)))
    assert isinstance(bad, ContractError) and "not sealed" in str(bad)
    assert "412-34-5678" not in str(bad)


def test_no_index_row_from_unsealed_or_changed_text() -> None:
    ev = embedded_event(tenant_id="acme", document_id="wiki:a", source_seq=1, texts=["hello"])
    fields = DocumentFields(
        acl_groups=("everyone",), classification="internal", acl_seq=1, acl_rank=0,
        generation=1, revision=1, superseded=False, superseded_by=None,
    )  # fmt: skip
    assert document_values(ev, fields)["metadata"] == {}
    assert [r["level"] for r in chunk_rows(ev, fields)].count(ChunkLevel.CHILD.value) == 1
    changed = ev.model_copy(
        update={"meta": ev.meta.model_copy(update={"metadata": {"note": "SSN: 412-34-5678"}})}
    )
    for write in (document_values, chunk_rows):
        with pytest.raises(ContractError, match="index row refused"):
            write(changed, fields)
    raw = DocEmbedded.model_validate(
        {**changed.model_dump(), "meta": {**changed.meta.model_dump(), "scan_seal": None}}
    )
    with pytest.raises(ContractError, match="not sealed"):
        document_values(raw, fields)


def test_findings_summary_is_not_text() -> None:
    """Findings carry labels and offsets only: no seal needed (guards the seal's scope)."""
    assert "scan_seal" not in FindingsSummary.model_fields


# ------------------------------------------------------------------ split lines

WRAPPED = [  # (text, the pieces of the value, one per line)
    ('key = "AKIAPTGZ4J" +\n      "FEBZ9SDO78"', ("AKIAPTGZ4J", "FEBZ9SDO78")),
    ("the key is AKIAPTGZ4J\nFEBZ9SDO78 for prod", ("AKIAPTGZ4J", "FEBZ9SDO78")),
    ("card 4111 1111 1111\n1111 expires soon", ("4111 1111 1111", "1111 expires")),
    ("card 4111111111\n111111 on file", ("4111111111", "111111")),
    ("token = ghp_DOrHIPESvjRmeA6m\n   OOCrlwBVLuOJm5ug1dTo",
     ("ghp_DOrHIPESvjRmeA6m", "OOCrlwBVLuOJm5ug1dTo")),
]  # fmt: skip


@pytest.mark.parametrize(("text", "pieces"), WRAPPED)
def test_a_secret_or_card_wrapped_over_two_lines_is_redacted_whole(
    make_scanner: Callable[..., Scanner], text: str, pieces: tuple[str, str]
) -> None:
    out = _scan(make_scanner(), make_event([text], metadata={"note": text}))
    for scanned in (out.document.blocks[0].text, str(out.meta.metadata["note"])):
        assert "[REDACTED:" in scanned
        assert pieces[0] not in scanned
        assert pieces[1].split()[0] not in scanned  # the second line's part too


def test_ordinary_wrapped_prose_is_left_alone(make_scanner: Callable[..., Scanner]) -> None:
    text = "The deployment configuration\nfile lists 1234 5678\n9012 rows and\nnothing secret."
    out = _scan(make_scanner(), make_event([text]))
    assert out.document.blocks[0].text == text


# ------------------------------------------------------------------ identifiers in logs


def test_log_lines_carry_a_keyed_digest_of_document_ids() -> None:
    """A file name with a secret blocks its document (secret_in_identity), but the
    connector ("accepted") and the runtime ("dead-lettered") log it first: as a digest."""
    import json
    import logging

    from ragline.runtime.logs import JsonFormatter, log_id

    doc = "fs:canary/names/notes-AKIA4SKYNOO654FI6QNQ.md"
    lines = []
    for service in ("connector", "scanner"):
        rec = logging.LogRecord("ragline", logging.WARNING, "f", 1, "dead-lettered", None, None)
        rec.fields = {"document_id": doc, "error_class": "ScanBlocked"}
        lines.append(json.loads(JsonFormatter(service, b"install-key").format(rec)))
    assert all("AKIA4SKYNOO654FI6QNQ" not in json.dumps(line) for line in lines)
    # the same digest in every service (an operator can follow one document), keyed
    assert lines[0]["document_id"] == lines[1]["document_id"] == log_id(doc, b"install-key")
    assert log_id(doc, b"install-key") != log_id(doc, b"other-key") != log_id(doc)
