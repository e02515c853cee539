"""Time-scoped questions through the real query path (Postgres + OpenSearch + the app): a
period in any common form returns the version of a series in force then, including
versions superseded later, and no other version of the series. The series here is the
hard case: four versions, each superseding the previous, none with an expiry date, so
only the shadowing read (retrieval/in_force.py) and the date filter keep the old ones out.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import date
from typing import Any

import httpx
import pytest
import pytest_asyncio
from query_corpus import Doc, seed
from query_helpers import auth

from ragline.auth.principal import Principal
from ragline.config import Settings
from ragline.platform.stack.testing import unique_tenant
from ragline.retrieval.embed import QueryEmbedder
from ragline.retrieval.in_force import shadowed_versions
from ragline.store.os_client import make_client
from ragline.store.pool import open_pool

pytestmark = pytest.mark.integration

STAFF, HR = "staff", "hr"
# (document id, effective date, nightly allowance)
VERSIONS = [
    ("pol:standby-2021", date(2021, 3, 1), 40),
    ("pol:standby-2022", date(2022, 7, 1), 55),
    ("pol:standby-2024", date(2024, 1, 15), 70),
    ("pol:standby-2025", date(2025, 6, 1), 85),
]
HIDDEN = ("pol:standby-hr-draft", date(2025, 9, 1), 99)  # HR only: never shadows for staff


def _docs() -> list[Doc]:
    out = []
    prev: tuple[str, ...] = ()
    for doc_id, eff, amount in [*VERSIONS, HIDDEN]:
        groups = (HR,) if doc_id == HIDDEN[0] else (STAFF, HR)
        out.append(
            Doc(
                document_id=doc_id,
                title="On-call standby allowance",
                texts=(
                    f"On-call standby allowance: engineers on standby receive {amount} euros "
                    "per night of weekend standby, paid with the next salary run.",
                ),
                groups=groups,
                series_id="standby",
                supersedes=() if doc_id == HIDDEN[0] else prev,
                effective_date=eff,
            )
        )
        prev = (doc_id,)
    out.append(
        Doc(
            document_id="ops:rota",
            title="Standby rota",
            texts=("The standby rota is published every Friday by the duty manager.",),
            groups=(STAFF,),
        )
    )
    return out


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def tenant(stack: Settings, embedder: QueryEmbedder) -> AsyncIterator[str]:
    t = unique_tenant("tq")
    pool = await open_pool(stack.admin_dsn(), name="time-seed")
    client = make_client(stack)
    try:
        await seed(pool, client, stack.opensearch_index_prefix, t, _docs(), embedder)
    finally:
        await client.close()
        await pool.close()
    yield t


def _in_force(at: date) -> str | None:
    live = [v for v in VERSIONS if v[1] <= at]
    return live[-1][0] if live else None


PHRASINGS = [
    ("In 2021, what was the standby allowance per night?", date(2021, 12, 31)),
    ("What was the on-call standby allowance during FY22?", date(2022, 12, 31)),
    ("back in March 2024, how much was the standby allowance?", date(2024, 3, 31)),
    ("standby allowance for the 2023 season", date(2023, 12, 31)),
    ("as it stood in 2024, what was the standby allowance", date(2024, 12, 31)),
    ("what was the standby allowance pre-2022?", date(2021, 12, 31)),
    ("standby allowance per night in Q2 2022", date(2022, 6, 30)),
    ("standby allowance per night in Q3 2022", date(2022, 9, 30)),
    ("what was the standby allowance on 2024-01-14?", date(2024, 1, 14)),
    ("what was the standby allowance on 15 January 2024?", date(2024, 1, 15)),
    ("standby allowance in 2020", date(2020, 12, 31)),  # before the first version
]


async def _search(client: httpx.AsyncClient, tenant: str, q: str, groups: list[str]) -> Any:
    r = await client.post(
        "/v1/search",
        json={"query": q, "top_k": 10, "max_per_document": 1},
        headers=auth(tenant, groups),
    )
    assert r.status_code == 200, r.text
    return r.json()


async def test_a_period_returns_the_version_in_force_then_and_no_other(
    client: httpx.AsyncClient, tenant: str
) -> None:
    series = {v[0] for v in VERSIONS} | {HIDDEN[0]}
    for q, at in PHRASINGS:
        body = await _search(client, tenant, q, [STAFF])
        assert body["version_scope"]["mode"] == "as_of", q
        assert body["version_scope"]["as_of"] == at.isoformat(), q
        got = {r["document_id"] for r in body["results"]} & series
        expected = _in_force(at)
        assert got == ({expected} if expected else set()), (q, got)


RANGES = [
    # versions in force on some day of the range: 2021 (from 2021-03), 2022 (from 2022-07)
    ("What was the standby allowance between 2021 and 2023?", date(2021, 1, 1), date(2023, 12, 31)),
    ("standby allowance per night from 2022 to 2024", date(2022, 1, 1), date(2024, 12, 31)),
    ("what was the standby allowance during 2023-2024?", date(2023, 1, 1), date(2024, 12, 31)),
]


def _in_force_during(start: date, end: date) -> set[str]:
    out = set()
    for i, (doc, eff, _) in enumerate(VERSIONS):
        nxt = VERSIONS[i + 1][1] if i + 1 < len(VERSIONS) else None
        if eff <= end and (nxt is None or nxt > start):
            out.add(doc)
    return out


async def test_a_range_returns_every_version_in_force_in_it_and_no_other(
    client: httpx.AsyncClient, tenant: str
) -> None:
    series = {v[0] for v in VERSIONS} | {HIDDEN[0]}
    for q, start, end in RANGES:
        body = await _search(client, tenant, q, [STAFF])
        scope = body["version_scope"]
        assert scope["mode"] == "as_of", q
        assert (scope["in_force_from"], scope["as_of"]) == (start.isoformat(), end.isoformat())
        got = {r["document_id"] for r in body["results"]} & series
        assert got == _in_force_during(start, end), (q, got)


async def test_numbers_that_are_not_years_answer_the_current_version(
    client: httpx.AsyncClient, tenant: str
) -> None:
    body = await _search(client, tenant, "standby allowance for error 2021 per night", [STAFF])
    assert body["version_scope"]["mode"] == "current"
    got = {r["document_id"] for r in body["results"]} & {v[0] for v in VERSIONS}
    assert got <= {"pol:standby-2025"}


async def test_shadowing_is_read_in_the_database_under_rls(stack: Settings, tenant: str) -> None:
    pool = await open_pool(stack.query_dsn(), name="time-rls")
    staff = Principal(tenant=tenant, groups=(STAFF,), subject="t")
    both = Principal(tenant=tenant, groups=(STAFF, HR), subject="t")
    try:
        at = date(2024, 6, 30)
        assert set(await shadowed_versions(pool, staff, at) or ()) == {
            "pol:standby-2021",
            "pol:standby-2022",
        }
        late = date(2025, 12, 31)
        # the HR-only version shadows the 2025 one for HR, never for staff
        assert "pol:standby-2025" not in (await shadowed_versions(pool, staff, late) or ())
        assert "pol:standby-2025" in (await shadowed_versions(pool, both, late) or ())
        assert await shadowed_versions(pool, staff, date(2021, 6, 1)) == ()
        assert await shadowed_versions(pool, staff, at, cap=1) is None
    finally:
        await pool.close()


async def test_a_comparison_of_two_years_returns_every_edition_the_caller_may_read(
    client: httpx.AsyncClient, tenant: str
) -> None:
    body = await _search(
        client, tenant, "How did the standby allowance change between 2021 and 2024?", [STAFF]
    )
    assert body["version_scope"]["mode"] == "history"
    got = {r["document_id"] for r in body["results"]}
    assert {v[0] for v in VERSIONS} <= got and HIDDEN[0] not in got
