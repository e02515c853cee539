"""The parser stage's handle() with real DocFetched events (no broker needed), and the
process-pool executor: quarantines cross the process boundary, timeouts kill the worker."""

from __future__ import annotations

import asyncio
import base64
import logging
import multiprocessing
import time

import pytest
from parsing_helpers import FIXTURES
from prometheus_client import REGISTRY

from ragline.config import Settings
from ragline.errors import ContractError, QuarantineError
from ragline.events import BULK, INTERACTIVE, DocFetched, DocParsed, DocumentMeta, Topics
from ragline.hashing import content_hash
from ragline.parsing import ParseExecutor, ParserSettings, parse_document
from ragline.parsing.stage import ParserStage
from ragline.runtime.stage import StageContext
from services.parser.handlers import build

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def _fetched(name: str, data: bytes, **meta: object) -> DocFetched:
    return DocFetched(
        tenant_id="acme",
        document_id=f"fs:handbooks/{name}",
        content_hash=content_hash(data),
        source_seq=7,
        traceparent=TRACEPARENT,
        meta=DocumentMeta(
            source_type="filesystem",
            uri=f"file:///srv/docs/{name}",
            acl_groups=("eng", "ops"),
            **meta,
        ),  # type: ignore[arg-type]
        content_b64=base64.b64encode(data).decode(),
        size_bytes=len(data),
        change="content",
    )


def _ctx() -> StageContext:
    return StageContext(settings=Settings(), logger=logging.getLogger("test.parser"))


def test_build_registers_the_stage() -> None:
    stage = build(Settings())
    assert isinstance(stage, ParserStage)
    assert stage.name == "parser"
    assert stage.input_topics == ("doc.fetched",)


async def _started() -> ParserStage:
    stage = ParserStage(Settings(), ParserSettings(workers=0))
    await stage.start()
    return stage


async def test_handle_parses_the_document() -> None:
    """Envelope, redelivery and wire checks: tests/integration/runtime/test_stage_contract.py."""
    data = (FIXTURES / "guide.md").read_bytes()
    event = _fetched("guide.md", data, title="Operator guide", version="2.1")
    stage = await _started()
    try:
        (out,) = await stage.handle(event, _ctx())
    finally:
        await stage.stop()
    assert out.topic == Topics.DOC_PARSED == "doc.parsed"
    assert isinstance(out.event, DocParsed)
    assert out.event.document == parse_document(data, event.meta, ParserSettings())
    assert out.event.document.format == "markdown"


async def test_handle_raises_typed_errors_for_bad_input() -> None:
    stage = await _started()
    corrupt = (FIXTURES / "bad" / "corrupt.pdf").read_bytes()
    with pytest.raises(QuarantineError) as info:
        await stage.handle(_fetched("corrupt.pdf", corrupt), _ctx())
    assert info.value.reason_code == "corrupt_pdf"
    bad = _fetched("x.txt", b"abc").model_copy(update={"content_b64": "%%%"})
    with pytest.raises(ContractError):
        await stage.handle(bad, _ctx())


async def test_the_event_loop_stays_responsive_while_parsing() -> None:
    data = ("word " * 20 + "\n\n").encode() * 20000  # ~2 MB of paragraphs
    stage = await _started()
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.create_task(ticker())
    started = time.perf_counter()
    await stage.handle(_fetched("big.txt", data), _ctx())
    elapsed = time.perf_counter() - started
    task.cancel()
    assert elapsed > 0.05
    assert ticks >= 2  # the loop ran while the thread parsed


async def test_process_pool_parses_quarantines_and_survives_a_timeout() -> None:
    executor = ParseExecutor(ParserSettings(workers=1, timeout_s=60))
    await executor.start()
    try:
        meta = DocumentMeta(uri="file:///x/report.pdf")
        doc = await executor.parse((FIXTURES / "report.pdf").read_bytes(), meta)
        assert doc.format == "pdf" and doc.page_count == 3
        with pytest.raises(QuarantineError) as info:  # crosses the process boundary intact
            await executor.parse(
                (FIXTURES / "bad" / "zip_bomb.docx").read_bytes(),
                DocumentMeta(uri="file:///x/bomb.docx"),
            )
        assert info.value.reason_code == "zip_bomb"
        # a document slower than the timeout: the worker is killed, the doc quarantined
        executor.settings = ParserSettings(
            workers=1, timeout_s=0.2, max_bytes=64 * 2**20, heavy_bytes=0
        )
        slow = ("- item with some words\n" * 400_000).encode()  # seconds of markdown work
        started = time.perf_counter()
        with pytest.raises(QuarantineError) as info:
            await executor.parse(slow, DocumentMeta(uri="file:///x/slow.md"))
        assert info.value.reason_code == "parse_timeout"
        assert time.perf_counter() - started < 5
        # ... and the next document flows through the rebuilt pool
        executor.settings = ParserSettings(workers=1, timeout_s=60)
        doc = await executor.parse(b"# Next\n\nstill works\n", DocumentMeta(uri="file:///n.md"))
        assert doc.blocks[-1].text == "still works"
    finally:
        await executor.stop()


async def test_a_heavy_document_gets_a_process_of_its_own() -> None:
    """Issue 18: a document over ``heavy_bytes`` is parsed in a process that exits
    afterwards: the pool's worker stays free for the small document behind it, and the
    heavy document's memory goes away with its process."""
    executor = ParseExecutor(ParserSettings(workers=1, timeout_s=300, heavy_bytes=100_000))
    await executor.start()
    try:
        await executor.parse(b"# warm\n\nup\n", DocumentMeta(uri="file:///w.md"))
        children = {p.pid for p in multiprocessing.active_children()}
        heavy = ("- item with some words\n" * 300_000).encode()  # seconds of work
        task = asyncio.create_task(executor.parse(heavy, DocumentMeta(uri="file:///h.md")))
        small = await executor.parse(b"# Small\n\nedit\n", DocumentMeta(uri="file:///s.md"))
        assert small.blocks[-1].text == "edit"
        assert not task.done()  # the small one did not wait for the heavy one
        doc = await task
        assert len(doc.blocks) >= 1
        # the heavy document's process is gone; the pool's worker is the same one
        assert {p.pid for p in multiprocessing.active_children()} == children
    finally:
        await executor.stop()


def _demoted(measure: str) -> float:
    labels = {"measure": measure}
    return REGISTRY.get_sample_value("ragline_parsing_heavy_demoted_total", labels) or 0.0


async def test_a_heavy_interactive_document_is_sent_on_in_the_bulk_lane() -> None:
    """Issue 18: a small but wide CSV (20,000 columns in 209 KB, under every byte
    threshold) is heavy once parsed; it leaves the interactive lane here, so it never
    holds the scanner's interactive lane. A light one keeps its lane; a bulk one stays
    bulk (a lane only goes down); the parsed document is the same in every lane."""
    header = ",".join(f"c{i}" for i in range(20_000))
    row = ",".join(str(i % 10) for i in range(20_000))
    wide = f"{header}\n{row}\n{row}\n".encode()
    stage = await _started()
    try:
        before = _demoted("line_chars")
        (heavy,) = await stage.handle(_fetched("wide.csv", wide, mime_type="text/csv"), _ctx())
        assert _demoted("line_chars") == before + 1
        (light,) = await stage.handle(_fetched("small.csv", b"a,b\n1,2\n"), _ctx())
        bulk_in = _fetched("wide.csv", wide, mime_type="text/csv").model_copy(
            update={"priority": BULK}
        )
        (bulk,) = await stage.handle(bulk_in, _ctx())
        assert _demoted("line_chars") == before + 1  # already bulk: not counted
    finally:
        await stage.stop()
    assert heavy.topic == light.topic == bulk.topic == Topics.DOC_PARSED
    assert heavy.event.priority == BULK and bulk.event.priority == BULK
    assert light.event.priority == INTERACTIVE
    assert heavy.event.document == bulk.event.document
    # the wide document is not heavy by any byte threshold: only by its parsed shape
    assert len(wide) < ParserSettings().heavy_bytes
    # the threshold is the stage's own setting: off, the wide document keeps its lane
    off = ParserStage(Settings(), ParserSettings(workers=0, heavy_line_chars=0))
    await off.start()
    try:
        (kept,) = await off.handle(_fetched("wide.csv", wide, mime_type="text/csv"), _ctx())
    finally:
        await off.stop()
    assert kept.event.priority == INTERACTIVE


async def test_small_plain_text_is_parsed_in_a_thread_and_reads_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 35: plain text up to ``inline_text_bytes`` skips the hop to a worker process
    (which cost several times its parse); markdown, larger text and anything the
    detection refuses still go to the workers. The parsed document is the same."""
    from ragline.parsing import executor as executor_module

    sent: list[object] = []
    real_submit = executor_module.submit

    def counting_submit(pool: object, fn: object, args: tuple[object, ...]) -> object:
        sent.append(args[1])  # the meta
        return real_submit(pool, fn, args)  # type: ignore[arg-type]

    monkeypatch.setattr(executor_module, "submit", counting_submit)
    text = (
        "CLINICAL FINDINGS\n\nBeta-cells (β) respond to IL-6 within 2 h; see Table 1.\n"
        "Second line of the paragraph.\n\n- one\n- two\n\n2.1 Methods\nWe measured it.\n"
    ).encode()
    inline = ParseExecutor(ParserSettings(workers=1))
    pooled = ParseExecutor(ParserSettings(workers=1, inline_text_bytes=0))
    await inline.start()
    await pooled.start()
    try:
        plain = DocumentMeta(uri="file:///x/notes.txt", mime_type="text/plain")
        assert await inline.parse(text, plain) == await pooled.parse(text, plain)
        assert len(sent) == 1  # only the pooled executor's
        md = DocumentMeta(uri="file:///x/notes.md")
        await inline.parse(b"# Title\n\nSome *markdown* text.\n", md)
        big = text * (ParserSettings().inline_text_bytes // len(text) + 1)
        await inline.parse(big, plain)
        assert [m.uri for m in sent[1:]] == [md.uri, plain.uri]  # type: ignore[attr-defined]
        png = DocumentMeta(uri="file:///x/blob")  # sniffed: an image
        with pytest.raises(QuarantineError):  # refused by detection: the worker says so
            await inline.parse(b"\x89PNG\r\n\x1a\n" + b"0" * 64, png)
        assert sent[-1] is png
    finally:
        await inline.stop()
        await pooled.stop()
