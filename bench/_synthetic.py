"""The synthetic corpus of the query and growth benchmarks: random unit 384-d vectors and
Zipf-distributed words, deterministic for a given generator seed."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import count

import numpy as np

__all__ = [
    "CHUNKS_PER_DOC",
    "DIM",
    "VOCAB",
    "SynthDoc",
    "synthetic_docs",
    "synthetic_queries",
]

VOCAB = [f"w{i:04d}" for i in range(5000)]
CHUNKS_PER_DOC = 8
WORDS_PER_CHUNK = 60
DIM = 384

# (document id, title, child texts, child vectors: float32 (n, DIM), unit length)
SynthDoc = tuple[str, str, list[str], np.ndarray]


def _zipf() -> np.ndarray:
    p = 1.0 / np.arange(1, len(VOCAB) + 1)
    p /= p.sum()
    return p


def synthetic_docs(rng: np.random.Generator, n_docs: int | None = None) -> Iterator[SynthDoc]:
    """Documents ``synth:0``, ``synth:1``, ... (endless when ``n_docs`` is None): one
    generator continued across steps yields the same corpus as one long run."""
    p = _zipf()
    for d in count() if n_docs is None else range(n_docs):
        words = rng.choice(len(VOCAB), size=(CHUNKS_PER_DOC, WORDS_PER_CHUNK), p=p)
        vecs = rng.standard_normal((CHUNKS_PER_DOC, DIM)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        yield (
            f"synth:{d}",
            f"synthetic {d}",
            [" ".join(VOCAB[w] for w in row) for row in words],
            vecs,
        )


def synthetic_queries(rng: np.random.Generator, n: int = 2000) -> list[str]:
    """Four words each from the mid-frequency range (ranks 50..5000), like real keyword
    queries: Zipf-sampled queries are mostly stopword-like terms that match every chunk."""
    return [" ".join(VOCAB[w] for w in rng.integers(50, len(VOCAB), size=4)) for _ in range(n)]
