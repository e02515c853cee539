"""Embedder settings (``RAGLINE_EMBEDDER_*``)."""

from __future__ import annotations

import math
import os
from pathlib import Path

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from ragline.config import EmbeddingModelSettings

__all__ = ["EmbedderSettings", "usable_cpus"]


class EmbedderSettings(EmbeddingModelSettings):
    """The shared model (``model``, ``model_name``, ``backend``, ``onnx_dir``, ``device``,
    ``offline``: ragline.config.models, the query service reads them too) plus the
    embedder's own knobs."""

    model_config = SettingsConfigDict(env_prefix="RAGLINE_EMBEDDER_", extra="ignore", frozen=True)

    threads: int | None = Field(
        default=None, ge=1, description="intra-op threads (torch or ONNX Runtime); default: theirs"
    )
    parallel: int | None = Field(
        default=None,
        ge=1,
        description="texts embedded at once, each alone in its own ONNX call on its own "
        "thread (the default onnx-int8, which runs one text per call): vectors are the "
        "same bytes as run one after another. Default: the CPUs this process may use "
        "(its cgroup's CPU limit included) divided by threads (threads unset: 1 each); "
        "1: one text after another",
    )
    batch_size: int = Field(
        default=64, ge=1, description="texts per model call (adaptive: the first calls' size)"
    )
    adaptive_batching: bool = Field(
        default=True,
        description="model calls sized by pending work and measured speed, length-ordered "
        "(embedding/adaptive.py); false: fixed calls of batch_size texts",
    )
    max_batch_size: int = Field(default=256, ge=1, description="adaptive: most texts per call")
    batch_target_s: float = Field(
        default=0.5, gt=0, description="adaptive: wanted duration of one model call"
    )
    max_in_flight_batches: int = Field(
        default=1, ge=1, description="model calls running at once (bounded memory/CPU)"
    )
    slice_texts: int = Field(
        default=512,
        ge=0,
        description="most texts one poll computes (x1.25 at worst): a larger document is "
        "embedded in slices, one message each, resumable from the cache (stage.py); this "
        "bounds how long one message holds the consumer. 0: no slices",
    )
    cache: bool = Field(default=True, description="use the Postgres embedding cache")
    background_cache_put: bool = Field(
        default=True,
        description="write a poll's new vectors to the cache while the next poll computes "
        "(batcher.py): the model never waits for the write",
    )
    pool_max: int = Field(default=2, ge=1)

    def texts_at_once(self) -> int:
        """``parallel``, or the usable CPUs per ``threads`` (at least 1)."""
        if self.parallel is not None:
            return self.parallel
        return max(1, usable_cpus() // (self.threads or 1))


def usable_cpus(cgroup: Path = Path("/sys/fs/cgroup")) -> int:
    """The CPUs this process may run on, capped by its cgroup's CPU quota (a container's
    CPU limit; cgroup v2 ``cpu.max`` or v1 ``cpu.cfs_quota_us``), rounded up."""
    cpus = len(os.sched_getaffinity(0))
    for quota_file, period_file in (
        (cgroup / "cpu.max", None),
        (cgroup / "cpu" / "cpu.cfs_quota_us", cgroup / "cpu" / "cpu.cfs_period_us"),
    ):
        try:
            fields = quota_file.read_text().split()
            if period_file is not None:
                fields.append(period_file.read_text().strip())
            quota, period = float(fields[0]), float(fields[1])
        except (OSError, ValueError, IndexError):  # "max", -1, absent: no quota here
            continue
        if quota > 0 and period > 0:
            return max(1, min(cpus, math.ceil(quota / period)))
    return cpus
