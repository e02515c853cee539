"""The runner: modes side by side, request mapping, errors, preflight."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from ragline.errors import BackendUnavailable, ConfigError
from ragline.evaluation.client import QueryServiceError, SearchResponse
from ragline.evaluation.datasets import EvalDataset, Principal
from ragline.evaluation.runner import MODES, NO_RERANKER, parse_modes, run_modes


class FakeClient:
    """Answers from a table keyed by (question, api mode); records every call."""

    def __init__(self, answers: dict[tuple[str, str], list[str]], *, fail: Exception | None = None):
        self.answers = answers
        self.fail = fail
        self.calls: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0

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
    ) -> tuple[SearchResponse, float]:
        self.calls.append(
            {"q": query, "mode": mode, "rerank": rerank, "top_k": top_k, "extra": dict(extra or {})}
        )
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        await asyncio.sleep(0.001)
        self.in_flight -= 1
        if self.fail is not None and len(self.calls) > 1:
            raise self.fail
        docs = self.answers.get((query, mode), [])
        hits = [
            {
                "chunk_id": f"{d}#0",
                "document_id": d,
                "text": f"text of {d}",
                "scores": {"rerank": 0.9} if rerank else {"rrf": 0.1},
                "citation": {},
                "flags": {},
            }
            for d in docs
        ]
        return SearchResponse.model_validate(
            {
                "results": hits,
                "abstained": not docs,
                "cache": "miss",
                "version_scope": {"mode": "current", "note": "current versions"},
                "timings_ms": {"total": 1.0},
                "trace_id": "t",
            }
        ), 12.0


def test_parse_modes() -> None:
    assert parse_modes("hybrid, dense,hybrid") == ["hybrid", "dense"]
    assert parse_modes(["lexical"]) == ["lexical"]
    assert MODES["hybrid+rerank"] == ("hybrid", True)
    with pytest.raises(ConfigError):
        parse_modes("hybrid,bm42")
    with pytest.raises(ConfigError):
        parse_modes("")


async def test_every_mode_every_case(tiny: EvalDataset) -> None:
    client = FakeClient(
        {("where is a?", "hybrid"): ["w:a"], ("where is a?", "lexical"): ["w:b", "w:a"]}
    )
    runs = await run_modes(
        client, tiny, ["lexical", "hybrid", "hybrid+rerank"], top_k=10, warmup=1, progress=False
    )
    assert list(runs) == ["lexical", "hybrid", "hybrid+rerank"]
    assert [r.case_id for r in runs["hybrid"]] == ["f1", "p1"]
    assert [h.document_id for h in runs["lexical"][0].hits] == ["w:b", "w:a"]
    assert runs["hybrid"][1].abstained
    assert runs["hybrid"][0].rerank_applied is None
    assert runs["hybrid+rerank"][0].rerank_applied is True
    assert runs["hybrid"][0].latency_ms == 12.0
    # one warm-up (also the preflight) + 2 cases per mode; warm-ups never reuse a case's
    # question, so no cache is primed for a measured case
    assert len(client.calls) == 3 * 3
    asked = [c["q"] for c in client.calls]
    assert asked.count("where is a?") == 3 and asked.count("the secret?") == 3
    assert sum(q.startswith("ragline evaluation warm-up") for q in asked) == 3
    assert {c["mode"] for c in client.calls} == {"lexical", "hybrid"}
    assert all(c["rerank"] for c in client.calls[-3:])
    assert all(c["top_k"] == 10 for c in client.calls)


async def test_doc_level_datasets_ask_for_distinct_documents(tiny: EvalDataset) -> None:
    beirish = tiny.model_copy(update={"doc_level": True})
    client = FakeClient({})
    await run_modes(client, beirish, ["dense"], top_k=100, warmup=0, progress=False)
    assert all(c["extra"] == {"max_per_document": 1} for c in client.calls)
    client = FakeClient({})
    await run_modes(client, tiny, ["dense"], top_k=100, warmup=0, progress=False)
    assert all(c["extra"] == {} for c in client.calls)


async def test_case_request_fields_are_passed(tiny: EvalDataset) -> None:
    case = tiny.cases[0].model_copy(update={"request": {"as_of": "2023-06-30"}})
    ds = tiny.model_copy(update={"cases": (case, tiny.cases[1])})
    client = FakeClient({})
    await run_modes(client, ds, ["hybrid"], top_k=5, warmup=0, progress=False)
    assert client.calls[1]["extra"] == {"as_of": "2023-06-30"}


async def test_concurrency_is_bounded(tiny: EvalDataset) -> None:
    many = tuple(
        c.model_copy(update={"case_id": f"{c.case_id}-{i}"}) for i in range(10) for c in tiny.cases
    )
    ds = tiny.model_copy(update={"cases": many})
    client = FakeClient({})
    runs = await run_modes(client, ds, ["dense"], top_k=5, concurrency=3, warmup=0, progress=False)
    assert client.max_in_flight == 3
    assert [r.case_id for r in runs["dense"]] == [c.case_id for c in many]  # case order kept


async def test_a_refused_case_is_recorded_not_fatal(tiny: EvalDataset) -> None:
    client = FakeClient({}, fail=QueryServiceError(422, "as_of: bad date"))
    runs = await run_modes(client, tiny, ["hybrid"], top_k=5, warmup=0, progress=False)
    assert all(r.error and "bad date" in r.error for r in runs["hybrid"])


async def test_preflight_turns_a_refused_request_into_a_config_error(tiny: EvalDataset) -> None:
    class Refusing(FakeClient):
        async def search(self, *a: Any, **kw: Any) -> tuple[SearchResponse, float]:
            raise QueryServiceError(400, "top_k: at most 50")

    with pytest.raises(ConfigError, match="RAGLINE_QUERY_MAX_TOP_K=100"):
        await run_modes(Refusing({}), tiny, ["hybrid"], top_k=100, progress=False)


async def test_a_dead_service_aborts_the_mode(tiny: EvalDataset) -> None:
    many = tuple(
        c.model_copy(update={"case_id": f"c{i}"}) for i in range(30) for c in tiny.cases[:1]
    )
    ds = tiny.model_copy(update={"cases": many})
    client = FakeClient({}, fail=BackendUnavailable("query service unreachable"))
    with pytest.raises(BackendUnavailable, match="stopped answering"):
        await run_modes(client, ds, ["hybrid"], top_k=5, concurrency=1, warmup=0, progress=False)
    assert len(client.calls) < 30


async def test_the_evidence_strength_is_recorded(tiny: EvalDataset) -> None:
    class Evidential(FakeClient):
        async def search(self, *args: Any, **kwargs: Any) -> tuple[SearchResponse, float]:
            await super().search(*args, **kwargs)
            body = {
                "results": [],
                "abstained": True,
                "abstain_reason": "below_similarity_threshold",
                "evidence": {"signal": "similarity", "best_similarity": 0.21, "threshold": 0.3},
                "version_scope": {"mode": "current", "note": "current versions"},
                "timings_ms": {"total": 1.0},
                "trace_id": "t",
            }
            return SearchResponse.model_validate(body), 5.0

    runs = await run_modes(Evidential({}), tiny, ["dense"], top_k=10, warmup=1, progress=False)
    run = runs["dense"][0]
    assert (run.abstain_signal, run.best_similarity, run.abstain_threshold) == (
        "similarity",
        0.21,
        0.3,
    )


class NoReranker(FakeClient):
    """A query service without a reranker model: rerank requests come back in fusion
    order with ``rerank_unavailable`` in ``degraded`` (retrieval/candidates.py)."""

    async def search(self, principal: Principal, query: str, **kw: Any) -> tuple[Any, float]:
        resp, ms = await super().search(principal, query, **{**kw, "rerank": False})
        if kw["rerank"]:
            resp = resp.model_copy(update={"degraded": ["rerank_unavailable"]})
        return resp, ms


async def test_a_rerank_mode_without_a_reranker_is_left_out_with_the_reason(
    tiny: EvalDataset,
) -> None:
    client = NoReranker({("where is a?", "hybrid"): ["w:a"]})
    skipped: dict[str, str] = {}
    runs = await run_modes(
        client, tiny, ["hybrid", "hybrid+rerank"], top_k=10, warmup=1, progress=False,
        skipped=skipped,
    )  # fmt: skip
    assert list(runs) == ["hybrid"]  # not a copy of hybrid labelled "hybrid+rerank"
    assert skipped == {"hybrid+rerank": NO_RERANKER}
    assert "RAGLINE_QUERY_RERANK_MODEL_PATH" in NO_RERANKER
    asked = [c["q"] for c in client.calls]
    assert asked.count("where is a?") == 1  # the cases were not run a second time
