"""Run every case of a dataset against the query service in each retrieval mode, side
by side in one run: lexical, dense, hybrid and hybrid+rerank.

Modes run one after the other (not interleaved) so each mode's latency is measured
under the same load; a few warm-up queries per mode are sent first and not recorded.
A rerank mode whose warm-up answers ``rerank_unavailable`` (the service has no reranker
model) is left out, with the reason, rather than reported as a copy of hybrid.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from tqdm.auto import tqdm

from ragline.errors import BackendUnavailable, ConfigError, PermanentError
from ragline.evaluation.client import QueryServiceError, SearchResponse
from ragline.evaluation.datasets import EvalCase, EvalDataset, Principal
from ragline.evaluation.metrics import Hit
from ragline.evaluation.summary import CaseRun

__all__ = ["MODES", "NO_RERANKER", "SearchClient", "parse_modes", "run_case", "run_modes"]

log = logging.getLogger("ragline.evaluation")

# harness mode -> (the API's `mode`, `rerank`)
MODES: dict[str, tuple[str, bool]] = {
    "lexical": ("lexical", False),
    "dense": ("dense", False),
    "hybrid": ("hybrid", False),
    "hybrid+rerank": ("hybrid", True),
}
# consecutive "service unreachable" failures after which a mode is abandoned
_MAX_CONSECUTIVE_DOWN = 10
NO_RERANKER = (
    "left out: the query service has no reranker (it answered rerank_unavailable; "
    "mount a model and set RAGLINE_QUERY_RERANK_MODEL_PATH to measure it)"
)


class SearchClient(Protocol):
    """What the runner needs of ``client.QueryClient`` (tests pass a fake)."""

    async def search(
        self,
        principal: Principal,
        query: str,
        *,
        mode: str,
        rerank: bool,
        top_k: int,
        filters: Mapping[str, Any] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> tuple[SearchResponse, float]: ...


def parse_modes(spec: str | Sequence[str]) -> list[str]:
    names = [m.strip() for m in (spec.split(",") if isinstance(spec, str) else spec)]
    names = [m for m in names if m]
    unknown = [m for m in names if m not in MODES]
    if unknown or not names:
        raise ConfigError(f"unknown mode(s) {unknown or names}; choose from {', '.join(MODES)}")
    return list(dict.fromkeys(names))


def _hits(resp: SearchResponse) -> list[Hit]:
    return [
        Hit(
            document_id=h.document_id,
            text=h.text,
            chunk_id=h.chunk_id,
            flags=h.flags.model_dump(),
        )
        for h in resp.results
    ]


def _request_extra(case: EvalCase, doc_level: bool) -> dict[str, Any]:
    # document-level judging wants distinct documents in the top k (BEIR's MaxP)
    extra: dict[str, Any] = {"max_per_document": 1} if doc_level else {}
    extra.update(case.request)
    return extra


async def run_case(
    client: SearchClient, case: EvalCase, mode: str, *, top_k: int, doc_level: bool = False
) -> CaseRun:
    api_mode, rerank = MODES[mode]
    try:
        resp, ms = await client.search(
            case.principal,
            case.question,
            mode=api_mode,
            rerank=rerank,
            top_k=top_k,
            filters=dict(case.filters),
            extra=_request_extra(case, doc_level),
        )
    except (PermanentError, BackendUnavailable) as exc:
        return CaseRun(case_id=case.case_id, mode=mode, error=f"{type(exc).__name__}: {exc}")
    return CaseRun(
        case_id=case.case_id,
        mode=mode,
        hits=_hits(resp),
        abstained=resp.abstained,
        abstain_reason=resp.abstain_reason,
        abstain_signal=resp.evidence.signal if resp.evidence is not None else None,
        best_similarity=resp.best_similarity(),
        abstain_threshold=resp.evidence.threshold if resp.evidence is not None else None,
        answerable_probability=(
            resp.evidence.answerable_probability if resp.evidence is not None else None
        ),
        features=resp.evidence.features if resp.evidence is not None else None,
        latency_ms=ms,
        server_ms=resp.server_ms,
        cache=resp.cache,
        rerank_applied=resp.rerank_applied() if rerank else None,
        trace_id=resp.trace_id,
        degraded=tuple(resp.degraded),
        timings_ms={k: float(v) for k, v in resp.timings_ms.items() if isinstance(v, int | float)},
    )


def warmup_question(i: int) -> str:
    """Warm-up and preflight text: never a case's question, so neither the service's
    answer cache nor its query-embedding cache is primed for a measured case."""
    return f"ragline evaluation warm-up request number {i}"


async def _warm(
    client: SearchClient, dataset: EvalDataset, mode: str, *, top_k: int, n: int
) -> bool:
    """A preflight request, then ``n - 1`` more warm-ups (none recorded). False when the
    mode asks for reranking and the service has no reranker.

    A refusal of the request shape itself (top_k above the service's maximum, an unknown
    mode) is a configuration problem, not a bad score: it raises ``ConfigError``."""
    principal = dataset.cases[0].principal
    api_mode, rerank = MODES[mode]
    extra = {"max_per_document": 1} if dataset.doc_level else {}
    available = True
    try:
        for i in range(max(n, 1)):
            resp, _ = await client.search(
                principal,
                warmup_question(i),
                mode=api_mode,
                rerank=rerank,
                top_k=top_k,
                extra=extra,
            )
            if rerank and "rerank_unavailable" in resp.degraded:
                available = False
    except QueryServiceError as exc:
        if exc.status in (400, 422):
            raise ConfigError(
                f"the query service refuses the harness's request in mode {mode}: {exc.detail}. "
                "With top_k above its maximum, start it with RAGLINE_QUERY_MAX_TOP_K="
                f"{top_k} or pass --top-k to the harness."
            ) from None
        raise
    return available


async def _run_mode(
    client: SearchClient,
    dataset: EvalDataset,
    mode: str,
    *,
    top_k: int,
    concurrency: int,
    warmup: int,
    progress: bool,
) -> list[CaseRun] | None:
    if not await _warm(client, dataset, mode, top_k=top_k, n=warmup):
        return None
    sem = asyncio.Semaphore(concurrency)
    down = 0
    bar = tqdm(total=len(dataset.cases), desc=f"query {mode}", unit="q", disable=not progress)

    async def one(case: EvalCase) -> CaseRun:
        nonlocal down
        async with sem:
            if down >= _MAX_CONSECUTIVE_DOWN:
                return CaseRun(case_id=case.case_id, mode=mode, error="skipped: service down")
            run = await run_case(client, case, mode, top_k=top_k, doc_level=dataset.doc_level)
        down = down + 1 if (run.error or "").startswith("BackendUnavailable") else 0
        bar.update(1)
        return run

    try:
        runs = await asyncio.gather(*(one(c) for c in dataset.cases))
    finally:
        bar.close()
    if down >= _MAX_CONSECUTIVE_DOWN:
        raise BackendUnavailable(f"query service stopped answering during mode {mode}")
    return list(runs)


async def run_modes(
    client: SearchClient,
    dataset: EvalDataset,
    modes: Sequence[str],
    *,
    top_k: int,
    concurrency: int = 2,
    warmup: int = 2,
    progress: bool = True,
    skipped: dict[str, str] | None = None,
) -> dict[str, list[CaseRun]]:
    """Every case in every mode; results keyed by mode, in case order. A mode the service
    cannot serve (a rerank mode without a reranker) is left out and, if ``skipped`` is
    given, recorded there with the reason."""
    out: dict[str, list[CaseRun]] = {}
    for mode in parse_modes(modes):
        runs = await _run_mode(
            client,
            dataset,
            mode,
            top_k=top_k,
            concurrency=concurrency,
            warmup=warmup,
            progress=progress,
        )
        if runs is None:
            log.warning("mode %s %s", mode, NO_RERANKER)
            if skipped is not None:
                skipped[mode] = NO_RERANKER
            continue
        out[mode] = runs
    return out
