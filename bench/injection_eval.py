"""Prompt-injection detection measured out of sample (issue 37).

    .venv/bin/python bench/injection_eval.py [--seed 37] [--per-family 24]

Builds the labelled corpus (``ragline.scanning.injection_corpus``: injections generated
from template families per class, benign look-alikes), splits it by template family into
a fit half and a held-out half (fixed seed), and prints recall per class, recall if the
same text came from a high-trust source, and the false-positive rate on benign text, for
each half. Deterministic: no timing, no model.
"""

from __future__ import annotations

import argparse
from collections import Counter

from ragline.scanning.injection_corpus import PER_FAMILY, SEED, corpus, fresh_corpus, split
from ragline.scanning.injection_eval import Measured, measure


def _show(name: str, m: Measured) -> None:
    print(f"== {name}: {m.injections} injections, {m.benign} benign")
    print(f"   recall {m.recall:.3f} (as if high-trust: {m.recall_high:.3f})   "
          f"false-positive rate {m.fp_rate:.3%}")  # fmt: skip
    for klass, (hit, n) in m.by_class.items():
        what = "flagged" if klass.startswith("benign") else "caught"
        print(f"   {klass:<18} {what} {hit:>4}/{n:<4}")
    if m.missed:
        print("   missed by family:", dict(Counter(m.missed).most_common()))
    if m.false_positives:
        print("   false positives by family:", dict(Counter(m.false_positives).most_common()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--per-family", type=int, default=PER_FAMILY)
    args = ap.parse_args()
    fit, held = split(corpus(seed=args.seed, per_family=args.per_family), seed=args.seed)
    print("held-out families:", sorted({s.family for s in held}))
    _show("fit", measure(fit))
    _show("held-out", measure(held))
    _show(
        "fresh families (out of sample only at their first run: see docs)", measure(fresh_corpus())
    )


if __name__ == "__main__":
    main()
