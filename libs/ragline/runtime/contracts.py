"""Generated contract documents: JSON Schema per event (schemas/) and AsyncAPI (docs/).

``make schemas`` writes them; a test regenerates them in memory and fails when the
committed files are stale.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from ragline import __version__
from ragline.events import EVENT_MODELS, SourceChange, Topics, dlq_topic, input_adapter
from ragline.runtime.topology import TOPOLOGY, consumer_group

__all__ = ["asyncapi_document", "event_schemas", "write_contracts"]


def _dump(doc: Any) -> str:
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def event_schemas() -> dict[str, str]:
    """File name -> JSON Schema text, for every event and the source.changes union."""
    out = {f"{name}.json": _dump(model.model_json_schema()) for name, model in EVENT_MODELS.items()}
    union = TypeAdapter(SourceChange).json_schema()
    union["title"] = "SourceChange"
    union["description"] = "Any message on topic source.changes (discriminated by event_type)."
    out["SourceChange.json"] = _dump(union)
    return out


def asyncapi_document() -> str:
    """An AsyncAPI 3.0 document built by FastStream from a broker that declares every
    service's subscribers and publishers with their event models."""
    from faststream.kafka import KafkaBroker
    from faststream.specification import AsyncAPI

    broker = KafkaBroker("kafka:9092", description="Kafka (any Kafka-protocol broker)")
    for svc in TOPOLOGY:
        for topic in svc.consumes:
            model = input_adapter(topic)

            async def handler(body: Any) -> None:  # documentation only, never run
                return None

            handler.__annotations__["body"] = model._type
            broker.subscriber(
                topic,
                group_id=consumer_group(svc.name),
                title=f"{svc.name}:{topic}",
                description=svc.description,
            )(handler)
        for topic in (*svc.produces, *(dlq_topic(t) for t in svc.consumes)):
            schema = input_adapter(topic)._type
            broker.publisher(topic, title=f"{svc.name}->{topic}", schema=schema)
    spec = AsyncAPI(
        broker,
        title="ragline",
        version=__version__,
        description="Event contracts between ragline services. Topics are keyed by document_id.",
    )
    return _dump(json.loads(spec.to_specification().to_json()))


def write_contracts(schemas_dir: Path, docs_dir: Path, *, check: bool = False) -> list[str]:
    """Write (or with ``check`` only compare) the generated files; returns stale paths."""
    wanted = {schemas_dir / name: text for name, text in event_schemas().items()}
    wanted[docs_dir / "asyncapi.json"] = asyncapi_document()
    stale = [str(p) for p, text in wanted.items() if not p.exists() or p.read_text() != text]
    if not check:
        for path, text in wanted.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    return stale


_ = Topics  # re-exported names are part of the documented surface
