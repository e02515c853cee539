"""The claim-check store behind the store's pool and pg_errors (store/claimcheck.py):
concurrent callers share a small pool, an unreachable or broken Postgres surfaces as a
ragline error without data, and a body comes back byte for byte (hostile bytes too)."""

from __future__ import annotations

import asyncio
import json

import pytest

from ragline.config import Settings
from ragline.errors import BackendUnavailable, PermanentError
from ragline.platform.stack.testing import free_port
from ragline.store.claimcheck import ClaimCheckStore

pytestmark = pytest.mark.integration

SECRET = "ZKQ-CANARY-4711"


async def test_concurrent_puts_and_gets_share_a_two_connection_pool(
    stack: Settings, tenant: str
) -> None:
    store = ClaimCheckStore(stack.admin_dsn())
    bodies = [
        json.dumps({"tenant_id": tenant, "document_id": f"fs:{i}.md", "n": i}).encode()
        for i in range(40)
    ]
    hostile = [
        b"\x00" * 1000,
        "\ud800".encode("utf-8", "surrogatepass"),
        str(2**63).encode() * 10_000,
        ("\u200b" * 5000).encode(),
        b"",
    ]
    try:
        keys = await asyncio.gather(*(store.put(b) for b in [*bodies, *hostile]))
        back = await asyncio.gather(*(store.get(k) for k in keys))
        assert back == [*bodies, *hostile]
        # the same body again is the same key, stored once
        assert await store.put(bodies[0]) == keys[0]
        assert await store.touch(keys[0]) is True
        assert await store.touch("0" * 64) is False
        with pytest.raises(PermanentError, match="not found"):
            await store.get("0" * 64)
    finally:
        await store.close()


async def test_an_unreachable_postgres_is_backend_unavailable_without_the_dsn() -> None:
    dsn = f"postgresql://ragline:{SECRET}@127.0.0.1:{free_port()}/ragline"
    # a closed port refuses at once; the pool retries it until the timeout (5 s deployed,
    # twice here: 10 s of the suite): the same error after 0.5 s
    store = ClaimCheckStore(dsn, connect_timeout_s=0.5)
    try:
        with pytest.raises(BackendUnavailable) as info:
            await store.put(b"body")
        assert SECRET not in str(info.value)
        # a later call tries again (no broken pool is kept)
        with pytest.raises(BackendUnavailable):
            await store.get("0" * 64)
    finally:
        await store.close()
