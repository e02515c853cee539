"""A data node of a three-node OpenSearch cluster SIGKILLed during ingest and queries
(issue 30, item 5): ``ragline stack up --opensearch-nodes 3`` on one host, tenant
indexes with one replica per shard (``auto_expand_replicas``), every consumer service
as its own process on the session's Kafka and Postgres.

One corpus is ingested fault-free (the reference tenant); then a second tenant's ingest
runs while a node is SIGKILLed, and lexical searches of the reference tenant run all
along. The victim is node 1 (the first URL of the list the stack gives the services,
``StackManager.client_env``) or another node holding a copy of the reference index.
Checked: the killed run's stores equal the reference (0 lost, 0 duplicated, every
document indexed), every search answered (none failed: the client moves a request
whose node is gone to the next URL) with the complete set of matching chunks
(``allow_partial_search_results=false``: a lost shard fails the request, it never
answers with fewer hits), and cluster health went yellow while the node was away and
green after it came back.

Not part of ``make test`` (minutes): ``make chaos`` (``RAGLINE_OS_CHAOS_DOCS``, default 60;
one victim: ``-k first`` or ``-k holder``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from chaos_helpers import Fleet, compare, corpus, publish_all, settle, snapshot, upserts
from opensearchpy import AsyncOpenSearch
from opensearchpy.exceptions import OpenSearchException

from ragline.auth.principal import Principal
from ragline.config import Settings
from ragline.errors import RaglineError
from ragline.platform.stack import StackManager, StackSettings
from ragline.platform.stack.opensearch import LocalOpenSearch, LocalOpenSearchCluster
from ragline.platform.stack.settings import Component
from ragline.platform.stack.testing import free_port, indexed_count, unique_tenant
from ragline.retrieval.lexical import LexicalSearcher
from ragline.store.os_client import make_client
from ragline.store.os_index import chunk_mapping, index_name

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="session"),
    pytest.mark.skipif(not os.environ.get("RAGLINE_CHAOS"), reason="long: run by `make chaos`"),
]

N_DOCS = int(os.environ.get("RAGLINE_OS_CHAOS_DOCS", "60"))
TIMEOUT_S = float(os.environ.get("RAGLINE_CHAOS_TIMEOUT_S", "3600"))
QUIET_S = float(os.environ.get("RAGLINE_CHAOS_QUIET_S", "60"))
DOWN_S = 20.0  # how long the killed node stays away (queries and ingest go on)
GROUP = "chaos"  # chaos_helpers.upserts' ACL group


@pytest_asyncio.fixture(loop_scope="session")
async def cluster(
    stack: Settings, tmp_path: Path
) -> AsyncIterator[tuple[Settings, LocalOpenSearchCluster]]:
    settings = stack.model_copy(update={"opensearch_url": f"http://127.0.0.1:{free_port()}"})
    # its own state dir (for the nodes only: Postgres and Kafka stay the session's)
    own = settings.model_copy(update={"state_dir": tmp_path / "opensearch3"})
    stack_settings = StackSettings(
        components=frozenset({Component.OPENSEARCH}), opensearch_nodes=3, opensearch_heap_mb=512
    )
    manager = StackManager(own, stack_settings, detached=False)
    server = manager.servers[Component.OPENSEARCH]
    assert isinstance(server, LocalOpenSearchCluster)
    # what `ragline up` gives the services: every node, node 1 first
    urls = manager.client_env()["RAGLINE_OPENSEARCH_URL"]
    assert urls.split(",")[0] == settings.opensearch_url and len(urls.split(",")) == 3
    await server.start()
    try:
        yield settings.model_copy(update={"opensearch_url": urls}), server
    finally:
        await server.stop()


async def _health(client: AsyncOpenSearch) -> str:
    try:
        return str((await client.cluster.health(request_timeout=5))["status"])
    except Exception as exc:
        return f"error:{type(exc).__name__}"


async def _victim(
    client: AsyncOpenSearch, index: str, server: LocalOpenSearchCluster, which: str
) -> int:
    """``first``: node 1, the first URL; ``holder``: a node other than node 1 holding a
    copy of ``index``. Its position in the list."""
    if which == "first":
        return 0
    shards = await client.cat.shards(index=index, format="json", h="node,state")
    held = {s["node"] for s in shards if s.get("state") == "STARTED"}
    names = [n.layout.node_name for n in server.nodes]
    return next(i for i, name in enumerate(names) if i > 0 and name in held)


PARTIAL_DOCS = 24


async def _unreplicated(
    client: AsyncOpenSearch, alias: str, tenant: str, nodes: tuple[str, str]
) -> str:
    """A tenant index of 2 shards and no replica, one shard on each of ``nodes``, every
    chunk matching "shared": the index whose lexical answer loses half its hits when one
    of the nodes dies. Returns the physical index."""
    body = chunk_mapping()
    body["settings"] = {
        **{k: v for k, v in body["settings"].items() if k != "auto_expand_replicas"},
        "number_of_shards": 2,
        "number_of_replicas": 0,
        "routing.allocation.include._name": ",".join(nodes),
        "routing.allocation.total_shards_per_node": 1,
    }
    await client.indices.create(index=f"{alias}.i0", body={**body, "aliases": {alias: {}}})
    ops: list[dict[str, Any]] = []
    for i in range(PARTIAL_DOCS):
        ops.append({"index": {"_index": alias, "_id": f"p{i}"}})
        ops.append(
            {"chunk_id": f"p{i}", "tenant_id": tenant, "acl_groups": [GROUP], "text": "shared"}
        )
    await client.bulk(body=ops, refresh="true")
    await client.cluster.health(
        index=alias, wait_for_status="green", timeout="60s", request_timeout=70
    )
    return f"{alias}.i0"


async def _reference_queries(
    searcher: LexicalSearcher, who: Principal, texts: list[str]
) -> dict[str, frozenset[str]]:
    """Every chunk matching each query (limit far above the corpus): what a complete
    answer holds."""
    return {
        q: frozenset(h.chunk_id for h in await searcher.search(who, q, [], limit=2000))
        for q in texts
    }


@pytest.mark.parametrize("which", ["first", "holder"])
async def test_a_killed_data_node_loses_nothing_and_answers_stay_complete(
    cluster: tuple[Settings, LocalOpenSearchCluster], tmp_path: Path, which: str
) -> None:
    settings, server = cluster
    docs = corpus(N_DOCS)
    env = {
        **os.environ,
        "RAGLINE_OPENSEARCH_URL": settings.opensearch_url,
        "RAGLINE_EMBEDDER_CACHE": "false",
    }
    fleet = Fleet(logs=tmp_path / "fleet", env=env, replicas=1)
    fleet.start_all()
    client = make_client(settings)
    searcher = LexicalSearcher(client, index_prefix=settings.opensearch_index_prefix)
    deadline = time.monotonic() + TIMEOUT_S
    figures: dict[str, Any] = {"docs": N_DOCS}
    stop = asyncio.Event()
    answers: Counter[str] = Counter()
    health: list[str] = []
    try:
        await fleet.wait_up()
        base = unique_tenant("base")
        await publish_all(settings, upserts(base, docs))
        await settle(settings, fleet, base, N_DOCS, deadline)
        want = await snapshot(settings, client, base)
        base_index = index_name(settings.opensearch_index_prefix, base)
        replicas = await client.cat.shards(index=base_index, format="json", h="prirep,state")
        assert sorted(r["prirep"] for r in replicas) == ["p", "r"]  # one replica per shard
        who = Principal(tenant=base, groups=(GROUP,), subject="chaos")
        texts = [" ".join(t.split()[:6]) for _, _, t in docs[:6] if t]
        reference = await _reference_queries(searcher, who, texts)
        assert all(reference.values())

        async def query_loop() -> None:
            while not stop.is_set():
                for q, ids in reference.items():
                    try:
                        got = await searcher.search(who, q, [], limit=2000, timeout_s=10)
                    except RaglineError as exc:
                        answers[f"error:{type(exc).__name__}"] += 1
                        continue
                    ids_got = frozenset(h.chunk_id for h in got)
                    answers["complete" if ids_got == ids else "incomplete"] += 1
                await asyncio.sleep(0.05)

        async def health_loop() -> None:
            while not stop.is_set():
                status = await _health(client)
                if not health or health[-1] != status:
                    health.append(status)
                await asyncio.sleep(0.5)

        tenant = unique_tenant("killed")
        loops = [asyncio.create_task(query_loop()), asyncio.create_task(health_loop())]
        t0 = time.monotonic()
        await publish_all(settings, upserts(tenant, docs))
        while await indexed_count(settings.admin_dsn(), tenant) < N_DOCS // 4:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.2)
        victim: LocalOpenSearch = server.nodes[await _victim(client, base_index, server, which)]
        # allow_partial_search_results=false shown: a shard with no copy left fails the
        # lexical leg (degraded), it never answers with the other shard's hits only
        other = next(n for n in server.nodes if n is not victim).layout.node_name
        part = unique_tenant("partial")
        part_who = Principal(tenant=part, groups=(GROUP,), subject="chaos")
        partial = await _unreplicated(
            client,
            index_name(settings.opensearch_index_prefix, part),
            part,
            (victim.layout.node_name, other),
        )
        assert len(await searcher.search(part_who, "shared", [], limit=2000)) == PARTIAL_DOCS
        t_kill = time.monotonic()
        victim.kill()
        killed_at = await indexed_count(settings.admin_dsn(), tenant)
        try:
            hits = await searcher.search(part_who, "shared", [], limit=2000, timeout_s=10)
            figures["lost_shard"] = f"answered {len(hits)} of {PARTIAL_DOCS}"
        except RaglineError as exc:
            figures["lost_shard"] = f"failed: {type(exc).__name__}"
        try:  # what the same request answers when partial results are allowed
            raw = await client.search(
                index=partial,
                body={"size": 2000, "query": {"match": {"body": "shared"}}},
                allow_partial_search_results=True,
                request_timeout=10,
            )
            figures["lost_shard_if_partial"] = (
                f"{len(raw['hits']['hits'])} of {PARTIAL_DOCS}, "
                f"{raw['_shards']['failed']} shard(s) failed"
            )
        except Exception as exc:
            figures["lost_shard_if_partial"] = f"failed: {type(exc).__name__}"
        with contextlib.suppress(OpenSearchException):  # (no node reachable: after restart)
            await client.indices.delete(index=partial)
            partial = ""
        await asyncio.sleep(max(0.0, DOWN_S - (time.monotonic() - t_kill)))
        await victim.start()
        if partial:
            await client.indices.delete(index=partial)
        green = await client.cluster.health(
            wait_for_status="green", wait_for_nodes="3", timeout="600s", request_timeout=620
        )
        await settle(settings, fleet, tenant, N_DOCS, deadline, quiet_s=QUIET_S)
        stop.set()
        await asyncio.gather(*loops)
        got = await snapshot(settings, client, tenant)
        result = compare(want, got)
        figures["fault"] = {
            "victim": victim.layout.node_name,
            "lost_shard": figures["lost_shard"],
            "lost_shard_if_partial": figures["lost_shard_if_partial"],
            "indexed_when_killed": killed_at,
            "seconds": round(time.monotonic() - t0, 1),
            "health": health,
            "answers": dict(answers),
            **{k: result[k] for k in ("lost", "duplicated", "documents", "chunks")},
        }
        print(json.dumps(figures["fault"]))
        assert result["lost"] == 0 and result["duplicated"] == 0, result
        assert not result["differing_documents"] and not result["differing_chunks"], result
        assert not result["differing_os"] and not result["status_not_indexed"], result
        assert answers["incomplete"] == 0 and answers["complete"] > 0, answers
        assert not [k for k in answers if k.startswith("error:")], answers
        assert "yellow" in health and green["status"] == "green", health
        assert figures["lost_shard"].startswith("failed"), figures["lost_shard"]
    finally:
        stop.set()
        fleet.stop()
        await client.close()
        print(json.dumps({"opensearch_cluster_chaos": figures}))
