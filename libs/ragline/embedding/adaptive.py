"""Adaptive model batches: sized by the work pending now and by the model's measured speed.

The consumer's fetch already adapts the number of documents: a poll returns at once with
whatever is buffered (one document when idle, no linger wait; up to ``max_records`` when
a backlog exists). This module cuts the texts of one poll into model calls:

- texts are ordered by length (the chunker's ``token_count`` carried on every chunk plus
  an estimate for the contextual header: nothing is tokenized for planning), so a call
  pads its texts to similar lengths instead of to the longest of a random mix;
- a call holds texts until its padded size (texts x longest) reaches a token budget, at
  most ``max_batch`` texts: short texts under a backlog go in batches of up to
  ``max_batch``; a few texts (the idle case) go in one call of exactly those texts;
- the budget follows the model's measured speed (an EWMA of padded tokens per second):
  one call takes about ``target_s``, on a fast or a slow machine, so a call stays short
  enough for liveness and memory, and long enough to amortise per-call overhead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ragline.embedding.settings import EmbedderSettings

__all__ = [
    "AdaptiveBatchSizer",
    "BatchPolicy",
    "batch_sizer",
    "estimate_tokens",
    "model_batch_size",
    "plan_batches",
]

# word pieces the model reads ([CLS]/[SEP] included): longer input is truncated
MODEL_WINDOW = 256


@dataclass(frozen=True)
class BatchPolicy:
    """``max_batch`` caps texts per call; ``target_s`` is one call's wanted duration;
    ``initial_budget`` (padded tokens per call) applies until a call was measured."""

    max_batch: int = 256
    target_s: float = 0.5
    initial_budget: int = 64 * 128
    # 8 full-length texts: the floor also keeps tiny idle calls, whose per-call overhead
    # makes them look slow per token, from shrinking the budget under a later backlog
    min_budget: int = 8 * MODEL_WINDOW
    smoothing: float = 0.3  # weight of the newest measurement


def estimate_tokens(token_count: int, header: str) -> int:
    """Model tokens of ``header + "\\n" + text`` without tokenizing: the chunker's count
    for the text, ~4 characters per piece for the header, 2 for [CLS]/[SEP]."""
    head = (len(header) + 3) // 4 if header else 0
    return min(MODEL_WINDOW, max(0, token_count) + head + 2)


def plan_batches(lengths: Sequence[int], *, token_budget: int, max_batch: int) -> list[list[int]]:
    """Indices of ``lengths`` grouped into model calls, shortest texts first.

    Every index appears exactly once; a call holds at most ``max_batch`` texts and at most
    ``token_budget`` padded tokens (texts x its longest), except a single text longer than
    the budget, which goes alone."""
    if max_batch < 1:
        raise ValueError("max_batch must be >= 1")
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    batches: list[list[int]] = []
    cur: list[int] = []
    longest = 0
    for i in order:
        n = max(1, min(lengths[i], MODEL_WINDOW))
        wider = max(longest, n)
        if cur and (len(cur) >= max_batch or (len(cur) + 1) * wider > token_budget):
            batches.append(cur)
            cur, wider = [], n
        cur.append(i)
        longest = wider
    if cur:
        batches.append(cur)
    return batches


class AdaptiveBatchSizer:
    """Keeps the token budget of one model call in step with the measured model speed."""

    def __init__(self, policy: BatchPolicy | None = None) -> None:
        self.policy = policy or BatchPolicy()
        self._tokens_per_s: float | None = None

    @property
    def token_budget(self) -> int:
        p = self.policy
        if self._tokens_per_s is None:
            budget = p.initial_budget
        else:
            budget = int(self._tokens_per_s * p.target_s)
        return max(p.min_budget, min(budget, p.max_batch * MODEL_WINDOW))

    def observe(self, padded_tokens: int, seconds: float) -> None:
        """One finished call: ``padded_tokens`` (texts x longest) in ``seconds``."""
        if padded_tokens < self.policy.min_budget or not seconds > 0:
            return  # too small to say anything about the model's speed
        rate = padded_tokens / seconds
        if self._tokens_per_s is None:
            self._tokens_per_s = rate
        else:
            a = self.policy.smoothing
            self._tokens_per_s = a * rate + (1 - a) * self._tokens_per_s

    def plan(self, lengths: Sequence[int]) -> list[list[int]]:
        return plan_batches(
            lengths, token_budget=self.token_budget, max_batch=self.policy.max_batch
        )


def batch_sizer(cfg: EmbedderSettings) -> AdaptiveBatchSizer | None:
    """The stage's sizer under ``RAGLINE_EMBEDDER_ADAPTIVE_BATCHING`` (None: fixed)."""
    if not cfg.adaptive_batching:
        return None
    return AdaptiveBatchSizer(
        BatchPolicy(
            max_batch=cfg.max_batch_size,
            target_s=cfg.batch_target_s,
            initial_budget=cfg.batch_size * 128,
        )
    )


def model_batch_size(cfg: EmbedderSettings) -> int:
    """The backend's own split size: never smaller than an adaptive call."""
    return max(cfg.batch_size, cfg.max_batch_size) if cfg.adaptive_batching else cfg.batch_size
