"""The operator console: FastAPI wiring of ``ragline.console`` and ``ragline.ops``
(``ragline console``, docs/console.md, docs/adr/0015-operator-console.md).

Its own process, not part of the query service: the console reads every tenant's
documents, dead letters and spaces with the admin DSN, while the query service must stay
a role without BYPASSRLS. Searches and explanations still run through the query role
under row-level security, as the chosen principal.

Every route but the login page, its assets and /healthz needs an admin token (cookie
session or bearer): 401 without one, 403 for a token without the admin role. Mutations
need the CSRF header when the session cookie authenticated them, ask for confirmation
(``confirm: true``; without it they answer what they would do) and are audited.
"""

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import date
from importlib import resources
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragline.auth import AuthError, Forbidden, JwtVerifier, Principal
from ragline.config import EmbeddingModelSettings, Settings
from ragline.console.access import CsrfGuard, operator_from_claims
from ragline.console.audit import recent_actions, record_action
from ragline.console.dead_letters import dead_letters, resolve_dead_letters
from ragline.console.documents import repair_document, resend_document
from ragline.console.pipeline import pipeline_state
from ragline.console.settings import ConsoleSettings
from ragline.console.spaces import flip_space, rollback_space, spaces_state
from ragline.errors import BackendUnavailable, RaglineError, TransientError
from ragline.ops.dlq import Action
from ragline.ops.dlq_select import Selector
from ragline.ops.doc_facts import list_documents, read_facts, timeline
from ragline.ops.explain import OperatorRights
from ragline.ops.explain_backends import OpsBackends, open_ops_backends
from ragline.ops.settings import OpsSettings
from ragline.retrieval.api_models import SearchRequest
from ragline.retrieval.embed import QueryEmbedder
from ragline.retrieval.settings import QuerySettings
from ragline.runtime.http import HttpService
from ragline.store.spaces import SpaceError

__all__ = ["PAGES", "build", "create_app"]

_log = logging.getLogger("ragline.console")
COOKIE = "ragline_console"
CSRF_HEADER = "x-csrf-token"
# path -> (title, nav label); the shell page renders the one named
PAGES: dict[str, str] = {
    "search": "Search playground",
    "whynot": "Why not?",
    "documents": "Documents",
    "dead-letters": "Dead letters",
    "pipeline": "Pipeline",
    "spaces": "Embedding spaces",
    "audit": "Audit trail",
}


def _asset(name: str) -> str:
    return (resources.files("services.console") / "static" / name).read_text(encoding="utf-8")


_ASSET_TYPES = {"console.css": "text/css", "console.js": "text/javascript"}


@dataclass(frozen=True, kw_only=True)
class Admin:
    operator: OperatorRights
    session: str | None  # the cookie's token when the cookie authenticated the request

    def tenants(self) -> frozenset[str]:
        return self.operator.tenants or frozenset()


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PrincipalIn(_Body):
    tenant: str
    groups: list[str] = Field(min_length=1)
    subject: str = "console"


class SearchIn(_Body):
    principal: PrincipalIn
    query: str = Field(min_length=1, max_length=2000)
    top_k: int = Field(default=10, ge=1, le=50)
    mode: Literal["hybrid", "dense", "lexical"] = "hybrid"
    as_of: date | None = None
    include_history: bool = False
    max_per_document: int | None = Field(default=None, ge=1, le=100)
    expand_parents: bool = False
    versions: list[str] | None = None

    def request(self) -> SearchRequest:
        filters = {"versions": self.versions} if self.versions else None
        return SearchRequest.model_validate(
            {
                "query": self.query,
                "top_k": self.top_k,
                "mode": self.mode,
                "as_of": self.as_of,
                "include_history": self.include_history,
                "max_per_document": self.max_per_document,
                "expand_parents": self.expand_parents,
                "filters": filters,
            }
        )


class ExplainIn(SearchIn):
    document_id: str | None = None
    chunk_id: str | None = None


class LoginIn(_Body):
    token: str = Field(min_length=1, max_length=8192)


class ConfirmIn(_Body):
    confirm: bool = False


class DeadLetterActionIn(ConfirmIn):
    topic: str
    error_class: str | None = None
    tenant: str | None = None


class SpaceActionIn(ConfirmIn):
    space: str | None = None
    reason: str = Field(min_length=3, max_length=500)


def _problem(status: int, title: str, detail: str) -> JSONResponse:
    return JSONResponse(
        {"status": status, "title": title, "detail": detail},
        status_code=status,
        media_type="application/problem+json",
    )


def _status_of(exc: Exception) -> int:
    if isinstance(exc, AuthError):
        return 401
    if isinstance(exc, Forbidden):
        return 403
    if isinstance(exc, SpaceError):
        return 409
    if isinstance(exc, BackendUnavailable | TransientError):
        return 503
    if isinstance(exc, ValueError | ValidationError):
        return 400
    return 500


def create_app(
    settings: Settings,
    qs: QuerySettings,
    cs: ConsoleSettings,
    ops: OpsSettings,
    *,
    model: EmbeddingModelSettings | None = None,
    embedder: QueryEmbedder | None = None,
) -> FastAPI:
    verifier = JwtVerifier(qs.auth.jwt_config())
    csrf = CsrfGuard()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with open_ops_backends(settings, qs, model=model, embedder=embedder) as b:
            app.state.ops = b
            yield

    app = FastAPI(
        title="ragline operator console",
        version="1",
        lifespan=lifespan,
        redirect_slashes=False,
        docs_url=None,
        redoc_url=None,
    )

    @app.exception_handler(RaglineError)
    async def ragline_error(_: Request, exc: RaglineError) -> JSONResponse:
        status = _status_of(exc)
        return _problem(status, type(exc).__name__, str(exc))

    @app.exception_handler(ValueError)
    async def value_error(_: Request, exc: ValueError) -> JSONResponse:
        return _problem(400, "bad request", str(exc))

    @app.middleware("http")
    async def headers(request: Request, call_next: Any) -> Response:
        response: Response = await call_next(request)
        # the console loads nothing from elsewhere, and no one may frame it
        response.headers["Content-Security-Policy"] = (
            "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"
        )
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["Cache-Control"] = "no-store"
        return response

    async def _operator(token: str) -> OperatorRights:
        claims = await verifier.verify_claims_async(token)
        p = verifier.principal(claims)
        return operator_from_claims(claims, cs, subject=p.subject, tenant=p.tenant)

    async def admin(request: Request) -> Admin:
        scheme, _, bearer = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and bearer.strip():
            return Admin(operator=await _operator(bearer.strip()), session=None)
        cookie = request.cookies.get(COOKIE)
        if not cookie:
            raise AuthError("not signed in: open /console/login")
        return Admin(operator=await _operator(cookie), session=cookie)

    async def mutating(request: Request, who: Annotated[Admin, Depends(admin)]) -> Admin:
        if who.session is not None:
            csrf.check(who.session, request.headers.get(CSRF_HEADER))
        return who

    Who = Annotated[Admin, Depends(admin)]
    Mut = Annotated[Admin, Depends(mutating)]

    def ops_of(request: Request) -> OpsBackends:
        b: OpsBackends = request.app.state.ops
        return b

    async def audited(
        request: Request,
        who: Admin,
        action: str,
        tenant: str | None,
        target: dict[str, Any],
        run: Callable[[], Awaitable[dict[str, Any]]],
    ) -> dict[str, Any]:
        """Run an action and write its audit row, whatever the outcome."""
        outcome, detail = "error", {}
        try:
            result = await run()
            outcome, detail = "ok", {k: v for k, v in result.items() if not isinstance(v, list)}
            return result
        except RaglineError as exc:
            outcome, detail = f"refused: {type(exc).__name__}", {"error": str(exc)[:300]}
            raise
        finally:
            async with ops_of(request).admin.connection() as conn:
                await record_action(
                    conn,
                    actor=who.operator.subject,
                    action=action,
                    tenant_id=tenant,
                    target=target,
                    outcome=outcome,
                    detail=detail,
                )

    def principal_for(who: Admin, p: PrincipalIn) -> Principal:
        if not who.operator.administers(p.tenant):
            raise Forbidden(f"you do not administer tenant {p.tenant!r}")
        return Principal(tenant=p.tenant, groups=tuple(p.groups), subject=p.subject)

    def tenant_allowed(who: Admin, tenant: str) -> None:
        if not who.operator.administers(tenant):
            raise Forbidden(f"you do not administer tenant {tenant!r}")

    def platform_admin(who: Admin) -> None:
        if who.operator.tenants is not None:
            raise Forbidden("embedding spaces are shared by every tenant: needs admin of '*'")

    # ------------------------------------------------------------------ public routes
    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/console/login", response_class=HTMLResponse)
    async def login_page() -> HTMLResponse:
        return HTMLResponse(_asset("login.html"))

    @app.get("/console/static/{name}")
    async def static(name: str) -> Response:
        if name not in _ASSET_TYPES:
            return _problem(404, "not found", "no such asset")
        return Response(_asset(name), media_type=_ASSET_TYPES[name])

    @app.post("/console/api/login")
    async def login(body: LoginIn) -> JSONResponse:
        op = await _operator(body.token)  # 401/403 before any cookie is set
        resp = JSONResponse(_session_json(op, body.token))
        resp.set_cookie(
            COOKIE,
            body.token,
            httponly=True,
            samesite="strict",
            secure=cs.secure_cookie,
            path="/console",
        )
        return resp

    def _session_json(op: OperatorRights, session: str | None) -> dict[str, Any]:
        return {
            "subject": op.subject,
            "tenants": sorted(op.tenants) if op.tenants is not None else ["*"],
            "csrf": csrf.token(session) if session else None,
        }

    # ------------------------------------------------------------------ pages
    @app.get("/console", include_in_schema=False)
    async def root(request: Request) -> Response:
        try:
            await admin(request)
        except AuthError:
            return RedirectResponse("/console/login", status_code=303)
        return RedirectResponse("/console/search", status_code=303)

    @app.get("/console/{page}", response_class=HTMLResponse)
    async def page(page: str, request: Request) -> Response:
        if page not in PAGES:
            return _problem(404, "not found", f"no console page {page!r}")
        try:
            await admin(request)
        except AuthError:
            return RedirectResponse(f"/console/login?next={page}", status_code=303)
        html = _asset("page.html").replace("{{PAGE}}", page).replace("{{TITLE}}", PAGES[page])
        return HTMLResponse(html)

    # ------------------------------------------------------------------ API
    @app.get("/console/api/session")
    async def session(who: Who) -> dict[str, Any]:
        return _session_json(who.operator, who.session)

    @app.post("/console/api/logout")
    async def logout(who: Mut) -> JSONResponse:
        resp = JSONResponse({"signed_out": True})
        resp.delete_cookie(COOKIE, path="/console")
        return resp

    @app.post("/console/api/search")
    async def search(body: SearchIn, request: Request, who: Who) -> Any:
        p = principal_for(who, body.principal)
        b = ops_of(request)

        async def run() -> dict[str, Any]:
            resp = await b.service.search(p, body.request(), trace_id=_trace())
            return resp.model_dump(mode="json")

        return await audited(request, who, "search_as", p.tenant, {"groups": list(p.groups)}, run)

    @app.post("/console/api/explain")
    async def explain(body: ExplainIn, request: Request, who: Who) -> Any:
        p = principal_for(who, body.principal)
        b = ops_of(request)

        async def run() -> dict[str, Any]:
            ex = await b.explainer.explain(
                who.operator,
                p,
                body.request(),
                document_id=body.document_id,
                chunk_id=body.chunk_id,
            )
            return ex.to_json()

        target = {"document_id": body.document_id, "chunk_id": body.chunk_id}
        return await audited(request, who, "explain", p.tenant, target, run)

    @app.get("/console/api/documents")
    async def documents(
        request: Request,
        who: Who,
        tenant: str,
        state: Literal[
            "all", "indexed", "deleted", "quarantined", "in_flight", "failed", "no_readers"
        ] = "all",
        prefix: str | None = None,
        limit: int = 100,
    ) -> Any:
        tenant_allowed(who, tenant)
        async with ops_of(request).admin.connection() as conn:
            docs = await list_documents(
                conn, tenant, state=state, prefix=prefix, limit=min(max(limit, 1), 500)
            )
        return {"documents": [d.to_json() for d in docs]}

    @app.get("/console/api/document")
    async def document(request: Request, who: Who, tenant: str, id: str) -> Any:
        tenant_allowed(who, tenant)
        async with ops_of(request).admin.connection() as conn:
            facts = await read_facts(conn, tenant, id)
            if facts is None:
                return _problem(404, "not found", f"no document {id!r} in tenant {tenant}")
            events = await timeline(conn, tenant, id)
        try:  # its last errors: the document's pending dead letters (a broker read)
            sel = Selector(tenants=frozenset({tenant}), documents=frozenset({id}))
            errors: Any = (await dead_letters(settings, ops, selector=sel, limit=20))["records"]
        except (BackendUnavailable, TransientError) as exc:
            errors = f"the broker did not answer ({type(exc).__name__})"
        return {
            "document": facts.to_json(),
            "timeline": [e.to_json() for e in events],
            "dead_letters": errors,
        }

    @app.post("/console/api/document/repair")
    async def repair(body: ConfirmIn, request: Request, who: Mut, tenant: str, id: str) -> Any:
        tenant_allowed(who, tenant)
        b = ops_of(request)
        if not body.confirm:
            return {"would": f"re-project {id} from Postgres into OpenSearch", "confirm": True}

        async def run() -> dict[str, Any]:
            async with b.admin.connection() as conn:
                return await repair_document(conn, b.os_client, settings, tenant, id)

        return await audited(request, who, "repair", tenant, {"document_id": id}, run)

    @app.post("/console/api/document/resend")
    async def resend(body: ConfirmIn, request: Request, who: Mut, tenant: str, id: str) -> Any:
        tenant_allowed(who, tenant)

        async def run() -> dict[str, Any]:
            return await resend_document(settings, ops, tenant, id, dry_run=not body.confirm)

        if not body.confirm:
            return await run()
        return await audited(request, who, "resend", tenant, {"document_id": id}, run)

    def _dlq_selector(who: Admin, tenant: str | None, error_class: str | None) -> Selector:
        if tenant is not None:
            tenant_allowed(who, tenant)
        tenants = frozenset({tenant}) if tenant else who.tenants()
        classes = frozenset({error_class}) if error_class else frozenset()
        return Selector(tenants=tenants, error_classes=classes)

    @app.get("/console/api/dead-letters")
    async def dlq_list(
        who: Who,
        topic: str | None = None,
        tenant: str | None = None,
        error_class: str | None = None,
        limit: int = 100,
    ) -> Any:
        sel = _dlq_selector(who, tenant, error_class)
        return await dead_letters(
            settings,
            ops,
            topics=(topic,) if topic else (),
            selector=sel,
            limit=min(max(limit, 1), 500),
        )

    @app.post("/console/api/dead-letters/{action}")
    async def dlq_action(action: str, body: DeadLetterActionIn, request: Request, who: Mut) -> Any:
        if action not in ("replay", "purge"):
            return _problem(404, "not found", "actions: replay, purge")
        sel = _dlq_selector(who, body.tenant, body.error_class)

        async def run() -> dict[str, Any]:
            return await resolve_dead_letters(
                settings,
                ops,
                Action(action),
                topics=(body.topic,),
                selector=sel,
                dry_run=not body.confirm,
            )

        if not body.confirm:
            return await run()
        target = {"topic": body.topic, "error_class": body.error_class}
        return await audited(request, who, f"dlq_{action}", body.tenant, target, run)

    @app.get("/console/api/pipeline")
    async def pipeline(request: Request, who: Who) -> Any:
        b = ops_of(request)
        return await pipeline_state(settings, b.admin, b.search.lexical)

    @app.get("/console/api/spaces")
    async def spaces(request: Request, who: Who) -> Any:
        async with ops_of(request).admin.connection() as conn:
            return await spaces_state(conn)

    @app.post("/console/api/spaces/{action}")
    async def space_action(action: str, body: SpaceActionIn, request: Request, who: Mut) -> Any:
        if action not in ("flip", "rollback"):
            return _problem(404, "not found", "actions: flip, rollback")
        platform_admin(who)
        if action == "flip" and not body.space:
            raise ValueError("flip needs the space to make live")
        if not body.confirm:
            what = f"make {body.space!r} live" if action == "flip" else "roll back the last flip"
            return {"would": what, "confirm": True}
        b = ops_of(request)

        async def run() -> dict[str, Any]:
            async with b.admin.connection() as conn:
                await conn.set_autocommit(True)  # as the CLI: promote runs its own transaction
                try:
                    if action == "flip":
                        assert body.space is not None
                        return await flip_space(
                            conn, body.space, actor=who.operator.subject, reason=body.reason
                        )
                    return await rollback_space(
                        conn, actor=who.operator.subject, reason=body.reason
                    )
                finally:
                    await conn.set_autocommit(False)

        return await audited(request, who, f"space_{action}", None, {"space": body.space}, run)

    @app.get("/console/api/audit")
    async def audit(request: Request, who: Who) -> Any:
        async with ops_of(request).admin.connection() as conn:
            entries = await recent_actions(conn, tenants=who.operator.tenants)
        return {"entries": [e.to_json() for e in entries]}

    return app


def _trace() -> str:
    import secrets

    return secrets.token_hex(16)


def build(settings: Settings) -> HttpService:
    """``ragline console``: reads the console, query (JWT) and ops settings once."""
    app = create_app(
        settings,
        QuerySettings(),
        ConsoleSettings(),
        OpsSettings(),
        model=EmbeddingModelSettings(),
    )
    return HttpService(name="console", app=app)
