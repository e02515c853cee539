"""Context-manager plumbing shared by the clients: ``with`` calls ``close()``,
``async with`` calls ``aclose()``."""

from __future__ import annotations

from types import TracebackType
from typing import Self

__all__ = ["AsyncClosing", "SyncClosing"]


class SyncClosing:
    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncClosing:
    async def aclose(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
