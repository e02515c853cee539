"""JSON transcripts: ``[{speaker, timestamp, text}, ...]`` or ``{"turns": [...]}``.

Each turn becomes a TURN block with its speaker, timestamp and the source line range
of its JSON object (the array is decoded element by element to know where each turn
sits).
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass
from typing import Any

from ragline.errors import QuarantineError
from ragline.events import BlockKind, ParsedDocument

from .builder import BlockBuilder
from .settings import ParserSettings
from .textutil import clean_inline, clean_text

__all__ = ["looks_like_transcript", "parse_transcript"]

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
_SPEAKER_KEYS = ("speaker", "name", "author", "role")
_TIME_KEYS = ("timestamp", "time", "start", "ts")


@dataclass(frozen=True, kw_only=True)
class _Turn:
    value: Any
    start: int  # character offsets in the source
    end: int


class _Invalid(ValueError):
    pass


def _skip(text: str, pos: int) -> int:
    m = _WS.match(text, pos)
    return m.end() if m else pos


def _array(text: str, pos: int) -> tuple[list[_Turn], int]:
    """Decode the JSON array at ``pos`` element by element, keeping offsets."""
    if text[pos : pos + 1] != "[":
        raise _Invalid("turns is not an array")
    turns: list[_Turn] = []
    pos = _skip(text, pos + 1)
    if text[pos : pos + 1] == "]":
        return turns, pos + 1
    while True:
        value, end = _DECODER.raw_decode(text, pos)
        turns.append(_Turn(value=value, start=pos, end=end))
        pos = _skip(text, end)
        ch = text[pos : pos + 1]
        if ch == "]":
            return turns, pos + 1
        if ch != ",":
            raise _Invalid("malformed array")
        pos = _skip(text, pos + 1)


def _document(text: str) -> tuple[list[_Turn], dict[str, Any]]:
    """(turns with offsets, the other top-level fields)."""
    pos = _skip(text, 0)
    if text[pos : pos + 1] == "[":
        turns, end = _array(text, pos)
        extra: dict[str, Any] = {}
    elif text[pos : pos + 1] == "{":
        top, end = _DECODER.raw_decode(text, pos)  # validates the whole object first
        if not isinstance(top.get("turns"), list):
            raise _Invalid("object without a 'turns' array")
        extra = {k: v for k, v in top.items() if k != "turns"}
        # find the turns array: the decoder walks keys in order
        pos = _skip(text, pos + 1)
        while True:
            key, pos = _DECODER.raw_decode(text, pos)
            pos = _skip(text, pos)
            pos = _skip(text, pos + 1)  # ':'
            if key == "turns":
                turns, _ = _array(text, pos)
                break
            _, pos = _DECODER.raw_decode(text, pos)
            pos = _skip(text, _skip(text, pos) + 1)  # ','
    else:
        raise _Invalid("neither an array nor an object")
    if text[_skip(text, end) :].strip():
        raise _Invalid("trailing data after the JSON value")
    return turns, extra


def _timestamp(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise _Invalid("timestamp is a boolean")
    if isinstance(value, int | float):
        ms = round(float(value) * 1000)
        h, rest = divmod(ms, 3_600_000)
        m, rest = divmod(rest, 60_000)
        s, ms = divmod(rest, 1000)
        return f"{h:02d}:{m:02d}:{s:02d}" + (f".{ms:03d}" if ms else "")
    if isinstance(value, str):
        return clean_inline(value)[:64] or None
    raise _Invalid("timestamp is neither a string nor a number")


def _first(turn: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((turn[k] for k in keys if k in turn), None)


def looks_like_transcript(value: Any) -> bool:
    """The shape test for undeclared JSON: a list of turn objects or ``{"turns": [...]}``."""
    turns = value.get("turns") if isinstance(value, dict) else value
    return (
        isinstance(turns, list)
        and bool(turns)
        and all(isinstance(t, dict) and "text" in t for t in turns[:20])
    )


def parse_transcript(
    text: str, settings: ParserSettings, *, encoding: str | None
) -> ParsedDocument:
    try:
        turns, extra = _document(text)
    except (ValueError, RecursionError) as exc:  # json.JSONDecodeError is a ValueError
        where = f" at offset {exc.pos}" if isinstance(exc, json.JSONDecodeError) else ""
        raise QuarantineError(
            "invalid_transcript", f"not a transcript JSON document{where} ({type(exc).__name__})"
        ) from exc
    title = extra.get("title") if isinstance(extra.get("title"), str) else None
    b = BlockBuilder(max_blocks=settings.max_blocks, max_chars=settings.max_chars)
    section = (clean_inline(title),) if title and clean_inline(title) else ()
    newlines = [m.start() for m in re.finditer("\n", text)]
    for n, turn in enumerate(turns):
        t = turn.value
        try:
            if not isinstance(t, dict):
                raise _Invalid("turn is not an object")
            body = t.get("text")
            if not isinstance(body, str):
                raise _Invalid("turn has no string 'text'")
            speaker = _first(t, _SPEAKER_KEYS)
            if speaker is not None and not isinstance(speaker, str):
                raise _Invalid("speaker is not a string")
            stamp = _timestamp(_first(t, _TIME_KEYS))
        except _Invalid as exc:
            raise QuarantineError("invalid_transcript", f"turn {n}: {exc}") from exc
        b.add(BlockKind.TURN, clean_text(body).strip(), section_path=section,
              speaker=clean_inline(speaker) or None if speaker else None, timestamp=stamp,
              line_start=bisect.bisect_left(newlines, turn.start) + 1,
              line_end=bisect.bisect_left(newlines, turn.end) + 1)  # fmt: skip
    return b.build(format="transcript", title=title, encoding=encoding)
