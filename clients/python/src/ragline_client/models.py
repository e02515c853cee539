"""Request and response models of the ragline query API: the contract clients code against.

This is the ONE definition: the query service imports these models from here (through
``ragline.retrieval.api_models``), so its OpenAPI document and this client cannot drift.
Extend only additively: the evaluation harness and downstream products parse these.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    field_validator,
    model_validator,
)

from ragline_client.text_rules import NO_NUL_PATTERN, NON_BLANK_PATTERN, NonBlankStr, SafeStr

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
_LIST_FIELDS = (
    "source_type",
    "content_type",
    "document_ids",
    "versions",
    "series_ids",
    "classification",
    "language",
    "trust",
)
# no NUL, no lone surrogates: every value must reach Postgres and OpenSearch
FilterText = Annotated[SafeStr, Field(json_schema_extra={"pattern": NO_NUL_PATTERN})]


def _one_or_many_schema(schema: dict[str, Any]) -> None:
    """The schema says what the validator accepts: a list, one value (a one-item list),
    or null."""
    for name in _LIST_FIELDS:
        prop = schema["properties"][name]
        array = next(s for s in prop["anyOf"] if s.get("type") == "array")
        prop["anyOf"] = [array["items"], array, {"type": "null"}]


class SearchFilters(BaseModel):
    """Client filters. Lists mean "any of"; a single string is accepted as a one-item list."""

    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=_one_or_many_schema)

    source_type: tuple[FilterText, ...] | None = Field(default=None, max_length=_MAX_VALUES)
    content_type: tuple[FilterText, ...] | None = Field(default=None, max_length=_MAX_VALUES)
    document_ids: tuple[FilterText, ...] | None = Field(default=None, max_length=1000)
    versions: tuple[FilterText, ...] | None = Field(default=None, max_length=_MAX_VALUES)
    series_ids: tuple[FilterText, ...] | None = Field(default=None, max_length=_MAX_VALUES)
    classification: tuple[Classification, ...] | None = Field(default=None, max_length=4)
    language: tuple[FilterText, ...] | None = Field(default=None, max_length=_MAX_VALUES)
    trust: tuple[FilterText, ...] | None = Field(default=None, max_length=3)
    effective_from: date | None = Field(default=None, description="effective_date >= this")
    effective_to: date | None = Field(default=None, description="effective_date <= this")

    @field_validator(*_LIST_FIELDS, mode="before")
    @classmethod
    def _one_or_many(cls, v: Any) -> Any:
        # a JSON array reaches a before-validator as a list, which strict mode (the
        # server's) would refuse for a tuple field
        return (v,) if isinstance(v, str) else tuple(v) if isinstance(v, list) else v


MAX_QUERY_CHARS = 2000
# hard caps of the model; the server's OpenAPI document carries the (lower) limits in
# force (its max_top_k / max_queries settings), which it enforces too
TOP_K_CAP = 200
QUERIES_CAP = 32


def _integral_float(v: Any) -> Any:
    """JSON Schema counts 4.0 as an integer; strict validation would not."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


# no coercion from strings or booleans, but 4.0 is 4 (as in JSON Schema)
JsonInt = Annotated[int, BeforeValidator(_integral_float)]

QueryText = Annotated[
    NonBlankStr,
    Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        json_schema_extra={"pattern": NON_BLANK_PATTERN},
        description="not blank; no NUL or lone surrogates",
    ),
]

# exactly one of `query` / `queries` (an explicit null counts as absent)
_ONE_QUERY_FORM: list[JsonValue] = [
    {
        "required": ["query"],
        "properties": {"query": {"type": "string"}, "queries": {"type": "null"}},
    },
    {
        "required": ["queries"],
        "properties": {"queries": {"type": "array"}, "query": {"type": "null"}},
    },
]


class SearchRequest(BaseModel):
    """Exactly one of ``query`` and ``queries``. The server validates with
    ``strict=True`` from JSON: no type coercion, so the schema is the whole contract."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        json_schema_extra={
            "oneOf": _ONE_QUERY_FORM,
            "examples": [
                {"query": "how do I rotate the signing key?", "top_k": 5},
                {"queries": ["ERR-4711", "upload stalls"], "mode": "hybrid", "rerank": True},
            ],
        },
    )

    query: QueryText | None = None
    queries: tuple[QueryText, ...] | None = Field(
        default=None,
        min_length=1,
        max_length=QUERIES_CAP,
        description="fan-out: one search per query",
    )
    top_k: JsonInt = Field(default=10, ge=1, le=TOP_K_CAP)
    mode: Mode = "hybrid"
    rerank: bool = False
    expand_parents: bool = False
    max_per_document: (
        Annotated[int, Field(ge=1, le=100), BeforeValidator(_integral_float)] | None
    ) = None
    mmr_lambda: float | None = Field(
        default=None, ge=0, le=1, description="MMR trade-off (1 = relevance only); off if unset"
    )
    filters: SearchFilters | None = None
    as_of: date | None = None
    include_history: bool = False
    answerable_threshold: float | None = Field(
        default=None,
        ge=0.01,
        le=0.99,
        description="hybrid searches: abstain when answerable_probability is below this "
        "(default the fitted model's threshold, evidence.threshold); a caller that prefers "
        "fewer wrong answers raises it, one that prefers fewer abstentions lowers it",
    )

    @model_validator(mode="after")
    def _one_query_form(self) -> SearchRequest:
        if (self.query is None) == (self.queries is None):
            raise ValueError("give exactly one of `query` or `queries`")
        return self

    @property
    def query_texts(self) -> tuple[str, ...]:
        return self.queries if self.queries is not None else (self.query or "",)


class Scores(BaseModel):
    bm25_rank: int | None = None
    dense_rank: int | None = None
    bm25_score: float | None = None
    dense_score: float | None = Field(default=None, description="cosine similarity")
    fused: float | None = Field(
        default=None,
        description="the score the two legs were fused into, by which results are ordered "
        "before reranking (reciprocal rank fusion or normalised-score fusion: the query "
        "service's RAGLINE_QUERY_FUSION)",
    )
    rrf: float | None = Field(
        default=None,
        deprecated="`rrf` is `fused` (it is not always reciprocal rank fusion); it is "
        "removed in the next release",
        description="DEPRECATED: the same value as `fused`, removed in the next release",
    )
    rerank: float | None = None

    @model_validator(mode="after")
    def _fused_and_its_old_name(self) -> Scores:
        """One value under both names: an older server sends only ``rrf``, an older
        client reads only ``rrf``."""
        old = self.__dict__["rrf"]  # without the deprecation warning
        if self.fused is None and old is not None:
            self.__dict__["fused"] = old
        elif old is None and self.fused is not None:
            self.__dict__["rrf"] = self.fused
        return self


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
    in_force_from: date | None = Field(
        default=None,
        description='with as_of: the question named a period ("between 2021 and 2023"); '
        "every version in force on some day from this date to as_of answers",
    )
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

    signal: Literal[
        "no_results", "identifier", "rerank", "similarity", "model", "terms", "none"
    ] = Field(
        description="the rule that decided: similarity/rerank compare the best score with "
        "the threshold; identifier = an exact identifier of the query that is rare in the "
        "caller's corpus matched (answered), or no identifier of the query occurs in it at all "
        "(abstained, identifier_not_found); model = the calibrated answerability model "
        "abstained on what the rules answered (hybrid searches: answerable_probability "
        "below threshold, low_answerability); "
        "terms = the query's words in the caller's corpus (answered just under the "
        "similarity threshold on strong lexical evidence or a clear match, or abstained, "
        "terms_not_found); "
        "none = no calibrated score (lexical search, answered); no_results (abstained)"
    )
    best_similarity: float | None = Field(
        default=None, description="best dense cosine similarity over the candidate results"
    )
    best_rerank: float | None = Field(default=None, description="best rerank score, if reranked")
    threshold: float | None = Field(
        default=None, description="the threshold the deciding score was compared with"
    )
    answerable_probability: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="calibrated probability that the caller's visible corpus answers the "
        "query (signal model; 0 with no results; null when the model does not apply: "
        "dense-only or lexical-only searches, or the model turned off)",
    )
    features: dict[str, float | None] | None = Field(
        default=None,
        description="the model's inputs (docs/query.md: sim_max, lex_peak, top_coverage, "
        "missing_share, ...); null for a statistic that could not be read",
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
