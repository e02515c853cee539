"""What one ``doc.indexed`` event evicts, and the eviction itself (admin DSN).

Always: the entries whose results came from the document (the reverse index
``answer_cache.document_ids``), and those of documents it supersedes or that it
superseded (their "current" status changed with it). An ACL change also evicts the
scopes whose visibility of the document changed. With ``freshness=strict`` an upsert or
delete evicts every scope that could see the document before or after: its new text may
now answer their questions. Every eviction first advances the fence of the groups
involved, so a search that read the index before this change is never stored after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from psycopg import AsyncConnection

from ragline.cache.repository import LOCK_CLASS
from ragline.cache.settings import Freshness
from ragline.events import DocIndexed, IndexAction
from ragline.store.pg_errors import pg_errors

__all__ = ["InvalidationPlan", "apply_plan", "apply_plans", "plan_invalidation"]

ALL_SCOPES = "*"


@dataclass(frozen=True, kw_only=True)
class InvalidationPlan:
    tenant_id: str
    document_id: str
    reason: str  # upsert | delete | acl (the eviction metric's label)
    fence_groups: tuple[str, ...]
    scope_groups: tuple[str, ...] = ()  # evict entries whose groups overlap these
    acl_before: tuple[str, ...] = ()  # with acl_after: evict where visibility differs
    acl_after: tuple[str, ...] = ()


def plan_invalidation(event: DocIndexed, *, freshness: Freshness) -> InvalidationPlan | None:
    """None for a skipped event (a stale or replayed change altered nothing)."""
    if event.skipped:
        return None
    before = tuple(sorted(set(event.acl_groups_before)))
    after = tuple(sorted(set(event.acl_groups_after)))
    involved = tuple(sorted(set(before) | set(after)))
    fence = involved or (ALL_SCOPES,)
    t, d = event.tenant_id, event.document_id
    if event.action == IndexAction.ACL:
        return InvalidationPlan(
            tenant_id=t,
            document_id=d,
            reason="acl",
            fence_groups=fence,
            acl_before=before,
            acl_after=after,
        )
    return InvalidationPlan(
        tenant_id=t,
        document_id=d,
        reason=event.action.value,
        fence_groups=fence,
        scope_groups=involved if freshness == "strict" else (),
    )


_FENCE = (
    "INSERT INTO answer_cache_fence (tenant_id, group_name, fenced_at)"
    " SELECT %s, g, clock_timestamp() FROM unnest(%s::text[]) AS g"
    " ON CONFLICT (tenant_id, group_name) DO UPDATE SET fenced_at = EXCLUDED.fenced_at"
)
_RELATED = (
    "SELECT coalesce(array_agg(DISTINCT x), '{}') FROM ("
    " SELECT document_id AS x FROM documents WHERE tenant_id = %(t)s AND superseded_by = %(d)s"
    " UNION ALL"
    " SELECT unnest(supersedes) FROM documents WHERE tenant_id = %(t)s AND document_id = %(d)s"
    ") r"
)
_EVICT = (
    "DELETE FROM answer_cache WHERE tenant_id = %(t)s AND ("
    " document_ids && %(docs)s::text[]"
    " OR groups && %(scopes)s::text[]"
    " OR (groups && (%(before)s::text[] || %(after)s::text[])"
    "     AND (groups && %(before)s::text[]) <> (groups && %(after)s::text[])))"
)


async def apply_plans(conn: AsyncConnection, plans: Sequence[InvalidationPlan]) -> list[int]:
    """Fence + evict for a batch of plans in ONE transaction (``conn`` in autocommit=False,
    admin DSN); returns the evicted count per plan. Idempotent: a replay evicts nothing
    new. Tenant locks are taken up front in sorted order, so two invalidator replicas
    never deadlock."""
    if not plans:
        return []
    counts: list[int] = []
    with pg_errors():
        async with conn.transaction():
            for tenant in sorted({p.tenant_id for p in plans}):
                await conn.execute(
                    "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (LOCK_CLASS, tenant)
                )
            fences: dict[str, set[str]] = {}
            for p in plans:
                fences.setdefault(p.tenant_id, set()).update(p.fence_groups)
            for tenant, groups in sorted(fences.items()):
                await conn.execute(_FENCE, (tenant, sorted(groups)))
            for plan in plans:
                cur = await conn.execute(_RELATED, {"t": plan.tenant_id, "d": plan.document_id})
                row = await cur.fetchone()
                related = list(row[0]) if row and row[0] else []
                cur = await conn.execute(
                    _EVICT,
                    {
                        "t": plan.tenant_id,
                        "docs": [plan.document_id, *related],
                        "scopes": list(plan.scope_groups),
                        "before": list(plan.acl_before),
                        "after": list(plan.acl_after),
                    },
                )
                counts.append(max(cur.rowcount, 0))
    return counts


async def apply_plan(conn: AsyncConnection, plan: InvalidationPlan) -> int:
    """``apply_plans`` for one plan."""
    return (await apply_plans(conn, [plan]))[0]
