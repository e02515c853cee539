"""One fully populated event per topic, built with the current models: what this release
writes. ``python tests/unit/compat/_compat_samples.py <dir>`` freezes them as a release's snapshot
(with that release's JSON Schemas); see docs/adr/0010-event-evolution.md."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import sys
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from ragline.events import (
    EVENT_MODELS,
    AclChange,
    Block,
    BlockFlags,
    BlockKind,
    Chunk,
    ChunkLevel,
    ContentRef,
    DeadLetter,
    DocChunked,
    DocControl,
    DocEmbedded,
    DocEnriched,
    DocFetched,
    DocIndexed,
    DocParsed,
    DocQuarantined,
    DocScanned,
    DocumentMeta,
    Enrichment,
    EventBase,
    FindingsSummary,
    IndexAction,
    ParsedDocument,
    SourceAclChange,
    SourceDelete,
    SourceUpsert,
    TableData,
)

REPO = Path(__file__).resolve().parents[3]
SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
_AT = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
_HASH = hashlib.sha256(b"compat").hexdigest()


def _sha(s: str) -> str:
    return hashlib.sha256(s.encode()).hexdigest()


def samples() -> dict[str, list[tuple[str, Any]]]:
    """``topic -> [(model name, event)]``."""
    env: dict[str, Any] = {
        "tenant_id": "acme",
        "document_id": "fs:handbook/vpn.md",
        "source_seq": 7,
        "occurred_at": _AT,
        "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    }
    meta = DocumentMeta(
        source_type="filesystem",
        uri="file:///handbook/vpn.md",
        title="VPN",
        mime_type="text/markdown",
        acl_groups=("eng", "ops"),
        version="2.1",
        series_id="vpn",
        supersedes=("fs:handbook/vpn-old.md",),
        effective_date=date(2026, 1, 1),
        expiry_date=date(2027, 1, 1),
        created_at=_AT,
        updated_at=_AT,
        language="en",
        metadata={"team": "it", "pages": 2, "draft": False, "score": 0.5, "none": None},
    )
    flags = BlockFlags(
        injection_suspect=True, injection_rules=("ignore",), pii_types=("email",), redactions=1
    )
    doc = ParsedDocument(
        title="VPN",
        format="markdown",
        blocks=(
            Block(
                kind=BlockKind.HEADING,
                text="VPN",
                section_path=("VPN",),
                level=1,
                line_start=1,
                line_end=1,
            ),
            Block(
                kind=BlockKind.PARAGRAPH,
                text="Connect with the client.",
                section_path=("VPN",),
                flags=flags,
            ),
            Block(
                kind=BlockKind.TABLE,
                text="| a | b |",
                table=TableData(header=("a", "b"), rows=(("1", "2"),), caption="t", units="ms"),
                page=1,
            ),
            Block(
                kind=BlockKind.CODE,
                text="def f(): ...",
                language="python",
                symbol="m.f",
                signature="f()",
                imports=("os",),
            ),
            Block(kind=BlockKind.TURN, text="hi", speaker="A", timestamp="00:01"),
        ),
        page_count=1,
        encoding="utf-8",
    )
    findings = FindingsSummary(
        counts={"pii:email": 1},
        positions=(("pii:email", 1, 0, 7),),
        injection_blocks=(1,),
        policy="default",
    )
    enrichment = Enrichment(
        language="en",
        content_type="text",
        entities={"product": ("VPN",)},
        dates=("2026-01-01",),
        contextual_header="VPN > Connect",
        provenance={"language": "inferred", "title": "source"},
    )
    parent = Chunk(
        chunk_id=_sha("p"),
        level=ChunkLevel.PARENT,
        ordinal=0,
        text="VPN\n\nConnect with the client.",
        section_path=("VPN",),
        content_type="text",
        page_start=1,
        page_end=1,
        line_start=1,
        line_end=3,
        token_count=8,
        strategy="structure",
        strategy_version="1",
        extra={"k": "v", "tags": ["a"]},
    )
    child = parent.model_copy(
        update={
            "chunk_id": _sha("c"),
            "parent_id": _sha("p"),
            "level": ChunkLevel.CHILD,
            "ordinal": 1,
            "flags": flags,
        }
    )
    enriched = tuple(c.model_copy(update={"enrichment": enrichment}) for c in (parent, child))
    embedded = (enriched[0], enriched[1].model_copy(update={"embedding": (0.25, -0.5, 1.0)}))
    raw = b"# VPN\n\nConnect with the client."
    out: dict[str, list[tuple[str, Any]]] = {
        "source.changes": [
            (
                "SourceUpsert",
                SourceUpsert(
                    event_id="e-up", meta=meta, content_text=raw.decode(), content_hash=_HASH, **env
                ),
            ),
            (
                "SourceUpsert",
                SourceUpsert(
                    event_id="e-ref",
                    meta=meta,
                    content_ref=ContentRef(kind="http", location="https://x/y"),
                    **env,
                ),
            ),
            ("SourceDelete", SourceDelete(event_id="e-del", **env)),
            (
                "SourceAclChange",
                SourceAclChange(
                    event_id="e-acl", acl_groups=("eng",), classification="confidential", **env
                ),
            ),
        ],
        "doc.fetched": [
            (
                "DocFetched",
                DocFetched(
                    event_id="e1",
                    content_hash=_HASH,
                    meta=meta,
                    content_b64=base64.b64encode(raw).decode(),
                    size_bytes=len(raw),
                    change="resync",
                    **env,
                ),
            )
        ],
        "doc.parsed": [
            (
                "DocParsed",
                DocParsed(event_id="e2", content_hash=_HASH, meta=meta, document=doc, **env),
            )
        ],
        "doc.scanned": [
            (
                "DocScanned",
                DocScanned(
                    event_id="e3",
                    content_hash=_HASH,
                    meta=meta,
                    document=doc,
                    findings=findings,
                    scanner_version="1",
                    **env,
                ),
            )
        ],
        "doc.quarantined": [
            (
                "DocQuarantined",
                DocQuarantined(
                    event_id="e4",
                    content_hash=_HASH,
                    meta=meta,
                    stage="scanner",
                    reason_code="secret_found",
                    reason="a secret",
                    findings=findings,
                    **env,
                ),
            )
        ],
        "doc.chunked": [
            (
                "DocChunked",
                DocChunked(
                    event_id="e5",
                    content_hash=_HASH,
                    meta=meta,
                    chunks=(parent, child),
                    findings=findings,
                    **env,
                ),
            )
        ],
        "doc.enriched": [
            (
                "DocEnriched",
                DocEnriched(event_id="e6", content_hash=_HASH, meta=meta, chunks=enriched, **env),
            )
        ],
        "doc.embedded": [
            (
                "DocEmbedded",
                DocEmbedded(
                    event_id="e7",
                    content_hash=_HASH,
                    meta=meta,
                    chunks=embedded,
                    embedding_model="m",
                    embedding_revision="r",
                    embedding_dim=3,
                    **env,
                ),
            )
        ],
        "doc.control": [
            (
                "DocControl",
                DocControl(
                    event_id="e8",
                    action="acl",
                    acl=AclChange(acl_groups=("eng",), classification="restricted"),
                    **env,
                ),
            ),
            ("DocControl", DocControl(event_id="e9", action="delete", **env)),
        ],
        "doc.indexed": [("DocIndexed", _indexed(env))],
        "doc.parsed.dlq": [
            (
                "DeadLetter",
                DeadLetter(
                    dead_letter_id="d1",
                    failed_at=_AT,
                    stage="scanner",
                    topic="doc.parsed",
                    partition=0,
                    offset=3,
                    key="fs:handbook/vpn.md",
                    original_b64="e30=",
                    original_headers={"claim-check": "x"},
                    error_class="ValueError",
                    error_message="bad",
                    attempts=4,
                    tenant_id="acme",
                    document_id="fs:handbook/vpn.md",
                ),
            )
        ],
    }
    covered = {name for events in out.values() for name, _ in events}
    assert covered == set(EVENT_MODELS), set(EVENT_MODELS) - covered
    return out


def _indexed(env: dict[str, Any]) -> EventBase:
    return DocIndexed(
        event_id="e10",
        content_hash=_HASH,
        action=IndexAction.UPSERT,
        generation=3,
        chunk_count=2,
        acl_groups_before=("eng",),
        acl_groups_after=("eng", "ops"),
        skipped=False,
        source_event_at=_AT,
        **env,
    )


def freeze(release: str) -> Path:
    """Write ``snapshots/<release>/``: the samples and the JSON Schemas of schemas/."""
    base = SNAPSHOTS / release
    if base.exists():
        shutil.rmtree(base)
    (base / "events").mkdir(parents=True)
    for topic, events in samples().items():
        payload = [{"model": name, "event": json.loads(e.model_dump_json())} for name, e in events]
        (base / "events" / f"{topic}.json").write_text(
            json.dumps(payload, indent=2, sort_keys=True) + "\n"
        )
    shutil.copytree(REPO / "schemas", base / "schemas", ignore=shutil.ignore_patterns("README.md"))
    return base


if __name__ == "__main__":
    print(freeze(sys.argv[1]))
