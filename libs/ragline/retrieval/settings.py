"""Query service settings (env prefix ``RAGLINE_QUERY_``), in parts: who may call
(``QueryAuthSettings``), what a search returns and in which order (``RankingSettings``,
the answer cache's key fingerprints it), the audit log (``AuditSettings``), the rate limit
(``RateLimitSettings``), and the service's own operational knobs (``QuerySettings``, which
composes the four). Every variable keeps its name (``RAGLINE_QUERY_RRF_K``, ...).
Connection settings (DSNs, OpenSearch URL) stay in ``ragline.config.Settings``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from ragline.auth.jwt import JwtConfig
from ragline.hashing import sha256_hex

__all__ = [
    "AuditSettings",
    "QueryAuthSettings",
    "QuerySettings",
    "RankingSettings",
    "RateLimitSettings",
]

_CONFIG = SettingsConfigDict(env_prefix="RAGLINE_QUERY_", extra="ignore", frozen=True)


class QueryAuthSettings(BaseSettings):
    """Bearer-token verification: key material, expected issuer/audience, claim names."""

    model_config = _CONFIG

    jwt_secret: SecretStr | None = Field(default=None, description="HS256 secret (local use)")
    space_admin_key: SecretStr | None = Field(
        default=None,
        description="admin credential for X-Ragline-Admin-Key: only requests carrying it may "
        "pick an embedding space with X-Ragline-Space (eval of a shadow space; ADR 0013)",
    )
    jwt_public_key: SecretStr | None = Field(default=None, description="RS256 public key, PEM")
    jwt_public_key_file: Path | None = None
    jwt_jwks_file: Path | None = None
    jwt_jwks_url: str | None = None
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    jwt_leeway_s: float = Field(default=30.0, ge=0)
    jwt_insecure_allow_any_issuer_and_audience: bool = Field(
        default=False,
        description="accept RS256/JWKS tokens without checking iss and aud: any application "
        "of the identity provider could then call the API; never in production",
    )
    tenant_claim: str = "tenant"
    groups_claim: str = "groups"
    subject_claim: str = "sub"

    def jwt_config(self) -> JwtConfig:
        key = self.jwt_public_key.get_secret_value() if self.jwt_public_key else None
        if key is None and self.jwt_public_key_file is not None:
            key = self.jwt_public_key_file.read_text()
        return JwtConfig(
            hs256_secret=self.jwt_secret.get_secret_value() if self.jwt_secret else None,
            rs256_public_key=key,
            jwks_file=self.jwt_jwks_file,
            jwks_url=self.jwt_jwks_url,
            tenant_claim=self.tenant_claim,
            groups_claim=self.groups_claim,
            subject_claim=self.subject_claim,
            issuer=self.jwt_issuer,
            audience=self.jwt_audience,
            leeway_s=self.jwt_leeway_s,
            insecure_allow_any_issuer_and_audience=self.jwt_insecure_allow_any_issuer_and_audience,
        )


class RankingSettings(BaseSettings):
    """Everything that can change which results a search returns, or their order. The
    answer cache's key carries ``fingerprint()``: a field added here is in the key."""

    model_config = _CONFIG

    overfetch: int = Field(default=50, ge=1, le=1000, description="candidates per retriever")
    fusion: Literal["rrf", "score"] = Field(
        default="score",
        description="rrf: reciprocal rank fusion; score: weighted sum of min-max normalised "
        "scores (docs/evaluation.md 'Fusion')",
    )
    score_norm: Literal["minmax", "zscore"] = Field(
        default="zscore",
        description="score fusion: each leg's scores measured in standard deviations from "
        "its list's minimum, or min-max normalised over its list (retrieval/fusion.py; "
        "chosen on SciFact with Lucene's BM25: docs/evaluation.md 'Session 3')",
    )
    rrf_k: int = Field(default=60, ge=1)
    lexical_evidence_none: float = Field(
        default=2.0,
        ge=0,
        description="score fusion, evidence weighting: a BM25 hit whose score is at most "
        "this many times the idf of a term found in one chunk adds nothing "
        "(retrieval/fusion.py), unless the query's coverage (lexical_coverage_*) says the "
        "lexical leg found the question's words; 0 with lexical_evidence_ramp 0 = off. "
        "Fitted with the coverage ramp on the paraphrase set's fit half "
        "(docs/evaluation.md 'Fusion weighted by coverage')",
    )
    lexical_evidence_ramp: float = Field(
        default=1.0,
        ge=0,
        description="... and a hit counts in full from lexical_evidence_none + this many",
    )
    lexical_cosine_gap: float = Field(
        default=0.0,
        ge=0,
        description="score fusion, opt-in agreement weighting: a BM25 hit whose cosine to "
        "the query is at most this far below the dense leg's best counts in full "
        "(retrieval/fusion.py cosine_weight; docs/evaluation.md 'length-preserving')",
    )
    lexical_cosine_ramp: float = Field(
        default=0.0,
        ge=0,
        description="... and adds nothing from lexical_cosine_gap + this far below, linear "
        "between; 0 = off (default)",
    )
    lexical_coverage_none: float = Field(
        default=0.35,
        ge=0,
        le=1,
        description="score fusion, coverage weighting (issue 37): a query whose best BM25 "
        "hit holds at most this share of the query's IDF (over the words the caller's "
        "corpus has; term_evidence.TermStats.top_coverage_present) gets no floor under its "
        "BM25 hits' evidence weights; a claim's best hit holds most of its rare words, a "
        "question sharing no word with its answer one or two (retrieval/fusion.py "
        "coverage_weight, docs/evaluation.md 'Fusion weighted by coverage'; fitted on the "
        "paraphrase set's fit half). The measure adverb of a question (how long, how "
        "many, ...) does not count (term_evidence.asked_about). Costs one term statistics "
        "lookup per hybrid search, before fusion; 0 with lexical_coverage_ramp 0 = off",
    )
    lexical_coverage_ramp: float = Field(
        default=0.30,
        ge=0,
        le=1,
        description="... and every BM25 hit counts in full from lexical_coverage_none + this "
        "share, linear between",
    )
    weight_dense: float = Field(default=1.0, ge=0)
    weight_lexical: float = Field(default=1.0, ge=0)
    weight_exact: float = Field(
        default=1.0, ge=0, description="RRF weight of verbatim identifier matches; 0 = off"
    )
    hnsw_ef_search: int = Field(default=100, ge=1, le=1000)
    hnsw_max_scan_tuples: int = Field(default=20_000, ge=1)
    max_top_k: int = Field(default=50, ge=1, le=200)
    max_queries: int = Field(default=8, ge=1, le=32, description="fan-out limit per request")
    default_max_per_document: int = Field(default=3, ge=1)
    embedding_model_path: Path | None = Field(
        default=None, description="default: the embedder's model (RAGLINE_EMBEDDER_MODEL)"
    )
    abstain_min_similarity: float = Field(
        default=0.325,
        description="best dense cosine similarity below this -> abstain (tuned on the golden "
        "set and SciFact, docs/evaluation.md 'Abstention sweep')",
    )
    abstain_identifier_missing_min_similarity: float = Field(
        default=0.39,
        description="every identifier of the query occurs in none of the caller's documents: "
        "answer only from this best similarity (retrieval/abstain.py); -1 turns the rule off",
    )
    abstain_identifier_missing_min_share: float = Field(
        default=0.25,
        ge=0,
        description="... and only when those identifiers are at least this share of the "
        "query's words (0: always; fitted by bench/tune.py idents)",
    )
    abstain_model: Literal["similarity", "answerability"] = Field(
        default="answerability",
        description="answerability: hybrid searches abstain by the calibrated answerability "
        "model (retrieval/answerability.py), which also puts answerable_probability in the "
        "response; similarity: the rules only (abstain_min_similarity, identifiers, terms)",
    )
    abstain_model_path: Path | None = Field(
        default=None,
        description="an answerability model file (bench/fit_answerability.py writes one); "
        "default the shipped retrieval/answerability_model.json",
    )
    abstain_terms: bool = Field(
        default=True,
        description="hybrid searches also weigh the query's words in the caller's corpus "
        "(retrieval/term_evidence.py): answer just under the threshold on strong lexical "
        "evidence or a clear match, abstain when most of the query occurs nowhere",
    )
    abstain_min_rerank: float | None = Field(
        default=None, description="best rerank score below this -> abstain (model-specific)"
    )
    rerank_model_path: Path | None = Field(
        default=None, description="local CrossEncoder directory; rerank is off without it"
    )
    rerank_top_n: int = Field(default=30, ge=1, le=200)

    def fingerprint(self) -> str:
        """A short hash of every field, always: retuning RRF, ef_search, the abstain
        threshold or the reranker orphans every cached answer built under the old ones.
        Derived from ``model_dump``, so a field added to this class is in it without being
        named here, and no field is left out at any value ("this value behaves as before
        the field existed" is a claim about code that the key cannot check)."""
        text = json.dumps(self.model_dump(), sort_keys=True, separators=(",", ":"), default=str)
        return sha256_hex(text)[:12]


class AuditSettings(BaseSettings):
    """The audit log of searches (docs/query.md, "Audit")."""

    model_config = _CONFIG

    audit_enabled: bool = True
    audit_store_query: Literal["text", "hash"] = "hash"
    audit_retention_days: int = Field(default=90, ge=1)
    audit_hash_key: SecretStr | None = Field(
        default=None,
        description="HMAC-SHA256 key of the audit log's query hash (a deployment secret); "
        "unset: a random key per process (hashes then only compare within one process)",
    )


class RateLimitSettings(BaseSettings):
    """Per subject, per replica."""

    model_config = _CONFIG

    rate_limit_per_minute: int = Field(default=600, ge=0, description="0 disables it")
    rate_limit_burst: int = Field(default=60, ge=1)


_PARTS: dict[str, type[BaseSettings]] = {
    "auth": QueryAuthSettings,
    "ranking": RankingSettings,
    "audit": AuditSettings,
    "rate_limit": RateLimitSettings,
}


class QuerySettings(BaseSettings):
    """The query service's settings: its own operational knobs plus the four parts, each
    read from the same ``RAGLINE_QUERY_*`` variables when not given."""

    model_config = _CONFIG

    auth: QueryAuthSettings = Field(default_factory=QueryAuthSettings)
    ranking: RankingSettings = Field(default_factory=RankingSettings)
    audit: AuditSettings = Field(default_factory=AuditSettings)
    rate_limit: RateLimitSettings = Field(default_factory=RateLimitSettings)

    # ---- request size caps (before parsing and authentication)
    max_body_bytes: int = Field(default=64 * 1024, ge=1024, description="bigger: 413")
    max_header_bytes: int = Field(default=16 * 1024, ge=1024, description="bigger: 431")

    # ---- the query service's own read-only OpenSearch credential (docs/query.md)
    opensearch_user: str | None = Field(
        default=None, description="default: the pipeline's RAGLINE_OPENSEARCH_USER"
    )
    opensearch_password: SecretStr | None = None

    # ---- resources and timeouts
    embedding_cache_size: int = Field(default=4096, ge=0)
    torch_threads: int | None = Field(
        default=1,
        ge=1,
        description="torch intra-op threads of the query service: the torch embedding "
        "backend and the reranker set them when they load (None: torch default; the "
        "default onnx-int8 backend never loads torch, its session uses these threads too)",
    )
    rerank_timeout_s: float = Field(default=2.0, gt=0)
    backend_timeout_s: float = Field(default=5.0, gt=0)
    pool_min_size: int = Field(default=2, ge=1)
    pool_max_size: int = Field(default=10, ge=1)

    @classmethod
    def from_fields(cls, **values: Any) -> QuerySettings:
        """Settings from flat field names, as the variables spell them (``rrf_k=10``,
        ``jwt_secret=...``), each routed to its part; the rest from the environment.
        For tests and tuning scripts."""
        parts: dict[str, dict[str, Any]] = {}
        own: dict[str, Any] = {}
        for name, value in values.items():
            part = next((p for p, m in _PARTS.items() if name in m.model_fields), None)
            if part is None:
                own[name] = value
            else:
                parts.setdefault(part, {})[name] = value
        given: dict[str, Any] = {part: _PARTS[part](**kw) for part, kw in parts.items()}
        return cls.model_validate({**own, **given})

    @model_validator(mode="before")
    @classmethod
    def _parts_are_passed_whole(cls, data: Any) -> Any:
        """``QuerySettings(rrf_k=10)`` would be silently ignored: a part's field is given
        through its part (``ranking=RankingSettings(rrf_k=10)``)."""
        if isinstance(data, dict):
            for part, model in _PARTS.items():
                stray = sorted(k for k in data if k in model.model_fields)
                if stray:
                    raise ValueError(f"{', '.join(stray)}: pass {part}={model.__name__}(...)")
        return data
