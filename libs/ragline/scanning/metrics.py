"""Scanner metrics. Labels are types, actions and outcomes: never values or document ids."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

__all__ = [
    "DETECTOR_SECONDS",
    "DOCUMENTS",
    "FINDINGS",
    "INJECTION_BLOCKS",
    "SCANNED_BYTES",
]

FINDINGS = Counter(
    "ragline_scanner_findings_total",
    "Secrets and PII found, by kind, type and the action the policy took",
    ["kind", "type", "action"],
)
DOCUMENTS = Counter(
    "ragline_scanner_documents_total",
    "Documents scanned, by outcome (clean, redacted, tagged, blocked)",
    ["outcome"],
)
INJECTION_BLOCKS = Counter(
    "ragline_scanner_injection_blocks_total",
    "Blocks flagged as prompt-injection suspects, by source trust level",
    ["trust"],
)
SCANNED_BYTES = Counter(
    "ragline_scanner_scanned_bytes_total", "UTF-8 bytes of text scanned (all fields)"
)
DETECTOR_SECONDS = Histogram(
    "ragline_scanner_detector_seconds",
    "Time per document spent in each detector",
    ["detector"],
    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
