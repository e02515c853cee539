"""The scanner Stage as the runtime drives it, and the worker-pool runner."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from ragline.config import Settings
from ragline.errors import QuarantineError
from ragline.events import DocScanned, Topics
from ragline.runtime.stage import StageContext
from ragline.scanning.engine import EngineConfig
from ragline.scanning.model import DetectPlan
from ragline.scanning.runner import DetectionRunner, split_items
from ragline.scanning.settings import ScannerSettings
from ragline.scanning.stage import ScannerStage
from services.scanner.handlers import build

from .helpers import make_event


def ctx() -> StageContext:
    return StageContext(settings=Settings(), logger=logging.getLogger("test"))


def test_build_returns_the_scanner_stage() -> None:
    stage = build(Settings())
    assert isinstance(stage, ScannerStage)
    assert stage.name == "scanner"
    assert stage.input_topics == (Topics.DOC_PARSED.value,)


async def test_stage_handles_batches_with_per_document_failures(tmp_path: Path) -> None:
    policy = tmp_path / "p.yaml"
    # replace_defaults: no rule asks for names, so start() does not load spaCy
    policy.write_text(
        "replace_defaults: true\nrules:\n"
        "  - name: no-keys\n    secrets: {'*': redact, private_key: block}\n"
        "    pii: {contact: redact}\n"
    )
    purged: list[tuple[str, str]] = []

    async def purge(tenant: str, doc: str) -> int:
        purged.append((tenant, doc))
        return 1

    stage = ScannerStage(Settings(), ScannerSettings(policy_file=policy, workers=0), purge=purge)
    await stage.start()
    try:
        good = make_event(["write to ops@acme-corp.com"], doc_id="wiki:a")
        bad = make_event(
            ["-----BEGIN RSA PRIVATE KEY-----\nQUJD\n-----END RSA PRIVATE KEY-----"],
            doc_id="wiki:b",
        )
        outs = await stage.handle_batch([good, bad, good], ctx())
        assert len(outs) == 3
        assert isinstance(outs[1], QuarantineError) and outs[1].reason_code == "secret_blocked"
        # the blocked document's stored raw bodies are purged; the others' are not
        assert purged == [("acme", "wiki:b")]
        for o in (outs[0], outs[2]):
            assert not isinstance(o, BaseException)
            (out,) = o
            assert out.topic == Topics.DOC_SCANNED.value
            assert isinstance(out.event, DocScanned)
            assert "ops@acme-corp.com" not in out.event.model_dump_json()
    finally:
        await stage.stop()


async def test_process_pool_runner_matches_in_process(detectors: object) -> None:
    """Two spawned workers, a document split across them: same findings as in-process."""
    items = [f"block {i}: key AKIAPTGZ4JFEBZ9SDO78 mail ops{i}@acme-corp.com" for i in range(40)]
    plan = DetectPlan(pii_patterns=("EMAIL_ADDRESS",))
    local = DetectionRunner(EngineConfig(), workers=0, detectors=detectors)  # type: ignore[arg-type]
    pooled = DetectionRunner(EngineConfig(), workers=2, split_bytes=1024)
    await pooled.start()
    try:
        a = await local.detect(items, plan)
        b = await pooled.detect(items, plan)
    finally:
        await pooled.stop()
    key = lambda r: sorted((f.item, f.start, f.end, f.type) for f in r.findings)  # noqa: E731
    assert key(a) == key(b)
    assert len({f.item for f in b.findings}) == 40
    assert b.n_bytes == a.n_bytes


@pytest.mark.parametrize("parts", [1, 2, 3, 7])
def test_split_items_keeps_order_and_offsets(parts: int) -> None:
    items = [str(i) * (i % 5 + 1) for i in range(23)]
    groups = split_items(items, parts)
    assert len(groups) <= parts
    flat = [x for first, g in groups for x in g]
    assert flat == items
    assert [first for first, _ in groups] == [
        sum(len(g) for _, g in groups[:k]) for k in range(len(groups))
    ]
