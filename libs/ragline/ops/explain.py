"""Why is a document (or a chunk) not in a principal's results? One answer, one place.

``Explainer.explain`` walks the checks in the order the platform applies them: is the
document in the principal's tenant at all (and else, in a tenant the *operator* may
administer), is it deleted, quarantined, in flight, readable by the principal's
groups, inside the search's scope (superseded, in force, version scope and filters,
the very predicates the search compiles), and then runs the search itself as the
principal through ``SearchService`` with a ``SearchProbe``, so where the document fell
out (neither leg's top k, the fused top_k, the per-document cap, parent
de-duplication, an abstention) is read from the real query path, never re-ranked
here. Below-k ranks come from the same legs run deeper.

Permission: the operator's rights are checked first (``OperatorRights``); a document
in a tenant the operator does not administer is answered exactly as one that does not
exist. The explanation never carries chunk text, and about a document the principal
cannot read it carries ids, states and ACL only (no title, uri or version).

``ragline documents explain`` and the console's why-not page both call this.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from psycopg import AsyncConnection, sql
from psycopg_pool import AsyncConnectionPool

from ragline.auth.principal import Forbidden, Principal
from ragline.ops.doc_facts import (
    DocumentFacts,
    child_chunk_ids,
    document_of_chunk,
    read_facts,
    tenants_holding,
)
from ragline.retrieval.api_models import SearchRequest
from ragline.retrieval.candidates import Candidate
from ragline.retrieval.dense import dense_search
from ragline.retrieval.filters import (
    BoolEquals,
    Effective,
    ExcludedTerms,
    Predicate,
    Range,
    Terms,
    VersionsOrCurrentUnversioned,
    to_sql,
)
from ragline.retrieval.probe import SearchProbe
from ragline.retrieval.scope import rls_transaction
from ragline.retrieval.service import SearchBackends, SearchService
from ragline.retrieval.settings import QuerySettings
from ragline.store.pg_errors import pg_errors

__all__ = ["Cause", "Explainer", "Explanation", "LegRanks", "OperatorRights"]


class Cause(StrEnum):
    IN_RESULTS = "in_results"
    NOT_INGESTED = "not_ingested"
    OUTSIDE_TENANT = "outside_tenant"
    DELETED = "deleted"
    QUARANTINED = "quarantined"
    IN_FLIGHT = "in_flight"
    FAILED = "failed"
    NO_READERS = "no_readers"
    OUTSIDE_ACL = "outside_acl"
    NO_CHUNKS = "no_chunks"
    SUPERSEDED = "superseded"
    NOT_IN_FORCE = "not_in_force"
    FILTERED = "filtered"
    BELOW_K = "below_k"
    BELOW_TOP_K = "below_top_k"
    DOC_CAP = "doc_cap"
    DIVERSITY = "diversity"
    ABSTAINED = "abstained"


@dataclass(frozen=True, kw_only=True)
class OperatorRights:
    """Who asks for an explanation and over which tenants (None: every tenant, the
    holder of the admin DSN on the command line)."""

    subject: str
    tenants: frozenset[str] | None = None

    def administers(self, tenant: str) -> bool:
        return self.tenants is None or tenant in self.tenants


@dataclass(frozen=True, kw_only=True)
class LegRanks:
    """A target's best rank in each leg of one sub-search (1-based; None: not within
    ``depth``, or the leg did not run) and how deep the search itself reads."""

    query_index: int
    dense: int | None
    lexical: int | None
    overfetch: int
    depth: int

    def to_json(self) -> dict[str, Any]:
        return {
            "query_index": self.query_index,
            "dense_rank": self.dense,
            "bm25_rank": self.lexical,
            "overfetch": self.overfetch,
            "depth": self.depth,
        }


@dataclass(frozen=True, kw_only=True)
class Check:
    name: str
    ok: bool
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "detail": self.detail}


@dataclass(kw_only=True)
class Explanation:
    tenant_id: str
    document_id: str
    chunk_id: str | None
    cause: Cause = Cause.NOT_INGESTED
    summary: str = ""
    fix: str = ""
    checks: list[Check] = field(default_factory=list)
    document: dict[str, Any] | None = None
    rank: int | None = None  # 1-based position in the answer (in_results / abstained)
    position: int | None = None  # 1-based position before the top_k cut (below_top_k)
    ranks: list[LegRanks] = field(default_factory=list)
    abstain_reason: str | None = None

    def check(self, name: str, ok: bool, detail: str) -> None:
        self.checks.append(Check(name=name, ok=ok, detail=detail))

    def verdict(self, cause: Cause, summary: str, fix: str = "") -> Explanation:
        self.cause, self.summary, self.fix = cause, summary, fix
        return self

    def to_json(self) -> dict[str, Any]:
        return {
            "tenant_id": self.tenant_id,
            "document_id": self.document_id,
            "chunk_id": self.chunk_id,
            "cause": self.cause.value,
            "summary": self.summary,
            "fix": self.fix,
            "checks": [c.to_json() for c in self.checks],
            "document": self.document,
            "rank": self.rank,
            "position": self.position,
            "ranks": [r.to_json() for r in self.ranks],
            "abstain_reason": self.abstain_reason,
        }


def _no_audit(qs: QuerySettings) -> QuerySettings:
    """An explanation's search is the operator's, not the principal's: it is not written
    to the principal's query audit (the console audits the operator's actions)."""
    return qs.model_copy(update={"audit": qs.audit.model_copy(update={"audit_enabled": False})})


class Explainer:
    """``admin``: a pool on the admin DSN (facts across tenants); ``backends``: the query
    side (the RLS-bound query pool, OpenSearch, the query embedder) the search runs on."""

    def __init__(
        self,
        admin: AsyncConnectionPool,
        backends: SearchBackends,
        settings: QuerySettings,
        *,
        depth: int = 200,
    ) -> None:
        self._admin = admin
        self._b = backends
        self._s = settings
        self._depth = max(depth, settings.ranking.overfetch)
        self._service = SearchService(
            SearchBackends(
                pool=backends.pool,
                lexical=backends.lexical,
                embedder=backends.embedder,
                reranker=backends.reranker,
            ),
            _no_audit(settings),
        )

    async def explain(
        self,
        operator: OperatorRights,
        principal: Principal,
        request: SearchRequest,
        *,
        document_id: str | None = None,
        chunk_id: str | None = None,
    ) -> Explanation:
        if not operator.administers(principal.tenant):
            raise Forbidden("the operator does not administer this tenant")
        if (document_id is None) == (chunk_id is None):
            raise ValueError("give exactly one of document_id and chunk_id")
        async with self._admin.connection() as conn:
            if chunk_id is not None:
                document_id = await document_of_chunk(conn, principal.tenant, chunk_id)
                if document_id is None:
                    ex = Explanation(tenant_id=principal.tenant, document_id="", chunk_id=chunk_id)
                    ex.check("chunk", False, "no chunk with this id in the tenant")
                    return ex.verdict(
                        Cause.NOT_INGESTED,
                        "no chunk with this id is indexed in the tenant (chunk ids change "
                        "with every new version of a document)",
                        "explain the document id instead",
                    )
            assert document_id is not None
            ex = Explanation(tenant_id=principal.tenant, document_id=document_id, chunk_id=chunk_id)
            facts = await read_facts(conn, principal.tenant, document_id)
            if facts is None:
                return await self._absent(conn, operator, principal, ex)
            targets = (
                [chunk_id]
                if chunk_id is not None
                else await child_chunk_ids(conn, principal.tenant, document_id)
            )
        ex.check("tenant", True, f"document is in tenant {principal.tenant}")
        readable = facts.readable_by(principal.groups)
        ex.document = facts.to_json(with_descriptive=readable)
        if (early := _stored_state(ex, facts)) is not None:
            return early
        if not facts.acl_groups:
            ex.check("acl", False, "the document's ACL is empty")
            return ex.verdict(
                Cause.NO_READERS,
                "the document is indexed but its ACL names no group: nobody can read it",
                "give its source an ACL (a _policy.yaml next to the files, or the tenant's "
                "default groups) and sync again",
            )
        if not readable:
            ex.check(
                "acl",
                False,
                f"ACL {list(facts.acl_groups)} shares no group with {list(principal.groups)}",
            )
            return ex.verdict(
                Cause.OUTSIDE_ACL,
                "the principal's groups do not intersect the document's ACL",
                "if the principal should read it, add one of its groups to the document's "
                "ACL at the source (an acl-change event)",
            )
        ex.check(
            "acl", True, f"readable through {sorted(set(facts.acl_groups) & set(principal.groups))}"
        )
        if not targets:
            ex.check("chunks", False, "the indexed generation has no searchable chunks")
            return ex.verdict(
                Cause.NO_CHUNKS,
                "the document is indexed but produced no searchable chunk (empty text "
                "after parsing and scanning)",
                "check the source file's content and the parser's output",
            )
        probe = SearchProbe()
        resp = await self._service.search(principal, request, trace_id="explain", probe=probe)
        return await self._ranked(ex, principal, request, facts, set(targets), probe, resp.results)

    async def _absent(
        self,
        conn: AsyncConnection,
        operator: OperatorRights,
        principal: Principal,
        ex: Explanation,
    ) -> Explanation:
        """Not in the principal's tenant: say where it is only if the operator may know."""
        elsewhere = [
            t
            for t in await tenants_holding(conn, ex.document_id)
            if t != principal.tenant and operator.administers(t)
        ]
        if elsewhere:
            ex.check("tenant", False, f"document exists in tenant(s) {elsewhere} only")
            return ex.verdict(
                Cause.OUTSIDE_TENANT,
                f"the document belongs to tenant {', '.join(elsewhere)}, not to the "
                f"principal's tenant {principal.tenant}",
                "a principal only ever sees its own tenant: ingest the document into this "
                "tenant if it should be found here",
            )
        ex.check("ingested", False, "no document or status row with this id in the tenant")
        return ex.verdict(
            Cause.NOT_INGESTED,
            "no change for this document id ever reached the pipeline in this tenant",
            "check the id (<source>:<external id>) and that the source was synced "
            "(`ragline sync`), or look for it in the dead letters",
        )

    async def _ranked(
        self,
        ex: Explanation,
        principal: Principal,
        req: SearchRequest,
        facts: DocumentFacts,
        targets: set[str],
        probe: SearchProbe,
        results: Any,
    ) -> Explanation:
        def first(cands: list[Candidate]) -> int | None:
            for i, c in enumerate(cands):
                if c.row.chunk_id in targets:
                    return i
            return None

        if (i := first(probe.final)) is not None:
            ex.rank = i + 1
            if probe.abstain_reason is not None:
                ex.abstain_reason = probe.abstain_reason
                ex.check("answer", False, f"the search abstained ({probe.abstain_reason})")
                return ex.verdict(
                    Cause.ABSTAINED,
                    f"it would be result {i + 1}, but the search abstained: {probe.abstain_reason}",
                    "the evidence was judged too weak to answer; a more specific query, "
                    "or tuning RAGLINE_QUERY_ABSTAIN_*, changes that",
                )
            ex.check("answer", True, f"result {i + 1} of {len(probe.final)}")
            return ex.verdict(Cause.IN_RESULTS, f"it is in the results at rank {i + 1}")
        if (i := first(probe.deduped)) is not None:
            ex.position = i + 1
            ex.check("top_k", False, f"position {i + 1} after fusion, top_k is {req.top_k}")
            return ex.verdict(
                Cause.BELOW_TOP_K,
                f"it is a candidate at position {i + 1}, below the requested top_k {req.top_k}",
                "raise top_k, or look at what ranks above it",
            )
        if first(probe.capped) is not None:
            ex.check("diversity", False, "dropped by parent de-duplication")
            return ex.verdict(
                Cause.DIVERSITY,
                "a sibling chunk with the same parent is already in the results "
                "(expand_parents de-duplicates by parent)",
                "the parent text is shown through the sibling's result",
            )
        if first(probe.merged) is not None:
            ex.check("per_document_cap", False, f"cap of {probe.cap} chunks per document")
            return ex.verdict(
                Cause.DOC_CAP,
                f"its document already fills the per-document cap of {probe.cap} with "
                "stronger chunks",
                "raise max_per_document in the request",
            )
        if first(probe.retrieved) is not None:
            ex.check("series", False, "another version of its series is in force")
            return ex.verdict(
                Cause.SUPERSEDED,
                "another version of its series is the one in force at the requested date",
                "ask with as_of inside this version's effective period",
            )
        ex.check("candidates", False, "found by neither leg within the search's reach")
        if (scoped := await self._scope(ex, principal, facts, targets, probe)) is not None:
            return scoped
        ex.ranks = await self._deep_ranks(principal, req, targets, probe)
        shown = "; ".join(
            f"dense rank {_fmt(r.dense, r.depth)}, BM25 rank {_fmt(r.lexical, r.depth)}"
            for r in ex.ranks
        )
        return ex.verdict(
            Cause.BELOW_K,
            f"ranked below the {self._s.ranking.overfetch} candidates each leg reads: {shown}",
            "the query does not match this document well; check the words it uses, or "
            "the search mode",
        )

    async def _scope(
        self,
        ex: Explanation,
        principal: Principal,
        facts: DocumentFacts,
        targets: set[str],
        probe: SearchProbe,
    ) -> Explanation | None:
        """Do the target chunks pass the search's own compiled predicates (any
        sub-search)? If not, which predicate alone excludes them."""
        if any([await self._passes(principal, targets, p) for p in probe.preds]):
            ex.check("scope", True, "inside the search's filters and version scope")
            return None
        for preds in probe.preds:
            for p in preds:
                if await self._passes(principal, targets, [p]):
                    continue
                if isinstance(p, BoolEquals) and p.column == "superseded":
                    ex.check("scope", False, "superseded, and the search excludes history")
                    by = f" by {facts.superseded_by}" if facts.superseded_by else ""
                    return ex.verdict(
                        Cause.SUPERSEDED,
                        f"this version is superseded{by}",
                        "search with include_history (or as_of) to see old versions",
                    )
                if isinstance(p, ExcludedTerms) and p.column == "document_id":
                    ex.check("scope", False, "replaced within its series on the as-of date")
                    return ex.verdict(
                        Cause.SUPERSEDED,
                        "another version of its series is the one in force at the requested date",
                        "ask with as_of inside this version's effective period",
                    )
                if isinstance(p, Effective):
                    ex.check("scope", False, f"not in force on {p.at.isoformat()}")
                    return ex.verdict(
                        Cause.NOT_IN_FORCE,
                        f"not in force on {p.at.isoformat()} (effective "
                        f"{facts.effective_date}, expires {facts.expiry_date})",
                        "ask with as_of inside its effective period",
                    )
                ex.check("scope", False, f"excluded by {_describe(p)}")
                return ex.verdict(
                    Cause.FILTERED,
                    f"excluded by the search's scope: {_describe(p)}",
                    "drop or widen that filter (a version named in the query text "
                    "narrows the search to it)",
                )
        ex.check("scope", False, "excluded by the combination of the search's filters")
        return ex.verdict(
            Cause.FILTERED, "excluded by the combination of the search's filters", "widen them"
        )

    async def _passes(
        self, principal: Principal, targets: set[str], preds: list[Predicate]
    ) -> bool:
        where, params = to_sql(preds, "c")
        query = sql.SQL(
            "SELECT EXISTS (SELECT 1 FROM chunks c WHERE c.tenant_id = %s"
            " AND c.chunk_id = ANY(%s::text[]) AND {where})"
        ).format(where=where)
        async with rls_transaction(self._b.pool, principal) as conn:
            with pg_errors():
                cur = await conn.execute(query, [principal.tenant, sorted(targets), *params])
                row = await cur.fetchone()
        return bool(row and row[0])

    async def _deep_ranks(
        self, principal: Principal, req: SearchRequest, targets: set[str], probe: SearchProbe
    ) -> list[LegRanks]:
        """Each sub-search's two legs again, ``depth`` deep, with the same predicates."""
        out: list[LegRanks] = []
        r = self._s.ranking
        for i, (query, preds) in enumerate(zip(probe.queries, probe.preds, strict=True)):
            dense: int | None = None
            lexical: int | None = None
            vec = probe.vectors.get(query)
            if req.mode != "lexical" and vec is not None:
                async with rls_transaction(self._b.pool, principal) as conn:
                    hits = await dense_search(
                        conn,
                        principal,
                        vec,
                        preds,
                        limit=self._depth,
                        ef_search=r.hnsw_ef_search,
                        max_scan_tuples=r.hnsw_max_scan_tuples,
                        space=probe.space,
                    )
                dense = min((h.rank for h in hits if h.chunk_id in targets), default=None)
            if req.mode != "dense" and self._b.lexical is not None:
                lex = await self._b.lexical.search(
                    principal, query, preds, limit=self._depth, timeout_s=self._s.backend_timeout_s
                )
                lexical = min(
                    (n for n, h in enumerate(lex, start=1) if h.chunk_id in targets), default=None
                )
            out.append(
                LegRanks(
                    query_index=i,
                    dense=dense,
                    lexical=lexical,
                    overfetch=r.overfetch,
                    depth=self._depth,
                )
            )
        return out


def _stored_state(ex: Explanation, f: DocumentFacts) -> Explanation | None:
    """Deleted, quarantined, in flight or failed, as the stores say."""
    if f.status == "deleted" or (f.pipeline_status == "deleted" and f.status != "indexed"):
        ex.check("live", False, "the document is deleted (a tombstone remains)")
        return ex.verdict(
            Cause.DELETED,
            "the document was deleted at its source",
            "re-create it at the source if it should come back",
        )
    reason = f"{f.reason_code or 'unknown'}" + (f": {f.reason}" if f.reason else "")
    if f.pipeline_status == "quarantined":
        if f.status != "indexed":
            ex.check("quarantine", False, reason)
            return ex.verdict(
                Cause.QUARANTINED,
                f"the document was quarantined by the {f.stage or 'pipeline'} stage ({reason})",
                "fix the document at its source (the reason says what); a new version is "
                "picked up by the next change or `ragline sync`",
            )
        ex.check(
            "quarantine",
            False,
            f"the newest version is quarantined ({reason}); "
            f"generation {f.generation} is still served",
        )
    if f.status != "indexed":
        if f.pipeline_status == "failed":
            ex.check("live", False, f"failed: {reason}")
            return ex.verdict(
                Cause.FAILED,
                f"the document's last change failed ({reason})",
                "re-send it (`ragline sync` or the console's re-send) after fixing the cause",
            )
        ex.check("live", False, f"status {f.pipeline_status} at stage {f.stage}")
        return ex.verdict(
            Cause.IN_FLIGHT,
            f"the document is still in the pipeline (status {f.pipeline_status}, stage "
            f"{f.stage or '-'})",
            "wait for the pipeline (see the pipeline page's lag), or look for it in the "
            "dead letters",
        )
    ex.check("live", True, f"indexed, generation {f.generation}")
    return None


def _fmt(rank: int | None, depth: int) -> str:
    return str(rank) if rank is not None else f"beyond {depth}"


def _describe(p: Predicate) -> str:
    if isinstance(p, Terms):
        return f"{p.column} in {list(p.values)}"
    if isinstance(p, VersionsOrCurrentUnversioned):
        return f"version scope {list(p.versions)} (from the query text)"
    if isinstance(p, Range):
        return f"{p.column} between {p.gte} and {p.lte}"
    if isinstance(p, BoolEquals):
        return f"{p.column} = {p.value}"
    if isinstance(p, ExcludedTerms):
        return f"{p.column} not in {len(p.values)} excluded values"
    return f"in force on {p.at.isoformat()}"
