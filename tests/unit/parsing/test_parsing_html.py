"""HTML boilerplate removal: aggressive on page chrome, never on the main content."""

from __future__ import annotations

from parsing_helpers import parse


def test_boilerplate_class_on_a_wrapper_never_drops_the_main_content() -> None:
    page = b"""<html class="light sidebar-visible"><body>
      <div class="menu-bar">Home | Docs</div>
      <div id="page" class="nav-wrapper"><main><h1>Guide</h1><p>Real content.</p></main></div>
      <div class="sidebar"><a href="/x">Other page</a></div>
    </body></html>"""
    doc = parse(page, "p.html")
    texts = [b.text for b in doc.blocks]
    assert texts == ["Guide", "Real content."]


def test_header_inside_article_is_kept_page_header_is_not() -> None:
    page = b"""<body><header>Site name</header><article><header><h1>Post title</h1></header>
      <p>Body text.</p><footer>Written by Ann</footer></article><footer>Copyright</footer></body>"""
    doc = parse(page, "p.html")
    assert [b.text for b in doc.blocks] == ["Post title", "Body text.", "Written by Ann"]
    assert doc.title == "Post title"


def test_hidden_and_aria_hidden_elements_are_dropped() -> None:
    page = b"""<body><p>Visible.</p><p hidden>Hidden.</p><div aria-hidden="true">Icon</div>
      <div role="navigation">Nav</div><script>var x = 1;</script><style>p{}</style></body>"""
    assert [b.text for b in parse(page, "p.html").blocks] == ["Visible."]


def test_table_without_th_uses_the_first_row_and_colspan_repeats() -> None:
    page = b"""<table><tr><td>Region</td><td colspan="2">Latency</td></tr>
      <tr><td>EU</td><td>12</td><td>30</td></tr></table>"""
    (block,) = parse(page, "p.html").blocks
    assert block.table is not None
    assert block.table.header == ("Region", "Latency", "Latency")
    assert block.table.rows == (("EU", "12", "30"),)
