"""Recall and false-positive rate of the injection detector on a labelled corpus.

Recall is measured per injection class and overall, the false-positive rate per benign
kind and overall; every sample is scanned at its own trust level, and injections are
also scanned as if they came from a high-trust source (``recall_high``) to show what the
low-trust position adds. Used by ``bench/injection_eval.py`` (prints the fit and held-out
halves) and ``tests/unit/scanning/test_injection_out_of_sample.py`` (asserts on the
held-out half).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from ragline.events import TrustLevel
from ragline.scanning.injection import InjectionScanner
from ragline.scanning.injection_corpus import Sample

__all__ = ["Measured", "measure"]


@dataclass(kw_only=True)
class Measured:
    injections: int = 0
    benign: int = 0
    recall: float = 0.0
    recall_high: float = 0.0
    fp_rate: float = 0.0
    by_class: dict[str, tuple[int, int]] = field(default_factory=dict)  # class -> (hit, n)
    missed: list[str] = field(default_factory=list)  # families of misses (no text)
    false_positives: list[str] = field(default_factory=list)  # benign kinds flagged


def measure(samples: list[Sample], scanner: InjectionScanner | None = None) -> Measured:
    sc = scanner or InjectionScanner()
    hits: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    out = Measured()
    high = 0
    for s in samples:
        flagged = bool(sc.scan(s.text, s.trust))
        hits[s.klass][0] += flagged
        hits[s.klass][1] += 1
        if s.injection:
            out.injections += 1
            high += bool(sc.scan(s.text, TrustLevel.HIGH))
            if not flagged:
                out.missed.append(s.family)
        else:
            out.benign += 1
            if flagged:
                out.false_positives.append(s.family)
    caught = out.injections - len(out.missed)
    out.recall = caught / out.injections if out.injections else 1.0
    out.recall_high = high / out.injections if out.injections else 1.0
    out.fp_rate = len(out.false_positives) / out.benign if out.benign else 0.0
    out.by_class = {k: (v[0], v[1]) for k, v in sorted(hits.items())}
    return out
