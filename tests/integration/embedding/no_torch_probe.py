"""Run by test_no_torch.py in a fresh interpreter (not a test): the default path end to
end in ONE process, then which of torch / transformers / sentence_transformers it loaded.

1. every service's entry point module (what `ragline run <service>` imports) and the CLI;
2. the ingest path `ragline up` drives: the embedder stage (default backend, model files
   and ONNX artifact from the cache) embeds a document, the indexer stage writes it;
3. a search through the query service's own app (its lifespan loads the query embedder
   the way the service does), dense + hybrid, answered with the document.

Prints one JSON line: {"forbidden": [...], "hit": "<document id>", "backend": "..."}.
The stack comes from the environment (RAGLINE_*: the test session's stack).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import sys
import time
import tomllib
from pathlib import Path

FORBIDDEN = ("torch", "transformers", "sentence_transformers")
REPO = Path(__file__).resolve().parents[3]
SECRET = "no-torch-probe-secret-0123456789abcdef0123"


def import_services() -> list[str]:
    eps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]
    names = []
    for name, target in eps["ragline.services"].items():
        module, _, attr = target.partition(":")
        assert callable(getattr(importlib.import_module(module), attr)), target
        names.append(name)
    importlib.import_module("ragline.cli")
    return names


async def ingest_and_search(tenant: str) -> tuple[str, str]:
    import httpx
    import jwt

    from ragline.config import EmbeddingModelSettings, Settings
    from ragline.embedding.model import backend_of
    from ragline.embedding.settings import EmbedderSettings
    from ragline.embedding.stage import EmbedderStage
    from ragline.indexing.samples import enriched_event
    from ragline.indexing.settings import IndexerSettings
    from ragline.indexing.stage import IndexerStage
    from ragline.retrieval.settings import QuerySettings
    from ragline.runtime.stage import StageContext
    from services.query.api import create_app

    settings = Settings()
    ctx = StageContext(settings=settings, logger=logging.getLogger("no-torch-probe"))
    embedder = EmbedderStage(settings, EmbedderSettings())
    indexer = IndexerStage(settings, IndexerSettings())
    await embedder.start()
    await indexer.start()
    try:
        texts = {
            "probe:vpn": "To connect to the VPN, install the client and sign in with SSO.",
            "probe:lunch": "The cafeteria serves lunch from noon until two o'clock.",
        }
        events = [
            enriched_event(tenant_id=tenant, document_id=d, source_seq=1, texts=[t])
            for d, t in texts.items()
        ]
        embedded = await embedder.handle_batch(events, ctx)
        outs = []
        for r in embedded:
            assert not isinstance(r, BaseException), r
            outs.extend(o.event for o in r)
        for r in await indexer.handle_batch(outs, ctx):
            assert not isinstance(r, BaseException), r
        backend = backend_of(embedder._embedder)
    finally:
        await indexer.stop()
        await embedder.stop()
    qs = QuerySettings.from_fields(jwt_secret=SECRET, rate_limit_per_minute=0)
    app = create_app(settings, qs, model=EmbeddingModelSettings())
    claims = {"sub": "probe", "tenant": tenant, "groups": ["everyone"], "exp": time.time() + 600}
    headers = {"Authorization": f"Bearer {jwt.encode(claims, SECRET, algorithm='HS256')}"}
    body = {"query": "how do I log in to the vpn", "mode": "dense", "top_k": 3, "rerank": False}
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://q") as c:
            r = await c.post("/v1/search", json=body, headers=headers)
            assert r.status_code == 200, r.text
            hits = r.json()["results"]
    return (hits[0]["document_id"] if hits else ""), backend


def main() -> int:
    services = import_services()
    hit, backend = asyncio.run(ingest_and_search(sys.argv[1]))
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in FORBIDDEN)
    print(json.dumps({"forbidden": loaded, "hit": hit, "backend": backend, "services": services}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
