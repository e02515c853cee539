"""Hypothesis strategies for the JSON Schema subset FastAPI/pydantic emit in OpenAPI 3.1.

Small on purpose (hypothesis-jsonschema does not run with this hypothesis): ``$ref``,
``anyOf``/``oneOf``, ``type``, ``enum``/``const``, objects (``properties``, ``required``,
``additionalProperties``), arrays (``items``, ``prefixItems``, length bounds), strings
(length bounds, ``date``/``date-time`` formats), numbers with bounds. Unknown keywords
fail loudly, so a schema the generator does not understand cannot pass silently.
Objects get extra, undeclared keys too: a client must ignore what a newer server adds.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from hypothesis import strategies as st

_IGNORED = {"title", "description", "default", "examples", "deprecated", "readOnly"}
_KNOWN = _IGNORED | {
    "$ref",
    "anyOf",
    "oneOf",
    "type",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "uniqueItems",
    "pattern",
}
_EXTRA_KEY = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12).map(
    lambda k: f"x_{k}"
)
_ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=6,
)


def from_schema(schema: dict[str, Any], defs: dict[str, Any]) -> st.SearchStrategy[Any]:
    unknown = set(schema) - _KNOWN
    if unknown:
        raise NotImplementedError(f"schema keywords not handled: {sorted(unknown)}")
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return st.deferred(lambda: from_schema(defs[name], defs))
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return st.one_of([from_schema(s, defs) for s in schema[key]])
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([from_schema({**schema, "type": k}, defs) for k in kind])
    if kind is None:
        return _ANY_JSON
    return _BY_TYPE[kind](schema, defs)


def _object(schema: dict[str, Any], defs: dict[str, Any]) -> st.SearchStrategy[Any]:
    props: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", ()))
    extra = schema.get("additionalProperties", True)

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, sub in props.items():
            if name in required or draw(st.booleans()):
                out[name] = draw(from_schema(sub, defs))
        if isinstance(extra, dict):
            for key in draw(st.lists(st.text(max_size=10), max_size=3)):
                out.setdefault(key, draw(from_schema(extra, defs)))
        elif extra is not False:
            for key in draw(st.lists(_EXTRA_KEY, max_size=2)):
                out.setdefault(key, draw(_ANY_JSON))
        return out

    return build()


def _array(schema: dict[str, Any], defs: dict[str, Any]) -> st.SearchStrategy[Any]:
    lo, hi = schema.get("minItems", 0), schema.get("maxItems")
    if "prefixItems" in schema:
        return st.tuples(*(from_schema(s, defs) for s in schema["prefixItems"])).map(list)
    items = from_schema(schema.get("items", {}), defs)
    return st.lists(items, min_size=lo, max_size=min(hi if hi is not None else 4, lo + 4))


def _string(schema: dict[str, Any], _: dict[str, Any]) -> st.SearchStrategy[Any]:
    fmt = schema.get("format")
    if fmt == "date":
        return st.dates(date(1, 1, 1), date(9999, 12, 31)).map(date.isoformat)
    if fmt == "date-time":
        return st.datetimes(timezones=st.just(UTC)).map(datetime.isoformat)
    if "pattern" in schema:
        return st.from_regex(schema["pattern"], fullmatch=True)
    lo = schema.get("minLength", 0)
    hi = schema.get("maxLength")
    text = st.text(min_size=lo, max_size=min(hi if hi is not None else 40, lo + 40))
    return text.filter(lambda s: s.strip()) if lo else text


def _integer(schema: dict[str, Any], _: dict[str, Any]) -> st.SearchStrategy[Any]:
    lo = schema.get("minimum", -(2**63))
    hi = schema.get("maximum", 2**63)
    if "exclusiveMinimum" in schema:
        lo = schema["exclusiveMinimum"] + 1
    if "exclusiveMaximum" in schema:
        hi = schema["exclusiveMaximum"] - 1
    return st.integers(lo, hi)


def _number(schema: dict[str, Any], _: dict[str, Any]) -> st.SearchStrategy[Any]:
    lo, hi = schema.get("minimum"), schema.get("maximum")
    floats = st.floats(lo, hi, allow_nan=False, allow_infinity=False)
    return floats | st.integers(
        int(lo) if lo is not None else -(2**53), int(hi) if hi is not None else 2**53
    )


_BY_TYPE = {
    "object": _object,
    "array": _array,
    "string": _string,
    "integer": _integer,
    "number": _number,
    "boolean": lambda _s, _d: st.booleans(),
    "null": lambda _s, _d: st.none(),
}
