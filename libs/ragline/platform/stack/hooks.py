"""Work done at the end of ``ragline stack up`` / ``ragline up``.

OpenSearch keeps its index across restarts; what can still differ from Postgres (the
truth) is drift: a document whose OpenSearch write failed after Postgres committed, or a
tenant index deleted by hand. The indexer repairs that; ``local_hooks`` lists that work
as plain calls into the domains, and the commands pass it to ``StackManager``. A hook is
``async def hook(ctx: PostUpContext) -> str | None``; the string is printed by ``up``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from ragline.config import Settings
from ragline.errors import RaglineError
from ragline.indexing.rebuild import restore_opensearch
from ragline.indexing.settings import IndexerSettings
from ragline.platform.stack.errors import StackError
from ragline.platform.stack.settings import Component

__all__ = ["Hook", "PostUpContext", "local_hooks", "run_post_up_hooks"]


@dataclass(frozen=True, kw_only=True)
class PostUpContext:
    settings: Settings
    # components this `up` started (rather than found running)
    started: frozenset[Component]


Hook = Callable[[PostUpContext], Awaitable[str | None]]


def local_hooks(indexer: IndexerSettings) -> tuple[tuple[str, Hook], ...]:
    """``(name, hook)`` of the work ``up`` does after migrations and topics, in order."""

    async def repair_opensearch(ctx: PostUpContext) -> str | None:
        return await restore_opensearch(ctx.settings, indexer)

    return (("repair_opensearch", repair_opensearch),)


async def run_post_up_hooks(
    ctx: PostUpContext, hooks: Sequence[tuple[str, Hook]]
) -> list[tuple[str, str]]:
    """``(hook name, its summary)`` per hook, run in order; a failure names its hook."""
    out: list[tuple[str, str]] = []
    for name, hook in hooks:
        try:
            summary = await hook(ctx)
        except RaglineError as exc:
            raise StackError("stack", f"post-up hook {name} failed: {exc}") from exc
        out.append((name, summary or "done"))
    return out
