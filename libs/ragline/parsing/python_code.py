"""Python source via the ``ast`` module: one CODE block per unit, with symbol and imports.

Units: the module header (docstring, imports and leading statements), then every
top-level function; a class is split into its header (decorators, ``class`` line,
docstring, class attributes) and one unit per method, symbol ``Class.method`` with the
class in the section path. Other top-level statements between definitions form their
own units. Comments and blank lines above a definition belong to it, so the units
partition the file: every line is in exactly one block.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from ragline.events import BlockKind, ParsedDocument

from .builder import BlockBuilder
from .settings import ParserSettings
from .textutil import split_lines

__all__ = ["PythonSyntaxUnsupported", "parse_python"]

_Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


class PythonSyntaxUnsupported(Exception):
    """The source does not parse as Python: the caller falls back to generic code."""


@dataclass(frozen=True, kw_only=True)
class _Unit:
    first: int  # 1-based inclusive line range
    last: int
    symbol: str
    signature: str | None
    names: frozenset[str]  # names the unit uses, to pick its imports
    is_header: bool = False


def _signature(node: _Def) -> str:
    if isinstance(node, ast.ClassDef):
        bases = [ast.unparse(b) for b in node.bases] + [ast.unparse(k) for k in node.keywords]
        return f"class {node.name}({', '.join(bases)})" if bases else f"class {node.name}"
    prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    sig = f"{prefix} {node.name}({ast.unparse(node.args)})"
    return sig + (f" -> {ast.unparse(node.returns)}" if node.returns else "")


def _names(nodes: Sequence[ast.AST]) -> frozenset[str]:
    found: set[str] = set()
    for node in nodes:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name):
                found.add(sub.id)
            elif isinstance(sub, ast.Attribute):
                root: ast.expr = sub
                while isinstance(root, ast.Attribute):
                    root = root.value
                if isinstance(root, ast.Name):
                    found.add(root.id)
    return frozenset(found)


def _imports(tree: ast.Module) -> list[tuple[str, str]]:
    """(bound name, import statement) for every top-level import."""
    out: list[tuple[str, str]] = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            for a in node.names:
                stmt = f"import {a.name}" + (f" as {a.asname}" if a.asname else "")
                out.append((a.asname or a.name.split(".")[0], stmt))
        elif isinstance(node, ast.ImportFrom):
            mod = "." * node.level + (node.module or "")
            for a in node.names:
                stmt = f"from {mod} import {a.name}" + (f" as {a.asname}" if a.asname else "")
                out.append((a.asname or a.name, stmt))
    return out


def _start(node: ast.stmt) -> int:
    decorators: list[ast.expr] = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])


def _partition(
    body: Sequence[ast.stmt], first: int, last: int, prefix: str, header_symbol: str
) -> list[_Unit]:
    """Cut lines ``first..last`` into units along ``body``'s definitions."""
    units: list[_Unit] = []
    run: list[ast.stmt] = []
    run_start = first

    def close_run(end: int) -> None:
        nonlocal run
        if run or not units:
            units.append(_Unit(first=run_start, last=end, symbol=header_symbol, signature=None,
                               names=_names(run), is_header=not units))  # fmt: skip
        run = []

    for node in body:
        if isinstance(node, _Def):
            start = _start(node)
            if start > run_start:
                close_run(start - 1)
            end = node.end_lineno or start
            units.append(_Unit(first=max(start, run_start), last=end,
                               symbol=prefix + node.name, signature=_signature(node),
                               names=_names([node])))  # fmt: skip
            run_start = end + 1
        else:
            run.append(node)
    if run_start <= last:
        close_run(last)
    return units


def _extend_to_comments(units: list[_Unit], lines: list[str]) -> list[_Unit]:
    """Give the comment/blank lines right above a definition to that definition."""
    out: list[_Unit] = []
    for k, u in enumerate(units):
        first = u.first
        if k and u.signature is not None:
            prev = out[-1]
            while first - 1 > prev.first and (
                not lines[first - 2].strip() or lines[first - 2].lstrip().startswith("#")
            ):
                first -= 1
            if first != u.first:
                out[-1] = _Unit(first=prev.first, last=first - 1, symbol=prev.symbol,
                                signature=prev.signature, names=prev.names,
                                is_header=prev.is_header)  # fmt: skip
        out.append(_Unit(first=first, last=u.last, symbol=u.symbol, signature=u.signature,
                         names=u.names, is_header=u.is_header))  # fmt: skip
    return out


def parse_python(
    text: str, settings: ParserSettings, *, filename: str, encoding: str | None
) -> ParsedDocument:
    """``filename`` heads every section path; its stem is the module header's symbol."""
    module = filename.rsplit("/", 1)[-1].removesuffix(".pyi").removesuffix(".py") or filename
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes etc. are not our business
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise PythonSyntaxUnsupported(type(exc).__name__) from exc
    lines = split_lines(text)
    last = len(lines)
    units: list[tuple[_Unit, tuple[str, ...]]] = []
    try:
        for u in _extend_to_comments(_partition(tree.body, 1, last, "", module), lines):
            units.append((u, ()))
        expanded: list[tuple[_Unit, tuple[str, ...]]] = []
        classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        for u, _ in units:
            cls = classes.get(u.symbol) if u.signature and u.signature.startswith("class") else None
            if cls is None or not any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                                      for n in cls.body):  # fmt: skip
                expanded.append((u, ()))
                continue
            inner = _partition(cls.body, u.first, u.last, f"{cls.name}.", cls.name)
            head = inner[0]
            inner[0] = _Unit(first=head.first, last=head.last, symbol=cls.name,
                             signature=u.signature, names=head.names)  # fmt: skip
            expanded.extend((x, (cls.name,)) for x in _extend_to_comments(inner, lines))
    except RecursionError as exc:  # ast.unparse / ast.walk on absurdly deep code
        raise PythonSyntaxUnsupported("RecursionError") from exc
    imports = _imports(tree)
    b = BlockBuilder(max_blocks=settings.max_blocks, max_chars=settings.max_chars)
    for u, section in expanded:
        first, end = u.first, u.last
        while first < end and not lines[first - 1].strip():
            first += 1
        while end > first and not lines[end - 1].strip():
            end -= 1
        body = "\n".join(lines[first - 1 : end])
        if not body.strip():
            continue
        used = tuple(stmt for name, stmt in imports if u.is_header or name in u.names)
        b.add(BlockKind.CODE, body, section_path=(filename, *section), language="python",
              symbol=u.symbol, signature=u.signature, imports=used,
              line_start=first, line_end=end)  # fmt: skip
    return b.build(format="code", title=filename, encoding=encoding)
