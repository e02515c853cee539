"""Event compatibility across releases (docs/adr/0010-event-evolution.md).

``snapshots/<release>/`` keeps, for every released version, the JSON Schemas of its
events and one fully populated event per topic as that release wrote it. For each:

- old -> new: what the old release wrote is read by this code (``read_event``);
- new -> old: what this code writes is read by the old release: its JSON Schema accepts
  the event once the fields it does not know are dropped (what a tolerant reader does;
  releases from 0.1.0 on read internal topics tolerantly);
- a rolling upgrade to the *next* release: an event with fields this code does not know
  (top level and nested) and ``schema_version`` one ahead is read on every internal
  topic, and refused on ``source.changes`` (the external contract stays strict).
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from _compat_samples import SNAPSHOTS, samples
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from ragline.events import (
    MAX_READ_SCHEMA_VERSION,
    MIN_SCHEMA_VERSION,
    SCHEMA_VERSION,
    TOLERANT,
    Topics,
    input_adapter,
    read_event,
)

RELEASES = sorted(p.name for p in SNAPSHOTS.iterdir() if p.is_dir())
INTERNAL = [t for t in samples() if t != Topics.SOURCE_CHANGES and not t.endswith(".dlq")]


def _release_events(release: str) -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for path in sorted((SNAPSHOTS / release / "events").glob("*.json")):
        topic = path.name.removesuffix(".json")
        for item in json.loads(path.read_text()):
            out.append((topic, item["model"], item["event"]))
    return out


def _schema(release: str, model: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(
        (SNAPSHOTS / release / "schemas" / f"{model}.json").read_text()
    )
    return result


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        ref = node["$ref"].removeprefix("#/")
        target: Any = root
        for part in ref.split("/"):
            target = target[part]
        node = target
    return node


def _strip_unknown(value: Any, node: dict[str, Any], root: dict[str, Any]) -> Any:
    """``value`` as a tolerant reader of schema ``node`` sees it: object properties the
    schema does not declare are dropped, recursively (through $ref, anyOf, arrays)."""
    node = _resolve(node, root)
    if isinstance(value, dict):
        if "anyOf" in node or "oneOf" in node:
            options = node.get("anyOf") or node.get("oneOf")
            for option in options:
                opt = _resolve(option, root)
                if opt.get("type") == "object" or "properties" in opt:
                    return _strip_unknown(value, opt, root)
            return value
        props = node.get("properties")
        if props is None:
            return value
        return {k: _strip_unknown(v, props[k], root) for k, v in value.items() if k in props}
    if isinstance(value, list):
        if "anyOf" in node:
            arrays = [_resolve(o, root) for o in node["anyOf"]]
            node = next((o for o in arrays if o.get("type") == "array"), node)
        items = node.get("items")
        prefix = node.get("prefixItems")
        if prefix:
            return [
                _strip_unknown(v, prefix[min(i, len(prefix) - 1)], root)
                for i, v in enumerate(value)
            ]
        if isinstance(items, dict):
            return [_strip_unknown(v, items, root) for v in value]
    return value


def _old_release_reads(release: str, model: str, event: dict[str, Any]) -> None:
    schema = _schema(release, model)
    seen = _strip_unknown(event, schema, schema)
    jsonschema.validate(seen, schema, cls=jsonschema.Draft202012Validator)


def test_snapshots_exist_for_the_current_schema_version() -> None:
    assert RELEASES, "no release snapshot"
    versions = set()
    for release in RELEASES:
        for _topic, _model, event in _release_events(release):
            versions.add(event.get("schema_version", 1))
    assert SCHEMA_VERSION in versions, "freeze a snapshot of this release (_compat_samples.py)"
    assert min(versions) >= MIN_SCHEMA_VERSION
    # every topic and every model of today is covered by the newest snapshot
    newest = {(t, m) for t, m, _ in _release_events(RELEASES[-1])}
    assert {(t, m) for t, events in samples().items() for m, _ in events} <= newest


@pytest.mark.parametrize("release", RELEASES)
def test_old_release_events_are_read_by_this_code(release: str) -> None:
    for topic, model, event in _release_events(release):
        got = read_event(topic, json.dumps(event))
        assert type(got).__name__ == model
        # nothing the old release wrote is lost on the way in
        assert json.loads(got.model_dump_json()) == event


@pytest.mark.parametrize("release", RELEASES)
def test_this_code_events_are_read_by_old_releases(release: str) -> None:
    for _topic, events in samples().items():
        for model, event in events:
            _old_release_reads(release, model, json.loads(event.model_dump_json()))


def test_the_checker_can_fail() -> None:
    """A removed or retyped field, or a new required one, breaks an old reader."""
    release = RELEASES[-1]
    (model, event), *_ = samples()[Topics.DOC_PARSED]
    payload = json.loads(event.model_dump_json())
    _old_release_reads(release, model, {**payload, "added_later": {"x": 1}})  # fine
    for broken in (
        {k: v for k, v in payload.items() if k != "meta"},  # a field the old one needs
        {**payload, "source_seq": "seven"},  # retyped
        {**payload, "document": {**payload["document"], "blocks": "none"}},  # nested retype
    ):
        with pytest.raises(jsonschema.ValidationError):
            _old_release_reads(release, model, broken)


def _next_release(event: dict[str, Any], name: str, value: Any) -> dict[str, Any]:
    """What the next release may write: one version ahead, new optional fields at the top
    and inside nested models."""
    out = {**event, "schema_version": SCHEMA_VERSION + 1, name: value}
    if isinstance(out.get("meta"), dict):
        out["meta"] = {**out["meta"], name: value}
    if isinstance(out.get("chunks"), list):
        out["chunks"] = [{**c, name: value} for c in out["chunks"]]
    if isinstance(out.get("document"), dict):
        doc = out["document"]
        out["document"] = {
            **doc,
            name: value,
            "blocks": [{**b, name: value} for b in doc["blocks"]],
        }
    return out


_NEW_NAME = st.from_regex(r"[a-z][a-z0-9_]{0,20}", fullmatch=True)
_NEW_VALUE = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63)
    | st.text(max_size=40)
    | st.lists(st.integers(), max_size=3)
    | st.dictionaries(st.text(max_size=5), st.integers(), max_size=2)
)


@settings(max_examples=40, deadline=None)
@given(name=_NEW_NAME, value=_NEW_VALUE)
def test_next_release_events_are_read_on_internal_topics(name: str, value: Any) -> None:
    for topic in INTERNAL:
        for model, event in samples()[topic]:
            payload = json.loads(event.model_dump_json())
            if name in payload:
                continue  # a known field with a hostile value is a real error
            got = read_event(topic, json.dumps(_next_release(payload, name, value)))
            assert type(got).__name__ == model
            assert got.schema_version == SCHEMA_VERSION + 1
            # what this release knows comes through unchanged
            back = json.loads(got.model_dump_json())
            assert {**back, "schema_version": SCHEMA_VERSION} == payload


@settings(max_examples=25, deadline=None)
@given(name=_NEW_NAME, value=_NEW_VALUE, ahead=st.booleans())
def test_the_strict_first_read_is_the_tolerant_read(name: str, value: Any, ahead: bool) -> None:
    """``read_event`` validates an internal topic's message strictly first and tolerantly
    only when that fails (issue 35: the tolerant read copies every nested object): it
    returns what the tolerant read returns, for this release's events and the next's."""
    for topic in INTERNAL:
        for _model, event in samples()[topic]:
            payload = json.loads(event.model_dump_json())
            if ahead and name not in payload:
                payload = _next_release(payload, name, value)
            body = json.dumps(payload)
            tolerant = input_adapter(topic).validate_json(body, context={TOLERANT: True})
            assert read_event(topic, body) == tolerant


@pytest.mark.parametrize("model_event", samples()[Topics.SOURCE_CHANGES], ids=lambda x: x[0])
def test_the_external_contract_stays_strict(model_event: tuple[str, Any]) -> None:
    _model, event = model_event
    payload = json.loads(event.model_dump_json())
    for bad in (
        {**payload, "surprise": 1},
        {**payload, "schema_version": SCHEMA_VERSION + 1},
    ):
        with pytest.raises(ValidationError):
            read_event(Topics.SOURCE_CHANGES, json.dumps(bad))


def test_versions_outside_the_declared_range_are_refused() -> None:
    (_model, event), *_ = samples()[Topics.DOC_CHUNKED]
    payload = json.loads(event.model_dump_json())
    for version in (MIN_SCHEMA_VERSION - 1, MAX_READ_SCHEMA_VERSION + 1, 2**63, -(2**63)):
        with pytest.raises(ValidationError):
            read_event(Topics.DOC_CHUNKED, json.dumps({**payload, "schema_version": version}))


def test_tolerance_never_hides_a_broken_known_field() -> None:
    (_model, event), *_ = samples()[Topics.DOC_EMBEDDED]
    payload = json.loads(event.model_dump_json())
    payload["chunks"][1]["embedding"] = None  # a child without its vector
    with pytest.raises(ValidationError, match="no embedding"):
        read_event(Topics.DOC_EMBEDDED, json.dumps(payload))
    payload = json.loads(event.model_dump_json())
    payload["tenant_id"] = "Acme\u200bCorp"
    with pytest.raises(ValidationError):
        read_event(Topics.DOC_EMBEDDED, json.dumps(payload))


def test_construction_stays_strict() -> None:
    from ragline.events import DocControl

    with pytest.raises(ValidationError):
        DocControl(tenant_id="acme", document_id="fs:x", source_seq=1, action="delete", typo=1)  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="newer than this release"):
        DocControl(
            tenant_id="acme",
            document_id="fs:x",
            source_seq=1,
            action="delete",
            schema_version=SCHEMA_VERSION + 1,
        )


def test_snapshot_files_are_what_the_generator_wrote() -> None:
    """A snapshot is frozen: this release's samples still equal the newest snapshot's
    (bump SCHEMA_VERSION and freeze a new snapshot when the writers change)."""
    newest = RELEASES[-1]
    frozen: dict[str, list[tuple[str, Any]]] = {}
    for topic, model, event in _release_events(newest):
        frozen.setdefault(topic, []).append((model, event))
    now = {
        topic: [(model, json.loads(e.model_dump_json())) for model, e in events]
        for topic, events in samples().items()
    }
    assert now == frozen, f"this release writes differently from snapshot {newest}: add one"
