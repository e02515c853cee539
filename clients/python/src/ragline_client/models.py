"""Request and response models of the ragline query API: the contract clients code against.

This is the ONE definition: the query service imports these models from here (through
``ragline.retrieval.api_models``), so its OpenAPI document and this client cannot drift.
Extend only additively: the evaluation harness and downstream products parse these.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "AbstainEvidence",
    "CacheState",
    "Citation",
    "Classification",
    "DocumentResponse",
    "DocumentStatusResponse",
    "Flags",
    "Mode",
    "Problem",
    "Result",
    "Scores",
    "SearchFilters",
    "SearchRequest",
    "SearchResponse",
    "VersionScope",
]

Mode = Literal["hybrid", "dense", "lexical"]
CacheState = Literal["hit", "miss", "off"]
# the values of ragline.events.Classification (a unit test keeps the two equal)
Classification = Literal["public", "internal", "confidential", "restricted"]

_MAX_VALUES = 100


class SearchFilters(BaseModel):
    """Client filters. Lists mean "any of"; a single string is accepted as a one-item list."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source_type: tuple[str, ...] | None = Field(default=None, max_length=_MAX_VALUES)
    content_type: tuple[str, ...] | None = Field(default=None, max_length=_MAX_VALUES)
    document_ids: tuple[str, ...] | None = Field(default=None, max_length=1000)
    versions: tuple[str, ...] | None = Field(default=None, max_length=_MAX_VALUES)
    series_ids: tuple[str, ...] | None = Field(default=None, max_length=_MAX_VALUES)
    classification: tuple[Classification, ...] | None = Field(default=None, max_length=4)
    language: tuple[str, ...] | None = Field(default=None, max_length=_MAX_VALUES)
    trust: tuple[str, ...] | None = Field(default=None, max_length=3)
    effective_from: date | None = Field(default=None, description="effective_date >= this")
    effective_to: date | None = Field(default=None, description="effective_date <= this")

    @field_validator(
        "source_type",
        "content_type",
        "document_ids",
        "versions",
        "series_ids",
        "classification",
        "language",
        "trust",
        mode="before",
    )
    @classmethod
    def _one_or_many(cls, v: Any) -> Any:
        return (v,) if isinstance(v, str) else v


class SearchRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    query: str | None = Field(default=None, min_length=1, max_length=2000)
    queries: tuple[str, ...] | None = Field(
        default=None, min_length=1, max_length=32, description="fan-out: one search per query"
    )
    top_k: int = Field(default=10, ge=1, le=200)
    mode: Mode = "hybrid"
    rerank: bool = False
    expand_parents: bool = False
    max_per_document: int | None = Field(default=None, ge=1, le=100)
    mmr_lambda: float | None = Field(
        default=None, ge=0, le=1, description="MMR trade-off (1 = relevance only); off if unset"
    )
    filters: SearchFilters | None = None
    as_of: date | None = None
    include_history: bool = False

    @model_validator(mode="after")
    def _one_query_form(self) -> SearchRequest:
        if (self.query is None) == (self.queries is None):
            raise ValueError("give exactly one of `query` or `queries`")
        if self.queries is not None and any(not q.strip() or len(q) > 2000 for q in self.queries):
            raise ValueError("every entry of `queries` must be 1..2000 characters")
        if self.query is not None and not self.query.strip():
            raise ValueError("`query` is blank")
        return self

    @property
    def query_texts(self) -> tuple[str, ...]:
        return self.queries if self.queries is not None else (self.query or "",)


class Scores(BaseModel):
    bm25_rank: int | None = None
    dense_rank: int | None = None
    bm25_score: float | None = None
    dense_score: float | None = Field(default=None, description="cosine similarity")
    rrf: float | None = None
    rerank: float | None = None


class Citation(BaseModel):
    title: str | None = None
    section_path: list[str] = Field(default_factory=list)
    version: str | None = None
    effective_date: date | None = None
    uri: str | None = None
    page_start: int | None = None
    page_end: int | None = None
    line_start: int | None = None
    line_end: int | None = None


class Flags(BaseModel):
    """Retrieved text is untrusted: these tell the consumer how careful to be with it."""

    injection_suspect: bool = False
    contains_pii: bool = False
    source_trust: str | None = None


class Result(BaseModel):
    chunk_id: str
    document_id: str
    text: str
    parent_text: str | None = None
    scores: Scores
    citation: Citation
    flags: Flags
    content_type: str | None = None
    query_index: int = Field(default=0, description="which query of a fan-out found it")
    version_label: str | None = Field(default=None, description="set for version comparisons")


class VersionScope(BaseModel):
    mode: Literal["current", "explicit", "compare", "as_of", "history"]
    versions: list[str] = Field(default_factory=list)
    as_of: date | None = None
    source: Literal["default", "query", "filters", "request"] = "default"
    unresolved: list[str] = Field(
        default_factory=list,
        description="versions named in the question that match no release label the caller "
        "can see; they restrict nothing",
    )
    note: str


class AbstainEvidence(BaseModel):
    """What the abstention rule looked at. An abstention returns no results, so without
    this a caller cannot tell a near miss from no evidence at all, nor replay the rule at
    another threshold (the evaluation harness's sweep)."""

    signal: Literal["no_results", "identifier", "rerank", "similarity", "none"] = Field(
        description="the rule that decided: similarity/rerank compare the best score with "
        "the threshold; identifier = an exact identifier of the query that is rare in the "
        "caller's corpus matched (answered), or no identifier of the query occurs in it at all "
        "(abstained, identifier_not_found); "
        "none = no calibrated score (lexical search, answered); no_results (abstained)"
    )
    best_similarity: float | None = Field(
        default=None, description="best dense cosine similarity over the candidate results"
    )
    best_rerank: float | None = Field(default=None, description="best rerank score, if reranked")
    threshold: float | None = Field(
        default=None, description="the threshold the deciding score was compared with"
    )


class SearchResponse(BaseModel):
    results: list[Result]
    abstained: bool
    abstain_reason: str | None = None
    evidence: AbstainEvidence | None = None
    version_scope: VersionScope
    timings_ms: dict[str, float]
    cache: CacheState = "off"
    trace_id: str
    degraded: list[str] = Field(default_factory=list)
    mode: str = "hybrid"


class DocumentResponse(BaseModel):
    document_id: str
    status: str
    title: str | None = None
    uri: str | None = None
    source_type: str | None = None
    mime_type: str | None = None
    language: str | None = None
    version: str | None = None
    series_id: str | None = None
    effective_date: date | None = None
    expiry_date: date | None = None
    superseded: bool = False
    superseded_by: str | None = None
    classification: str | None = None
    trust: str | None = None
    generation: int = 0
    chunk_count: int = 0
    findings: dict[str, Any] | None = Field(default=None, description="counts only, no values")
    created_at: datetime | None = None
    updated_at: datetime | None = None
    indexed_at: datetime | None = None
    deleted_at: datetime | None = None


class DocumentStatusResponse(BaseModel):
    document_id: str
    status: str
    stage: str | None = None
    reason_code: str | None = None
    reason: str | None = None
    findings: dict[str, Any] | None = None
    source_seq: int | None = None
    updated_at: datetime | None = None
    # the documents row as the caller sees it: null with never_indexed=true when the
    # status is shown through its own ACL only (e.g. quarantined before first indexing)
    doc_status: str | None = None
    never_indexed: bool = False


class Problem(BaseModel):
    """RFC 7807 problem details."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str | None = None
    instance: str | None = None
    invalid_params: list[dict[str, str]] | None = None
    trace_id: str | None = None
