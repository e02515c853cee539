"""The one root exception and the typed errors every domain raises.

Driver errors (psycopg, aiokafka, opensearch-py) are translated at the adapter, so
callers never catch driver types. Messages never contain document text, secrets or PII.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "BackendUnavailable",
    "ConfigError",
    "ContractError",
    "NotBuiltError",
    "PermanentError",
    "QuarantineError",
    "RaglineError",
    "TransientError",
]


class RaglineError(Exception):
    """Root of every error ragline raises on purpose."""


class ConfigError(RaglineError):
    """Configuration is missing or contradictory."""


class NotBuiltError(RaglineError):
    """Something is not there to use: a component used before it was started (a stage
    before ``start()``), or a feature that is not built. Says so instead of pretending."""


class TransientError(RaglineError):
    """Worth retrying: a backend hiccup, a timeout, a rebalance."""


class BackendUnavailable(TransientError):
    """A backend (Postgres, Kafka, OpenSearch) cannot be reached."""


class PermanentError(RaglineError):
    """Retrying will not help: the message goes to the dead-letter topic."""


class ContractError(PermanentError):
    """A message does not match its event contract."""


class QuarantineError(PermanentError):
    """The document itself is bad or forbidden: it is quarantined with a reason code.

    ``reason`` must never contain document text or matched values. ``withhold_body``
    keeps the failed message's body out of its dead letter (a document a policy blocked
    leaves no copy). A stage that hands the runtime a cleaned meta and findings raises
    ``runtime.stage.StageQuarantine``.
    """

    withhold_body: ClassVar[bool] = False

    def __init__(self, reason_code: str, reason: str) -> None:
        super().__init__(f"{reason_code}: {reason}")
        self.reason_code = reason_code
        self.reason = reason
