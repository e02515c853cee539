"""Scan one parsed document: DocParsed in, DocScanned out, or a quarantine.

Order per document: resolve the policy for its tenant/source/classification/trust,
detect (off the event loop), decide per finding, raise ``ScanBlocked`` if anything is
blocked, otherwise redact every field, flag injection suspects and summarise. The
summary carries types, counts and positions, never values; so do the logs, the metrics
and the quarantine reason.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from ragline.errors import PermanentError, RaglineError
from ragline.events import (
    BlockFlags,
    DocParsed,
    DocScanned,
    DocumentMeta,
    FindingsSummary,
    TrustLevel,
)
from ragline.runtime.stage import StageQuarantine
from ragline.scanning import metrics
from ragline.scanning.decide import decide
from ragline.scanning.fields import DOC_LEVEL, DocumentTexts, collect, rebuild
from ragline.scanning.injection import InjectionScanner
from ragline.scanning.model import DetectResult, Finding, FindingKind
from ragline.scanning.policy import EffectivePolicy, PolicyContext, PolicySet
from ragline.scanning.redact import Decision, redact_text
from ragline.scanning.runner import DetectionRunner
from ragline.scanning.seal import seal_document, seal_meta
from ragline.scanning.secret_patterns import column_secret_type

__all__ = [
    "SCANNER_VERSION",
    "ScanBlocked",
    "ScanDeadlineConfig",
    "ScanTimeout",
    "Scanner",
    "apply_scan",
    "typed_meta",
]

SCANNER_VERSION = "scanner-2"
_log = logging.getLogger("ragline.scanning")


class ScanBlocked(StageQuarantine):
    """A policy blocks the document.

    ``findings`` holds types, counts and positions, never values; ``meta`` is the
    document's metadata with every finding redacted. The runtime puts both on the
    ``doc.quarantined`` event instead of the input's meta, which may hold the very
    secret that blocked the document.
    """

    def __init__(
        self, reason_code: str, reason: str, *, findings: FindingsSummary, meta: DocumentMeta
    ) -> None:
        super().__init__(reason_code, reason, findings=findings, meta=meta)
        self.findings: FindingsSummary = findings

    # the runtime keeps no copy of a blocked document's body in its dead letter
    withhold_body = True


class ScanTimeout(StageQuarantine):
    """The document's scan passed its deadline (``RAGLINE_SCANNER_DEADLINE_S``...).

    The document was not fully scanned, so nothing of its text may travel on: ``meta``
    keeps only the typed fields (no title, uri, version or metadata)."""

    def __init__(self, reason: str, *, meta: DocumentMeta) -> None:
        super().__init__("scan_timeout", reason, meta=meta)


def typed_meta(meta: DocumentMeta) -> DocumentMeta:
    """``meta`` without any free-text field: what may describe an unscanned document."""
    return meta.without_text()


def _context(event: DocParsed) -> PolicyContext:
    return PolicyContext(
        tenant_id=event.tenant_id,
        source=event.source,
        source_type=event.meta.source_type,
        classification=event.meta.classification,
        trust=event.meta.trust,
    )


def _injection_text(event: DocParsed, i: int) -> str:
    b = event.document.blocks[i]
    if b.table is None:
        return b.text
    cells = [*b.table.header, *(c for row in b.table.rows for c in row)]
    return "\n".join([b.text, b.table.caption or "", *cells])


def _column_findings(texts: DocumentTexts) -> list[Finding]:
    out: list[Finding] = []
    for item, header in texts.cell_header.items():
        cell = texts.items[item]
        type_ = column_secret_type(header, cell)
        if type_ is not None:
            lead = len(cell) - len(cell.lstrip())
            out.append(
                Finding(
                    item=item, start=lead, end=len(cell.rstrip()), kind=FindingKind.SECRET,
                    type=type_, detector="table-column",
                )
            )  # fmt: skip
    return out


def apply_scan(
    event: DocParsed,
    texts: DocumentTexts,
    result: DetectResult,
    policy: EffectivePolicy,
    *,
    max_positions: int = 1000,
    propagate_min_chars: int = 6,
) -> DocScanned:
    """The scanned event for ``event`` given its detection result and policy.

    Deterministic (same input, result and policy: same output); its only side effect is
    counting metrics.
    """
    findings = [*result.findings, *_column_findings(texts)]
    decided = decide(texts.items, findings, policy, propagate_min_chars=propagate_min_chars)
    in_identity = _identity_secrets(texts, decided.per_item)
    leaked = {texts.items[i] for i in texts.fixed if _has_secret(decided.per_item[i])}
    for i in texts.fixed:  # never rewritten: nothing to redact or count there
        decided.per_item[i] = []
    scanned: list[str] = []
    counts: Counter[str] = Counter()
    positions: list[tuple[str, int, int, int]] = []
    pii_types: dict[int, set[str]] = defaultdict(set)
    redactions: dict[int, int] = defaultdict(int)
    for i, (text, ref) in enumerate(zip(texts.items, texts.refs, strict=True)):
        decisions = decided.per_item[i]
        if not decisions:
            scanned.append(text)
            continue
        red = redact_text(text, decisions)
        scanned.append(red.text)
        if i in texts.copies:
            continue
        counts.update(red.labels)
        if ref.block != DOC_LEVEL:
            pii_types[ref.block] |= red.kept_types
            redactions[ref.block] += red.redactions
        for label, s, e in red.positions:
            if ref.is_block_text:
                positions.append((label, ref.block, s, e))
            else:
                positions.append((label, ref.block, -1, -1))

    injector = InjectionScanner(
        threshold=policy.injection_threshold, strict=policy.injection_strict
    )
    trust: TrustLevel = event.meta.trust
    updates: list[dict[str, Any]] = []
    injection_blocks: list[int] = []
    for i, block in enumerate(event.document.blocks):
        rules = injector.scan(_injection_text(event, i), trust)
        if rules:
            injection_blocks.append(i)
        flags = BlockFlags(
            injection_suspect=bool(rules),
            injection_rules=rules,
            pii_types=tuple(sorted(pii_types.get(i, set()) | set(block.flags.pii_types))),
            redactions=redactions.get(i, 0),
        )
        updates.append({"flags": flags})
    # sealed: the only way text gets past the scanner (ragline.scan_seal)
    meta, document = rebuild(event, texts, scanned, updates)
    meta, document = seal_meta(meta), seal_document(document)
    summary = FindingsSummary(
        counts=dict(sorted(counts.items())),
        positions=tuple(sorted(positions, key=lambda p: (p[1], p[2], p[0])))[:max_positions],
        injection_blocks=tuple(injection_blocks),
        policy=policy.name,
    )
    version = f"{SCANNER_VERSION}+{policy.fingerprint}"
    _observe(decided.actions, summary.counts)
    if in_identity:
        metrics.DOCUMENTS.labels(outcome="blocked").inc()
        raise ScanBlocked(
            "secret_in_identity",
            f"a secret in {', '.join(in_identity)} (an identity, which can not be redacted)",
            findings=summary,
            meta=seal_meta(_without(meta, leaked)),
        )
    if decided.blocked:
        metrics.DOCUMENTS.labels(outcome="blocked").inc()
        kinds = {f.kind for f in decided.blocked}
        types = sorted({f.type for f in decided.blocked})
        raise ScanBlocked(
            "secret_blocked" if FindingKind.SECRET in kinds else "pii_blocked",
            f"policy {policy.name!r} blocks {', '.join(types)} ({len(decided.blocked)} finding(s))",
            findings=summary,
            meta=meta,
        )
    if injection_blocks:
        metrics.INJECTION_BLOCKS.labels(trust=trust.value).inc(len(injection_blocks))
    outcome = (
        "redacted" if any(redactions.values()) or scanned != texts.items
        else "tagged" if any(pii_types.values()) else "clean"
    )  # fmt: skip
    metrics.DOCUMENTS.labels(outcome=outcome).inc()
    return DocScanned(
        **event.derived(f"scanner/{version}"),  # a new scanner version is a new event
        meta=meta,
        document=document,
        findings=summary,
        scanner_version=version,
        change=event.change,
    )


def _has_secret(decisions: list[Decision]) -> bool:
    return any(d.redact and d.priority == 0 for d in decisions)


def _without(meta: DocumentMeta, leaked: set[str]) -> DocumentMeta:
    """The quarantine's meta without the identity values that hold a secret (ACL groups
    only shrink: fail closed)."""
    if not leaked:
        return meta
    return meta.model_copy(
        update={
            "supersedes": tuple(x for x in meta.supersedes if x not in leaked),
            "acl_groups": tuple(x for x in meta.acl_groups if x not in leaked),
            "metadata": {k: v for k, v in meta.metadata.items() if k not in leaked},
        }
    )


def _identity_secrets(texts: DocumentTexts, per_item: list[list[Decision]]) -> list[str]:
    """Names of the identity fields that hold a redacted secret (never their values)."""
    names: list[str] = []
    for i in sorted(texts.identity):
        if _has_secret(per_item[i]):
            path = texts.refs[i].path
            name = ".".join(str(p) for p in path if not isinstance(p, int))
            if name not in names:
                names.append(name)
    return names


def _observe(actions: dict[str, str], counts: dict[str, int]) -> None:
    for label, n in counts.items():
        kind, type_ = label.split(":", 1)
        metrics.FINDINGS.labels(kind=kind, type=type_, action=actions.get(label, "redact")).inc(n)


@dataclass(frozen=True, kw_only=True, slots=True)
class ScanDeadlineConfig:
    """Per-document scan deadline: ``base_s`` plus ``per_mb_s`` per MB, at most ``max_s``
    (below the consumer's 600 s poll interval, so a slow document never costs the group
    a rebalance)."""

    base_s: float = 30.0
    per_mb_s: float = 60.0
    max_s: float = 300.0

    def seconds(self, n_bytes: int) -> float:
        return min(self.max_s, self.base_s + self.per_mb_s * n_bytes / 1_000_000)


class Scanner:
    """Policies + detection runner; ``scan`` is what the service's handler calls."""

    def __init__(
        self,
        *,
        policies: PolicySet,
        runner: DetectionRunner,
        max_positions: int = 1000,
        propagate_min_chars: int = 6,
        deadline: ScanDeadlineConfig | None = None,
    ) -> None:
        self.policies = policies
        self.runner = runner
        self.max_positions = max_positions
        self.propagate_min_chars = propagate_min_chars
        self.deadline = deadline or ScanDeadlineConfig()

    async def start(self) -> None:
        await self.runner.start()

    async def stop(self) -> None:
        await self.runner.stop()

    async def scan(self, event: DocParsed) -> DocScanned:
        policy = self.policies.resolve(_context(event))
        texts = collect(event)
        budget = self.deadline.seconds(texts.n_bytes)
        try:
            result = await self.runner.detect(texts.items, policy.plan(), deadline_s=budget)
        except RaglineError:
            raise
        except Exception as exc:
            # fail closed (the document is not passed on unscanned) and keep library
            # messages, which may quote the text, out of logs and the DLQ: no chaining
            raise PermanentError(f"scanner detectors failed: {type(exc).__name__}") from None
        if result.timed_out:
            metrics.DOCUMENTS.labels(outcome="timeout").inc()
            raise ScanTimeout(
                f"scan did not finish within {budget:.0f} s ({texts.n_bytes} bytes)",
                meta=typed_meta(event.meta),
            )
        metrics.SCANNED_BYTES.inc(result.n_bytes)
        for det, secs in result.seconds.items():
            metrics.DETECTOR_SECONDS.labels(detector=det).observe(secs)
        out = apply_scan(
            event,
            texts,
            result,
            policy,
            max_positions=self.max_positions,
            propagate_min_chars=self.propagate_min_chars,
        )
        _log.info(
            "scanned document",
            extra={
                "document_id": event.document_id,
                "policy": policy.name,
                "findings": out.findings.counts,
                "injection_blocks": len(out.findings.injection_blocks),
                "bytes": result.n_bytes,
            },
        )
        return out
