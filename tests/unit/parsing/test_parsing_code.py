"""Source code units partition the file: every non-blank line is in exactly one block,
and a block's text is exactly its line range."""

from __future__ import annotations

import asyncio.base_events
import json.decoder
import pathlib
import textwrap
from pathlib import Path

import pytest
from parsing_helpers import parse

import ragline.parsing.pdf
from ragline.events import ParsedDocument
from ragline.parsing import ParserSettings

SOURCES = [
    Path(m.__file__ or "")
    for m in (json.decoder, asyncio.base_events, pathlib, ragline.parsing.pdf)
]


def _assert_partition(doc: ParsedDocument, source: str) -> None:
    lines = source.split("\n")
    owner: dict[int, int] = {}
    for k, block in enumerate(doc.blocks):
        assert block.line_start is not None and block.line_end is not None
        assert block.text == "\n".join(lines[block.line_start - 1 : block.line_end])
        for n in range(block.line_start, block.line_end + 1):
            assert n not in owner, f"line {n} in blocks {owner[n]} and {k}"
            owner[n] = k
    missing = [n for n, line in enumerate(lines, 1) if line.strip() and n not in owner]
    assert not missing, f"lines in no block: {missing[:10]}"


@pytest.mark.parametrize("path", SOURCES, ids=[p.name for p in SOURCES])
def test_python_units_partition_real_modules(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    doc = parse(source.encode(), path.name)
    _assert_partition(doc, source)
    assert doc.blocks[0].symbol == path.stem  # the module header
    methods = [b for b in doc.blocks if b.symbol and "." in b.symbol]
    for b in methods:
        cls = b.symbol.split(".")[0]
        assert b.section_path == (path.name, cls)
        assert b.signature and b.signature.split()[0] in ("def", "async")


@pytest.mark.parametrize("path", SOURCES, ids=[p.name for p in SOURCES])
def test_generic_units_partition_too(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    doc = parse(source.encode(), path.stem + ".rb")  # not Python: the structural splitter
    _assert_partition(doc, source)
    limit = ParserSettings().code_unit_max_lines
    long_units = [b for b in doc.blocks if b.line_end - b.line_start + 1 > 3 * limit]
    assert len(long_units) <= len(doc.blocks) // 10 + 1


def test_python_unit_fields() -> None:
    source = textwrap.dedent('''\
        """Doc."""
        import os
        import numpy as np
        from typing import Any as A

        # helper comment
        @decorator
        def f(x: int, *args: A, y: str = "s", **kw: A) -> list[int]:
            """F."""
            return [np.int8(x)]


        class C(Base, metaclass=M):
            attr = 1

            async def m(self) -> None:
                os.getcwd()

            @property
            def p(self) -> int:
                return 1
        ''')
    doc = parse(source.encode(), "pkg/mod.py")
    by_symbol = {b.symbol: b for b in doc.blocks}
    assert list(by_symbol) == ["mod", "f", "C", "C.m", "C.p"]
    f = by_symbol["f"]
    assert f.signature == "def f(x: int, *args: A, y: str='s', **kw: A) -> list[int]"
    assert f.imports == ("import numpy as np", "from typing import Any as A")
    assert f.text.startswith("# helper comment\n@decorator\ndef f(")
    assert (f.line_start, f.line_end) == (6, 10)
    assert by_symbol["C"].signature == "class C(Base, metaclass=M)"
    assert by_symbol["C"].text.endswith("attr = 1")
    assert by_symbol["C.m"].signature == "async def m(self) -> None"
    assert by_symbol["C.m"].imports == ("import os",)
    assert by_symbol["C.p"].text.lstrip().startswith("@property")
    assert by_symbol["mod"].imports == (
        "import os",
        "import numpy as np",
        "from typing import Any as A",
    )
    assert all(b.language == "python" for b in doc.blocks)
    _assert_partition(doc, source)
