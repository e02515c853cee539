"""``ragline chunk FILE``: preview how a document is chunked and enriched.

Parses the file with the real parser (or reads a ParsedDocument JSON), then runs the
chunker and the enricher under the current ``RAGLINE_CHUNKER_*`` settings. The scanner
is skipped, so nothing is redacted: preview your own documents only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ragline.chunking.chunker import Chunker
from ragline.chunking.config import ChunkerSettings
from ragline.errors import RaglineError
from ragline.events import ChunkLevel, DocChunked, DocumentMeta, ParsedDocument
from ragline.hashing import content_hash
from ragline.text.tokenizer import load_token_counter

__all__ = ["register"]


def _load(path: Path) -> tuple[ParsedDocument, DocumentMeta]:
    data = path.read_bytes()
    meta = DocumentMeta(uri=path.resolve().as_uri())
    if path.suffix == ".json":
        try:
            obj = json.loads(data)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and isinstance(obj.get("document"), dict):  # test fixture
            meta = DocumentMeta.model_validate(obj.get("meta") or {})
            obj = obj["document"]
        if isinstance(obj, dict) and "blocks" in obj:
            return ParsedDocument.model_validate(obj), meta
    from ragline.parsing import ParserSettings, parse_document

    return parse_document(data, meta, ParserSettings()), meta


def _run(args: argparse.Namespace) -> int:
    from ragline.enrichment.enricher import Enricher
    from ragline.enrichment.settings import EnricherSettings

    try:
        document, meta = _load(args.file)
    except (OSError, RaglineError, ValueError) as exc:
        print(f"ragline chunk: {args.file}: {exc}", file=sys.stderr)
        return 2
    conf = ChunkerSettings()
    counter = load_token_counter(conf.tokenizer_path)
    digest = content_hash(args.file.read_bytes())
    document_id = f"preview:{args.file.name}"
    chunks = Chunker(conf, counter).chunk(
        document, document_id=document_id, content_hash=digest, file_path=meta.uri
    )
    event = DocChunked(
        tenant_id="preview",
        document_id=document_id,
        content_hash=digest,
        source_seq=0,
        meta=meta,
        chunks=tuple(chunks),
    )
    enricher = Enricher(
        counter, header_budget=conf.header_budget_tokens, settings=EnricherSettings()
    )
    enriched = enricher.enrich(event)
    if args.json:
        out: list[dict[str, Any]] = [c.model_dump(mode="json") for c in enriched]
        print(json.dumps(out, indent=1, ensure_ascii=False))
        return 0
    print(f"{document.format}: {len(document.blocks)} blocks, strategy {conf.strategy_version}")
    for c in enriched:
        if c.level is ChunkLevel.PARENT and not args.parents:
            continue
        e = c.enrichment
        assert e is not None
        print(
            f"{c.level.value:6} {c.ordinal:4} {c.content_type:10} {c.token_count:5} tok  "
            f"{e.language:3}  {e.contextual_header}"
        )
        text = c.text if args.full else c.text[:100].replace("\n", " ⏎ ")
        print(f"       {text}")
    return 0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "chunk",
        help="preview the chunks and enrichment of one file",
        description=__doc__,
    )
    p.add_argument("file", type=Path, help="any supported file, or a ParsedDocument JSON")
    p.add_argument("--json", action="store_true", help="print the enriched chunks as JSON")
    p.add_argument("--parents", action="store_true", help="list parent chunks too")
    p.add_argument("--full", action="store_true", help="print whole texts")
    p.set_defaults(func=_run)
