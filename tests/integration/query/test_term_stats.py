"""The query's words in the caller's corpus, read from the lexical index (term_stats.py,
``LexicalSearcher.term_stats``) under the lexical leg's own filters: two tenants and a
hidden group hold the same rare word, and nothing outside the caller's scope shows in
the counts, the chunk total or the top hit's words."""

from __future__ import annotations

import pytest
from psycopg_pool import AsyncConnectionPool
from query_corpus import Doc, delete, seed

from ragline.auth.principal import Principal
from ragline.config import Settings
from ragline.platform.stack.testing import unique_tenant
from ragline.retrieval.embed import QueryEmbedder
from ragline.retrieval.filters import compile_predicates
from ragline.retrieval.lexical import LexicalSearcher
from ragline.retrieval.term_stats import QueryTermFrequency
from ragline.store.os_client import make_client
from ragline.store.pool import open_pool

pytestmark = pytest.mark.integration

RARE = "zorblax"  # in the hidden group's chunks and the other tenant's, never the caller's
HIDDEN = "board-only"


def _docs() -> tuple[list[Doc], list[Doc]]:
    mine = [
        Doc(
            document_id="pub:leave",
            title="Leave policy",
            texts=(
                "Vacation days accrue monthly for every employee.",
                "Unused vacation days expire at the end of March.",
                "Sick days are reported to the team lead.",
            ),
            groups=("staff",),
        ),
        Doc(
            document_id="pub:gone",
            title="Old note",
            texts=("Vacation planning moved to the new tool.",),
            groups=("staff",),
        ),
        Doc(
            document_id="hid:plan",
            title="Board minutes",
            texts=(
                f"The {RARE} acquisition stays confidential until March.",
                f"Vacation freeze for the {RARE} integration team.",
            ),
            groups=(HIDDEN,),
        ),
    ]
    other = [
        Doc(
            document_id="oth:plan",
            title="Roadmap",
            texts=(f"{RARE} vacation rules and {RARE} payroll.", "Payroll runs on the 25th."),
            groups=("staff",),
        )
    ]
    return mine, other


async def test_statistics_never_leave_the_callers_scope(
    stack: Settings, embedder: QueryEmbedder
) -> None:
    tenant, other_tenant = unique_tenant("ts"), unique_tenant("ts")
    mine, other = _docs()
    pool = await open_pool(stack.admin_dsn(), name="term-stats-seed")
    client = make_client(stack)
    prefix = stack.opensearch_index_prefix
    try:
        await seed(pool, client, prefix, tenant, mine, embedder)
        await seed(pool, client, prefix, other_tenant, other, embedder)
        await delete(pool, client, prefix, tenant, "pub:gone")  # deleted: counts nowhere
        # a loaded CI machine: the production 1 s timeout would turn a slow answer into None
        terms = QueryTermFrequency(LexicalSearcher(client, index_prefix=prefix), timeout_s=30.0)
        preds = compile_predicates(None, include_superseded=False, effective_at=None)
        staff = Principal(tenant=tenant, groups=("staff",), subject="t")
        board = Principal(tenant=tenant, groups=(HIDDEN,), subject="t")
        both = Principal(tenant=tenant, groups=("staff", HIDDEN), subject="t")
        outsider = Principal(tenant=other_tenant, groups=("staff",), subject="t")
        q = f"Which {RARE} vacation rules apply?"
        hidden_chunk = await _a_chunk_of(pool, tenant, "hid:plan")

        # the staff caller: the hidden group's and the other tenant's RARE are invisible,
        # even when it names a hidden chunk as its "top hit"
        s = await terms.get(staff, q, preds, hidden_chunk)
        assert s is not None
        assert s.chunks == 3  # pub:leave's 3 children; pub:gone is deleted
        assert s.df[RARE] == 0 and s.df["vacat"] == 2
        assert s.top == frozenset()
        assert set(s.df) == {RARE, "vacat", "rule", "appli"}  # question words dropped

        h = await terms.get(board, q, preds, hidden_chunk)
        assert h is not None and h.chunks == 2 and h.df[RARE] == 2 and h.df["vacat"] == 1
        assert h.top == {RARE}  # the chunk "The zorblax acquisition ..." holds only RARE
        b = await terms.get(both, q, preds, None)
        assert b is not None and b.chunks == 5 and b.df[RARE] == 2 and b.df["vacat"] == 3
        o = await terms.get(outsider, q, preds, hidden_chunk)
        assert o is not None and o.chunks == 2 and o.df[RARE] == 1 and o.df["vacat"] == 1
        assert o.top == frozenset()  # another tenant's chunk id finds nothing

        # nothing to weigh; a tenant with no index yet; hostile text: no statistics, no error
        assert await terms.get(staff, "Which of them does what?", preds, None) is None
        nobody = Principal(tenant=unique_tenant("ts"), groups=("staff",), subject="t")
        assert await terms.get(nobody, q, preds, None) is None
        hostile = await terms.get(staff, "vacation \x00 \ud800 " + "x" * 50_000, preds, "\x00")
        assert hostile is not None and hostile.df["vacat"] == 2
    finally:
        await client.close()
        await pool.close()


async def _a_chunk_of(pool: AsyncConnectionPool, tenant: str, document_id: str) -> str:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT chunk_id FROM chunks WHERE tenant_id = %s AND document_id = %s"
            " AND level = 'child' AND text LIKE 'The %%' ",
            (tenant, document_id),
        )
        row = await cur.fetchone()
    assert row is not None
    return str(row[0])
