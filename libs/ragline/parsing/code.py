"""Source code other than Python: units by blank-line and indentation structure.

A top-level unit starts at an unindented line after a blank line (or after a closing
bracket line); leading comments stay with the code below them. Units longer than
``code_unit_max_lines`` are cut again at their first inner indentation level (class
members, object keys). Symbols and signatures come from a cross-language regex, so
they are best effort; the language comes from the file extension.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragline.events import BlockKind, ParsedDocument

from .builder import BlockBuilder
from .settings import ParserSettings
from .textutil import first_line_chars, split_lines

__all__ = ["parse_code"]

_GO_METHOD = re.compile(r"^\s*func\s+\(\s*\w+\s+\*?([A-Za-z_]\w*)[^)]*\)\s*([A-Za-z_]\w*)")
_KEYWORD_DEF = re.compile(
    r"\b(?:func|function|def|class|struct|interface|enum|trait|impl|type|fn|module|object|"
    r"record|namespace|procedure|sub|macro|message|service|resource|CREATE\s+(?:OR\s+REPLACE\s+)?"
    r"(?:TABLE|VIEW|FUNCTION|INDEX|PROCEDURE))\s+(?:[\w.]+\.)?\**([A-Za-z_$][\w$]*)",
    re.I,
)
# `int main(int argc, char** argv) {`, `public static void run(String[] a)`,
# `const handler = async (req) => {`
_CALLABLE = re.compile(
    r"^\s*(?:[\w<>\[\],:*&]+\s+)*([A-Za-z_$][\w$]*)\s*(?:=\s*(?:async\s*)?\(|\()[^;]*$"
)
_COMMENT = re.compile(r"^\s*(//|#|/\*|\*|--|@|<!--|;)")
_CLOSERS = frozenset({"}", "};", "})", "});", ")", ");", "]", "];", "end", "fi", "done", "esac"})
_CONTROL = frozenset(
    {"if", "for", "while", "switch", "catch", "return", "elif", "else", "import", "require"}
)


@dataclass(frozen=True, kw_only=True)
class _Piece:
    first: int  # 0-based inclusive
    last: int


def _indent(line: str) -> int:
    return len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip())


def _symbol(lines: list[str], piece: _Piece) -> tuple[str | None, str | None]:
    for line in lines[piece.first : piece.last + 1]:
        if not line.strip() or _COMMENT.match(line):
            continue
        m = _GO_METHOD.match(line)
        if m:
            return f"{m.group(1)}.{m.group(2)}", first_line_chars(line.rstrip(" {"))
        m = _KEYWORD_DEF.search(line)
        if m is None:
            m = _CALLABLE.match(line)
            if m and m.group(1) in _CONTROL:
                m = None
        if m:
            return m.group(1), first_line_chars(line.rstrip(" {"))
        return None, None  # the first code line names the unit or nothing does
    return None, None


def _top_units(lines: list[str]) -> list[_Piece]:
    starts: list[int] = []
    prev = ""
    for i, line in enumerate(lines):
        new_unit = not starts or not prev.strip() or prev.strip() in _CLOSERS
        if line.strip() and _indent(line) == 0 and new_unit:
            starts.append(i)
        prev = line
    if not starts:
        return [_Piece(first=0, last=len(lines) - 1)] if lines else []
    starts[0] = 0
    ends = [*starts[1:], len(lines)]
    return [_Piece(first=s, last=e - 1) for s, e in zip(starts, ends, strict=True)]


def _split(lines: list[str], piece: _Piece, max_lines: int) -> list[_Piece]:
    """Cut an over-long unit at its first inner indentation level."""
    inner = [i for i in range(piece.first + 1, piece.last) if lines[i].strip()]
    if not inner:
        return [piece]
    level = min(_indent(lines[i]) for i in inner)
    at_level = [i for i in inner if _indent(lines[i]) == level and not _COMMENT.match(lines[i])]
    blank_led = [i for i in at_level if not lines[i - 1].strip() or _COMMENT.match(lines[i - 1])]
    if blank_led:
        # members separated by blank lines: each is its own unit (leading comments kept)
        cuts = []
        for i in blank_led:
            while i - 1 > piece.first and lines[i - 1].strip() and _COMMENT.match(lines[i - 1]):
                i -= 1
            cuts.append(i)
        bounds = [piece.first, *sorted(set(cuts))]
        return [_Piece(first=s, last=e - 1)
                for s, e in zip(bounds, [*bounds[1:], piece.last + 1], strict=True)]  # fmt: skip
    pieces: list[_Piece] = []
    start = piece.first
    for i in at_level:  # no blank lines: pack statements greedily up to max_lines
        if i - start >= max_lines:
            pieces.append(_Piece(first=start, last=i - 1))
            start = i
    pieces.append(_Piece(first=start, last=piece.last))
    return pieces


def parse_code(
    text: str, settings: ParserSettings, *, language: str | None, filename: str,
    encoding: str | None,
) -> ParsedDocument:  # fmt: skip
    lines = split_lines(text)
    b = BlockBuilder(max_blocks=settings.max_blocks, max_chars=settings.max_chars)
    for unit in _top_units(lines):
        outer, _ = _symbol(lines, unit)
        size = unit.last - unit.first + 1
        parts = [unit]
        if size > settings.code_unit_max_lines:
            parts = _split(lines, unit, settings.code_unit_max_lines)
        for k, piece in enumerate(parts):
            first, last = piece.first, piece.last
            while first < last and not lines[first].strip():
                first += 1
            while last > first and not lines[last].strip():
                last -= 1
            body = "\n".join(lines[first : last + 1])
            if not body.strip():
                continue
            symbol, signature = _symbol(lines, _Piece(first=first, last=last))
            section: tuple[str, ...] = (filename,)
            if len(parts) > 1 and k and outer:
                section = (filename, outer)
                symbol = f"{outer}.{symbol}" if symbol and symbol != outer else symbol or outer
            b.add(BlockKind.CODE, body, section_path=section, language=language, symbol=symbol,
                  signature=signature, line_start=first + 1, line_end=last + 1)  # fmt: skip
    return b.build(format="code", title=filename, encoding=encoding)
