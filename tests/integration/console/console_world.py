"""Shared values of the console tests: the seeded world, admin tokens, dead letters."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "query"))

from query_helpers import GROUP_A, GROUP_B

from ragline.config import Settings
from ragline.events import DocumentMeta

__all__ = ["GROUP_A", "GROUP_B", "SECRET", "World", "publish_dead_letter", "token"]


@dataclass(frozen=True)
class World:
    tenant: str
    other: str


SECRET = "console-integration-secret-0123456789abcdef"


def token(
    tenant: str,
    *,
    admin: list[str] | None = None,
    groups: tuple[str, ...] = (GROUP_A,),
    sub: str = "op",
) -> str:
    import time

    import jwt

    claims: dict[str, object] = {
        "sub": sub,
        "tenant": tenant,
        "groups": list(groups),
        "exp": time.time() + 600,
    }
    if admin is not None:
        claims["roles"] = ["ragline:admin"]
        claims["admin_tenants"] = admin
    return jwt.encode(claims, SECRET, algorithm="HS256")


async def publish_dead_letter(
    settings: Settings, tenant: str, document_id: str, exc: BaseException, *, raw: bytes
) -> None:
    """A dead letter of ``doc.fetched`` exactly as the stage runtime writes one."""
    import base64

    from ragline.events import DocFetched, Topics, dlq_topic
    from ragline.hashing import content_hash
    from ragline.runtime.deadletter import dead_letter
    from ragline.runtime.publisher import EventPublisher

    ev = DocFetched(
        tenant_id=tenant,
        document_id=document_id,
        source_seq=1,
        content_hash=content_hash(raw),
        meta=DocumentMeta(title="t", mime_type="text/plain", acl_groups=(GROUP_A,)),
        content_b64=base64.b64encode(raw).decode(),
        size_bytes=len(raw),
    )
    topic = Topics.DOC_FETCHED.value
    dl = dead_letter(
        stage="parser",
        topic=topic,
        partition=0,
        offset=1,
        key=document_id.encode(),
        value=ev.model_dump_json().encode(),
        headers={},
        exc=exc,
        attempts=4,
        event=ev,
    )
    async with EventPublisher(settings) as pub:
        await pub.publish_raw(
            dlq_topic(topic),
            dl.model_dump_json().encode(),
            key=document_id,
            headers={"event-type": "dead_letter"},
        )
