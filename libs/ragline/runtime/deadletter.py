"""Dead-letter records and error messages that are safe to publish.

An error text must never carry document text, secrets or PII. Neither may the dead letter
of a document a policy blocked: an error with ``withhold_body`` (the scanner's
``ScanBlocked``) gets a dead letter without the failed message's body or its claim-check
reference (``withheld_body``); the scanner purges the stored bodies themselves. Pydantic validation
errors are rebuilt from location + message without the offending input; ragline's own
errors are written value-free by their raisers; any other exception is reduced to its
class name, because library messages often quote their input.
"""

from __future__ import annotations

import base64

from pydantic import ValidationError

from ragline.errors import QuarantineError, RaglineError
from ragline.events import DeadLetter, EventBase
from ragline.store.claimcheck import CLAIM_HEADER

__all__ = ["WITHHELD_HEADER", "dead_letter", "safe_error_message", "withheld_body"]

WITHHELD_HEADER = "ragline-body-withheld"


def withheld_body(
    exc: BaseException, value: bytes, headers: dict[str, str]
) -> tuple[bytes, dict[str, str]] | None:
    """For an error whose document must leave no copy (``withhold_body``): an empty value
    and the headers without the claim-check reference, marked withheld. ``None`` for any
    other error (the body is kept for replay, as the claim check's reference)."""
    if not (isinstance(exc, QuarantineError) and exc.withhold_body):
        return None
    kept = {k: v for k, v in headers.items() if k != CLAIM_HEADER}
    kept[WITHHELD_HEADER] = exc.reason_code
    return b"", kept


_MAX = 2000


def _validation_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False, include_input=False, include_context=False):
        loc = ".".join(str(p) for p in err.get("loc", ())) or "<root>"
        parts.append(f"{loc}: {err.get('msg', 'invalid')} [{err.get('type', '?')}]")
    return f"{exc.error_count()} validation error(s): " + "; ".join(parts)


def safe_error_message(exc: BaseException) -> str:
    if isinstance(exc, ValidationError):
        msg = _validation_message(exc)
    elif isinstance(exc, RaglineError):
        msg = str(exc)
    else:
        msg = f"{type(exc).__name__} (message withheld: may quote input)"
    return msg[:_MAX]


def dead_letter(
    *,
    stage: str,
    topic: str,
    partition: int | None,
    offset: int | None,
    key: bytes | None,
    value: bytes,
    headers: dict[str, str],
    exc: BaseException,
    attempts: int,
    event: EventBase | None = None,
) -> DeadLetter:
    tenant = event.tenant_id if event is not None else None
    doc = event.document_id if event is not None else None
    return DeadLetter(
        stage=stage,
        topic=topic,
        partition=partition,
        offset=offset,
        key=key.decode("utf-8", "replace") if key else None,
        original_b64=base64.b64encode(value).decode(),
        original_headers=headers,
        error_class=type(exc).__name__,
        error_message=safe_error_message(exc),
        attempts=attempts,
        tenant_id=tenant,
        document_id=doc,
    )
