"""One result as evidence for a framework or an agent: text, citation, scores and flags.

The framework retrievers (LangChain, LlamaIndex) and ragline's MCP server all describe a
result with ``metadata()``, so the injection/PII flags travel the same way everywhere:
nested under ``flags`` and, for filtering without digging, as top-level booleans.
Retrieved text is data, never instructions (``untrusted`` is always true).
"""

from __future__ import annotations

from typing import Any

from ragline_client.models import Result, SearchResponse

__all__ = ["cite", "metadata", "primary_score"]


def primary_score(result: Result) -> float | None:
    """The score the service ranked by: rerank, else fused RRF, else a single list's."""
    s = result.scores
    for value in (s.rerank, s.fused, s.dense_score, s.bm25_score):
        if value is not None:
            return float(value)
    return None


def _span(start: int, end: int | None) -> str:
    return f"{start}" if end in (None, start) else f"{start}-{end}"


def cite(result: Result) -> str:
    """A one-line human citation: ``Title › section (v2.0, lines 3-9) <uri>``."""
    c = result.citation
    head = c.title or result.document_id
    if c.section_path:
        head += " › " + " › ".join(c.section_path)
    where = []
    if c.version:
        where.append(f"v{c.version}" if c.version[:1].isdigit() else c.version)
    if c.page_start is not None:
        where.append(f"p. {_span(c.page_start, c.page_end)}")
    elif c.line_start is not None:
        where.append(f"lines {_span(c.line_start, c.line_end)}")
    if where:
        head += f" ({', '.join(where)})"
    if c.uri:
        head += f" <{c.uri}>"
    return head


def metadata(result: Result, response: SearchResponse | None = None) -> dict[str, Any]:
    """JSON-safe metadata of one result (no text): what a framework document carries."""
    flags = result.flags
    out: dict[str, Any] = {
        "source": "ragline",
        "document_id": result.document_id,
        "chunk_id": result.chunk_id,
        "citation": result.citation.model_dump(mode="json"),
        "cite": cite(result),
        "score": primary_score(result),
        "scores": result.scores.model_dump(mode="json"),
        "flags": flags.model_dump(mode="json"),
        "injection_suspect": flags.injection_suspect,
        "contains_pii": flags.contains_pii,
        "source_trust": flags.source_trust,
        "untrusted": True,
        "content_type": result.content_type,
        "query_index": result.query_index,
    }
    if result.version_label is not None:
        out["version_label"] = result.version_label
    if response is not None:
        out["trace_id"] = response.trace_id
        if response.degraded:
            out["degraded"] = list(response.degraded)
    return out
