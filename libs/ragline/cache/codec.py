"""The stored form of a cached ``SearchResponse``: zlib-compressed JSON, plus the
document and chunk ids its results came from (the entry's dependencies)."""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from ragline.retrieval.api_models import SearchResponse

__all__ = ["EncodedResponse", "decode_response", "encode_response"]


@dataclass(frozen=True, kw_only=True)
class EncodedResponse:
    blob: bytes
    document_ids: tuple[str, ...]
    chunk_ids: tuple[str, ...]


def encode_response(response: SearchResponse) -> EncodedResponse:
    # the per-request fields are replaced on a hit; drop them so entries stay comparable
    stored = response.model_copy(update={"trace_id": "", "timings_ms": {}, "cache": "miss"})
    return EncodedResponse(
        blob=zlib.compress(stored.model_dump_json().encode("utf-8"), level=1),
        document_ids=tuple(dict.fromkeys(r.document_id for r in response.results)),
        chunk_ids=tuple(dict.fromkeys(r.chunk_id for r in response.results)),
    )


def decode_response(blob: bytes) -> SearchResponse:
    return SearchResponse.model_validate_json(zlib.decompress(blob))
