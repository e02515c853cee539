"""The I/O side of the lifecycle tests (a uniquely named module, imported directly): the
in-process pipeline (``lifecycle_driver``), the query API in-process, and what every
store and endpoint says about one document; plus ``check``, which compares that with
the reference model (``lifecycle_model``).

Everything here lives on one event loop of its own (``World.run``), so the synchronous
hypothesis state machine can drive it from a worker thread.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import jwt
import psycopg
from lifecycle_driver import Driver
from lifecycle_model import OVERSIZE_BYTES, PRINCIPALS, DocModel
from opensearchpy import AsyncOpenSearch

from ragline.config import EmbeddingModelSettings, Settings
from ragline.connector.settings import ConnectorSettings
from ragline.connector.stage import ConnectorStage
from ragline.errors import QuarantineError
from ragline.hashing import content_hash
from ragline.indexing.settings import IndexerSettings
from ragline.indexing.stage import IndexerStage
from ragline.retrieval.embed import CachedEmbedder, ModelQueryEmbedder
from ragline.retrieval.settings import QuerySettings
from ragline.scanning.settings import ScannerSettings
from ragline.scanning.stage import ScannerStage
from ragline.store.os_client import make_client
from ragline.store.os_index import index_name
from services.chunker.handlers import build as build_chunker
from services.embedder.handlers import build as build_embedder
from services.enricher.handlers import build as build_enricher
from services.parser.handlers import build as build_parser
from services.query.api import create_app

T = TypeVar("T")
JWT_SECRET = "lifecycle-test-secret-0123456789abcdef"
SOURCE_TYPE = "lifetest"
# stages whose restart is cheap (the scanner and embedder load models: their crash
# redelivers the batch to the same instance, which holds no document state)
RESTARTABLE = ("connector", "parser", "chunker", "enricher", "indexer")

# any secret in a lifetest document quarantines it (the default policy redacts)
_POLICY = f"""version: 1
rules:
  - name: lifetest-block
    match: {{source_types: [{SOURCE_TYPE}]}}
    secrets: {{"*": block}}
"""


class FaultyChunker:
    """The real chunker stage, except that a version whose (tenant, content hash) is in
    ``refuse`` is quarantined here (a fault the model's "chunkfail" versions inject, so that every
    quarantining stage is exercised)."""

    def __init__(self, inner: Any, refuse: set[tuple[str, str]]) -> None:
        self.inner = inner
        self.refuse = refuse
        self.name = inner.name
        self.input_topics = inner.input_topics

    async def start(self) -> None:
        await self.inner.start()

    async def stop(self) -> None:
        await self.inner.stop()

    async def handle_batch(self, events: Sequence[Any], ctx: Any) -> Sequence[Any]:
        refused = [(e.tenant_id, e.content_hash) in self.refuse for e in events]
        kept = [e for e, r in zip(events, refused, strict=True) if not r]
        done = iter(await self.inner.handle_batch(kept, ctx))
        fault = QuarantineError("lifetest_chunker_fault", "the lifecycle test refuses it")
        return [fault if r else next(done) for r in refused]


@dataclass
class Seen:
    """What the stores and the API say about one document."""

    row: dict[str, Any] | None  # documents (admin)
    status: str | None  # document_status.status
    status_hash: str | None  # document_status.content_hash
    chunks: list[dict[str, Any]]  # chunks (admin)
    os_hits: list[dict[str, Any]]  # OpenSearch: _id, text, acl_groups
    api: dict[tuple[str, ...], tuple[int, dict[str, Any]]]  # principal -> GET /v1/documents


class World:
    """Pipeline + query API + readers, on a loop of their own."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.loop = asyncio.new_event_loop()
        self._tmp = tempfile.TemporaryDirectory(prefix="lifecycle-")
        policy = Path(self._tmp.name) / "policy.yaml"
        policy.write_text(_POLICY)
        # no tenant budget: a change's lane is the one the machine drew (a test that
        # demotes by budget sets the connector's admission itself)
        cset = ConnectorSettings(max_document_bytes=OVERSIZE_BYTES, tenant_interactive_rate=0)
        sset = ScannerSettings(policy_file=policy)
        # refresh "true": searchable on return without the 1 s wait (indexing/conftest.py)
        iset = IndexerSettings(os_refresh="true")
        self.chunker_refuses: set[tuple[str, str]] = set()  # see FaultyChunker
        factories: dict[str, Any] = {
            "connector": lambda: ConnectorStage(settings, cset),
            "parser": lambda: build_parser(settings),
            "scanner": lambda: ScannerStage(settings, sset),
            "chunker": lambda: FaultyChunker(build_chunker(settings), self.chunker_refuses),
            "enricher": lambda: build_enricher(settings),
            "embedder": lambda: build_embedder(settings),
            "indexer": lambda: IndexerStage(settings, iset),
        }
        self.driver = Driver(
            settings=settings, factories=factories, restartable=frozenset(RESTARTABLE)
        )
        self.client: httpx.AsyncClient | None = None
        self._lifespan: Any = None
        self.os: AsyncOpenSearch | None = None
        self.admin: psycopg.AsyncConnection[Any] | None = None
        self._embedder: ModelQueryEmbedder | None = None

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    # ------------------------------------------------------------------ lifetime
    async def open(self) -> None:
        await self.driver.start()
        self._embedder = await ModelQueryEmbedder.load(EmbeddingModelSettings())
        qs = QuerySettings.from_fields(
            jwt_secret=JWT_SECRET,
            rate_limit_per_minute=0,
            abstain_min_similarity=-1.0,  # the model decides visibility, not relevance
        )
        app = create_app(self.settings, qs, embedder=CachedEmbedder(self._embedder, size=1024))
        self._lifespan = app.router.lifespan_context(app)
        await self._lifespan.__aenter__()
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=True)
        self.client = httpx.AsyncClient(transport=transport, base_url="http://query")
        self.os = make_client(self.settings)
        self.admin = await psycopg.AsyncConnection.connect(
            self.settings.admin_dsn(), autocommit=True
        )

    async def close(self) -> None:
        if self.client is not None:
            await self.client.aclose()
        if self._lifespan is not None:
            await self._lifespan.__aexit__(None, None, None)
        if self._embedder is not None:
            self._embedder.close()
        if self.os is not None:
            await self.os.close()
        if self.admin is not None:
            await self.admin.close()
        await self.driver.stop()
        self._tmp.cleanup()

    def shutdown(self) -> None:
        try:
            self.run(self.close())
        finally:
            self.loop.close()

    # ------------------------------------------------------------------ reading
    @staticmethod
    def token(tenant: str, groups: tuple[str, ...]) -> str:
        claims = {"sub": "lifetest", "tenant": tenant, "groups": list(groups)}
        return jwt.encode({**claims, "exp": time.time() + 600}, JWT_SECRET, algorithm="HS256")

    async def seen(self, tenant: str, document_id: str) -> Seen:
        assert self.admin is not None and self.os is not None and self.client is not None
        cur = self.admin.cursor(row_factory=psycopg.rows.dict_row)
        await cur.execute(
            "SELECT status, acl_groups, content_hash, title, revision, os_revision"
            " FROM documents WHERE tenant_id = %s AND document_id = %s",
            (tenant, document_id),
        )
        row = await cur.fetchone()
        await cur.execute(
            "SELECT status, content_hash FROM document_status"
            " WHERE tenant_id = %s AND document_id = %s",
            (tenant, document_id),
        )
        st = await cur.fetchone()
        await cur.execute(
            "SELECT chunk_id, level, text, acl_groups FROM chunks"
            " WHERE tenant_id = %s AND document_id = %s ORDER BY ordinal",
            (tenant, document_id),
        )
        chunks = list(await cur.fetchall())
        resp = await self.os.search(
            index=index_name(self.settings.opensearch_index_prefix, tenant),
            body={"size": 500, "query": {"term": {"document_id": document_id}}},
            ignore_unavailable=True,
        )
        hits = [
            {"_id": h["_id"], "text": h["_source"]["text"], "acl": h["_source"]["acl_groups"]}
            for h in resp["hits"]["hits"]
        ]
        api: dict[tuple[str, ...], tuple[int, dict[str, Any]]] = {}
        for groups in PRINCIPALS:
            r = await self.client.get(
                f"/v1/documents/{document_id}",
                headers={"Authorization": f"Bearer {self.token(tenant, groups)}"},
            )
            api[groups] = (r.status_code, r.json())
        return Seen(
            row=row,
            status=st["status"] if st else None,
            status_hash=st["content_hash"] if st else None,
            chunks=chunks,
            os_hits=hits,
            api=api,
        )

    async def search(self, tenant: str, groups: tuple[str, ...], words: list[str]) -> list[Any]:
        assert self.client is not None
        r = await self.client.post(
            "/v1/search",
            json={"query": " ".join(words), "mode": "lexical", "top_k": 50},
            headers={"Authorization": f"Bearer {self.token(tenant, groups)}"},
        )
        assert r.status_code == 200, r.text
        return list(r.json()["results"])


def _tokens_in(text: str, tokens: set[str]) -> set[str]:
    return {t for t in tokens if t in text}


def check_document(
    where: str, model: DocModel, seen: Seen, hashes: dict[str, str], *, deleted_gone: bool
) -> None:
    """The stores and the API agree with each other and, when the model knows the
    outcome (``model.exact``), with the model. ``hashes``: the content hash of every
    version sent, by its word."""
    tokens = set(hashes)
    row = seen.row
    indexed = row is not None and row["status"] == "indexed"
    children = {c["chunk_id"] for c in seen.chunks if c["level"] == "child"}
    # --- the stores agree with each other, whatever the model knows
    if indexed:
        assert row is not None
        acl = sorted(row["acl_groups"])
        assert seen.chunks, f"{where}: indexed without chunks"
        ids = [c["chunk_id"] for c in seen.chunks]
        assert len(ids) == len(set(ids)), f"{where}: duplicated chunk ids"
        for c in seen.chunks:
            assert sorted(c["acl_groups"]) == acl, f"{where}: chunk ACL {c['acl_groups']} != {acl}"
        words = set().union(*(_tokens_in(c["text"], tokens) for c in seen.chunks))
        assert len(words) == 1, f"{where}: chunks mix versions {sorted(words)}"
        (word,) = words
        assert row["content_hash"] == hashes[word], f"{where}: documents.content_hash is not {word}"
        if seen.status == "indexed":
            assert seen.status_hash == row["content_hash"], (
                f"{where}: document_status and documents disagree on the indexed version"
            )
        assert row["os_revision"] == row["revision"], f"{where}: OpenSearch behind Postgres"
        assert {h["_id"] for h in seen.os_hits} == children, (
            f"{where}: OpenSearch ids {sorted(h['_id'] for h in seen.os_hits)} != Postgres "
            f"children {sorted(children)}"
        )
        for h in seen.os_hits:
            assert sorted(h["acl"]) == acl, f"{where}: OpenSearch ACL {h['acl']} != {acl}"
            assert _tokens_in(h["text"], tokens) <= words, f"{where}: stale text in OpenSearch"
    else:
        assert not seen.chunks, f"{where}: {len(seen.chunks)} chunks of a document not indexed"
        assert not seen.os_hits, f"{where}: {len(seen.os_hits)} OpenSearch hits, not indexed"
    for groups, (code, body) in seen.api.items():
        readable = indexed and row is not None and bool(set(row["acl_groups"]) & set(groups))
        if readable:
            assert code == 200 and body["status"] == "indexed", f"{where} {groups}: {code} {body}"
        elif deleted_gone or row is None or row["status"] != "deleted":
            assert code == 404, f"{where} {groups}: readable by a principal it excludes: {body}"
    if seen.status is not None and model.content_seq is not None:
        assert seen.status != "accepted", f"{where}: status stuck at 'accepted'"
    if not model.exact:
        return
    # --- and with the model
    if model.live:
        assert model.current is not None
        assert indexed, f"{where}: expected indexed {model.current.token}, got {row}"
        assert row is not None
        assert sorted(row["acl_groups"]) == sorted(model.acl), (
            f"{where}: ACL {row['acl_groups']}, expected {list(model.acl)}"
        )
        assert row["content_hash"] == content_hash(model.current.text.encode()), (
            f"{where}: content hash is not version {model.current.token}"
        )
        assert row["title"] == model.title, f"{where}: title {row['title']!r} != {model.title!r}"
        words = set().union(*(_tokens_in(c["text"], tokens) for c in seen.chunks))
        assert words == {model.current.token}, f"{where}: chunks hold {sorted(words)}"
    else:
        assert not indexed, f"{where}: expected not readable, got {row}"
    if model.status is not None:
        assert seen.status == model.status, (
            f"{where}: status {seen.status}, expected {model.status}"
        )
    for groups, (code, _) in seen.api.items():
        if model.visible_to(groups):
            assert code == 200, f"{where} {groups}: cannot read what it may"
        elif deleted_gone or model.status != "deleted":
            assert code == 404, f"{where} {groups}: reads what it may not"


def check_search(
    where: str, results: list[Any], expect: dict[str, str | None], tokens: set[str]
) -> None:
    """``expect``: document id -> the word of its readable version (None: must not be
    found). Every readable document is found, nothing else, and no stale text."""
    found: dict[str, set[str]] = {}
    for r in results:
        found.setdefault(r["document_id"], set()).update(_tokens_in(r["text"], tokens))
    want = {d for d, w in expect.items() if w is not None}
    assert set(found) == want, f"{where}: search found {sorted(found)}, expected {sorted(want)}"
    for d, words in found.items():
        assert words <= {expect[d]}, f"{where}: {d} answers with stale text {sorted(words)}"
