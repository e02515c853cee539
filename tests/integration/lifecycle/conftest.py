"""Lifecycle test fixtures: the in-process pipeline and query API on the session's stack
(one per session: the stages load models once)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from lifecycle_world import World

from ragline.config import Settings


@pytest.fixture(scope="session")
def lifecycle_world(stack: Settings) -> Iterator[World]:
    world = World(stack)
    try:
        world.run(world.open())
        yield world
    finally:
        world.shutdown()
