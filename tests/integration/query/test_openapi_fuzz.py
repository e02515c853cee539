"""Schemathesis (every check) against the real query service process (``ragline run
query``) on the test stack, with a valid token for the seeded corpus: no 5xx on any
input, every response as the OpenAPI document says (status, media type, headers,
schema), negative data refused and positive data accepted.

``make test`` runs a bounded budget (``RAGLINE_FUZZ_EXAMPLES``, default 25 per
operation); ``make fuzz-api`` a longer one.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import httpx
import pytest
from query_helpers import GROUP_A, SECRET, Corpus, make_token

pytestmark = pytest.mark.integration

_SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")


async def test_schemathesis_all_checks(service_process, corpus: Corpus, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    examples = int(os.environ.get("RAGLINE_FUZZ_EXAMPLES", "25"))
    proc = service_process(
        "query",
        env={
            "RAGLINE_QUERY_JWT_SECRET": SECRET,
            "RAGLINE_QUERY_RATE_LIMIT_PER_MINUTE": "0",
            "RAGLINE_QUERY_AUDIT_HASH_KEY": "fuzz-audit-key-0123456789",
        },
    )
    await proc.wait_ready_async(timeout_s=180)
    token = make_token(corpus.tenant, [GROUP_A], exp_in=3600)
    async with httpx.AsyncClient(base_url=proc.http_url, timeout=30) as c:
        # the corpus is there for this token: the run exercises real results
        r = await c.post(
            "/v1/search",
            json={"query": "BCANARY payroll bonus vacation days", "top_k": 10},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert r.status_code == 200 and r.json()["results"], r.text
    cmd = [
        str(_SCHEMATHESIS),
        "run",
        f"{proc.http_url}/openapi.json",
        "--checks",
        "all",
        "--max-examples",
        str(examples),
        "--seed",
        os.environ.get("RAGLINE_FUZZ_SEED", "1414"),
        "--workers",
        "1",
        "--generation-database",
        "none",
        "--request-timeout",
        "30",
        "--no-color",
        "--output-truncate",
        "false",
        "--header",
        f"Authorization: Bearer {token}",
    ]
    run = await asyncio.create_subprocess_exec(
        *cmd,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=tmp_path,
    )
    out, _ = await run.communicate()
    text = out.decode(errors="replace")
    (tmp_path / "schemathesis.txt").write_text(text)
    assert run.returncode == 0, text[-12000:]
    assert "Traceback" not in proc.log()
