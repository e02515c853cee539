"""OpenSearch index per tenant: naming, mappings (English analyzer) and creation.

One index per tenant so a hidden tenant never shapes another tenant's BM25 term
statistics. BM25 runs over ``body``: the contextual header and the chunk text copied
into ONE field at index time (the standard "title + text as one field" of BEIR/Anserini;
searching the fields separately and taking the best one loses the header's words
whenever the text matched better, see docs/evaluation.md "Lexical leg"). Only child
chunks are indexed (parents are fetched from Postgres for expansion); every filter the
query side applies before ranking is a keyword/date/bool field here, denormalized from
the document.
"""

from __future__ import annotations

import re
import time
from typing import Any

from opensearchpy import AsyncOpenSearch

from ragline.errors import PermanentError
from ragline.store.os_client import os_errors

__all__ = [
    "BM25_B",
    "BM25_K1",
    "COPY_TARGETS",
    "IDENT_FIELD",
    "MAPPING_VERSION",
    "alias_targets",
    "chunk_mapping",
    "concrete_name",
    "create_concrete",
    "drop_indexes",
    "ensure_index",
    "flip_shadow",
    "index_name",
    "mapping_version",
    "open_shadow",
    "retire_rollback",
    "roll_back",
    "rollback_alias",
    "shadow_alias",
    "swap_alias",
    "tenant_of_index",
]

# 2: ``body`` (contextual_header + text); 3: ``body`` scored by BM25 k1 0.6, b 0.5;
# 4: ``ident`` (identifier counts, retrieval/specificity.py). Older indexes keep working
# (``ensure_index`` adds the new field) and get the new scoring and field with a reindex.
MAPPING_VERSION = 4
# Lucene's BM25 parameters for ``body``, the field the lexical leg searches. Fused with the
# dense leg, a term's repetitions should count for less than Lucene's default k1 1.2: on
# SciFact train with real Lucene, hybrid nDCG@10 rises monotonically as k1 falls from 2.0
# to 0.6 at every b (chosen on the fixed train half, better on the held-out half too), and
# the lexical leg alone stays within 0.01 of a reference BM25 (docs/evaluation.md
# "Session 4", bench/tune.py bm25).
BM25_K1 = 0.6
BM25_B = 0.5
_SIMILARITY = "ragline_bm25"
_TENANT_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")  # fullmatch only

_KEYWORD = {"type": "keyword"}
_ENGLISH = {"type": "text", "analyzer": "english"}
# fields filled only by ``copy_to`` (never in the indexed document itself)
COPY_TARGETS: frozenset[str] = frozenset({"body"})
_TO_BODY = {"copy_to": ["body"]}
# The chunk's title, contextual header and text folded as ``ident_match.ident_text`` folds
# them (NFKC, case-folded, every run of non-alphanumerics one space: Postgres's
# ``chunks.ident_text``, migration 0150), split at the spaces: its tokens are whole letter
# and digit runs, so a phrase of them is the identifier test of ``ident_match`` (the
# ``body`` analyzer neither NFKC-folds nor keeps ``C1698T`` apart from ``C1698``). Only
# searched, never scored: no norms, no source of its own beyond the indexed document.
IDENT_FIELD = "ident"
_IDENT = {"type": "text", "analyzer": "whitespace", "norms": False}


def index_name(prefix: str, tenant_id: str) -> str:
    """``{prefix}-{tenant}``: the alias every reader and writer uses (tenant ids are
    already lowercase slugs, events.py)."""
    if not _TENANT_RE.fullmatch(tenant_id):
        raise PermanentError("tenant id is not a valid index suffix")
    return f"{prefix}-{tenant_id}"


def tenant_of_index(prefix: str, name: str) -> str | None:
    head = f"{prefix}-"
    if not name.startswith(head):
        return None
    tenant = name[len(head) :]
    return tenant if _TENANT_RE.fullmatch(tenant) else None


def chunk_mapping() -> dict[str, Any]:
    """Index settings + strict mappings of a tenant index (field names: docs/indexing.md)."""
    return {
        "settings": {
            "number_of_shards": 1,
            # replicas follow the deployment: 0 on one node (health green), 1 in a cluster
            "auto_expand_replicas": "0-1",
            "refresh_interval": "1s",
            "similarity": {_SIMILARITY: {"type": "BM25", "k1": BM25_K1, "b": BM25_B}},
        },
        "mappings": {
            "dynamic": "strict",
            "_meta": {"ragline_mapping_version": MAPPING_VERSION},
            "properties": {
                "chunk_id": _KEYWORD,
                "tenant_id": _KEYWORD,
                "document_id": _KEYWORD,
                "parent_id": _KEYWORD,
                "generation": {"type": "integer"},
                "revision": {"type": "long"},
                "ordinal": {"type": "integer"},
                "text": {**_ENGLISH, **_TO_BODY},
                "contextual_header": {**_ENGLISH, **_TO_BODY},
                "body": {**_ENGLISH, "similarity": _SIMILARITY},  # what BM25 searches
                IDENT_FIELD: _IDENT,
                "title": {**_ENGLISH, "fields": {"raw": {"type": "keyword", "ignore_above": 512}}},
                "section_path": {
                    **_ENGLISH,
                    "fields": {"raw": {"type": "keyword", "ignore_above": 512}},
                },
                "content_type": _KEYWORD,
                "language": _KEYWORD,
                "source_type": _KEYWORD,
                "uri": {"type": "keyword", "index": False},
                "acl_groups": _KEYWORD,
                "classification": _KEYWORD,
                "trust": _KEYWORD,
                "version": _KEYWORD,
                "series_id": _KEYWORD,
                "effective_date": {"type": "date"},
                "expiry_date": {"type": "date"},
                "superseded": {"type": "boolean"},
                "injection_suspect": {"type": "boolean"},
                "pii_types": _KEYWORD,
                "token_count": {"type": "integer"},
                "page_start": {"type": "integer"},
                "page_end": {"type": "integer"},
            },
        },
    }


def concrete_name(alias: str, stamp: int) -> str:
    """A physical index behind a tenant alias (``.`` never occurs in tenant ids)."""
    return f"{alias}.i{stamp}"


async def ensure_index(client: AsyncOpenSearch, name: str) -> bool:
    """Make sure the tenant alias ``name`` resolves to an index; True when one was created.

    A new tenant gets a physical index ``{name}.i0`` with ``name`` as its alias, so
    ``ragline reindex`` can later build a replacement and swap the alias atomically.
    """
    with os_errors():
        if await client.indices.exists(index=name):
            # an index of an older mapping: add the fields it lacks (additive; documents
            # written before stay without them until a reindex, see ``mapping_version``)
            await client.indices.put_mapping(index=name, body={"properties": {IDENT_FIELD: _IDENT}})
            return False
        body = {**chunk_mapping(), "aliases": {name: {}}}
        # a fixed first name: two replicas racing to create it cannot both succeed
        resp = await client.indices.create(index=concrete_name(name, 0), body=body, ignore=400)
    if isinstance(resp, dict) and resp.get("status") == 400:
        err = resp.get("error")
        kind = err.get("type") if isinstance(err, dict) else None
        if kind != "resource_already_exists_exception":
            raise PermanentError(f"cannot create index: {kind}")
        return False
    return True


async def mapping_version(client: AsyncOpenSearch, alias: str) -> int | None:
    """The oldest mapping version of the indexes behind ``alias`` (the version they were
    created with: a field ``ensure_index`` added later is empty in their older
    documents); None when there is no such index."""
    with os_errors():
        resp = await client.indices.get_mapping(index=alias, ignore_unavailable=True)
    versions = [
        int((m.get("mappings", {}).get("_meta") or {}).get("ragline_mapping_version", 0))
        for m in resp.values()
    ]
    return min(versions) if versions else None


async def alias_targets(client: AsyncOpenSearch, alias: str) -> list[str]:
    """Physical indexes the alias points to ([] when it is no alias)."""
    with os_errors():
        if not await client.indices.exists_alias(name=alias):
            return []
        resp = await client.indices.get_alias(name=alias)
    return sorted(resp)


async def create_concrete(client: AsyncOpenSearch, alias: str) -> str:
    """A new empty physical index for ``alias`` (not yet pointed to)."""
    concrete = concrete_name(alias, int(time.time() * 1000))
    with os_errors():
        await client.indices.create(index=concrete, body=chunk_mapping())
    return concrete


async def swap_alias(client: AsyncOpenSearch, alias: str, concrete: str) -> list[str]:
    """Point ``alias`` at ``concrete`` only (atomically); returns the indexes it left.

    A physical index squatting on the alias name (created by hand, or by an old
    version) is deleted first: there is no atomic way to turn an index into an alias.
    """
    old = await alias_targets(client, alias)
    with os_errors():
        if not old and await client.indices.exists(index=alias):
            await client.indices.delete(index=alias)
            old = []
        actions: list[dict[str, Any]] = [
            {"remove": {"index": o, "alias": alias}} for o in old if o != concrete
        ]
        actions.append({"add": {"index": concrete, "alias": alias}})
        await client.indices.update_aliases(body={"actions": actions})
    return [o for o in old if o != concrete]


async def drop_indexes(client: AsyncOpenSearch, names: list[str]) -> None:
    with os_errors():
        for name in names:
            await client.indices.delete(index=name, ignore_unavailable=True)


# ---------------------------------------------------------------- blue-green


def shadow_alias(alias: str) -> str:
    """The alias of the physical index being built to replace ``alias``'s: the indexer
    writes every document to it as well as to the live one (``OsSyncer``), a gate can
    read it, and ``flip_shadow`` makes it live."""
    return f"{alias}.shadow"


def rollback_alias(alias: str) -> str:
    """The alias of the physical index ``alias`` pointed to before the last flip, kept
    until ``retire_rollback``."""
    return f"{alias}.rollback"


async def open_shadow(client: AsyncOpenSearch, alias: str) -> str:
    """The shadow physical index of ``alias`` (created empty, with the current mapping,
    when there is none): writes go to it from now on."""
    shadow = shadow_alias(alias)
    current = await alias_targets(client, shadow)
    if current:
        return current[0]
    concrete = concrete_name(alias, int(time.time() * 1000))
    with os_errors():
        await client.indices.create(
            index=concrete, body={**chunk_mapping(), "aliases": {shadow: {}}}
        )
    return concrete


async def flip_shadow(client: AsyncOpenSearch, alias: str) -> tuple[str, list[str]]:
    """Make the shadow index live in ONE ``_aliases`` call (a reader sees the old index
    or the new one, never none or both): ``alias`` moves to it, the shadow alias goes,
    the previous live index becomes the rollback. Returns (new live index, the indexes
    the rollback alias left: older rollbacks, now unreferenced)."""
    shadow = shadow_alias(alias)
    back = rollback_alias(alias)
    targets = await alias_targets(client, shadow)
    if len(targets) != 1:
        raise PermanentError(f"no single shadow index to flip to ({len(targets)})")
    new = targets[0]
    old = [o for o in await alias_targets(client, alias) if o != new]
    stale = [o for o in await alias_targets(client, back) if o not in old]
    actions: list[dict[str, Any]] = [
        *({"remove": {"index": o, "alias": alias}} for o in old),
        {"add": {"index": new, "alias": alias}},
        {"remove": {"index": new, "alias": shadow}},
        *({"remove": {"index": o, "alias": back}} for o in stale),
        *({"add": {"index": o, "alias": back}} for o in old),
    ]
    with os_errors():
        await client.indices.update_aliases(body={"actions": actions})
    return new, stale


async def roll_back(client: AsyncOpenSearch, alias: str) -> str:
    """Point ``alias`` back at the rollback index in one ``_aliases`` call (the index it
    leaves becomes the rollback, so a roll back can be undone). Returns the live index."""
    back = rollback_alias(alias)
    targets = await alias_targets(client, back)
    if len(targets) != 1:
        raise PermanentError(f"no single rollback index ({len(targets)})")
    target = targets[0]
    current = await alias_targets(client, alias)
    actions: list[dict[str, Any]] = [
        *({"remove": {"index": c, "alias": alias}} for c in current),
        {"add": {"index": target, "alias": alias}},
        {"remove": {"index": target, "alias": back}},
        *({"add": {"index": c, "alias": back}} for c in current),
    ]
    with os_errors():
        await client.indices.update_aliases(body={"actions": actions})
    return target


async def retire_rollback(client: AsyncOpenSearch, alias: str) -> list[str]:
    """Delete the rollback index (the flip is final); returns what was deleted."""
    old = await alias_targets(client, rollback_alias(alias))
    await drop_indexes(client, old)
    return old
