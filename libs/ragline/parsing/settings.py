"""Parser limits and execution settings (environment prefix ``RAGLINE_PARSER_``)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from ragline.text.weight import HeavyThresholds

__all__ = ["ParserSettings"]

_MIB = 1024 * 1024


class ParserSettings(HeavyThresholds):
    """Every limit that protects the parser from hostile or accidental input.

    Exceeding one quarantines the document with a specific reason code instead of
    letting the consumer crash or stall. ``heavy_chars``, ``heavy_blocks``,
    ``heavy_lines``, ``heavy_cells`` and ``heavy_line_chars`` (``HeavyThresholds``, the
    chunker's defaults): a parsed document over one that came on the interactive lane is
    sent on in the bulk lane (docs/lanes.md).
    """

    model_config = SettingsConfigDict(env_prefix="RAGLINE_PARSER_", extra="ignore", frozen=True)

    max_bytes: int = Field(default=20 * _MIB, ge=1, description="raw document size")
    max_pages: int = Field(default=2000, ge=1, description="PDF pages")
    max_blocks: int = Field(default=50_000, ge=1, description="blocks per parsed document")
    max_chars: int = Field(
        default=50_000_000, ge=1, description="extracted text per document (decompression guard)"
    )
    max_zip_uncompressed_bytes: int = Field(
        default=200 * _MIB, ge=1, description="sum of declared member sizes of a DOCX"
    )
    max_zip_ratio: float = Field(
        default=100.0, gt=1, description="uncompressed/compressed ratio per member and overall"
    )
    max_zip_members: int = Field(default=5000, ge=1)
    csv_rows_per_block: int = Field(
        default=200, ge=1, description="a CSV/TSV is cut into table blocks of this many rows"
    )
    code_unit_max_lines: int = Field(
        default=80, ge=5, description="generic code: units longer than this are split again"
    )
    workers: int = Field(
        default=1,
        ge=0,
        description="parser processes; 0 parses in a thread of the service process",
    )
    timeout_s: float = Field(
        default=120.0, gt=0, description="per document; enforced only with workers >= 1"
    )
    heavy_bytes: int = Field(
        default=1_000_000,
        ge=0,
        description="with workers >= 1, a document larger than this is parsed in a process "
        "of its own that exits afterwards (the workers stay free, memory is given back); "
        "0 = never",
    )
    inline_text_bytes: int = Field(
        default=65_536,
        ge=0,
        description="with workers >= 1, plain text up to this size is parsed in a thread of "
        "the service instead of a worker process (its parse is linear and far cheaper than "
        "the hop to a worker); 0 = every document goes to the workers",
    )
    worker_max_tasks: int = Field(
        default=5000, ge=1, description="documents before a worker process is replaced"
    )
    worker_memory_mb: int = Field(
        default=3072, ge=0, description="address-space limit of a worker process; 0 = none"
    )
