"""``store.sql_text.rendered``: a composition rendered once, without a connection, is the
statement psycopg composes with one (issue 35: the indexer no longer composes its upserts
for every execute and every ``executemany`` row). Identifiers are quoted by the server's
rules either way; checked against a live connection on names that need quoting."""

from __future__ import annotations

import psycopg
import pytest
from psycopg import sql

from ragline.config import Settings
from ragline.store import chunks, documents, spaces
from ragline.store.sql_text import rendered

pytestmark = pytest.mark.integration

NAMES = ("tenant_id", "Mixed Case", 'quo"te', "ünïcode", "select", "a b", "x%y")


async def test_rendered_is_what_a_connection_composes(stack: Settings) -> None:
    async with await psycopg.AsyncConnection.connect(stack.admin_dsn()) as conn:
        query = sql.SQL(
            "INSERT INTO t ({cols}) VALUES ({vals}) ON CONFLICT DO UPDATE SET {s}"
        ).format(
            cols=sql.SQL(", ").join(sql.Identifier(n) for n in NAMES),
            vals=sql.SQL(", ").join(sql.Placeholder() * len(NAMES)),
            s=sql.SQL(", ").join(
                sql.SQL("{c} = EXCLUDED.{c}").format(c=sql.Identifier(n)) for n in NAMES
            ),
        )
        assert rendered(query).as_string(conn) == query.as_string(conn)
        # the store's own statements: composed with the connection, as before
        assert chunks._INSERT.as_string(conn) == chunks._insert_query().as_string(conn)
        cols = documents.DOCUMENT_COLUMNS[:5]
        composed = documents._upsert_composed(cols)
        assert documents._upsert_query(cols).as_string(conn) == composed.as_string(conn)
        lock = sql.SQL("SELECT {fn}(%s)").format(fn=sql.Identifier("pg_advisory_xact_lock"))
        assert spaces._LOCKS[True].as_string(conn) == lock.as_string(conn)
