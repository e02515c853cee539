"""Which inputs of the fused int8 graph to keep out of int8 (issue 35), by a rule fixed
before any nDCG is looked at, measured on calibration texts that are not the evaluation's
(not a test).

The error: mean 1 - cosine of the final embedding against the fused fp32 graph's over
the calibration texts, one text per ONNX call as the variant runs. The rule
(``--budget`` 0.5, ``--factor`` 4): a linear layer's input channels whose largest
magnitude over the calibration texts exceeds ``factor`` x its median channel's are
computed by a MatMul of their own in fp32 (``build_bert_graph(outliers=...)``: the
per-tensor dynamic int8 scale no longer spans them), layer kinds taken in the order of
their measured sensitivity (``--per-op``: FFN output, then FFN input, then attention
output; the packed Q/K/V sits inside the contrib ``Attention`` and cannot be split), until
the whole graph's error is at most ``budget`` x the default ``onnx-int8``'s (the dynamic
int8 of the plain graph) on the same texts: the fused variant then clearly more accurate
than the default instead of equal to it. ``--write`` stores the chosen channels with the
package (``embedding/calibration/<revision>.outliers.json``), which the build reads.

``--per-op`` also measures the alternative: each linear op quantized alone (all others
fp32), then whole ops kept fp32, most sensitive first, up to ``--max-keep``.

Calibration texts: SciFact corpus documents judged for no train query (``qrels/train.tsv``
is the only split here; the evaluation's queries are all train queries), from document
``--offset`` on: their child chunks as the embedder sees them (header + text), the same
documents as "title abstract" (the form ``quant_bench`` encodes) and their titles alone
(short, query-like: SciFact has no queries outside the judged train split).

    .venv/bin/python bench/fused_sensitivity.py [--docs 48] [--per-op] [--write]

Writes bench/out/fused_sensitivity.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _paths import OUT, SCIFACT, scifact
from embedder_bench import chunk_texts, load_jsonl, load_qrels

from ragline.embedding.model import default_model_path, model_revision
from ragline.embedding.onnx_backend import (
    OnnxEmbedder,
    fused_linear_ops,
    quantize_fused,
    run_concurrently,
)
from ragline.embedding.onnx_graph import build_bert_graph


def _session(path: Path) -> Any:
    import onnxruntime as ort

    from ragline.embedding.onnx_backend import _DISABLED_FUSIONS

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.enable_cpu_mem_arena = False
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    return ort.InferenceSession(
        str(path),
        so,
        providers=["CPUExecutionProvider"],
        disabled_optimizers=_DISABLED_FUSIONS["int8-fused"],
    )


def _encode(path: Path, rows: list[list[int]]) -> tuple[np.ndarray, float]:
    """One text per call, two at once; (vectors, CPU-ms per text)."""
    sess = _session(path)
    out = np.zeros((len(rows), 384), dtype=np.float32)

    def one(i: int) -> None:
        ids = np.array([rows[i]], dtype=np.int64)
        feeds = {
            "input_ids": ids,
            "attention_mask": np.ones_like(ids),
            "token_type_ids": np.zeros_like(ids),
        }
        out[i] = sess.run(["sentence_embedding"], feeds)[0][0]

    t = os.times()
    run_concurrently(one, list(range(len(rows))), 2)
    t2 = os.times()
    cpu = (t2.user + t2.system - t.user - t.system) / len(rows) * 1000
    return out, cpu


def _errors(vec: np.ndarray, ref: np.ndarray, kinds: list[str]) -> dict[str, float]:
    err = 1.0 - (vec * ref).sum(axis=1)
    out = {"mean": float(err.mean()), "max": float(err.max())}
    for kind in sorted(set(kinds)):
        sel = np.array([k == kind for k in kinds])
        out[f"mean_{kind}"] = float(err[sel].mean())
    return out


# layer kinds (weight name suffix) in the order of their sensitivity, measured by --per-op
# (mean 1-cos with only that op int8, averaged over the six layers: FFN output 7.9e-4,
# FFN input 4.4e-4, attention output 2.2e-4; the packed Q/K/V 4.3e-4 cannot be split)
KINDS = ("output.dense.weight", "intermediate.dense.weight", "attention.output.dense.weight")


def _kind(weight: str) -> str:
    return next(
        k for k in KINDS if weight.endswith(k) and ("attention" in k) == ("attention" in weight)
    )


def _texts(args: argparse.Namespace) -> tuple[list[str], list[str], list[str]]:
    corpus = load_jsonl(SCIFACT / "corpus.jsonl")
    judged = {d for rel in load_qrels(SCIFACT / "qrels" / "train.tsv").values() for d in rel}
    docs = [d for d in corpus[args.offset :] if d["_id"] not in judged][: args.docs]
    chunks = chunk_texts(docs)
    texts = (
        chunks + [f"{d['title']} {d['text']}".strip() for d in docs] + [d["title"] for d in docs]
    )
    kinds = ["chunk"] * len(chunks) + ["document"] * len(docs) + ["title"] * len(docs)
    return texts, kinds, [d["_id"] for d in docs]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=48, help="unjudged documents used")
    ap.add_argument("--offset", type=int, default=3000, help="first corpus index looked at")
    ap.add_argument("--budget", type=float, default=0.5, help="x the default's mean error")
    ap.add_argument("--factor", type=float, default=4.0, help="outlier: x the median channel")
    ap.add_argument("--per-op", action="store_true", help="also each op alone, whole ops fp32")
    ap.add_argument("--max-keep", type=int, default=4, help="--per-op: ops kept fp32 at most")
    ap.add_argument("--write", action="store_true", help="store the chosen channels")
    ap.add_argument("--json", type=Path, default=OUT / "fused_sensitivity.json")
    args = ap.parse_args()
    scifact(quick=False)
    from ragline.embedding.quantize import outlier_channels, outliers_path, save_outliers

    texts, kinds, doc_ids = _texts(args)
    rows = [list(r) for r in OnnxEmbedder(variant="fp32").tokenize(texts)]
    counts = {k: kinds.count(k) for k in sorted(set(kinds))}
    print(f"{counts} from unjudged corpus documents {doc_ids[0]}..{doc_ids[-1]}; "
          f"load {os.getloadavg()}", flush=True)  # fmt: skip
    model_dir = Path(default_model_path())
    revision = model_revision(model_dir)
    report: dict[str, Any] = {
        "command": " ".join(sys.argv),
        "texts": counts,
        "documents": doc_ids,
        "load_avg_start": os.getloadavg(),
    }
    default = OnnxEmbedder(variant="int8-dynamic", threads=1, parallel=2)
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        fp32 = tmp / "fused_fp32.onnx"
        build_bert_graph(model_dir, fp32, fused=True)
        ref, cpu_fp32 = _encode(fp32, rows)
        plain_ref = OnnxEmbedder(variant="fp32", threads=1).encode_ids(rows)
        report["fused_fp32_vs_plain_fp32_max_abs"] = float(np.abs(ref - plain_ref).max())
        base = _errors(default.encode_ids(rows), ref, kinds)
        report["default_onnx_int8"] = base
        target = args.budget * base["mean"]

        def measure(keep: list[str], outliers: dict[str, list[int]]) -> dict[str, float]:
            src, dest = tmp / "split.onnx", tmp / "q.onnx"
            build_bert_graph(model_dir, src, fused=True, outliers=outliers)
            quantize_fused(src, dest, keep)
            vec, cpu = _encode(dest, rows)
            return {**_errors(vec, ref, kinds), "cpu_ms_per_text": cpu}

        full = measure([], {})
        report["fused_all_int8"] = full
        report["fused_fp32_cpu_ms_per_text"] = cpu_fp32
        print(f"default onnx-int8: mean 1-cos {base['mean']:.2e} (target {target:.2e}); fused "
              f"all int8: {full['mean']:.2e} ({full['cpu_ms_per_text']:.1f} CPU-ms/text; "
              f"fused fp32 {cpu_fp32:.1f})", flush=True)  # fmt: skip
        found = outlier_channels(fp32, rows, args.factor)
        report["outlier_channels"] = found
        steps: list[dict[str, Any]] = []
        chosen: dict[str, list[int]] = {}
        for n in range(1, len(KINDS) + 1):
            split = {w: c for w, c in found.items() if _kind(w) in KINDS[:n]}
            err = measure([], split)
            steps.append({"kinds": list(KINDS[:n]), "ops": len(split), **err})
            print(f"outliers split in {KINDS[:n]} ({len(split)} ops, "
                  f"{sum(map(len, split.values()))} channels): mean 1-cos {err['mean']:.2e}, "
                  f"{err['cpu_ms_per_text']:.1f} CPU-ms/text", flush=True)  # fmt: skip
            if err["mean"] <= target:
                chosen = split
                break
        report["target_mean"] = target
        report["split_steps"] = steps
        report["chosen"] = chosen
        if args.per_op:
            report["per_op"] = _per_op(args, fp32, measure, target)
    report["load_avg_end"] = os.getloadavg()
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2))
    print(f"chosen: {chosen or 'nothing within the budget'}\nwritten {args.json}")
    if args.write and chosen:
        dest = outliers_path(revision)
        save_outliers(
            dest,
            chosen,
            {
                "model_revision": revision,
                "texts": f"SciFact corpus documents judged for no train query, from index "
                f"{args.offset}: {counts}, one text per run",
                "rule": f"input channels above {args.factor} x the median channel's largest "
                f"magnitude, layer kinds {list(KINDS[: len(steps)])} (sensitivity order) until "
                f"the fused int8's mean 1-cos vs fp32 <= {args.budget} x the default onnx-int8's "
                f"({steps[-1]['mean']:.2e} <= {target:.2e})",
                "written_by": "bench/fused_sensitivity.py --write",
            },
        )
        print(f"stored -> {dest}")
    return 0


def _per_op(args: argparse.Namespace, fp32: Path, measure: Any, target: float) -> dict[str, Any]:
    """Each linear op quantized alone; then whole ops kept fp32, most sensitive first."""
    ops = fused_linear_ops(fp32)
    alone: dict[str, float] = {}
    t0 = time.perf_counter()
    for w in ops:
        alone[w] = measure([o for o in ops if o != w], {})["mean"]  # only w quantized
        print(f"only {w} int8: mean 1-cos {alone[w]:.2e} ({time.perf_counter() - t0:.0f} s)",
              flush=True)  # fmt: skip
    order = sorted(ops, key=lambda w: -alone[w])
    steps = []
    for k in range(1, args.max_keep + 1):
        err = measure(order[:k], {})
        steps.append({"k": k, "kept_fp32": order[:k], **err})
        print(f"k={k} (+{order[k - 1]}) kept fp32: mean 1-cos {err['mean']:.2e} "
              f"(target {target:.2e}), {err['cpu_ms_per_text']:.1f} CPU-ms/text",
              flush=True)  # fmt: skip
        if err["mean"] <= target:
            break
    return {"only_this_op_int8": alone, "keep_fp32_steps": steps}


if __name__ == "__main__":
    sys.exit(main())
