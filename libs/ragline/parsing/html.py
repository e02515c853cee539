"""HTML: boilerplate removed, then headings, paragraphs, lists, tables, code and quotes."""

from __future__ import annotations

import re
from collections.abc import Iterator

from bs4 import BeautifulSoup, Tag
from bs4.element import CData, NavigableString, PageElement

from ragline.events import BlockKind, ParsedDocument

from .builder import BlockBuilder
from .settings import ParserSettings
from .tables import make_table, render_table

__all__ = ["parse_html"]

_DROP = frozenset(
    {"script", "style", "noscript", "template", "nav", "aside", "form", "button", "iframe",
     "svg", "canvas", "select", "input", "textarea", "object", "embed", "dialog", "menu"}
)  # fmt: skip
_PAGE_CHROME = frozenset({"header", "footer"})  # dropped unless inside <article>/<main>
_DROP_ROLES = frozenset(
    {"navigation", "banner", "contentinfo", "complementary", "search", "menu", "menubar"}
)
_BOILERPLATE = re.compile(
    r"(^|[-_])(cookies?|cookie-banner|breadcrumbs?|sidebar|navbar|nav|menu|advert|ads|"
    r"social|share|skip-link|site-header|site-footer)($|[-_])",
    re.I,
)
_NEVER_DROPPED = frozenset({"html", "body", "main", "article"})


def _is_main_content(tag: Tag) -> bool:
    return tag.name in ("main", "article") or tag.get("role") == "main"


_INLINE = frozenset(
    {"a", "abbr", "b", "bdi", "bdo", "br", "cite", "code", "data", "del", "dfn", "em", "font",
     "i", "img", "ins", "kbd", "label", "mark", "q", "s", "samp", "small", "span", "strong",
     "sub", "sup", "time", "tt", "u", "var", "wbr"}
)  # fmt: skip
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_LANG_CLASS = re.compile(r"^(?:language|lang|highlight|sourceCode)-([\w+#-]+)$")
_MAX_COLSPAN = 64


def _is_boilerplate(tag: Tag) -> bool:
    if tag.name in _DROP:
        return True
    if tag.name in _PAGE_CHROME and tag.find_parent(["article", "main"]) is None:
        return True
    if tag.name in _NEVER_DROPPED:
        return False
    attrs = tag.attrs or {}
    names = [*(attrs.get("class") or []), str(attrs.get("id") or "")]
    suspect = (
        attrs.get("role") in _DROP_ROLES
        or "hidden" in attrs
        or str(attrs.get("aria-hidden", "")).lower() == "true"
        or any(_BOILERPLATE.search(n) for n in names if n)
    )
    # attribute heuristics misfire on wrappers ("sidebar-visible" on <html>): never
    # drop an element that holds the main content
    return suspect and tag.find(_is_main_content) is None


def _strings(node: Tag) -> Iterator[str]:
    for d in node.descendants:
        if isinstance(d, Tag):
            if d.name == "br":
                yield "\n"
        elif type(d) in (NavigableString, CData):  # not comments, doctypes, ...
            yield str(d)


def _text(node: Tag | list[Tag | NavigableString], *, keep_lines: bool = False) -> str:
    """Visible text; whitespace collapsed per line unless ``keep_lines`` (``<pre>``)."""
    if isinstance(node, list):
        raw = "".join(str(n) if isinstance(n, NavigableString) else "".join(_strings(n))
                      for n in node)  # fmt: skip
    else:
        raw = "".join(_strings(node))
    if keep_lines:
        return raw.strip("\n")
    lines = (" ".join(line.split()) for line in raw.split("\n"))
    return "\n".join(line for line in lines if line)


def _lines(node: Tag) -> dict[str, int]:
    start = node.sourceline or 1
    end = start + sum(str(s).count("\n") for s in node.find_all(string=True))
    for d in node.find_all(True):
        if d.sourceline and d.sourceline > end:
            end = d.sourceline
    return {"line_start": start, "line_end": max(start, end)}


def _list_lines(tag: Tag, depth: int = 0) -> list[str]:
    out: list[str] = []
    for n, li in enumerate(tag.find_all(["li", "dt", "dd"], recursive=False), 1):
        nested = li.find_all(["ul", "ol"], recursive=False)
        for x in nested:
            x.extract()
        marker = f"{n}." if tag.name == "ol" else ("-" if li.name != "dd" else " ")
        text = " ".join(_text(li).split("\n"))
        if text:
            out.append("  " * depth + f"{marker} {text}".rstrip())
        for x in nested:
            out.extend(_list_lines(x, depth + 1))
    return out


def _table(tag: Tag) -> tuple[list[str], list[list[str]], str | None]:
    rows: list[tuple[bool, list[str]]] = []
    for tr in tag.find_all("tr"):
        if tr.find_parent("table") is not tag:
            continue  # nested table: its text is inside the outer cell
        cells: list[str] = []
        all_th = True
        for cell in tr.find_all(["th", "td"], recursive=False):
            all_th &= cell.name == "th"
            try:
                span = max(1, min(_MAX_COLSPAN, int(str(cell.get("colspan") or 1))))
            except ValueError:
                span = 1
            cells.extend([" ".join(_text(cell).split("\n"))] * span)
        in_head = tr.find_parent("thead") is not None
        rows.append((all_th or in_head, cells))
    cap = tag.find("caption", recursive=False)
    caption = _text(cap) if isinstance(cap, Tag) else None
    if not rows:
        return [], [], caption
    # <thead>/<th> row, else the first row is the header anyway
    head_idx = next((k for k, (is_head, _) in enumerate(rows) if is_head), 0)
    header = rows[head_idx][1]
    body = [cells for k, (_, cells) in enumerate(rows) if k != head_idx]
    return header, body, caption


def _code_language(tag: Tag) -> str | None:
    for node in (tag, tag.find("code")):
        if isinstance(node, Tag):
            for cls in node.get("class") or []:
                m = _LANG_CLASS.match(cls)
                if m:
                    return m.group(1).lower()
    return None


class _Walker:
    def __init__(self, builder: BlockBuilder) -> None:
        self.b = builder
        self.run: list[Tag | NavigableString] = []
        self.run_line = 1

    def flush(self) -> None:
        if self.run:
            text = _text(self.run)
            newlines = sum(_text(n).count("\n") if isinstance(n, Tag) else str(n).count("\n")
                           for n in self.run)  # fmt: skip
            self.b.add(BlockKind.PARAGRAPH, text, line_start=self.run_line,
                       line_end=self.run_line + newlines)  # fmt: skip
            self.run = []

    def walk(self, root: Tag) -> None:
        """Depth-first over containers with an explicit stack: page nesting depth is
        attacker-controlled, Python's recursion limit is not a parser limit."""
        stack: list[tuple[Tag, Iterator[PageElement]]] = [(root, iter(list(root.children)))]
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                self.flush()
                continue
            if isinstance(child, Tag):
                if child.name in _INLINE:
                    if not self.run:
                        self.run_line = child.sourceline or node.sourceline or 1
                    self.run.append(child)
                else:
                    self.flush()
                    if self.block(child):
                        stack.append((child, iter(list(child.children))))
            elif isinstance(child, NavigableString) and type(child) in (NavigableString, CData):
                if not self.run:
                    if not child.strip():
                        continue
                    self.run_line = node.sourceline or 1
                self.run.append(child)

    def block(self, tag: Tag) -> bool:
        """Emit the block ``tag`` is; True if it is a container to descend into."""
        name = tag.name
        if name in _HEADINGS:
            self.b.heading(_text(tag), _HEADINGS[name], **_lines(tag))
        elif name == "p":
            self.b.add(BlockKind.PARAGRAPH, _text(tag), **_lines(tag))
        elif name in ("ul", "ol", "dl"):
            pos = _lines(tag)
            self.b.add(BlockKind.LIST, "\n".join(_list_lines(tag)), **pos)
        elif name == "table":
            pos = _lines(tag)
            header, rows, caption = _table(tag)
            if header or rows:
                table = make_table(header, rows, caption)
                self.b.add(BlockKind.TABLE, render_table(table), table=table, **pos)
        elif name == "pre":
            self.b.add(BlockKind.CODE, _text(tag, keep_lines=True), language=_code_language(tag),
                       **_lines(tag))  # fmt: skip
        elif name == "blockquote":
            self.b.add(BlockKind.QUOTE, _text(tag), **_lines(tag))
        elif name not in ("hr", "head", "title", "meta", "link"):
            return True  # div, section, article, figure, unknown elements: containers
        return False


def parse_html(text: str, settings: ParserSettings, *, encoding: str | None) -> ParsedDocument:
    """Main content is ``<main>``, else the only ``<article>``, else ``<body>``.

    Line ranges come from html.parser's source lines; the end of a block is an
    estimate (its last child tag or its text's line breaks).
    """
    soup = BeautifulSoup(text, "html.parser")
    title_tag = soup.find("title")
    title = _text(title_tag) if isinstance(title_tag, Tag) else None
    for tag in soup.find_all(True):
        # not `tag.decomposed`: on a live tag bs4 resolves it by searching the subtree
        # for a child named "_decomposed", which is quadratic on deeply nested pages
        if not vars(tag).get("_decomposed") and _is_boilerplate(tag):
            tag.decompose()
    articles = soup.find_all("article")
    root = (
        soup.find("main")
        or soup.find(True, attrs={"role": "main"})
        or (articles[0] if len(articles) == 1 else None)
        or soup.find("body")
        or soup
    )
    b = BlockBuilder(max_blocks=settings.max_blocks, max_chars=settings.max_chars)
    assert isinstance(root, Tag)
    _Walker(b).walk(root)
    if not title:
        h1 = next((blk.text for blk in b.blocks if blk.level == 1), None)
        title = h1
    return b.build(format="html", title=title, encoding=encoding)
