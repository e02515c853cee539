"""``ragline scan file`` and ``ragline scan policy``: try the scanner and a policy locally.

``scan file`` scans a text/markdown file (one block per paragraph) exactly as the
service would and prints the findings summary (types, counts, positions; never values);
``--show-text`` also prints the redacted text. ``scan policy`` prints the effective
policy for a tenant/source/classification/trust, so a policy file can be checked
before it is deployed. Both read ``RAGLINE_SCANNER_*`` like the service.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from ragline.errors import ConfigError
from ragline.events import (
    Block,
    BlockKind,
    Classification,
    DocParsed,
    DocumentMeta,
    ParsedDocument,
    TrustLevel,
)
from ragline.hashing import content_hash
from ragline.scanning.factory import build_scanner
from ragline.scanning.policy import PolicyContext
from ragline.scanning.scanner import ScanBlocked
from ragline.scanning.settings import ScannerSettings

__all__ = ["register"]


def _settings(args: argparse.Namespace) -> ScannerSettings:
    base = ScannerSettings()
    if args.policy is not None:
        return base.model_copy(update={"policy_file": args.policy})
    return base


def _context(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "tenant_id": args.tenant,
        "source_type": args.source_type,
        "classification": Classification(args.classification),
        "trust": TrustLevel(args.trust),
    }


async def _scan_file(args: argparse.Namespace, raw: bytes) -> int:
    path: Path = args.path
    text = raw.decode("utf-8", errors="replace")
    blocks = tuple(Block(kind=BlockKind.PARAGRAPH, text=p) for p in text.split("\n\n") if p.strip())
    ctx = _context(args)
    event = DocParsed(
        tenant_id=ctx["tenant_id"],
        document_id=f"{ctx['source_type']}:{path.name}",
        content_hash=content_hash(raw),
        source_seq=0,
        meta=DocumentMeta(
            source_type=ctx["source_type"],
            title=path.name,
            classification=ctx["classification"],
            trust=ctx["trust"],
        ),
        document=ParsedDocument(format="text", blocks=blocks),
    )
    scanner = build_scanner(_settings(args))
    await scanner.start()
    try:
        out = await scanner.scan(event)
    except ScanBlocked as exc:
        print(json.dumps({"blocked": exc.reason_code, "reason": exc.reason,
                          "findings": exc.findings.model_dump(mode="json")}, indent=2))  # fmt: skip
        return 3
    finally:
        await scanner.stop()
    print(json.dumps(out.findings.model_dump(mode="json"), indent=2))
    if args.show_text:
        print("\n\n".join(b.text for b in out.document.blocks))
    return 0


def _scan(args: argparse.Namespace) -> int:
    try:
        raw = Path(args.path).read_bytes()
        return asyncio.run(_scan_file(args, raw))
    except (ConfigError, OSError) as exc:
        print(f"ragline scan: {exc}", file=sys.stderr)
        return 2


def _policy(args: argparse.Namespace) -> int:
    try:
        policies = _settings(args).policies()
    except ConfigError as exc:
        print(f"ragline scan policy: {exc}", file=sys.stderr)
        return 2
    ctx = _context(args)
    eff = policies.resolve(PolicyContext(source=args.source or ctx["source_type"], **ctx))
    body = eff.model_dump(mode="json")
    body["plan"] = {
        "pii_patterns": list(eff.plan().pii_patterns),
        "ner_entities": list(eff.plan().ner_entities),
    }
    print(json.dumps(body, indent=2, sort_keys=True))
    return 0


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--policy", type=Path, default=None, help="policy file (default: env/built-in)")
    p.add_argument("--tenant", default="default")
    p.add_argument("--source-type", default="generic")
    p.add_argument(
        "--classification", default="internal", choices=[c.value for c in Classification]
    )
    p.add_argument("--trust", default="medium", choices=[t.value for t in TrustLevel])


def register(sub: Any) -> None:
    scan = sub.add_parser("scan", help="run the secrets/PII scanner locally")
    ssub = scan.add_subparsers(dest="scan_command", required=True)
    f = ssub.add_parser("file", help="scan a text file; print the findings summary")
    f.add_argument("path", type=Path)
    f.add_argument("--show-text", action="store_true", help="also print the redacted text")
    _common(f)
    f.set_defaults(func=_scan)
    p = ssub.add_parser("policy", help="print the effective policy for a document context")
    p.add_argument("--source", default=None, help="source slug (document id prefix)")
    _common(p)
    p.set_defaults(func=_policy)
