"""Errors of the local stack: each names the component and, when there is one, its log."""

from __future__ import annotations

from pathlib import Path

from ragline.errors import RaglineError

__all__ = ["StackError"]


class StackError(RaglineError):
    """A stack component could not be started, reached, stopped or set up."""

    def __init__(self, component: str, message: str, *, log: Path | None = None) -> None:
        text = f"{component}: {message}"
        if log is not None:
            text += f" (log: {log})"
        super().__init__(text)
        self.component = component
        self.log = log
