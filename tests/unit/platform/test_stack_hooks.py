"""Post-up hooks: run in order with the context; a failing hook names itself; ``up`` runs
the indexer's OpenSearch restore as a plain call (no string path)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragline.config import Settings
from ragline.errors import TransientError
from ragline.indexing.settings import IndexerSettings
from ragline.platform.stack import StackError
from ragline.platform.stack.hooks import PostUpContext, local_hooks, run_post_up_hooks
from ragline.platform.stack.settings import Component


@pytest.fixture
def ctx(tmp_path: Path) -> PostUpContext:
    return PostUpContext(
        settings=Settings(state_dir=tmp_path),
        started=frozenset({Component.OPENSEARCH, Component.KAFKA}),
    )


async def test_hooks_run_in_order_with_the_context(ctx: PostUpContext) -> None:
    calls: list[list[str]] = []

    async def rebuild(c: PostUpContext) -> str:
        calls.append(sorted(c.started))
        return f"rebuilt after {','.join(sorted(c.started))}"

    async def quiet(c: PostUpContext) -> None:
        return None

    out = await run_post_up_hooks(ctx, [("rebuild", rebuild), ("quiet", quiet)])
    assert out == [("rebuild", "rebuilt after kafka,opensearch"), ("quiet", "done")]
    assert calls == [["kafka", "opensearch"]]


async def test_a_failing_hook_names_itself(ctx: PostUpContext) -> None:
    async def broken(c: PostUpContext) -> None:
        raise TransientError("opensearch busy")

    with pytest.raises(StackError, match="post-up hook broken failed: opensearch busy"):
        await run_post_up_hooks(ctx, [("broken", broken)])


def test_up_repairs_opensearch_from_postgres() -> None:
    assert [name for name, _ in local_hooks(IndexerSettings())] == ["repair_opensearch"]
