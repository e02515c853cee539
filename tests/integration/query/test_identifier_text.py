"""The Postgres identifier lookup decides as ``ident_match`` does, for every input: the
stored ``ident_text`` (migration 0150, ``ragline_ident_text``) equals
``ident_match.ident_text`` on every code point and on generated texts, and the lookup's
pattern over it agrees with ``ident_match.matches`` (real PostgreSQL 18)."""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Iterator

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from query_corpus import Doc, seed
from query_helpers import GROUP_A

from ragline.auth.principal import Principal
from ragline.config import Settings
from ragline.platform.stack.testing import unique_tenant
from ragline.retrieval.embed import QueryEmbedder
from ragline.retrieval.ident_match import ident_text, matches, sql_pattern
from ragline.retrieval.lexical import LexicalSearcher
from ragline.retrieval.specificity import IdentifierFrequency
from ragline.store.migrate import load_migrations
from ragline.store.os_client import make_client
from ragline.store.pool import open_pool

pytestmark = pytest.mark.integration

_FOLD_SQL = "SELECT ragline_ident_text(NULL, NULL, %s)"


def unicode_classes() -> tuple[str, str]:
    """Migration 0150's two range lists from the running Python: letters-or-digits
    (``[^\\W_]``, merged across unassigned code points, which are blanked first) and the
    unassigned code points. Regenerate the migration's literals with these."""
    allch = "".join(map(chr, range(0x110000)))
    cn: list[tuple[int, int]] = []
    start = None
    for i in range(0x110000):
        unassigned = unicodedata.category(chr(i)) == "Cn"
        if unassigned and start is None:
            start = i
        elif not unassigned and start is not None:
            cn.append((start, i - 1))
            start = None
    if start is not None:
        cn.append((start, 0x10FFFF))
    starts = [a for a, _ in cn]

    def unassigned_between(a: int, b: int) -> bool:
        i = bisect.bisect_right(starts, a) - 1
        return a > b or (i >= 0 and cn[i][0] <= a and cn[i][1] >= b)

    merged: list[list[int]] = []
    for m in re.finditer(r"[^\W_]+", allch):
        a, b = m.start(), m.end() - 1
        if merged and unassigned_between(merged[-1][1] + 1, a - 1):
            merged[-1][1] = b
        else:
            merged.append([a, b])

    def esc(cp: int) -> str:
        return f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"

    def cls(rs: list[list[int]] | list[tuple[int, int]]) -> str:
        return "".join(esc(a) if a == b else f"{esc(a)}-{esc(b)}" for a, b in rs)

    return cls(merged), cls(cn)


@pytest.fixture(scope="module")
def conn(stack: Settings) -> Iterator[psycopg.Connection]:
    with psycopg.connect(stack.admin_dsn(), autocommit=True) as c:
        yield c


def test_the_migrations_ranges_are_this_pythons() -> None:
    """Fails when Python's Unicode version moves: then write a migration replacing
    ``ragline_ident_text`` with ``unicode_classes()`` (and refilling the column)."""
    (m,) = [m for m in load_migrations() if m.version == 150]
    literal = "".join(re.findall(r"^\s*'(\\[uU][^']*)'$", m.sql, re.M))
    word, unassigned = unicode_classes()
    assert literal == unassigned + word


def test_every_code_point_folds_as_python_does(conn: psycopg.Connection) -> None:
    """All 1,112,064 code points (surrogates cannot be stored), a thousand per text."""
    cps = [cp for cp in range(1, 0x110000) if not 0xD800 <= cp <= 0xDFFF]
    texts = [" ".join(map(chr, cps[i : i + 1000])) for i in range(0, len(cps), 1000)]
    with conn.cursor() as cur:
        cur.executemany(_FOLD_SQL, [(t,) for t in texts], returning=True)
        got = []
        while True:
            got.append(cur.fetchone()[0])  # type: ignore[index]
            if not cur.nextset():
                break
    bad = [
        i for i, (t, g) in enumerate(zip(texts, got, strict=True)) if g != ident_text(None, None, t)
    ]
    assert not bad, [hex(cps[i * 1000]) for i in bad[:5]]


# letters, digits, separators, full-width and ligature forms, combining marks, zero-width
# and format characters, code points Python 3.11 does not know (PostgreSQL 18 folds
# U+1CCD6 to "a"), Cherokee (folds to upper case), sigma, dotted I, ß
_TRICKY = (
    "aAzZ019-_. \t\n\u00a0\u2010\u200b\u200d\u00ad\ufeff\uff21\uff41\uff11\ufb01\u0301"
    "\u0308\u093f\u0915\u0663\u00b2\u2168\u03a3\u03c2\u0130\u0131\u00df\u1e9e\u13a0\uab70"
    "\U0001ccd6\U0001ccf0\ua7cb\u1c89\U0001d400\u2460\u24b6\u3000\u0e31"
)
_TEXTS = st.text(alphabet=_TRICKY, max_size=30) | st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    max_size=30,
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=_TEXTS, ident=st.text(alphabet=_TRICKY, min_size=1, max_size=8) | _TEXTS)
def test_the_lookup_decides_as_ident_match(conn: psycopg.Connection, text: str, ident: str) -> None:
    stored = conn.execute(_FOLD_SQL, (text,)).fetchone()[0]  # type: ignore[index]
    assert stored == ident_text(None, None, text)
    pattern = sql_pattern(ident)
    if pattern is None:
        assert not matches(ident, text)
        return
    found = conn.execute("SELECT %s ~ %s", (stored, pattern)).fetchone()[0]  # type: ignore[index]
    assert found == matches(ident, text)


def test_the_trigger_fills_child_chunks_and_null_rows_fold_on_the_fly(
    conn: psycopg.Connection,
) -> None:
    row = conn.execute(
        "SELECT count(*) FILTER (WHERE ident_text IS NULL),"
        " count(*) FILTER (WHERE ident_text IS DISTINCT FROM"
        "   ragline_ident_text(title, contextual_header, text))"
        " FROM chunks WHERE level = 'child'"
    ).fetchone()
    assert row == (0, 0)


_DOCS = [
    Doc(document_id=f"u:{i}", title=title, texts=(text,), groups=(GROUP_A,))
    for i, (title, text) in enumerate(
        [
            ("Ticket", "Closed \uff33\uff35\uff30\uff0d\uff19\uff19\uff19\uff19 today."),
            ("\ufb01x notes", "The FIX7 patch and \u0130stanbul."),
            ("Kinase", "IL-1\u03b2 and \u03a3IGMA-9 with CO\u2082."),
            ("Runbook", "Restart AGW\u200b-4290 now; see XAB-123."),
        ]
    )
]


async def test_the_lookup_counts_unicode_spellings(
    stack: Settings, embedder: QueryEmbedder
) -> None:
    tenant = unique_tenant("u")
    pool = await open_pool(stack.admin_dsn(), name="ident-text-seed")
    client = make_client(stack)
    try:
        await seed(pool, client, stack.opensearch_index_prefix, tenant, _DOCS, embedder)
    finally:
        await pool.close()
    try:
        freq = IdentifierFrequency(
            LexicalSearcher(client, index_prefix=stack.opensearch_index_prefix)
        )
        a = Principal(tenant=tenant, groups=(GROUP_A,), subject="t")
        want = {
            "sup-9999": 1, "SUP9999": 1, "fix-7": 1, "ﬁx7": 1, "il-1β": 1, "il1": 0,
            "σigma-9": 1, "sigma9": 0, "agw-4290": 1, "xab-123": 1, "ab-12": 0, "ab-123": 0,
            "fi": 0, "co2": 1, "sup-999": 0,
            "\x00": 0, "a\x00b-1": 0, "\ud800x-1": 0, "--": 0,
        }  # fmt: skip
        got: dict[str, int] = {}
        names = sorted(want)
        for batch in (names[:10], names[10:]):  # a lookup weighs at most 16 identifiers
            stats = await freq.get(a, batch)
            assert stats is not None
            got.update({i: stats.df.get(i, -1) for i in batch})
        assert got == want
        texts = {d.document_id: " ".join((d.title, *d.texts)) for d in _DOCS}
        for i, n in want.items():  # the same answers as ident_match over the documents
            assert n == sum(matches(i, t) for t in texts.values()), i
    finally:
        await client.close()
