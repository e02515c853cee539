"""Fit the answerability model (retrieval/answerability.py) on the fit half of the
answerability benchmark and report it on the held-out half.

Input: a ``report.json`` of ``ragline eval --dataset answerability:<SciFact> --modes
hybrid`` (every hybrid case carries the model's inputs, ``features``, whatever model the
service ran). Fits a logistic regression over the standardised features, L2-penalised
and sign-constrained (projected gradient: each weight stays on the side ``SIGNS`` gives
it, so the probability is monotone in the evidence), on the ``fit:`` cases only; picks
the threshold on the fit half (the highest that abstains on at most ``--max-false``
of its answerable cases); writes the model file (``--write``), the reliability plot and
prints the held-out figures, replayed from the features (the service's decision is a
function of them alone, so the replay is what the service will answer).

Refit on a new embedder, one command: ``make answerability-fit`` (ingest through a
private stack, query, fit, write libs/ragline/retrieval/answerability_model.json).

    .venv/bin/python bench/fit_answerability.py --report R/report.json [--write] [--l2 1]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
# corpus-size dependent (the IDF shares) and measured without gain (the passage inputs)
_IDF_SHARES = ("top_coverage", "missing_share", "missing_terms")
PASSAGE = ("sent_max", "cover_top", "cover_top3", "cover_long", "cover_numbers", "sim_lead")
DROPPED = (*_IDF_SHARES, *PASSAGE)


def _matrix(cases: list[Any], feats: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    x = np.array(
        [
            [np.nan if (v := (c.features or {}).get(f)) is None else float(v) for f in feats]
            for c in cases
        ],
        dtype=float,
    )
    y = np.array([0.0 if c.expect_abstain else 1.0 for c in cases])
    return x, y


def auc(x: np.ndarray, y: np.ndarray) -> float:
    """Mann-Whitney AUC of ``x`` for ``y == 1`` (ties count half; missing values out):
    how well one input alone ranks answerable cases above unanswerable ones."""
    ok = np.isfinite(x)
    x, y = x[ok], y[ok]
    pos, neg = x[y == 1], x[y == 0]
    if not len(pos) or not len(neg):
        return float("nan")
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (len(pos) * len(neg)))


def fit(
    x: np.ndarray, y: np.ndarray, signs: np.ndarray, l2: float, steps: int = 20000
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Mean, scale, weights, bias of a sign-constrained L2 logistic regression (missing
    values impute the mean: a standardised 0)."""
    mean = np.nanmean(x, axis=0)
    scale = np.nanstd(x, axis=0)
    scale[~np.isfinite(scale) | (scale < 1e-6)] = 1.0
    mean[~np.isfinite(mean)] = 0.0
    z = np.nan_to_num((x - mean) / scale, nan=0.0)
    n, d = z.shape
    w, b = np.zeros(d), float(np.log(y.mean() / (1 - y.mean())))
    lr = 0.5
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(z @ w + b)))
        gw = z.T @ (p - y) / n + l2 * w / n
        gb = float(np.mean(p - y))
        w = w - lr * gw
        b -= lr * gb
        w = np.where(w * signs <= 0, 0.0, w)  # every weight on its side; sign 0: left out
    return mean, scale, w, b


def compare(
    cases: list[Any],
    feats: tuple[str, ...],
    signs: dict[str, int],
    candidates: dict[str, set[str]],
    *,
    l2: float,
    max_false: float,
) -> None:
    """Out-of-fold probabilities (5 folds by source query, within ``cases``: the fit
    half) per candidate input set: AUC, and the recall of rules + model at the highest
    threshold abstaining on at most ``max_false`` of the answerable cases."""
    x, y = _matrix(cases, feats)
    rules = np.array([c.abstained and c.abstain_reason != "low_answerability" for c in cases])
    queries = sorted({c.case_id.split(":")[2] for c in cases})
    np.random.default_rng(0).shuffle(queries)
    fold_of = {q: i % 5 for i, q in enumerate(queries)}
    fold = np.array([fold_of[c.case_id.split(":")[2]] for c in cases])
    ans = y == 1
    for name, used in candidates.items():
        sg = np.array([float(signs[f]) if f in used else 0.0 for f in feats])
        p = np.zeros(len(y))
        for k in range(5):
            tr = fold != k
            mean, scale, w, b = fit(x[tr], y[tr], sg, l2, steps=4000)
            z = np.nan_to_num((x[~tr] - mean) / scale, nan=0.0)
            p[~tr] = 1 / (1 + np.exp(-np.clip(z @ w + b, -60, 60)))
        recall = 0.0
        for t in np.unique(p):
            abst = rules | (p < t)
            if (abst & ans).sum() <= max_false * ans.sum():
                recall = float((abst & ~ans).sum() / (~ans).sum())
        print(f"  {name:24s} CV AUC {auc(p, y):.3f}  recall {recall:.3f}")


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--report", type=Path, required=True)
    p.add_argument("--l2", type=float, default=1.0)
    p.add_argument("--max-false", type=float, default=0.015, help="answerable abstained (fit)")
    p.add_argument(
        "--drop",
        default=",".join(DROPPED),
        help="comma-separated features left out (weight 0). Default: the IDF shares of the "
        "query's words, which depend on the corpus size, and the passage-level inputs, "
        "which lowered recall at the operating point in cross-validation on the fit half "
        "(--compare; docs/evaluation.md)",
    )
    p.add_argument(
        "--compare",
        action="store_true",
        help="before fitting: 5-fold cross-validation on the fit half (folds by query) of "
        "the default inputs against the default plus the passage-level ones: AUC and "
        "recall at --max-false answerable abstained",
    )
    p.add_argument(
        "--rules-report",
        type=Path,
        help="a report of the same benchmark with RAGLINE_QUERY_ABSTAIN_MODEL=similarity: "
        "the rules' decisions (default: read from --report, whose abstentions other than "
        "low_answerability are the rules')",
    )
    p.add_argument("--write", action="store_true", help="write the model file")
    p.add_argument("--model-out", type=Path, default=None)
    p.add_argument(
        "--plot", type=Path, default=ROOT / "docs" / "img" / "answerability-reliability.png"
    )
    p.add_argument(
        "--out", type=Path, default=ROOT / "bench" / "out" / "answerability" / "fit.json"
    )
    args = p.parse_args(argv)

    from ragline.evaluation.answerability import ece, held_out_summary, reliability, render_held_out
    from ragline.evaluation.plot import plot_reliability
    from ragline.evaluation.report import load_report
    from ragline.evaluation.summary import CaseResult
    from ragline.retrieval.answerability import (
        FEATURES,
        MODEL_FILE,
        SIGNS,
        THRESHOLD_BOUNDS,
        AnswerabilityModel,
    )

    report = load_report(args.report)
    if report.meta.kind != "answerability":
        print(f"{args.report}: not an answerability report", file=sys.stderr)
        return 2
    cases = [
        c
        for c in report.cases
        if c.mode == "hybrid" and c.expect_abstain is not None and c.error is None
    ]
    fit_cases = [c for c in cases if c.case_id.startswith("fit:")]
    held = [c for c in cases if c.case_id.startswith("heldout:")]
    dropped = {f for f in args.drop.split(",") if f}
    signs = np.array([0.0 if f in dropped else SIGNS[f] for f in FEATURES])
    if args.compare:
        kept = {f for f in FEATURES if f not in dropped}
        print(f"cross-validation on the fit half (answerable abstained <= {args.max_false}):")
        compare(
            fit_cases,
            FEATURES,
            SIGNS,
            {
                "these inputs": kept,
                "+ sentence max-sim": kept | {"sent_max"},
                "+ word coverage": kept | {"cover_top", "cover_top3", "cover_long"},
                "+ every passage input": kept | set(PASSAGE),
            },
            l2=args.l2,
            max_false=args.max_false,
        )
    x, y = _matrix(fit_cases, FEATURES)
    # a case without features (no results: the service answers p = 0) is out of the fit
    has = np.array([c.features is not None for c in fit_cases])
    mean, scale, w, b = fit(x[has], y[has], signs, args.l2)
    ruled_fit = np.array(
        [c.abstained and c.abstain_reason != "low_answerability" for c in fit_cases]
    )
    print("AUC of each input alone, fit half (answerable vs not; all / where the rules answer):")
    aucs = {}
    for i, f in enumerate(FEATURES):
        a_all, a_ans = auc(x[:, i], y), auc(x[~ruled_fit, i], y[~ruled_fit])
        aucs[f] = {"all": round(a_all, 4), "rules_answer": round(a_ans, 4)}
        print(f"  {f:14s} {a_all:.3f} / {a_ans:.3f}  (n {int(np.isfinite(x[:, i]).sum())})")

    def probs(cs: list[CaseResult]) -> list[float]:
        xx, _ = _matrix(cs, FEATURES)
        zz = np.nan_to_num((xx - mean) / scale, nan=0.0)
        pp = 1 / (1 + np.exp(-np.clip(zz @ w + b, -60, 60)))
        return [0.0 if c.features is None else float(v) for c, v in zip(cs, pp, strict=True)]

    if args.rules_report is not None:
        by_rules = {
            c.case_id: c.abstained
            for c in load_report(args.rules_report).cases
            if c.mode == "hybrid"
        }
    else:
        by_rules = {
            c.case_id: c.abstained and c.abstain_reason != "low_answerability" for c in cases
        }
    p_fit = probs(fit_cases)
    # the threshold: the highest whose union with the rules abstains on at most
    # --max-false of the fit half's answerable cases
    ans = [
        (pv, by_rules[c.case_id])
        for pv, c in zip(p_fit, fit_cases, strict=True)
        if not c.expect_abstain
    ]
    budget = int(np.floor(args.max_false * len(ans))) - sum(1 for _, r in ans if r)
    free = sorted(pv for pv, r in ans if not r)
    k = max(0, budget)
    lo, hi = THRESHOLD_BOUNDS
    threshold = float(min(hi, max(lo, free[k] if k < len(free) else 0.5)))
    digest = hashlib.sha256(json.dumps([list(mean), list(scale), list(w), b]).encode()).hexdigest()
    model = AnswerabilityModel(
        version=f"{datetime.now(UTC):%Y-%m-%d}-{digest[:8]}",
        mean=tuple(round(float(v), 6) for v in mean),
        scale=tuple(round(float(v), 6) for v in scale),
        weights=tuple(round(float(v), 6) for v in w),
        bias=round(b, 6),
        threshold=round(threshold, 4),
    )

    def replay(cs: list[CaseResult], ps: list[float]) -> list[CaseResult]:
        """What the service decides with this model: the rules, or the model below its
        threshold (a function of the recorded features and rule decisions alone)."""
        return [
            c.model_copy(
                update={
                    "abstained": by_rules[c.case_id] or pv < model.threshold,
                    "answerable_probability": pv,
                }
            )
            for c, pv in zip(cs, ps, strict=True)
        ]

    p_held = probs(held)
    s_fit = held_out_summary(replay(fit_cases, p_fit), half="fit")
    s_held = held_out_summary(replay(held, p_held))
    print(f"fit: {len(fit_cases)} cases, held-out: {len(held)}; l2 {args.l2}")
    print(f"  left out: {sorted(dropped) or 'none'}")
    for f, wi in zip(FEATURES, w, strict=True):
        print(f"  {f:14s} w={wi:+.3f}")
    print(f"  bias {b:+.3f}  threshold {threshold:.4f}")
    print(render_held_out(s_fit))
    print(render_held_out(s_held))
    lab_h = [not c.expect_abstain for c in held]
    out = {
        "model": model.as_dict(),
        "left_out": sorted(dropped),
        "auc_fit_half": aucs,
        "source_report": str(args.report),
        "fit": {k2: v for k2, v in s_fit.items() if k2 != "answerable_abstained_ids"},
        "heldout": s_held,
        "heldout_ece": ece(p_held, lab_h),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    if args.write:
        dest = args.model_out or MODEL_FILE
        dest.write_text(json.dumps(model.as_dict(), indent=1) + "\n")
        print(f"model written: {dest} ({model.version})")
        plot_reliability(
            {
                "fit half": reliability(p_fit, [not c.expect_abstain for c in fit_cases]),
                "held-out half": reliability(p_held, lab_h),
            },
            args.plot,
            f"answerability {model.version}: held-out ECE {s_held['ece'] or 0:.3f}",
        )
        print(f"reliability plot: {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
