"""Typed errors: every refusal of a ragline endpoint becomes one of these.

The query API answers errors as RFC 7807 ``application/problem+json`` (``Problem``); the
connector webhook answers ``{"error", "reason", "field"}``. Both are normalised into a
``Problem`` on :attr:`ApiError.problem`, so callers catch by class and read one shape.
"""

from __future__ import annotations

from typing import Any

import httpx
from pydantic import ValidationError

from ragline_client.models import Problem

__all__ = [
    "ApiError",
    "BadRequest",
    "Forbidden",
    "NotFound",
    "PayloadTooLarge",
    "RaglineClientError",
    "RateLimited",
    "ResponseShapeError",
    "ServerError",
    "TransportError",
    "Unauthorized",
    "Unavailable",
    "error_for",
    "problem_of",
]

_MAX_DETAIL = 500


class RaglineClientError(Exception):
    """Base of everything this package raises (besides pydantic's request validation)."""


class TransportError(RaglineClientError):
    """The server could not be reached or did not answer in time, after every retry."""


class ResponseShapeError(RaglineClientError):
    """A 2xx answer whose body does not parse as the documented model."""


class ApiError(RaglineClientError):
    """An HTTP error answer. ``problem`` is the parsed problem+json (or an equivalent)."""

    def __init__(
        self, problem: Problem, *, retry_after: float | None = None, trace_id: str | None = None
    ) -> None:
        self.problem = problem
        self.status = problem.status
        self.retry_after = retry_after
        self.trace_id = trace_id or problem.trace_id
        text = problem.title if not problem.detail else f"{problem.title}: {problem.detail}"
        super().__init__(f"{problem.status} {text}")


class BadRequest(ApiError):
    """400/422: the request is invalid; ``problem.invalid_params`` names the fields."""


class Unauthorized(ApiError):
    """401: missing, invalid or expired credentials."""


class Forbidden(ApiError):
    """403: authenticated, but not allowed (no groups, tenant not accepted)."""


class NotFound(ApiError):
    """404: not there, or not visible to this caller (the API does not tell which)."""


class PayloadTooLarge(ApiError):
    """413: the body exceeds the server's limit."""


class RateLimited(ApiError):
    """429 after the retries (or a ``Retry-After`` longer than the policy waits)."""


class Unavailable(ApiError):
    """502/503/504 after the retries: a backend is down; try again later."""


class ServerError(ApiError):
    """Any other 5xx."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    413: PayloadTooLarge,
    422: BadRequest,
    429: RateLimited,
    502: Unavailable,
    503: Unavailable,
    504: Unavailable,
}


def _clip(value: Any) -> str | None:
    if value is None:
        return None
    return str(value)[:_MAX_DETAIL]


def problem_of(resp: httpx.Response) -> Problem:
    """The response body as a ``Problem``, whatever shape the endpoint used."""
    status = resp.status_code
    title = resp.reason_phrase or f"HTTP {status}"
    try:
        body = resp.json()
    except ValueError:
        return Problem(title=title, status=status)
    if not isinstance(body, dict):
        return Problem(title=title, status=status)
    if "title" in body:
        try:
            parsed = Problem.model_validate(body)
        except ValidationError:
            pass
        else:
            # the HTTP status is the truth if a body disagrees
            if parsed.status != status:
                parsed = parsed.model_copy(update={"status": status})
            return parsed
    # the connector webhook's shape: {"error": code, "reason": text, "field": name}
    field = body.get("field")
    return Problem(
        type=str(body.get("error") or "about:blank")[:100],
        title=_clip(body.get("error")) or title,
        status=status,
        detail=_clip(body.get("reason") or body.get("detail")),
        invalid_params=[{"name": str(field)[:200], "reason": _clip(body.get("reason")) or ""}]
        if field
        else None,
    )


def error_for(resp: httpx.Response, retry_after: float | None = None) -> ApiError:
    problem = problem_of(resp)
    status = resp.status_code
    cls = _BY_STATUS.get(status) or (ServerError if status >= 500 else ApiError)
    trace = resp.headers.get("traceparent", "").split("-")
    return cls(problem, retry_after=retry_after, trace_id=trace[1] if len(trace) == 4 else None)
