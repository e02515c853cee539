"""Chunker settings (``RAGLINE_CHUNKER_*``) and the strategy version derived from them.

The strategy version is part of every chunk id, so it changes whenever anything that
shapes the chunks changes: the algorithm version below or any setting. Same input + same
settings => same ids; new settings => new ids, never a silent mix of two chunkings.
"""

from __future__ import annotations

from pydantic import Field, model_validator
from pydantic_settings import SettingsConfigDict

from ragline.config import TokenizerSettings
from ragline.errors import ConfigError
from ragline.hashing import sha256_hex
from ragline.text.weight import HeavyThresholds

__all__ = ["ALGORITHM_VERSION", "TOKENIZER_NAME", "ChunkerSettings"]

# bump when the splitting/rendering code changes what it emits for the same input
ALGORITHM_VERSION = "2"  # 2: wide tables cut into column bands (bounded header)
TOKENIZER_NAME = "sentence-transformers/all-MiniLM-L6-v2"

# [CLS] and [SEP] wrap every sequence the embedding model reads
_SPECIAL_TOKENS = 2


class ChunkerSettings(TokenizerSettings, HeavyThresholds):
    """Budgets in word pieces of the embedding model's own tokenizer (the tokenizer and
    the header budget are shared with the enricher: ragline.config.models)."""

    model_config = SettingsConfigDict(env_prefix="RAGLINE_CHUNKER_", extra="ignore", frozen=True)

    model_max_tokens: int = Field(
        default=256, ge=16, description="word pieces the embedding model reads, specials included"
    )
    child_max_tokens: int = Field(default=200, ge=8, description="child text, no specials")
    child_max_chars: int = Field(
        default=2000,
        ge=64,
        description="safety cap: a 100+ char word is ONE [UNK] piece, so tokens alone can lie",
    )
    overlap_ratio: float = Field(
        default=0.15, ge=0.0, le=0.3, description="target overlap between consecutive children"
    )
    parent_max_tokens: int = Field(
        default=1500, ge=64, description="sections above this become windows of this size"
    )
    table_header_max_tokens: int = Field(
        default=100,
        ge=4,
        description="table header repeated in each child; capped at half the child budget",
    )

    # heavy documents (ragline.text.weight, docs/lanes.md): heavy_chars, heavy_blocks,
    # heavy_lines, heavy_cells and heavy_line_chars come from HeavyThresholds; none of
    # these shape chunks
    heavy_children: int = Field(
        default=1_000,
        ge=0,
        description="an output with more child chunks than this goes to the bulk lane "
        "(about the chunks of the connector's 1 MB; lower and mid-size edits would wait "
        "behind a backfill); 0 = never",
    )
    max_children: int = Field(
        default=10_000,
        ge=0,
        description="a document with more child chunks is quarantined (too_heavy): what "
        "the stages after the chunker spend on one document is bounded; 0 = no cap",
    )
    heavy_process: bool = Field(
        default=True,
        description="chunk a heavy document in a process of its own that exits afterwards "
        "(false: in the service's worker thread, without a time bound)",
    )
    heavy_timeout_s: float = Field(
        default=300.0,
        gt=0,
        description="the longest a heavy document may take (process start included); "
        "past it the document is quarantined (chunk_timeout)",
    )
    heavy_memory_mb: int = Field(
        default=3072,
        ge=0,
        description="address-space limit of a heavy document's process; past it the "
        "document is quarantined (resource_limit); 0 = none",
    )

    @model_validator(mode="after")
    def _fits_model(self) -> ChunkerSettings:
        need = self.child_max_tokens + self.header_budget_tokens + _SPECIAL_TOKENS
        if need > self.model_max_tokens:
            raise ConfigError(
                f"child_max_tokens ({self.child_max_tokens}) + header_budget_tokens "
                f"({self.header_budget_tokens}) + {_SPECIAL_TOKENS} special tokens exceed "
                f"model_max_tokens ({self.model_max_tokens})"
            )
        if self.parent_max_tokens < self.child_max_tokens:
            raise ConfigError("parent_max_tokens must be >= child_max_tokens")
        return self

    @property
    def overlap_target(self) -> int:
        return round(self.overlap_ratio * self.child_max_tokens)

    @property
    def overlap_min(self) -> int:
        """Sentence-aligned overlap is preferred when at least this large (~10 %)."""
        return round(self.overlap_ratio * 2 / 3 * self.child_max_tokens)

    @property
    def overlap_max(self) -> int:
        """Overlap never exceeds this (~20 %), so each child is mostly new text."""
        return round(self.overlap_ratio * 4 / 3 * self.child_max_tokens)

    @property
    def table_header_tokens(self) -> int:
        """The header budget in effect: never more than half a child."""
        return min(self.table_header_max_tokens, self.child_max_tokens // 2)

    @property
    def strategy_version(self) -> str:
        """``<algorithm>.<fingerprint of every shaping setting>``, e.g. ``1.3fa9c2d1``."""
        shaping = (
            TOKENIZER_NAME,
            self.model_max_tokens,
            self.child_max_tokens,
            self.header_budget_tokens,
            self.child_max_chars,
            self.overlap_ratio,
            self.parent_max_tokens,
            self.table_header_tokens,
        )
        return f"{ALGORITHM_VERSION}.{sha256_hex(repr(shaping))[:8]}"
