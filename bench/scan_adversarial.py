"""Adversarial scan benchmark: pathological input for every pattern beside normal text.

    .venv/bin/python bench/scan_adversarial.py [--size 100000] [--max-slowdown 10]

Detection (every secret detector plus the default policy's PII patterns, on the
normalized view, exactly what a scanner worker runs per document) over one document per
input class of ``--size`` characters (``ragline.scanning.adversarial``), and over
ordinary prose of the same size (the scanner's prose fixtures, repeated). Prints KB per
CPU-second for each, and its ratio to the normal rate; exits 1 when a class is more than
``--max-slowdown`` (10) times slower than normal. CPU time, not wall time: the machine
is shared, and CPU time is what one document costs the scanner.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from _paths import OUT, REPO, add_quick

from ragline.events import Classification, TrustLevel
from ragline.scanning.adversarial import adversarial_inputs
from ragline.scanning.engine import Detectors, EngineConfig
from ragline.scanning.policy import PolicyContext, PolicySet

PROSE = REPO / "tests" / "fixtures" / "scanning" / "prose"


def normal_text(size: int) -> str:
    prose = "\n\n".join(p.read_text(encoding="utf-8") for p in sorted(PROSE.glob("*.md")))
    return (prose * (size // len(prose) + 1))[:size]


def rate(det: Detectors, text: str, plan: object, repeat: int) -> tuple[float, int]:
    """KB per CPU-second (best of ``repeat``) and the number of findings."""
    best = float("inf")
    n = 0
    for _ in range(repeat):
        t0 = time.process_time()
        res = det.detect([text], plan)  # type: ignore[arg-type]
        best = min(best, time.process_time() - t0)
        n = len(res.findings)
    kb = len(text.encode("utf-8")) / 1000
    return kb / max(best, 1e-6), n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--max-slowdown", type=float, default=10.0)
    ap.add_argument("--json", type=Path, default=OUT / "scan_adversarial.json")
    add_quick(ap)
    args = ap.parse_args()
    if args.quick:
        args.size, args.repeat = 5_000, 1
    det = Detectors(EngineConfig())
    det.load()
    ctx = PolicyContext(
        tenant_id="bench", source="bench", source_type="generic",
        classification=Classification.INTERNAL, trust=TrustLevel.MEDIUM,
    )  # fmt: skip
    plan = PolicySet.default().resolve(ctx).plan()
    normal, _ = rate(det, normal_text(args.size), plan, args.repeat)
    rows = []
    print(f"{'input class':34} {'KB/CPU-s':>10} {'x normal':>9} {'findings':>9}")
    print(f"{'normal prose (fixtures)':34} {normal:10.1f} {1.0:9.2f} {'-':>9}")
    for name, text in adversarial_inputs(args.size).items():
        r, n = rate(det, text, plan, args.repeat)
        rows.append({"class": name, "kb_per_cpu_s": round(r, 1), "ratio": round(r / normal, 3),
                     "findings": n})  # fmt: skip
        print(f"{name:34} {r:10.1f} {r / normal:9.2f} {n:9d}", flush=True)
    worst = min(rows, key=lambda x: x["ratio"])
    ok = worst["ratio"] >= 1 / args.max_slowdown
    print(f"\nslowest: {worst['class']} at {worst['ratio']:.2f}x normal "
          f"({'ok' if ok else 'FAIL'}: limit {1 / args.max_slowdown:.2f}x)")  # fmt: skip
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps(
            {
                "size": args.size,
                "normal_kb_per_cpu_s": round(normal, 1),
                "classes": rows,
                "slowest": worst,
                "ok": ok,
            },
            indent=2,
        )
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
