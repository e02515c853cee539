"""One evaluation run as a library call: ingest (optional), wait for the query service,
query every mode, build the report; and writing a report's files. ``ragline eval``,
bench/eval_scifact.py and the e2e test are thin callers of this."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragline.config import Settings
from ragline.errors import BackendUnavailable
from ragline.evaluation.answerability import render_held_out
from ragline.evaluation.client import QueryClient
from ragline.evaluation.datasets import EvalDataset
from ragline.evaluation.gate import ThresholdConfig
from ragline.evaluation.ingest import ingest_dataset
from ragline.evaluation.report import Report, build_report, render_categories, render_table
from ragline.evaluation.runner import parse_modes, run_modes
from ragline.evaluation.settings import EvalSettings

__all__ = ["answerability_figures", "evaluate", "wait_ready", "write_outputs"]


async def wait_ready(client: QueryClient, timeout_s: float = 120.0) -> None:
    """Until ``/readyz`` answers 200 (models load at start) or the time is up."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not await client.ready():
        if loop.time() > deadline:
            raise BackendUnavailable(f"query service at {client.base_url} is not ready")
        await asyncio.sleep(1.0)


async def evaluate(
    dataset: EvalDataset,
    *,
    settings: Settings,
    eval_settings: EvalSettings,
    modes: Sequence[str],
    ingest: bool = True,
    progress: bool = True,
    command: str | None = None,
) -> Report:
    """Ingest ``dataset`` through the pipeline (unless ``ingest=False``), run every case in
    every mode against the query service and return the report."""
    es = eval_settings
    modes = parse_modes(modes)
    ingest_info = None
    notes: list[str] = []
    if ingest:
        res = await ingest_dataset(
            dataset,
            settings,
            timeout_s=es.ingest_timeout_s,
            poll_interval_s=es.poll_interval_s,
            progress=progress,
            drain=("indexer",),  # OpenSearch written too before the first query
        )
        ingest_info = res.as_dict()
        if res.quarantined:
            notes.append(f"quarantined during ingest: {sorted(res.quarantined.items())}")
        if res.unexpected:
            notes.append(f"ingest outcome differs from the manifest: {sorted(res.unexpected)}")
    async with QueryClient(es) as client:
        await wait_ready(client)
        skipped: dict[str, str] = {}
        runs = await run_modes(
            client,
            dataset,
            modes,
            top_k=es.top_k,
            concurrency=es.concurrency,
            warmup=es.warmup_queries,
            progress=progress,
            skipped=skipped,
        )
        notes += [f"{mode}: {why}" for mode, why in skipped.items()]
    return build_report(
        dataset,
        runs,
        top_k=es.top_k,
        concurrency=es.concurrency,
        query_url=es.query_url,
        command=command,
        ingest=ingest_info,
        notes=notes,
    )


def write_outputs(
    report: Report,
    out: Path,
    baseline: Report | None = None,
    config: ThresholdConfig | None = None,
) -> list[Path]:
    """``report.json``, ``report.txt`` (the tables; with a baseline, the before/after
    table first), ``report.png`` and, when a mode has similarity-decided cases,
    ``abstention.png`` (the threshold sweep) under ``out``."""
    from ragline.evaluation.baseline import render_before_after
    from ragline.evaluation.report import render_sweep, save_report

    out.mkdir(parents=True, exist_ok=True)
    json_path = save_report(report, out / "report.json")
    txt = out / "report.txt"
    tables = [render_table(report), render_categories(report), render_sweep(report)]
    held = answerability_figures(report)
    if held is not None:
        tables.insert(0, render_held_out(held))
        (out / "answerability.json").write_text(json.dumps(held, indent=1) + "\n")
    if baseline is not None:
        tables.insert(0, render_before_after(report, baseline, config=config))
    txt.write_text("\n\n".join(t for t in tables if t) + "\n")
    if importlib.util.find_spec("matplotlib") is None:  # the plots need the 'eval' extra
        return [json_path, txt]
    from ragline.evaluation.plot import plot_report, plot_sweep

    png = plot_report(report, out / "report.png", baseline)
    sweep_png = plot_sweep(report, out / "abstention.png")
    extra = [sweep_png] if sweep_png is not None else []
    if held is not None:
        from ragline.evaluation.plot import plot_reliability

        extra.append(
            plot_reliability(
                {"held-out half": held["reliability"]},
                out / "reliability.png",
                f"{report.meta.dataset}: held-out ECE {held['ece'] or 0:.3f}",
            )
        )
    return [json_path, txt, png, *extra]


def answerability_figures(report: Report, mode: str = "hybrid") -> dict[str, Any] | None:
    """The held-out figures of an answerability report (None for other datasets)."""
    from ragline.evaluation.answerability import held_out_summary

    if report.meta.kind != "answerability" or mode not in report.modes:
        return None
    return held_out_summary(c for c in report.cases if c.mode == mode)
