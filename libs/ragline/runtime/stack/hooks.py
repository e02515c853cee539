"""Work other domains want done at the end of ``ragline stack up``.

The broker and OpenSearch are in-memory locally: after ``down``/``up`` they come back
empty while Postgres still holds every document. A domain that can repair that (the
indexer rebuilding OpenSearch from Postgres) adds its hook's path to ``POST_UP_HOOKS``,
a one-line additive edit like ``COMMAND_MODULES`` in ``ragline.cli``. A hook is
``async def hook(ctx: PostUpContext) -> str | None``; the string is printed by ``up``.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from ragline.config import Settings
from ragline.errors import RaglineError
from ragline.runtime.stack.errors import StackError
from ragline.runtime.stack.settings import Component

__all__ = ["POST_UP_HOOKS", "PostUpContext", "run_post_up_hooks"]

# "package.module:function", run in order after migrations and topics
POST_UP_HOOKS: tuple[str, ...] = ("ragline.indexing.stack_hook:rebuild_opensearch",)


@dataclass(frozen=True, kw_only=True)
class PostUpContext:
    settings: Settings
    # components this `up` started (rather than found running): the in-memory ones
    # among them (kafka, opensearch) are empty
    started: frozenset[Component]


Hook = Callable[[PostUpContext], Awaitable[str | None]]


def _load(path: str) -> Hook | None:
    module, _, attr = path.partition(":")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module.startswith(exc.name):
            return None  # that domain is not built yet
        raise
    hook = getattr(mod, attr, None)
    if not callable(hook):
        raise StackError("stack", f"post-up hook {path} is not a function")
    return hook  # type: ignore[no-any-return]


async def run_post_up_hooks(
    ctx: PostUpContext, hooks: Sequence[str] = POST_UP_HOOKS
) -> list[tuple[str, str]]:
    """``(hook path, its summary)`` per hook run; a missing module is reported, not run."""
    out: list[tuple[str, str]] = []
    for path in hooks:
        hook = _load(path)
        if hook is None:
            out.append((path, "not built yet, skipped"))
            continue
        try:
            summary = await hook(ctx)
        except RaglineError as exc:
            raise StackError("stack", f"post-up hook {path} failed: {exc}") from exc
        out.append((path, summary or "done"))
    return out
