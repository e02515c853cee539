"""Post-up hooks: run in order, with the context; missing domains are skipped, not fatal."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ragline.config import Settings
from ragline.runtime.stack import StackError
from ragline.runtime.stack.hooks import PostUpContext, run_post_up_hooks
from ragline.runtime.stack.settings import Component

HOOKS = textwrap.dedent(
    """
    from ragline.errors import TransientError
    calls = []

    async def rebuild(ctx):
        calls.append(sorted(ctx.started))
        return f"rebuilt after {','.join(sorted(ctx.started))}"

    async def quiet(ctx):
        return None

    async def broken(ctx):
        raise TransientError("opensearch busy")

    not_a_function = 42
    """
)


@pytest.fixture
def ctx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PostUpContext:
    (tmp_path / "fake_stack_hooks.py").write_text(HOOKS)
    monkeypatch.syspath_prepend(str(tmp_path))
    return PostUpContext(
        settings=Settings(state_dir=tmp_path),
        started=frozenset({Component.OPENSEARCH, Component.KAFKA}),
    )


async def test_hooks_run_in_order_with_the_context(ctx: PostUpContext) -> None:
    import fake_stack_hooks

    out = await run_post_up_hooks(
        ctx,
        [
            "fake_stack_hooks:rebuild",
            "ragline.not_built_domain.repair:rebuild",
            "fake_stack_hooks:quiet",
        ],
    )
    assert out == [
        ("fake_stack_hooks:rebuild", "rebuilt after kafka,opensearch"),
        ("ragline.not_built_domain.repair:rebuild", "not built yet, skipped"),
        ("fake_stack_hooks:quiet", "done"),
    ]
    assert fake_stack_hooks.calls == [["kafka", "opensearch"]]


@pytest.mark.parametrize("path", ["fake_stack_hooks:broken", "fake_stack_hooks:not_a_function"])
async def test_a_failing_or_bad_hook_names_itself(ctx: PostUpContext, path: str) -> None:
    with pytest.raises(StackError, match=path):
        await run_post_up_hooks(ctx, [path])
