"""The golden set end to end: every pipeline service and the query service as their own
processes on the real stack; the corpus goes in through ``source.changes`` (deletes and
ACL revocations applied afterwards), every case is asked over HTTP in every mode, and the
run fails on any forbidden hit or on falling below tests/golden/thresholds.yaml.

The report (JSON, table, PNG) is written to ``$RAGLINE_EVAL_E2E_OUT`` when set, else to
the test's temp dir, so CI can keep it as an artifact and later runs can use it as a
``--baseline``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import secrets
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from ragline.evaluation.client import QueryClient
from ragline.evaluation.gate import check_thresholds, load_thresholds, render_violations
from ragline.evaluation.golden import load_golden
from ragline.evaluation.ingest import ingest_dataset
from ragline.evaluation.plot import plot_report
from ragline.evaluation.report import build_report, render_categories, render_table, save_report
from ragline.evaluation.runner import run_modes
from ragline.evaluation.settings import EvalSettings
from ragline.runtime.settings import Settings

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
PIPELINE = ("connector", "parser", "scanner", "chunker", "enricher", "embedder", "indexer")
MODES = ("lexical", "dense", "hybrid", "hybrid+rerank")
TOP_K = 20


def _query_service_installed() -> bool:
    eps = {ep.name: ep for ep in entry_points(group="ragline.services")}
    ep = eps.get("query")
    if ep is None:
        return False
    module = ep.value.partition(":")[0]
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not _query_service_installed(),
        reason="the query service entry point (ragline.services: query) is not installed yet",
    ),
]


def _unbuilt(names: tuple[str, ...]) -> dict[str, str]:
    from ragline.runtime.supervisor import built_services

    built = built_services()
    return {n: why for n in names if (why := built.get(n)) is not None}


async def test_golden_set_end_to_end(
    stack: Settings, service_process: Callable[..., Any], tmp_path: Path
) -> None:
    missing = _unbuilt((*PIPELINE, "query"))
    assert not missing, f"the golden e2e needs every pipeline service; not built: {missing}"
    secret = secrets.token_urlsafe(32)
    env = {
        "RAGLINE_QUERY_JWT_SECRET": secret,
        "RAGLINE_QUERY_MAX_TOP_K": str(max(TOP_K, 50)),
        "RAGLINE_QUERY_RATE_LIMIT_PER_MINUTE": "0",
    }
    procs = [service_process(name, env=env) for name in PIPELINE]
    query = service_process("query", env=env)
    await asyncio.gather(*(asyncio.to_thread(p.wait_metrics, 180.0) for p in procs))

    dataset = load_golden(GOLDEN)
    ingest = await ingest_dataset(
        dataset, stack, timeout_s=600, poll_interval_s=0.5, progress=False, drain=("indexer",)
    )
    assert not ingest.quarantined, f"golden documents quarantined: {ingest.quarantined}"
    assert not ingest.unexpected, f"ingest outcome differs from the manifest: {ingest.unexpected}"

    es = EvalSettings(query_url=query.http_url, jwt_secret=secret, concurrency=2, warmup_queries=2)
    async with QueryClient(es) as client:
        for _ in range(120):
            if await client.ready():
                break
            assert query.running(), f"query service exited:\n{query.log()[-4000:]}"
            await asyncio.sleep(1.0)
        else:
            pytest.fail(f"query service never became ready:\n{query.log()[-4000:]}")
        runs = await run_modes(
            client, dataset, MODES, top_k=TOP_K, concurrency=2, warmup=2, progress=False
        )

    report = build_report(
        dataset,
        runs,
        top_k=TOP_K,
        concurrency=2,
        query_url=query.http_url,
        command="pytest tests/e2e/test_golden.py",
        ingest=ingest.as_dict(),
    )
    out = Path(os.environ.get("RAGLINE_EVAL_E2E_OUT") or tmp_path)
    save_report(report, out / "report.json")
    plot_report(report, out / "report.png")
    tables = render_table(report) + "\n\n" + render_categories(report)
    (out / "report.txt").write_text(tables + "\n")
    print(tables)

    leaks = [
        (c.mode, c.case_id, c.forbidden_documents) for c in report.cases if c.forbidden_documents
    ]
    assert not leaks, f"forbidden content returned: {leaks}"
    violations = check_thresholds(report, load_thresholds(GOLDEN / "thresholds.yaml"))
    assert not violations, render_violations(violations) + f"\nreport: {out / 'report.json'}"
