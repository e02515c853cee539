"""Markdown (CommonMark + GFM tables) via markdown-it-py's token stream with line maps."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

import yaml
from markdown_it import MarkdownIt

from ragline.events import BlockKind, ParsedDocument

from .builder import BlockBuilder
from .settings import ParserSettings
from .tables import CAPTION_RE, make_table, render_table
from .textutil import split_lines

if TYPE_CHECKING:
    from markdown_it.token import Token

__all__ = ["parse_markdown"]

_FRONT_MATTER_MAX_LINES = 200
_QUOTE_MARK = re.compile(r"^\s{0,3}> ?")
_TAG = re.compile(r"<!--.*?-->|<[^>]*>", re.S)


@lru_cache(maxsize=1)
def _md() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    # blocks keep their inline source verbatim: tokenizing inline markup is wasted work
    md.core.ruler.disable(["inline"])
    return md


def _front_matter(lines: list[str]) -> tuple[str | None, int]:
    """(title, number of lines) of a leading ``---`` YAML block; (None, 0) if none."""
    if not lines or lines[0].strip() != "---":
        return None, 0
    for i in range(1, min(len(lines), _FRONT_MATTER_MAX_LINES)):
        if lines[i].strip() in ("---", "..."):
            try:
                loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml if built
                data = yaml.load("\n".join(lines[1:i]), Loader=loader)  # noqa: S506 (safe)
            except yaml.YAMLError:
                return None, 0  # not front matter after all: parse it as markdown
            if not isinstance(data, dict):
                return None, 0
            title = data.get("title")
            return (str(title) if title is not None else None), i + 1
    return None, 0


def _span(lines: list[str], tok: Token) -> tuple[int, int]:
    """1-based inclusive line range of a block token, trailing blank lines trimmed."""
    assert tok.map is not None
    begin, end = tok.map
    while end - 1 > begin and not lines[end - 1].strip():
        end -= 1
    return begin + 1, end


def _closing(tokens: list[Token], i: int) -> int:
    """Index of the token closing the container opened at ``i``."""
    close = tokens[i].type.replace("_open", "_close")
    level = tokens[i].level
    j = i + 1
    while not (tokens[j].type == close and tokens[j].level == level):
        j += 1
    return j


def _source(lines: list[str], first: int, last: int) -> str:
    chunk = lines[first - 1 : last]
    indent = min((len(x) - len(x.lstrip()) for x in chunk if x.strip()), default=0)
    return "\n".join(x[indent:].rstrip() for x in chunk)


def _table(tokens: list[Token], i: int, j: int) -> tuple[list[str], list[list[str]]]:
    header: list[str] = []
    rows: list[list[str]] = []
    in_head = False
    row: list[str] = []
    for t in tokens[i:j]:
        if t.type == "thead_open":
            in_head = True
        elif t.type == "thead_close":
            in_head = False
        elif t.type == "tr_open":
            row = []
        elif t.type == "inline":
            row.append(t.content)
        elif t.type == "tr_close":
            if in_head and not header:
                header = row
            else:
                rows.append(row)
    return header, rows


def parse_markdown(text: str, settings: ParserSettings, *, encoding: str | None) -> ParsedDocument:
    """Block text is the markdown source of the block minus its block markers.

    Inline markup (emphasis, links) is kept verbatim: nothing is lost and both BM25
    and the embedder read it fine. A paragraph that looks like a table caption
    ("Table 2: ...") directly before a table becomes that table's caption.
    """
    lines = split_lines(text)
    title, skip = _front_matter(lines)
    body = "\n".join([""] * skip + lines[skip:])  # keep line numbers of the source
    tokens = _md().parse(body)
    b = BlockBuilder(max_blocks=settings.max_blocks, max_chars=settings.max_chars)
    caption: tuple[str, int] | None = None  # (text, first line) of a pending caption
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        nxt = i + 1
        if tok.level != 0 or tok.map is None:
            i = nxt
            continue
        first, last = _span(lines, tok)
        pos = {"line_start": first, "line_end": last}
        kind = tok.type
        pending, caption = caption, None
        if kind == "heading_open":
            content = tokens[i + 1].content
            level = int(tok.tag[1:])
            if title is None and level == 1:
                title = content
            b.heading(content, level, **pos)
            nxt = i + 3
        elif kind == "paragraph_open":
            content = tokens[i + 1].content
            after = tokens[i + 3] if i + 3 < len(tokens) else None
            if after is not None and after.type == "table_open" and CAPTION_RE.match(content):
                caption = (content, first)
            else:
                b.add(BlockKind.PARAGRAPH, content, **pos)
            nxt = i + 3
        elif kind == "table_open":
            j = _closing(tokens, i)
            header, rows = _table(tokens, i, j)
            table = make_table(header, rows, pending[0] if pending else None)
            if pending:
                pos["line_start"] = pending[1]
            b.add(BlockKind.TABLE, render_table(table), table=table, **pos)
            nxt = j + 1
        elif kind in ("bullet_list_open", "ordered_list_open"):
            b.add(BlockKind.LIST, _source(lines, first, last), **pos)
            nxt = _closing(tokens, i) + 1
        elif kind == "blockquote_open":
            quoted = [_QUOTE_MARK.sub("", x) for x in lines[first - 1 : last]]
            b.add(BlockKind.QUOTE, "\n".join(quoted), **pos)
            nxt = _closing(tokens, i) + 1
        elif kind in ("fence", "code_block"):
            language = tok.info.split()[0].lower() if tok.info.strip() else None
            b.add(BlockKind.CODE, tok.content.rstrip("\n"), language=language, **pos)
        elif kind == "html_block":
            b.add(BlockKind.PARAGRAPH, _TAG.sub(" ", tok.content).strip(), **pos)
        i = nxt
    return b.build(format="markdown", title=title, encoding=encoding)
